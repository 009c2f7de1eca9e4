"""The README's pytest example of the echo agent runs as the README shows it, with trio installed beside asyncio."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import ROOT


def readme_example() -> str:
    """The README's python block that tests the echo agent with the replay_session fixture."""
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    return next(b for b in blocks if "async def test_the_echo_session_replays" in b)


def test_the_readme_pytest_example_passes_as_written(tmp_path: Path):
    """Copied as shown (three lines), the test failed under trio: anyio's plugin runs it on every backend installed,
    and the echo agent is asyncio's (asyncio.timeout). The README shows the anyio_backend fixture it needs."""
    import trio  # noqa: F401  (the test extra installs it: the case the README must hold for)

    shutil.copytree(ROOT / "examples" / "echo-agent", tmp_path / "echo-agent",
                    ignore=shutil.ignore_patterns("test_*.py", "__pycache__"))
    test = tmp_path / "echo-agent" / "test_from_readme.py"
    test.write_text(readme_example())
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", test.name],
                          cwd=test.parent, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "passed" in done.stdout and "failed" not in done.stdout

"""The README's Python examples run as the README shows them: the pytest example of the echo agent (with trio installed
beside asyncio), and a transform tested without a graph."""

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


def test_the_readme_transform_example_runs_as_written():
    """The README said a transform is "tested with a plain list": `SelectEvents(...)([{...}])` raised AttributeError
    ('list' object has no attribute 'events'). It shows ``Batch.of`` and its import; the block runs."""
    block = next(b for b in re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
                 if "Batch.of(" in b)
    exec(compile(block, "README.md", "exec"), {})

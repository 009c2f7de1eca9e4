"""A config's `script` stage (a `chain`, or [stages.*] tables): its script is written whole or not at all, as
`replay script` prints it, to stdout or a file; the problems that refused it are still said on stderr (exit 1)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import orjson
from conftest import EXAMPLES, REPLAY, errors_of, run_replay
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SCENARIOS = EXAMPLES / "echo-agent" / "scenarios"
THREW = SCENARIOS / "overloaded" / "session.jsonl"  # turn 2 ends without `finish` (refused with --no-override)
CLEAN = SCENARIOS / "echo" / "session.jsonl"

TABLES = """[stages.read]
type = "read"
[stages.parse]
type = "parse"
inputs = ["read"]
[stages.script]
type = "script"
sidecar = false
inputs = ["parse"]
[stages.out]
type = "write"
inputs = ["script"]
{path}"""

CONFIGS = {
    "chain": 'chain = [{{type = "script", sidecar = false}}{write}]\n',
    "chain-read-parse": 'chain = ["read", "parse", {{type = "script", sidecar = false}}{write}]\n',
    "tables": None,
}


def config(tmp_path: Path, shape: str, out: Path | None) -> Path:
    if shape == "tables":
        text = TABLES.format(path=f'path = "{out}"\n' if out else "")
    else:
        text = CONFIGS[shape].format(write=f', {{type = "write", path = "{out}"}}' if out else "")
    path = tmp_path / f"{shape}.toml"
    path.write_text(text)
    return path


def test_a_refused_group_leaves_no_partial_script_on_stdout_or_in_a_file(tmp_path: Path):
    """A session whose turn 2 threw: the script without that step, exit 1 (a valid-looking, incomplete script on
    stdout, or in the file the chain's `write` names); now nothing, as `replay script --no-override` prints."""
    command = run_replay("script", str(THREW), "--no-override", process=True)
    assert (command.returncode, command.stdout) == (1, b"")
    said = [e["code"] for e in errors_of(command.stderr)]
    assert said == ["E_SESSION_GROUP_UNFINISHED"]
    for shape in CONFIGS:
        for out in (None, tmp_path / f"{shape}.json"):
            done = run_replay("run", str(config(tmp_path, shape, out)), str(THREW), process=True)
            assert b"Traceback" not in done.stderr
            assert (done.returncode, done.stdout) == (1, b""), (shape, out)
            assert [e["code"] for e in errors_of(done.stderr)] == said
            assert out is None or not out.exists()


def test_a_clean_session_gets_its_whole_script_from_a_config(tmp_path: Path):
    expected = run_replay("script", str(CLEAN), "--no-override", process=True)
    assert expected.returncode == 0 and orjson.loads(expected.stdout)["groups"]
    for shape in CONFIGS:
        out = tmp_path / f"{shape}.json"
        done = run_replay("run", str(config(tmp_path, shape, None)), str(CLEAN), process=True)
        assert (done.returncode, done.stdout, done.stderr) == (0, expected.stdout, b"")
        done = run_replay("run", str(config(tmp_path, shape, out)), str(CLEAN), process=True)
        assert (done.returncode, done.stderr) == (0, b"") and out.read_bytes() == expected.stdout


def _chunk(turn: int, step: int, kind: str) -> bytes:
    body = {"type": "finish", "finishReason": "stop"} if kind == "finish" else {"type": "text-delta", "text": "x"}
    return orjson.dumps({"type": "assistant/chunk", "turn": turn, "step": step, "chunk": body}) + b"\n"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 3), st.booleans()), min_size=1, max_size=6))
def test_the_script_of_a_config_is_the_commands_or_nothing(tmp_path: Path, groups: list[tuple[int, bool]]):
    """Whatever groups are finished or not: a config's script is `replay script`'s (whole, exit 0), or nothing with
    exit 1 and the same errors."""
    session = tmp_path / "session.jsonl"
    lines = [b'{"type":"session/start","sessionId":"s"}\n']
    for turn, (deltas, finished) in enumerate(groups, 1):
        lines += [_chunk(turn, 0, "text-delta")] * deltas + ([_chunk(turn, 0, "finish")] if finished else [])
    session.write_bytes(b"".join(lines))
    command = run_replay("script", str(session), "--no-override")
    for shape in CONFIGS:
        done = run_replay("run", str(config(tmp_path, shape, None)), str(session))
        assert (done.returncode, done.stdout) == (command.returncode, command.stdout)
        assert errors_of(done.stderr) == errors_of(command.stderr)


def test_a_refused_script_written_in_place_to_a_descriptor_s_name_writes_nothing(tmp_path: Path) -> None:
    """Found by review: `--out /dev/stdout` (a device, FIFO or descriptor's name is written in place, not staged and
    renamed) got the script's groups before the refusal; it is held as stdout is, and written only whole."""
    session, out = tmp_path / "session.jsonl", tmp_path / "out.json"
    chunk = {"type": "assistant/chunk", "step": 0}
    with session.open("w") as f:  # (groups enough to fill many batches before the last, unfinished one)
        for turn in range(1, 400):
            f.write(json.dumps({**chunk, "turn": turn, "chunk": {"type": "text-delta", "text": "x" * 1000}}) + "\n")
            if turn < 399:
                f.write(json.dumps({**chunk, "turn": turn, "chunk": {"type": "finish", "finishReason": "stop"}}) + "\n")
    with out.open("wb") as handle:
        done = subprocess.run([REPLAY, "script", str(session), "--no-override", "--out", "/dev/stdout"], stdout=handle,
                              stderr=subprocess.PIPE, timeout=120, check=False)
    assert done.returncode == 1 and out.read_bytes() == b"", done.stderr
    with out.open("wb") as handle:
        clean = subprocess.run([REPLAY, "script", str(CLEAN), "--out", "/dev/stdout"], stdout=handle, timeout=120, check=False)
    assert clean.returncode == 0 and out.read_bytes() == run_replay("script", str(CLEAN)).stdout

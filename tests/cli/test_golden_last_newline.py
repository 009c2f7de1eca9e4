"""`golden check`: a JSON last line with no newline after it, on one side only, is a difference, as README says (a
session writer ends every line; one that does not makes the next line appended join its last)."""

from __future__ import annotations

from pathlib import Path

import orjson
from conftest import run_replay

LINES = [b'{"type":"turn/start","turn":1}', b'{"type":"turn/end","turn":1}']


def test_a_json_last_line_with_no_newline_on_one_side_is_a_difference(tmp_path: Path):
    recorded, new = tmp_path / "recorded.jsonl", tmp_path / "new.jsonl"
    recorded.write_bytes(b"\n".join(LINES) + b"\n")
    new.write_bytes(b"\n".join(LINES))
    done = run_replay("golden", "check", str(recorded), str(new))
    verdict = orjson.loads(done.stdout)
    assert (done.returncode, verdict["same"], verdict["line"]) == (1, False, 2)
    assert verdict["difference"] == "line 2: the new file has no newline at its end"
    recorded.write_bytes(b"\n".join(LINES))  # (neither ends its last line: the same)
    assert run_replay("golden", "check", str(recorded), str(new)).returncode == 0

"""validate labels a .json file holding an array (empty, or of no records) a stream, as it labels one of records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import jsonl, run_replay
from heal_support import ev


@pytest.mark.parametrize(("text", "valid", "errors"), [("[]", True, 0), ("[1]", False, 1), ('[1, "x"]', False, 2)])
def test_an_array_of_no_records_is_a_stream_as_an_array_of_records_is(tmp_path: Path, text: str, valid: bool,
                                                                       errors: int) -> None:
    """`[]` and `[1]` in a .json file were `"kind": "artifact"` (the name decided) while `[{...}]` was a stream: an array
    is a journal written as one whatever it holds (and stdin's `[1]` was a stream already)."""
    target = tmp_path / "x.json"
    target.write_text(text + "\n")
    done = run_replay("validate", str(target))
    assert done.returncode == (0 if valid else 1), done.stderr
    assert jsonl(done.stdout) == [{"source": str(target), "kind": "stream", "valid": valid, "errors": errors,
                                   "events": 0, "runs": 0}]
    piped = run_replay("validate", input=text.encode() + b"\n")
    assert [(s["kind"], s["errors"]) for s in jsonl(piped.stdout)] == [("stream", errors)]


def test_an_object_and_a_json_that_does_not_parse_stay_artifacts(tmp_path: Path) -> None:
    """What is no array stays an artifact: an object (a record of an array is a stream's), an empty or broken file."""
    files = {"obj.json": json.dumps({"events": []}), "empty.json": "", "cut.json": '{"events": [',
             "records.json": json.dumps([ev(1, "run_started")])}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    done = run_replay("validate", str(tmp_path))
    kinds = {Path(s["source"]).name: s["kind"] for s in jsonl(done.stdout)}
    assert kinds == {"obj.json": "artifact", "empty.json": "artifact", "cut.json": "artifact", "records.json": "stream"}

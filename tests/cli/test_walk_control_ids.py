"""walk's text form writes a step or kind holding any control character as a JSON string (as one with a tab or a
newline), every control character in it escaped (\\uXXXX for those JSON writes as they are: DEL, C1, bidi overrides),
so the step shown, JSON-decoded, is the step `--at` takes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

STEPS = ["a\x00b", "a\x01b", "a\tb", "a\x7fb", "a\x9bb", "a\u202eb", "a\u202e b"]


@pytest.mark.parametrize("step", STEPS, ids=[json.dumps(s) for s in STEPS])
def test_a_step_with_a_control_character_is_shown_as_a_json_string(tmp_path: Path, cli, step: str) -> None:
    path = tmp_path / "s.jsonl"
    lines = [{"kind": "step.started", "step_id": step}, {"kind": "step.completed", "step_id": step},
             {"kind": "step.started", "step_id": "later"}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    code, out, errors = cli("walk", str(path))
    assert (code, errors) == (0, [])
    first = out.decode().splitlines()[0]
    assert first.isascii() and first[25] == '"', first
    read, _ = json.JSONDecoder().raw_decode(first, 25)  # (the step column, after the kind's 24 and a space)
    assert read == step, first
    if "\x00" not in step:  # (no argument can hold a NUL byte)
        code, out, errors = cli("walk", str(path), "--at", read)
        assert (code, errors, len(out.splitlines())) == (0, [], 2)


def test_a_kind_with_a_control_character_is_shown_as_a_json_string(tmp_path: Path, cli) -> None:
    path = tmp_path / "k.jsonl"
    path.write_text(json.dumps({"kind": "step\x01started", "step_id": "s"}) + "\n")
    code, out, errors = cli("walk", str(path))
    assert (code, errors) == (0, []) and out.decode().split()[0] == '"step\\u0001started"'


def test_a_step_that_begins_with_a_quote_is_shown_as_a_json_string(tmp_path: Path, cli) -> None:
    """A step `"-"` (quotes in it) is not shown as the step `-` is, nor `"a\\tb"` (a backslash and a t) as a<TAB>b:
    each column, JSON-decoded, is its own step."""
    steps = ['"-"', "-", '"a\\tb"', "a\tb", '"', 'x"']
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps({"kind": "step.completed", "step_id": s}) + "\n" for s in steps))
    code, out, errors = cli("walk", str(path))
    assert (code, errors) == (0, [])
    columns = [line[25:].split(" ")[0] for line in out.decode().splitlines()]
    assert columns[-1] == 'x"'  # (a quote further on is no quoted form)
    assert [json.loads(c) for c in columns[:-1]] == steps[:-1]

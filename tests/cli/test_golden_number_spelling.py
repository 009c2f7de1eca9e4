"""`golden check` says when two lines differ only in a number's digits beyond a double's precision, and where."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from conftest import errors_of, run_replay


@pytest.mark.parametrize(("recorded", "new", "double"), [
    ("0.1", "0.10000000000000001", "0.1"),
    ("1.7976931348623157e308", "1.7976931348623158e308", "1.7976931348623157e+308"),
    ("9007199254740993.0", "9007199254740992.0", "9007199254740992.0"),
])
def test_a_number_written_past_a_doubles_precision_is_named(tmp_path: Path, recorded: str, new: str, double: str):
    """They still differ (numbers are compared exactly), but the difference said only "line 1 differs after
    normalisation": it names the number now, its path and how each line writes it, as for an integer and a float."""
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(f'{{"x":"same","p":{{"n":[1,{recorded}]}}}}\n')
    b.write_text(f'{{"x":"same","p":{{"n":[1,{new}]}}}}\n')
    done = run_replay("golden", "check", str(a), str(b))
    assert done.returncode == 1
    said = orjson.loads(done.stdout)["difference"]
    assert "differ only in how a number is written ($.p.n[1]: " in said, said
    assert f"in the recorded line, {new} in the new one" in said and f"reads both as {double}," in said
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_GOLDEN_MISMATCH" and said in error["message"]


def test_numbers_of_other_doubles_are_a_plain_difference(tmp_path: Path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text('{"n":0.1}\n')
    b.write_text('{"n":0.2}\n')
    done = run_replay("golden", "check", str(a), str(b))
    assert (done.returncode, orjson.loads(done.stdout)["difference"]) == (1, "line 1 differs after normalisation")


@pytest.mark.parametrize(("recorded", "new", "which"), [
    ('{"n":1e2}\n', '{"n":100}\n', "$.n: 1e2 in the recorded line, 100 in the new one"),
    ('{"n":100}\n', '{"n":1E+2}\r\n', "$.n: 100 in the recorded line, 1E+2 in the new one"),
    ('\ufeff{"timestamp":"2026-01-01T00:00:00Z","p":{"n b":[0, 100.00]}}\n',
     '\ufeff{"timestamp":"2027-05-05T10:00:00Z","p":{"n b":[0, 100]}}\n',
     '$.p["n b"][1]: 100.00 in the recorded line, 100 in the new one'),
])
def test_an_integer_and_a_float_are_named_with_both_spellings(tmp_path: Path, recorded: str, new: str, which: str):
    """Each number as its line writes it (README: "how each line writes it"): the message quoted the value written
    again (`100.0` for a line that writes `1e2`; found by a tester). A mark, a CR, a normalised key leave it so."""
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_bytes(recorded.encode())
    b.write_bytes(new.encode())
    said = orjson.loads(run_replay("golden", "check", str(a), str(b)).stdout)["difference"]
    assert f"({which}: an integer in one line, a float in the other)" in said, said

"""walk --json adds up each step's spend leaving out an amount that is no count (a negative number, true, a number
written as text), with a warning (E_USAGE_NOT_COUNTED, the record's line and the amount's path), as report leaves such
a usage value out; names that are no amounts (`"service_tier": "default"`) are kept, unwarned, and a spend record's ids
and versions (`"request_id": "4711"`, `"version": 2`) are no spend."""

from __future__ import annotations

from pathlib import Path

import orjson
from conftest import run_replay

RECORDS = (b'{"kind":"spend","step_id":"s","usd":1,"tokens":10,"requestId":4711,"version":2}\n'
           b'{"kind":"spend","step_id":"s","usd":"1.5","tokens":5,"request_id":"4711","model_version":"2","PAID":"3"}\n'
           b'{"kind":"spend","step_id":"s","usd":-2}\n'
           b'{"kind":"step.completed","step_id":"s","spend":{"usd":0.5,"tier":"default","flag":true}}\n'
           b'{"kind":"step.completed","step_id":"t","spend":-3}\n')


def _notices(stderr: bytes) -> list[dict]:
    return [orjson.loads(line) for line in stderr.splitlines() if b'"E_USAGE_NOT_COUNTED"' in line]


def test_walk_json_leaves_out_and_warns_of_spend_that_is_no_count(tmp_path: Path) -> None:
    path = tmp_path / "spend.jsonl"
    path.write_bytes(RECORDS)
    done = run_replay("walk", str(path), "--json")
    assert done.returncode == 0, done.stderr
    spends = [orjson.loads(line)["spend"] for line in done.stdout.splitlines()]
    assert spends == [{"usd": 1, "tokens": 10}, {"usd": 1, "tokens": 15}, {"usd": 1, "tokens": 15},
                      {"usd": 1.5, "tokens": 15, "tier": "default"}, None]
    said = [(n["line"], n["path"], n["received"], n["step_id"], n["level"]) for n in _notices(done.stderr)]
    assert said == [(2, "$.usd", "$.usd, $.PAID", "s", "warning"), (3, "$.usd", "$.usd", "s", "warning"),
                    (4, "$.spend.flag", "$.spend.flag", "s", "warning"), (5, "$.spend", "$.spend", "t", "warning")]
    text = run_replay("walk", str(path))  # (the text form shows each record's own spend, as journaled: no total)
    assert text.returncode == 0 and _notices(text.stderr) == [] and b'spend={"usd":-2}' in text.stdout


def test_a_record_a_document_held_is_named_by_its_place_in_it(tmp_path: Path) -> None:
    """A JSON document's records have no line: the warning points into the document (``$[1].usd``), not at ``$.usd``."""
    path = tmp_path / "steps.json"
    path.write_bytes(b'[{"kind":"step.started","step_id":"s"},{"kind":"spend","step_id":"s","usd":"1.5"}]')
    done = run_replay("walk", str(path), "--json")
    assert done.returncode == 0, done.stderr
    [notice] = _notices(done.stderr)
    assert (notice["path"], notice["received"]) == ("$[1].usd", "$[1].usd")
    assert notice["message"].startswith("record $[1]: spend $[1].usd is not a count")

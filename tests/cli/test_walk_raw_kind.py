"""walk --json gives each record's kind as journaled (seed 001: "kind is the raw event kind from the journal"): an
empty string as written, a kind that is no string as it is, null when the record has none; the text form keeps `?`."""

from __future__ import annotations

from pathlib import Path

import orjson

RECORDS = b'{"kind":"","step_id":"e"}\n{"step_id":"f"}\n{"kind":5}\n{"kind":null,"type":"t"}\n{"type":"tool_called"}\n'
KINDS = ["", None, 5, "t", "tool_called"]  # (a non-empty text in `kind` or `type` first, else what `kind` holds)


def test_walk_json_gives_the_kind_as_journaled(tmp_path: Path, cli) -> None:
    path = tmp_path / "k.jsonl"
    path.write_bytes(RECORDS)
    code, out, errors = cli("walk", str(path), "--json")
    assert (code, errors) == (0, [])
    assert [orjson.loads(line)["kind"] for line in out.splitlines()] == KINDS
    code, out, errors = cli("walk", str(path))
    assert [line.split()[0] for line in out.decode().splitlines()] == ["?", "?", "?", "t", "tool_called"]


def test_walk_stage_json_gives_the_kind_as_journaled_from_held_records(tmp_path: Path, cli) -> None:
    """With `at` on stdin (no pre-scan) the records before the step are held, then shown: their kind as journaled too."""
    config = tmp_path / "walk.toml"
    config.write_text('[stages.read]\ntype = "read"\n[stages.walk]\ntype = "walk"\ninputs = ["read", "read.errors"]\n'
                      'at = "f"\nformat = "json"\n[stages.out]\ntype = "write"\ninputs = ["walk"]\n')
    code, out, errors = cli("run", str(config), "-", input=RECORDS)
    assert (code, errors) == (0, [])
    assert [orjson.loads(line)["kind"] for line in out.splitlines()] == ["", None]

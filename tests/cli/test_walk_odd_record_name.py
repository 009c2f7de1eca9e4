"""walk reads a reserved record whose `$record` is a number no double or 64-bit integer holds (a huge integer,
`1e999`) as any other odd `$record`: its kind is `$` and the name as exact JSON writes it, in the text form, --json and
the pre-scan of --at alike (it used to fail, E_STAGE_FAILED or E_UNHANDLED)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

NAMES = [b"100000000000000000000", b"1e999", b"-1e999"]


@pytest.mark.parametrize("name", NAMES, ids=[n.decode() for n in NAMES])
def test_walk_reads_a_record_named_by_a_number_beyond_range(tmp_path: Path, cli, name: bytes) -> None:
    path = tmp_path / "big.jsonl"
    path.write_bytes(b'{"kind":"run.spawned","run_id":"r-5"}\n{"kind":"step.scheduled","step_id":"s1"}\n'
                     b'{"$record": ' + name + b', "step_id":"s1"}\n{"kind":"step.completed","step_id":"s1"}\n'
                     b'{"kind":"run.completed","run_id":"r-5"}\n')
    code, out, errors = cli("walk", str(path))
    assert (code, errors) == (0, [])
    assert out.decode().splitlines()[2].split() == ["$" + name.decode(), "-", "[info]"]
    code, out, errors = cli("walk", str(path), "--json")
    assert (code, errors) == (0, [])
    line = json.loads(out.splitlines()[2])  # (orjson reads no 1e999)
    assert (line["kind"], line["step_id"]) == ("$" + name.decode(), None)
    code, out, errors = cli("walk", str(path), "--at", "s1")
    assert (code, errors, len(out.splitlines())) == (0, [], 4)

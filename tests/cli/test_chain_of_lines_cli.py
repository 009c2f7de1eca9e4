"""A `chain` whose lines reach its end unparsed (`["write"]`, `["read"]`, `["read", "write"]`, a stage that passes lines
on) is `replay read`'s graph: its bad lines are reported as `replay read` reports them (exit 1), never written as data,
and its output is `replay read`'s, byte for byte (found by a read-only tester: they came out as data, exit 0, and the
torn last line got a newline, so a later `replay heal` no longer saw it torn)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from conftest import EXAMPLES, errors_of, run_replay, timeless
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

MESSY = EXAMPLES / "journals" / "messy.jsonl"  # line 3 no JSON, line 5 an array, a torn last line
CODES = ["E_JSONL_LINE_INVALID", "E_EVENT_NOT_OBJECT", "E_JSONL_LINE_TORN"]
TORN = b'"type":"assistant_mess'


@pytest.mark.parametrize("chain", ['["write"]', '["read"]', '["read", "write"]', '["join_split_records"]',
                                   '[{ type = "read", id = "parse" }, { type = "write", id = "notices" }]'])
def test_a_chain_of_lines_reports_and_writes_what_replay_read_does(tmp_path: Path, chain: str):
    config = tmp_path / "c.toml"
    config.write_text(f"chain = {chain}\n")
    ran = run_replay("run", str(config), str(MESSY), process=True)
    read = run_replay("read", str(MESSY), process=True)
    assert read.returncode == 1 and [e["code"] for e in errors_of(read.stderr)] == CODES
    assert ran.returncode == 1 and [e["code"] for e in errors_of(ran.stderr)] == CODES
    assert ran.stdout == read.stdout
    records = [orjson.loads(line) for line in ran.stdout.splitlines()]  # every line an object: no bad line as data
    assert [r["code"] for r in records if r.get("$record") == "dropped"] == CODES
    assert not any(line.startswith(b"{") and TORN in line and b'"$record"' not in line for line in ran.stdout.splitlines())


def test_a_chain_writing_lines_to_a_file_writes_what_replay_read_prints(tmp_path: Path):
    config = tmp_path / "c.toml"
    config.write_text('chain = [{ type = "write", path = "out.jsonl" }]\n')
    ran = run_replay("run", str(config), str(MESSY), cwd=tmp_path, process=True)
    read = run_replay("read", str(MESSY), process=True)
    assert ran.returncode == 1 and [e["code"] for e in errors_of(ran.stderr)] == CODES
    assert (tmp_path / "out.jsonl").read_bytes() == read.stdout


def test_a_stage_taking_events_after_one_passing_lines_gets_parse_in_front(tmp_path: Path):
    # (`parse` went in front of the chain's second stage only: after join_split_records, select was refused, exit 2)
    config = tmp_path / "c.toml"
    config.write_text('chain = ["join_split_records", { type = "select", types = ["tool_*"] }]\n')
    ran = run_replay("run", str(config), str(MESSY), process=True)
    assert ran.returncode == 1 and [e["code"] for e in errors_of(ran.stderr)] == CODES
    assert [orjson.loads(line)["type"] for line in ran.stdout.splitlines()] == ["tool_called", "tool_completed"]


LINES = st.sampled_from([
    b'{"seq":1,"type":"run_started","runId":"r","timestamp":"2026-03-01T12:00:00.000Z","payload":{}}',
    b'{"seq":2,"type":"user_message","runId":"r","payload":{"text":"hi"}}',
    b"a log line", b'["not", "an", "object"]', b"42", b'{"a":1,"a":2}', b'{"torn":', b"", b"   ", b'{"$record":"run"}',
])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(LINES, max_size=6), newline_at_end=st.booleans())
def test_any_journal_through_a_write_chain_is_as_replay_read_has_it(tmp_path: Path, lines: list[bytes],
                                                                     newline_at_end: bool):
    journal = tmp_path / "j.jsonl"
    journal.write_bytes(b"\n".join(lines) + (b"\n" if newline_at_end and lines else b""))
    config = tmp_path / "c.toml"
    config.write_text('chain = ["write"]\n')
    ran, read = run_replay("run", str(config), str(journal)), run_replay("read", str(journal))
    assert (ran.returncode, ran.stdout, timeless(ran.stderr)) == (read.returncode, read.stdout, timeless(read.stderr))

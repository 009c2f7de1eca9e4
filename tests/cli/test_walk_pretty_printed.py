"""`replay walk` of a journal with records pretty-printed across lines (`jq .`): each is joined back into one record as
heal joins it, walked as one event (its step ends, `--at` stops, at it), and its join said on stderr as heal logs it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import CORPUS, FIXTURES, errors_of, jsonl, run_replay
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

RULE = "join_split_records"
RECORDS = [orjson.loads(line) for line in (FIXTURES / "walk" / "hello.jsonl").read_bytes().splitlines()]


def written(records: list[dict[str, Any]], pretty: set[int], indent: int = 2) -> bytes:
    """The journal, the records at ``pretty`` written over several lines, the others one a line."""
    return b"".join((json.dumps(r, indent=indent) if k in pretty else json.dumps(r, separators=(",", ":"))).encode() + b"\n"
                    for k, r in enumerate(records))


def joins_said(stderr: bytes) -> list[dict[str, Any]]:
    """The joins a walk said on stderr (notices), without what the log line adds (event, level, time)."""
    said = [orjson.loads(line) for line in stderr.splitlines() if line.startswith(b'{"rule":"' + RULE.encode())]
    return [{k: v for k, v in note.items() if k not in ("event", "level", "timestamp")} for note in said]


@pytest.mark.parametrize(("where", "at"), [(0, "step-1"), (3, "step-1"), (8, "step-2")], ids=["start", "middle", "end"])
def test_a_pretty_printed_record_is_walked_as_the_one_line_record(tmp_path: Path, where: int, at: str) -> None:
    """The walk was refused (its first record: exit 2) or ended at the record's first line (`{`, E_JOURNAL_READ_FAILED,
    exit 1), where heal joins the lines and logs the join."""
    compact, pretty = tmp_path / "compact.jsonl", tmp_path / "pretty.jsonl"
    compact.write_bytes(written(RECORDS, set()))
    pretty.write_bytes(written(RECORDS, {where}))
    log = tmp_path / "repairs.jsonl"
    assert run_replay("heal", "--log", str(log), str(pretty), process=True).returncode in (0, 1)
    logged = [entry for entry in jsonl(log.read_bytes()) if entry["rule"] == RULE]
    assert len(logged) == 1 and logged[0]["line"] == where + 1
    for flags in ([], ["--json"], ["--at", at], ["--at", at, "--json"]):
        want = run_replay("walk", *flags, str(compact), process=True)
        got = run_replay("walk", *flags, str(pretty), process=True)
        assert (got.returncode, errors_of(got.stderr)) == (0, []), got.stderr
        assert got.stdout == want.stdout if "--json" not in flags else jsonl(got.stdout) == jsonl(want.stdout)
        shown = len(got.stdout.splitlines())
        assert shown == (len(RECORDS) if "--at" not in flags else len(want.stdout.splitlines()))
        # the join said as heal logs it, once the walk has read that far (`--at step-2` stops before the last record),
        # but not the record's text again: a walk of a pretty-printed journal does not copy it onto stderr
        assert joins_said(got.stderr) == ([{k: v for k, v in logged[0].items() if k != "original"}] if where < shown else [])


def test_a_line_that_cannot_be_read_after_a_joined_record_is_reported_at_its_own_line_and_byte(tmp_path: Path) -> None:
    """Positions count the joined record's lines and bytes (the walk's line numbers and byte offsets are the file's)."""
    data = written(RECORDS[:4], {2, 3}) + b"not json\n" + written(RECORDS[4:], set())
    path = tmp_path / "torn.jsonl"
    path.write_bytes(data)
    for flags in ([], ["--at", "step-2"]):
        done = run_replay("walk", *flags, str(path), process=True)
        [error] = errors_of(done.stderr)
        assert done.returncode == 1 and len(done.stdout.splitlines()) == 4
        assert (error["code"], error["offset"], error["line"]) == \
            ("E_JOURNAL_READ_FAILED", data.index(b"not json"), data[:data.index(b"not json")].count(b"\n") + 1)


values = st.recursive(st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=6),
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                      max_leaves=6)
KINDS = ["step.scheduled", "step.attempt.started", "step.attempt.failed", "step.completed", "step.failed", "spend"]


@st.composite
def journals(draw: st.DrawFn) -> tuple[list[dict[str, Any]], set[int], int]:
    """A flows-style run (records with `kind` and `step_id`, any payload), which of its records are pretty-printed,
    and the indent."""
    records: list[dict[str, Any]] = [{"kind": "run.spawned", "run_id": "r", "flow": draw(values)}]
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(KINDS))
        record = {"kind": kind, "run_id": "r", "step_id": draw(st.sampled_from(["s1", "s2", "s3"])), "data": draw(values)}
        if kind == "spend":
            record["tokens_in"] = draw(st.integers(0, 100))
        records.append(record)
    records.append({"kind": "run.completed", "run_id": "r", "outcome": "success"})
    pretty = draw(st.sets(st.integers(0, len(records) - 1), min_size=1))
    return records, pretty, draw(st.sampled_from([1, 2, 4]))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(journals())
def test_walking_the_pretty_printed_form_gives_the_events_of_the_one_line_form_at_every_step(
        tmp_path: Path, journal: tuple[list[dict[str, Any]], set[int], int]) -> None:
    records, pretty, indent = journal
    compact, printed = tmp_path / "compact.jsonl", tmp_path / "pretty.jsonl"
    compact.write_bytes(written(records, set()))
    printed.write_bytes(written(records, pretty, indent))
    steps = sorted({r["step_id"] for r in records if "step_id" in r})
    for flags in (["--json"], *(["--json", "--at", step] for step in steps)):
        want = run_replay("walk", *flags, str(compact))
        got = run_replay("walk", *flags, str(printed))
        assert (got.returncode, errors_of(got.stderr)) == (want.returncode, errors_of(want.stderr)) == (0, []), got.stderr
        assert jsonl(got.stdout) == jsonl(want.stdout)  # the same events, step by step, in the same places
        joined = [k for k in sorted(pretty) if k < len(got.stdout.splitlines())]
        assert [note["line"] for note in joins_said(got.stderr)] == \
            [written(records[:k], pretty, indent).count(b"\n") + 1 for k in joined]
    assert run_replay("walk", str(printed)).stdout == run_replay("walk", str(compact)).stdout


def test_another_agent_s_pretty_printed_log_walked_counts_the_join_once_in_its_heal_record(tmp_path: Path) -> None:
    """Another agent's log is walked through heal's rules (walk-log.toml: join -> parse -> ... -> heal -> walk). Both
    parse and walk take the joins a join hands on; parse, the first, takes them off the batches. Counting both, the
    join logged them on a port no stage reads, and the heal record the walk shows left the join out."""
    lines = (CORPUS / "codex" / "rollout-66666666-6666-4666-8666-666666666666.jsonl").read_text().splitlines()
    lines[1] = json.dumps(json.loads(lines[1]), indent=1)
    path = tmp_path / "rollout.jsonl"
    path.write_text("\n".join(lines) + "\n")
    done = run_replay("walk", "--json", str(path))
    heal = [r["event"] for r in jsonl(done.stdout) if r["kind"] == "$heal"]
    assert [h["byRule"].get(RULE) for h in heal] == [1], heal


def test_a_saved_read_stream_s_dropped_pieces_end_the_walk_with_or_without_at(tmp_path: Path) -> None:
    """Found by review: the join walked through the pieces a saved `replay read` stream keeps whole in its dropped
    records, while `--at`'s pre-scan ended at the first of them (E_JOURNAL_READ_FAILED): a plain walk and a walk
    `--at` disagreed. A walk's join takes no dropped record (walk.toml: `marks = false`), and both end there, as README
    says of a saved stream."""
    journal, saved = tmp_path / "pretty.jsonl", tmp_path / "saved.jsonl"
    journal.write_bytes(written(RECORDS, {3}))
    saved.write_bytes(run_replay("read", str(journal)).stdout)
    steps = sorted({r["step_id"] for r in RECORDS if "step_id" in r})
    for flags in ([], ["--at", steps[-1]]):
        done = run_replay("walk", *flags, str(saved))
        assert done.returncode == 1 and [e["code"] for e in errors_of(done.stderr)] == ["E_JOURNAL_READ_FAILED"], flags

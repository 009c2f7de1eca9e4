"""A record that is no event (no `type`) is reported by export, as validate reports it, and not exported: it became a
run of its own, an `invoke_agent` span at the Unix epoch, with exit 0 and no word."""

from __future__ import annotations

from pathlib import Path

import orjson
from conftest import EXAMPLES, errors_of, run_replay

TWO_RUNS = EXAMPLES / "journals" / "two-runs.jsonl"


def test_a_record_with_no_type_is_reported_and_not_a_span(tmp_path: Path):
    lone = tmp_path / "g.jsonl"
    lone.write_bytes(b'{"a":1}\n')
    done = run_replay("export", "--otlp", str(lone))
    assert (done.returncode, done.stdout) == (1, b""), done.stderr
    [error] = errors_of(done.stderr)
    assert (error["code"], error["source"], error["line"], error["received"]) == (
        "E_ARTIFACT_EVENT_TYPE_INVALID", str(lone), 1, "missing"), error
    assert "E_ARTIFACT_EVENT_TYPE_INVALID" in [e["code"] for e in errors_of(run_replay("validate", str(lone)).stderr)]


def test_the_events_around_a_record_with_no_type_are_exported_as_without_it(tmp_path: Path):
    lines = TWO_RUNS.read_bytes().splitlines(keepends=True)
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_bytes(b"".join(lines[:3]) + b'{"a":1}\n{"type":""}\n' + b"".join(lines[3:]))
    clean = tmp_path / "clean.jsonl"
    clean.write_bytes(TWO_RUNS.read_bytes())
    done = run_replay("export", "--otlp", str(mixed))
    assert done.returncode == 1
    assert [(e["code"], e["line"]) for e in errors_of(done.stderr)] == [("E_ARTIFACT_EVENT_TYPE_INVALID", 4),
                                                                         ("E_ARTIFACT_EVENT_TYPE_INVALID", 5)]
    expected = run_replay("export", "--otlp", str(clean))
    assert expected.returncode == 0, expected.stderr

    def spans(out: bytes) -> list[tuple[str, str, str]]:
        return [(s["name"], s["startTimeUnixNano"], s["endTimeUnixNano"]) for line in out.splitlines()
                for s in orjson.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"]]

    assert spans(done.stdout) == spans(expected.stdout) and all(start != "0" for _, start, _ in spans(done.stdout))


def test_a_dialect_named_against_the_log_is_an_error_and_the_log_is_mapped_as_named_as_read_maps_it():
    """`export --otlp --dialect openhands` of replay's own journal: E_DIALECT_MISMATCH says it was "mapped as
    openhands as asked", and it is (the traces of `read --dialect openhands | export --otlp`), exit 1 as read's and
    heal's with the same flags."""
    done = run_replay("export", "--otlp", "--dialect", "openhands", str(TWO_RUNS))
    assert done.returncode == 1
    [error] = errors_of(done.stderr)
    assert (error["code"], error["expected"], error["received"]) == ("E_DIALECT_MISMATCH", "openhands", "canonical")
    assert "mapped as openhands as asked" in error["message"]
    for command in (["read"], ["heal"]):
        assert run_replay(*command, "--dialect", "openhands", str(TWO_RUNS)).returncode == 1, command
    mapped = run_replay("read", "--dialect", "openhands", str(TWO_RUNS)).stdout
    piped = run_replay("export", "--otlp", input=mapped)

    def names(out: bytes) -> list[list[str]]:
        return [[s["name"] for s in orjson.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"]]
                for line in out.splitlines()]

    assert names(done.stdout) == names(piped.stdout) != names(run_replay("export", "--otlp", str(TWO_RUNS)).stdout)

"""`replay export --otlp` of a run that tells no time: heal's stand-in time (the Unix epoch) is no time, as `report` reads
it; such a run's spans are written at 0 (OTLP's unset value), marked on the run's span, and said in a warning."""

from __future__ import annotations

import orjson
from conftest import jsonl, run_replay
from test_otlp_cli import attribute_values, journal_line, parse

EPOCH = "1970-01-01T00:00:00.000Z"


def untimed(seq: int, etype: str, payload: str = "{}") -> bytes:
    return f'{{"seq":{seq},"type":"{etype}","runId":"r1","payload":{payload}}}\n'.encode()


NO_TIME = (untimed(1, "user_message", '{"text":"hi"}')
           + untimed(2, "assistant_message", '{"text":"yo","model":"claude-x","usage":{"inputTokens":3}}')
           + untimed(3, "tool_called", '{"toolName":"Bash","callId":"c1"}')
           + untimed(4, "tool_completed", '{"toolName":"Bash","callId":"c1"}'))


def notices(stderr: bytes) -> list[dict]:
    return [orjson.loads(line) for line in stderr.splitlines()]


def test_a_healed_run_that_tells_no_time_is_exported_at_zero_with_a_warning(tmp_path):
    """Heal stamps a run with no time 1970-01-01T00:00:00.000Z; the export wrote its spans there without a word."""
    raw = tmp_path / "notime.jsonl"
    raw.write_bytes(NO_TIME)
    healed = run_replay("heal", str(raw))
    assert healed.returncode == 0 and EPOCH.encode() in healed.stdout
    for done in (run_replay("export", "--otlp", input=healed.stdout), run_replay("export", "--otlp", str(raw))):
        assert done.returncode == 0, done.stderr
        (request,) = [parse(line) for line in jsonl(done.stdout)]
        spans = request.resource_spans[0].scope_spans[0].spans
        assert {s.name for s in spans} >= {"chat claude-x", "execute_tool Bash"}
        assert {(s.start_time_unix_nano, s.end_time_unix_nano) for s in spans} == {(0, 0)}
        (root,) = [s for s in spans if not s.parent_span_id]
        assert attribute_values(root)["replay.time_unknown"] is True
        assert attribute_values(root)["gen_ai.usage.input_tokens"] == 3  # the rest of the trace is there
        (notice,) = notices(done.stderr)
        assert (notice["code"], notice["level"], notice["event"], notice["runId"]) == (
            "E_OTLP_TIME_UNKNOWN", "warning", "notice", "r1")
        assert "times 0" in notice["message"] and notice["howToFix"]


def test_heal_s_stand_in_time_is_no_time_beside_a_real_one(tmp_path):
    """Heal gives the stand-in to a run's first events when too many wait for its first time (fix_timestamp's
    MAX_WAITING): the run's span began in 1970 and lasted 56 years; it begins at the first time the run tells."""
    journal = tmp_path / "f.jsonl"
    journal.write_bytes(journal_line(1, "user_message", EPOCH, '{"text":"hi"}')
                        + journal_line(2, "assistant_message", EPOCH, '{"text":"yo","model":"claude-x"}')
                        + journal_line(3, "user_message", "2026-03-01T12:00:00.000Z", '{"text":"more"}')
                        + journal_line(4, "assistant_message", "2026-03-01T12:00:01.000Z", '{"text":"ok"}'))
    done = run_replay("export", "--otlp", str(journal))
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    (request,) = [parse(line) for line in jsonl(done.stdout)]
    spans = request.resource_spans[0].scope_spans[0].spans
    assert min(s.start_time_unix_nano for s in spans) == 1772366400000000000
    (root,) = [s for s in spans if not s.parent_span_id]
    assert (root.start_time_unix_nano, root.end_time_unix_nano) == (1772366400000000000, 1772366401000000000)
    assert "replay.time_unknown" not in attribute_values(root)


def test_the_warning_says_why_a_run_tells_no_time(tmp_path):
    """A run whose events' timestamps are all out of OTLP's range (1960, 2600) was said to have "no event with a
    timestamp", beside replay.timestamps_out_of_range = 2 on its span: the warning says what is true, each kind counted."""
    journal = tmp_path / "f.jsonl"
    journal.write_bytes(journal_line(1, "run_started", "1960-01-01T00:00:00.000Z")
                        + journal_line(2, "run_completed", "2600-01-01T00:00:00.000Z"))
    done = run_replay("export", "--otlp", str(journal))
    (request,) = [parse(line) for line in jsonl(done.stdout)]
    (root,) = [s for s in request.resource_spans[0].scope_spans[0].spans if not s.parent_span_id]
    assert attribute_values(root)["replay.timestamps_out_of_range"] == 2
    (notice,) = notices(done.stderr)
    assert notice["code"] == "E_OTLP_TIME_UNKNOWN"
    assert "(2 events with a timestamp outside what OTLP holds: before 1970 or after 2554-07-21" in notice["message"]
    assert "no timestamp" not in notice["message"] and "1970 to 2554-07-21" in notice["howToFix"]
    journal.write_bytes(journal_line(1, "run_started", "1960-01-01T00:00:00.000Z")
                        + journal_line(2, "user_message", "yesterday") + untimed(3, "run_completed"))
    (notice,) = notices(run_replay("export", "--otlp", str(journal)).stderr)
    assert ("(of its events: 1 event with a timestamp outside what OTLP holds: before 1970 or after 2554-07-21, "
            "replay.timestamps_out_of_range; 1 event with a timestamp that is no RFC 3339 time; 1 event with no "
            "timestamp, or only heal's stand-in 1970-01-01T00:00:00.000Z)") in notice["message"]
    raw = tmp_path / "notime.jsonl"
    raw.write_bytes(NO_TIME)
    (notice,) = notices(run_replay("export", "--otlp", str(raw)).stderr)
    assert "(4 events with no timestamp, or only heal's stand-in 1970-01-01T00:00:00.000Z)" in notice["message"]

"""What heal, validate and report write depends on the input bytes only, not on where they were cut: the batch size
(``BATCH_EVENTS``), the read size (``CHUNK_BYTES``), a file or a pipe. Each command runs in-process, as `replay`
does, with read's sizes made small, so the same input comes in batches of one line, of a few, and whole."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest
from conftest import piped_line_by_line, run_replay
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from replay.stages import read

# (batch size, read size): lines one at a time, a few at a time from reads that cut lines apart, and all at once
CUTS = [(1, 1 << 17), (2, 7), (3, 50), (1024, 64), (1024, 1 << 17)]
_LOG_TIME = re.compile(rb',"timestamp":"\d{4}-\d\d-\d\dT[0-9:.]+Z"}')  # (when a log line on stderr was written)


def cut_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, data: bytes, args: list[str], batch: int, chunk: int
            ) -> tuple[int, bytes, bytes, list[bytes]]:
    """`replay ARGS` over ``data`` (a file, ``@J`` in ``args``; ``@L`` a log file) read in batches of ``batch`` lines
    and reads of ``chunk`` bytes: the exit code, stdout, the log file, and the lines on stderr, sorted (the stages
    that say them run as tasks of their own: the order two of them speak in is the scheduler's)."""
    path, log = tmp_path / "j.jsonl", tmp_path / "log.jsonl"
    path.write_bytes(data)
    log.unlink(missing_ok=True)
    monkeypatch.setattr(read, "BATCH_EVENTS", batch)
    monkeypatch.setattr(read, "CHUNK_BYTES", chunk)
    done = run_replay(*[str(path) if a == "@J" else str(log) if a == "@L" else a for a in args])
    err = sorted(_LOG_TIME.sub(b"}", line) for line in done.stderr.splitlines())
    return done.returncode, done.stdout, log.read_bytes() if log.exists() else b"", err


def same_for_every_cut(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, data: bytes, args: list[str]) -> tuple:
    """What ``args`` give for ``data``, the same for every way of cutting it (``CUTS``)."""
    first, *rest = [cut_run(monkeypatch, tmp_path, data, args, batch, chunk) for batch, chunk in CUTS]
    for (batch, chunk), other in zip(CUTS[1:], rest, strict=True):
        assert other == first, f"batches of {batch} lines, reads of {chunk} bytes"
    return first


def lines(*rows: bytes) -> bytes:
    return b"".join(row + b"\n" for row in rows)


# r0 (its first line one the screen cannot read: `step` 1.5, so the whole input goes the slow way, as read cut it),
# a run record of rr, r0 again, then v0, which heal drops whole (an orphaned result): neither r0 has a terminal event
R0_COMES_BACK = lines(
    b'{"seq":1,"timestamp":"2026-03-01T12:00:00.000Z","type":"run_started","runId":"r0","payload":{},"step":1.5}',
    b'{"$record":"run","runId":"rr","status":"ok","response":"hello"}',
    b'{"seq":1,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_started","runId":"r0","payload":{}}',
    b'{"seq":1,"timestamp":"2026-03-01T12:00:02.000Z","type":"tool_completed","runId":"v0","payload":{"callId":"gone"}}')


def test_a_run_id_that_comes_back_has_its_own_repairs_however_the_input_is_cut(monkeypatch, tmp_path: Path):
    """Known fault: a stream the screen leaves alone goes to the rules several runs to a batch, and each rule took the
    whole batch before the next saw it. Both r0s' missing terminal events (repairs at no line of the input) were then
    logged before heal_summary saw the first r0 end, and it counted both with it: in one batch, the first r0's heal
    record said 2 ensure_terminal and the second r0 had none; in batches of one line, one each. Now ``cut_runs``
    cuts a batch where each run begins: the rules take a run at a time, whatever the batches."""
    _, out, log, _ = same_for_every_cut(monkeypatch, tmp_path, R0_COMES_BACK, ["heal", "@J", "--log", "@L"])
    heal = [line for line in out.splitlines() if line.startswith(b'{"$record":"heal"')]
    assert heal == [b'{"$record":"heal","runId":"r0","repairs":1,"byRule":{"ensure_terminal":1}}',
                    b'{"$record":"heal","runId":"rr","repairs":3,"byRule":{"ensure_run_started":1,"ensure_terminal":1,'
                    b'"synthesize_assistant_message":1}}',
                    b'{"$record":"heal","runId":"r0","repairs":1,"byRule":{"ensure_terminal":1}}',
                    b'{"$record":"heal","runId":"v0","repairs":1,"byRule":{"pair_tool_calls":1},"runDropped":true}']
    # the log goes run by run: each rule's lines of a run, then that run's end, before the next run's
    rules = [(entry.split(b'"rule":"')[1].split(b'"')[0], entry.split(b'"runId":')[1].split(b",")[0])
             for entry in log.splitlines()]
    assert rules == [(b"ensure_terminal", b'"r0"'), (b"ensure_run_started", b'"rr"'),
                     (b"synthesize_assistant_message", b'"rr"'), (b"ensure_terminal", b'"rr"'),
                     (b"ensure_terminal", b'"r0"'), (b"pair_tool_calls", b'"v0"')]


def test_a_run_id_that_comes_back_after_reads_of_several_inputs_is_counted_the_same(monkeypatch, tmp_path: Path):
    """`replay read a b | replay heal`: after read's mark of an input, heal goes the slow way (as read cut it); r1 comes
    back in a.jsonl after r2, each time without its end."""
    a = lines(b'{"seq":1,"timestamp":"2026-03-01T12:00:00.000Z","type":"run_started","runId":"r1","payload":{}}',
              b'{"seq":1,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_started","runId":"r2","payload":{}}',
              b'{"seq":2,"timestamp":"2026-03-01T12:00:02.000Z","type":"run_completed","runId":"r2","payload":{}}',
              b'{"seq":1,"timestamp":"2026-03-01T12:00:03.000Z","type":"run_started","runId":"r1","payload":{}}',
              b'{"seq":2,"timestamp":"2026-03-01T12:00:04.000Z","type":"llm_message","runId":"r1","payload":{}}')
    (tmp_path / "a.jsonl").write_bytes(a)
    (tmp_path / "b.jsonl").write_bytes(a.replace(b'"r1"', b'"r3"'))
    piped = run_replay("read", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")).stdout
    assert piped.startswith(b'{"$record":"source"')
    _, out, _, _ = same_for_every_cut(monkeypatch, tmp_path, piped, ["heal", "@J", "--log", "@L"])
    heal = [line for line in out.splitlines() if line.startswith(b'{"$record":"heal"')]
    assert heal == [b'{"$record":"heal","runId":"r1","repairs":1,"byRule":{"ensure_terminal":1}}',
                    b'{"$record":"heal","runId":"r1","repairs":2,"byRule":{"alias":1,"ensure_terminal":1}}',
                    b'{"$record":"heal","runId":"r3","repairs":1,"byRule":{"ensure_terminal":1}}',
                    b'{"$record":"heal","runId":"r3","repairs":2,"byRule":{"alias":1,"ensure_terminal":1}}']


# any journal, cut any way ---------------------------------------------------------------------------------------------
TYPES = ["run_started", "user_message", "assistant_message", "tool_called", "tool_completed", "run_completed",
         "run_failed", "tool_end", "llm_message", "start"]  # (the last three aliases)
# records that begin no run: a heal record, a record of a kind replay does not know (null too), a dropped one
RECORDS = [b'{"$record":"heal","runId":"r0","repairs":1}', b'{"$record":null,"runId":"r1"}', b'{"$record":"other"}',
           b'{"$record":"dropped","code":"E_JSONL_LINE_INVALID","message":"m","line":3,"offset":9}']
# a first line the screen leaves to the slow way, with all that follows it: another kind of line (step 1.5), a source
# record (a saved `replay read` of several inputs)
OFF = [b'{"seq":1,"timestamp":"2026-03-01T12:00:00.000Z","type":"run_started","runId":"r9","payload":{},"step":1.5}',
       b'{"$record":"source","source":"j.jsonl"}']


@st.composite
def journals(draw: st.DrawFn) -> bytes:
    """Runs of a few ids (one comes back after another run), some opened by a run record, their events now and then
    of an aliased type, numbered wrong, without a terminal event or with a call never answered; reserved records that
    begin no run anywhere; maybe a first line that sends the whole input the slow way, maybe a cut-off last line."""
    lines: list[bytes] = [draw(st.sampled_from(OFF))] if draw(st.integers(0, 3)) == 0 else []
    second = 0
    for _ in range(draw(st.integers(1, 6))):
        rid = draw(st.sampled_from(["r0", "r1", "r2"]))
        if draw(st.integers(0, 3)) == 0:
            lines.append(orjson.dumps({"$record": "run", "runId": rid, "status": draw(st.sampled_from(["ok", "error"]))}))
        kinds = draw(st.lists(st.sampled_from(TYPES), min_size=1, max_size=8))
        if draw(st.booleans()):
            kinds = ["run_started", *kinds, "run_completed"]
        for seq, kind in enumerate(kinds, 1):
            second += 1
            seq = seq + draw(st.sampled_from([0, 0, 0, 0, 1, 40]))  # a wrong seq now and then
            payload = {"callId": f"c{seq % 3}"} if kind.startswith("tool") else {}
            lines.append(orjson.dumps({"seq": seq, "timestamp": f"2026-03-01T12:{second // 60:02d}:{second % 60:02d}.000Z",
                                       "type": kind, "runId": rid, "payload": payload}))
            if draw(st.integers(0, 15)) == 0:
                lines.append(draw(st.sampled_from(RECORDS)))
    data = b"".join(line + b"\n" for line in lines)
    if draw(st.integers(0, 5)) == 0:
        data += b'{"seq":99,"ty'  # cut off mid-write
    return data


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(journals())
@example(data=R0_COMES_BACK)
def test_heal_validate_and_report_are_the_same_however_the_input_is_cut(monkeypatch, tmp_path: Path, data: bytes):
    """Healed bytes, heal records, the heal log, validate's summary and errors and the report: the same for batches
    of 1 to 1,024 lines and reads of 7 bytes to 128 KiB. The heal log line for line in order too, but where the
    screen leaves the input to the slow way (``OFF``): a run over several batches is logged a batch at a time there
    (the same lines). And heal of what heal wrote writes it again, logging nothing."""
    code, healed, _, _ = same_for_every_cut(monkeypatch, tmp_path, data, ["heal", "@J"])
    runs = [cut_run(monkeypatch, tmp_path, data, ["heal", "@J", "--log", "@L"], batch, chunk) for batch, chunk in CUTS]
    assert {(c, out) for c, out, _, _ in runs} == {(code, healed)}
    logs = {log for _, _, log, _ in runs} if not data.startswith(tuple(OFF)) else {
        b"".join(sorted(log.splitlines(keepends=True))) for _, _, log, _ in runs}
    assert len(logs) == 1
    same_for_every_cut(monkeypatch, tmp_path, data, ["validate", "@J"])
    same_for_every_cut(monkeypatch, tmp_path, data, ["report", "--format", "json", "@J"])
    again = cut_run(monkeypatch, tmp_path, healed, ["heal", "@J", "--log", "@L"], 1024, 1 << 17)
    assert again[1] == healed and again[2] == b""


# r1 (an alias, no end), r2 (clean), r1 again (a wrong seq, no end), r0 (an orphaned result: dropped whole), r1 again
COMES_BACK_TWICE = lines(*[
    b'{"seq":%d,"timestamp":"2026-03-01T12:00:%02d.000Z","type":"%s","runId":"%s","payload":%s}' % row for row in [
        (1, 1, b"run_started", b"r1", b"{}"), (2, 2, b"llm_message", b"r1", b"{}"),
        (1, 3, b"run_started", b"r2", b"{}"), (2, 4, b"run_completed", b"r2", b"{}"),
        (1, 5, b"run_started", b"r1", b"{}"), (7, 6, b"user_message", b"r1", b"{}"),
        (1, 7, b"tool_completed", b"r0", b'{"callId":"gone"}'),
        (1, 8, b"run_started", b"r1", b"{}"), (2, 9, b"tool_end", b"r1", b'{"callId":"c1"}')]])


def test_a_pipe_that_pauses_inside_runs_heals_and_validates_as_the_file_does(tmp_path: Path):
    """A writer that pauses after each line: every run is open when the input waits, and goes the slow way in the
    pieces its lines came in. Heal writes what it writes for the file (heal records too) and logs the same lines; their
    order within a run may differ (README: a run open when its input waits logs in the pieces its lines came in)."""
    path = tmp_path / "j.jsonl"
    path.write_bytes(COMES_BACK_TWICE)
    from_file = run_replay("heal", "--log", str(tmp_path / "file.log"), str(path))
    validated = run_replay("validate", str(path))
    for command, log in ((["heal", "--log", str(tmp_path / "pipe.log")], "pipe.log"), (["validate"], None)):
        returncode, out, err = piped_line_by_line(command, COMES_BACK_TWICE)
        if log is None:
            assert (out, returncode) == (validated.stdout.replace(str(path).encode(), b"<stdin>"), validated.returncode)
            continue
        assert (out, returncode) == (from_file.stdout, from_file.returncode), err
        file_log = (tmp_path / "file.log").read_bytes().replace(str(path).encode(), b"<stdin>")
        assert sorted((tmp_path / log).read_bytes().splitlines()) == sorted(file_log.splitlines())


# the slow way from the first line; a dropped record (join_split_records looks at the lines, and cut the last one off as
# read did); r0's run_started moved to its start, and its end, where r2's line begins another run, as with a newline
MOVED_THEN_ANOTHER_RUN = lines(OFF[0], *[
    b'{"seq":%d,"timestamp":"2026-03-01T12:00:%02d.000Z","type":"%s","runId":"%s","payload":{}}' % row for row in [
        (1, 18, b"user_message", b"r0"), (2, 19, b"run_started", b"r0")]], RECORDS[3],
    b'{"seq":1,"timestamp":"2026-03-01T12:00:26.000Z","type":"run_started","runId":"r2","payload":{}}')


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(journals(), st.sampled_from(CUTS), st.booleans())
@example(data=MOVED_THEN_ANOTHER_RUN, cut=(1024, 1 << 17), off=False)
def test_heal_logs_the_same_in_order_with_or_without_a_newline_after_the_last_line(monkeypatch, tmp_path: Path,
                                                                                    data: bytes, cut: tuple, off: bool):
    """A journal whose last line is whole: heal writes and logs the same, line for line in order, whether a newline
    ends it or not, however read cuts it, also where no screen holds a run whole (``OFF``, --dialect-out): there a
    rule logs a batch at a time, and the last line, with no newline, came in a batch of its own (a rule that decided
    in the batch before it, ensure_run_started after a run's first events, logged before the others had that line)."""
    data = data.split(b'{"seq":99,"ty')[0]  # (no cut-off line)
    assume(data)
    args = ["heal", "@J", "--log", "@L", *(["--dialect-out", "auto"] if off else [])]
    ended = cut_run(monkeypatch, tmp_path, data, args, *cut)
    assert cut_run(monkeypatch, tmp_path, data[:-1], args, *cut) == ended

"""A live stream through `replay heal`: a run that ended comes out while the writer is still writing, and the run in
progress goes on as it comes. (read marks a pause only where a read may wait, a pipe here; the screen then lets
what it holds go on the slow way rather than wait for the run's end.)"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from conftest import CORPUS, REPLAY, errors_of, run_replay

from replay.pipeline.io.fdio import PAUSE_GRACE_VARIABLE

# For the tests of a writer that never pauses (`cat FILE |`): a pause is 2 s of silence, not 50 ms, which `cat` on a
# loaded machine may be left unscheduled for (a pause then, and heal may decide otherwise, as the README says).
NO_PAUSE_ENV = {**os.environ, PAUSE_GRACE_VARIABLE: "2000"}

RUN_A = [b'{"seq":1,"timestamp":"2026-03-01T12:00:01.000Z","type":"run_started","runId":"a","payload":{}}',
         b'{"seq":2,"timestamp":"2026-03-01T12:00:02.000Z","type":"run_completed","runId":"a","payload":{}}']
RUN_B = [b'{"seq":1,"timestamp":"2026-03-01T12:00:03.000Z","type":"run_started","runId":"b","payload":{}}',
         b'{"seq":2,"timestamp":"2026-03-01T12:00:04.000Z","type":"run_completed","runId":"b","payload":{}}']


def lines_within(fd: int, want: int, seconds: float) -> list[bytes]:
    """What the process printed, once it holds ``want`` lines (or the time is up)."""
    data = b""
    deadline = time.monotonic() + seconds
    while data.count(b"\n") < want and (left := deadline - time.monotonic()) > 0:
        if select.select([fd], [], [], left)[0]:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            data += chunk
    return data.splitlines()


def fed_in_two(first: bytes, rest: bytes) -> None:
    """`replay heal` fed ``first`` (the writer then waits, its pipe open): run a and b's first line come out now, with
    nothing more; fed ``rest`` and the end, b's second line comes (exit 0)."""
    heal = subprocess.Popen([REPLAY, "heal"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert heal.stdin is not None and heal.stdout is not None
    try:
        heal.stdin.write(first)
        heal.stdin.flush()
        assert lines_within(heal.stdout.fileno(), 3, 20) == [*RUN_A, RUN_B[0]]  # (the writer has not gone on)
        heal.stdin.write(rest)
        heal.stdin.close()
        assert heal.stdout.read().splitlines() == [RUN_B[1]]
        assert heal.wait(timeout=20) == 0
    finally:
        heal.kill()
        heal.wait()


def test_a_run_that_ended_comes_out_while_the_writer_still_writes():
    """Run a, and the first line of run b: run a ended, and what b has so far goes on rather than wait for its end."""
    fed_in_two(b"\n".join([*RUN_A, RUN_B[0]]) + b"\n", RUN_B[1] + b"\n")


def test_lines_before_a_line_the_writer_is_still_writing_come_out_before_it_ends():
    """A writer that stops mid-line: the lines before that line go on now (read holds them back, to join them with a
    last line without a newline, only while its next read does not wait), and the line once it is whole, with no
    newline after it, as the input's end."""
    half = len(RUN_B[1]) // 2
    fed_in_two(b"\n".join([*RUN_A, RUN_B[0], RUN_B[1][:half]]), RUN_B[1][half:])


def big_run(path: Path) -> None:
    """One run of ~260 KB (more than a pipe read's 64 KiB chunk), with no run_started and some aliased types: the
    rules' lines and then ensure_run_started's at the run's end, an order a pause inside the run would change."""
    rows = [orjson.dumps({"$record": "run", "runId": "r", "prompt": "hi", "status": "ok"})]
    for i in range(1, 1700):
        kind = "llm_message" if i % 3 == 0 else ("user_message" if i == 1 else "assistant_message")
        rows.append(orjson.dumps({"seq": i, "timestamp": f"2026-03-01T12:00:{i % 60:02d}.000Z", "type": kind,
                                  "runId": "r", "payload": {"text": "x" * 150}}))
    path.write_bytes(b"\n".join(rows) + b"\n")


def log_entries(path: Path) -> list[dict[str, object]]:
    return [{k: v for k, v in orjson.loads(line).items() if k not in ("timestamp", "source")}
            for line in path.read_bytes().splitlines()]


def test_cat_into_heal_logs_as_the_file_in_every_run(tmp_path: Path):
    """`cat FILE | replay heal` never pauses (cat writes it all, then ends), but heal's read used to look once, right
    after a read, whether the pipe had more: often it was empty only because cat was not scheduled yet to refill it,
    the run was taken for paused and went the slow way, and the log came in another order (2 or 3 runs in 5). A pause
    is now a writer silent for a grace; found by a read-only hunt."""
    journal = tmp_path / "j.jsonl"
    big_run(journal)
    run_replay("heal", str(journal), "--log", str(tmp_path / "file.log"))
    expected = log_entries(tmp_path / "file.log")
    assert expected[-1]["rule"] != "ensure_run_started" and any(e["rule"] == "ensure_run_started" for e in expected)
    for attempt in range(5):
        log = tmp_path / f"pipe{attempt}.log"
        cat = subprocess.Popen(["cat", str(journal)], stdout=subprocess.PIPE)
        assert cat.stdout is not None
        try:
            heal = subprocess.run([REPLAY, "heal", "--log", str(log)], stdin=cat.stdout, capture_output=True,
                                  env=NO_PAUSE_ENV, timeout=120, check=False)
        finally:
            cat.stdout.close()
            cat.wait()
        assert heal.returncode == 0, heal.stderr
        assert log_entries(log) == expected, f"attempt {attempt + 1} of 5"


def test_a_gzip_log_through_a_pipe_heals_as_the_file(tmp_path: Path):
    """`cat log.gz | replay heal`: read took every short read of a gzip stream on a pipe for a pause (it asked only a
    plain pipe whether more was coming), so runs whose run_started came second were decided early: a run_started made
    up, the real one kept after it. Found by this stop's review."""
    import gzip
    import random

    rng = random.Random(1)
    text = lambda n: "".join(rng.choices("abcdefghij", k=n))  # noqa: E731  (incompressible enough: many reads)
    lines = []
    for r in range(1500):
        for seq, kind, payload in ((1, "user_message", {"text": text(300)}), (2, "run_started", {"note": text(900)}),
                                   (3, "assistant_message", {"text": text(300)}), (4, "run_completed", {})):
            lines.append(orjson.dumps({"seq": seq, "timestamp": f"2024-01-01T00:00:0{seq}Z", "type": kind,
                                       "runId": f"run-{r}", "payload": payload}))
    journal = tmp_path / "x.jsonl.gz"
    journal.write_bytes(gzip.compress(b"\n".join(lines) + b"\n"))
    expected = run_replay("heal", str(journal)).stdout
    cat = subprocess.Popen(["cat", str(journal)], stdout=subprocess.PIPE)
    assert cat.stdout is not None
    try:
        piped = subprocess.run([REPLAY, "heal"], stdin=cat.stdout, capture_output=True, env=NO_PAUSE_ENV, timeout=120,
                               check=False)
    finally:
        cat.stdout.close()
        cat.wait()
    assert piped.stdout == expected, piped.stderr[-2000:]


def event(seq: int, kind: str, **fields: object) -> dict[str, object]:
    return {"seq": seq, "timestamp": f"2026-03-01T12:00:0{seq}.000Z", "type": kind, "runId": "r",
            "payload": fields.pop("payload", {}), **fields}


# A run whose first lines a heal rule looks ahead past (what comes later could change them), then the writer pauses:
# the types heal writes of them while it waits (decided with what came, as if the input ended there).
LOOKS_AHEAD = {
    "ensure_run_started": ([event(1, "user_message"), event(2, "assistant_message")],
                           ["run_started", "user_message", "assistant_message"]),
    "fix_timestamp": ([{k: v for k, v in event(n, kind).items() if k != "timestamp"}
                       for n, kind in ((1, "run_started"), (2, "user_message"))], ["run_started", "user_message"]),
    "pair_tool_calls": ([event(1, "run_started"), event(2, "tool_called", payload={"callId": "c1", "toolName": "x"}),
                         event(3, "run_completed")], ["run_started", "tool_called", "tool_unanswered", "run_completed"]),
    "synthesize_assistant_message": ([{"$record": "run", "runId": "r", "response": "hi", "status": "ok"},
                                      event(1, "run_started"), event(2, "run_completed")],
                                     [None, "run_started", "assistant_message", "run_completed"]),
    # (another agent's log: dialect holds its events until the facts its run record opens with are known, a prompt)
    "dialect": ([orjson.loads((CORPUS / "claude-code" / "session_b.jsonl").read_bytes().splitlines()[1])],
                [None, "run_started", "assistant_message"]),
    "order_sidechains": ([event(1, "run_started", id="a"),
                          event(2, "assistant_message", id="s", parentId="p", payload={"sidechain": True})],
                         ["run_started", "assistant_message"]),
}
# The writer's longest pause: it writes its lines, then waits until the test closes its stdin (the lines came out) or
# this is up. Long, so a slow start of heal on a loaded machine is no failure; a heal that works ends the wait early.
PAUSE_S = 10


@pytest.mark.parametrize("rule", sorted(LOOKS_AHEAD))
def test_lines_a_rule_looks_ahead_past_come_out_while_the_writer_pauses(tmp_path: Path, rule: str):
    """`tail -f log | replay heal`: a stage that holds a run's first lines (or its terminal event) to see what comes
    next used to hold them until the input ended (ensure_run_started up to 16 events, fix_timestamp up to 10,000);
    at a pause it decides with what came. A liveness check: the lines come out while the writer, a process of its
    own, still holds the pipe open and writes nothing."""
    records, types = LOOKS_AHEAD[rule]
    journal = tmp_path / "live.jsonl"
    journal.write_bytes(b"".join(orjson.dumps(record) + b"\n" for record in records))
    script = "import sys; sys.stdout.buffer.write(open(sys.argv[1], 'rb').read()); sys.stdout.flush(); sys.stdin.read()"
    assert types_while_paused([sys.executable, "-c", script, str(journal)], len(types)) == (types, 0)


def types_while_paused(writer_command: list[str], count: int, *args: str) -> tuple[list[object], int]:
    """The types of the first ``count`` lines `replay heal ARGS` writes while the writer (``writer_command``, a process
    of its own) holds the pipe open and writes nothing more (it waits for its stdin to close), and heal's exit code."""
    writer = subprocess.Popen(writer_command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert writer.stdin is not None and writer.stdout is not None
    heal = subprocess.Popen([REPLAY, "heal", *args], stdin=writer.stdout, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    writer.stdout.close()
    assert heal.stdout is not None
    try:
        got = lines_within(heal.stdout.fileno(), count, PAUSE_S)  # (the writer has not closed the pipe yet)
        writer.stdin.close()  # (the writer ends: heal reads the end of its input)
        return [orjson.loads(line).get("type") for line in got], heal.wait(timeout=60)
    finally:
        for process in (writer, heal):
            process.kill()
            process.wait()


# A writer that writes its first part and, once its reader has read it all (the pipe is empty: FIONREAD), its second
# at once, then waits: the reader's read of the first finds the writer going on (no pause), and only the second ends
# where the writer pauses.
SECOND_AT_ONCE = """
import fcntl, struct, sys, termios, time
first, second = (open(path, 'rb').read() for path in sys.argv[1:3])
sys.stdout.buffer.write(first)
sys.stdout.flush()
while struct.unpack('i', fcntl.ioctl(1, termios.FIONREAD, bytes(4)))[0]:
    time.sleep(0.0005)
sys.stdout.buffer.write(second)
sys.stdout.flush()
sys.stdin.read()
"""
TOO_LONG = b'{"seq":3,"type":"user_message","runId":"r","payload":{"text":"' + b"x" * 300 + b'"}}'
# What the second part is, and heal's arguments: a pause after it that came to no batch of lines
CAME_TO_NOTHING = {
    # (join_split_records holds it whole: the next line may finish the record; the segment gave nothing on)
    "the first piece of a record split across lines": (b'{"seq":3,"type":"user_message",\n', ()),
    # (read leaves it out and says so: its batch is empty; the source's empty batch was not sent)
    "a line too long, left out": (TOO_LONG + b"\n", ("--max-line-bytes", "200")),
    # (read skips it already: only a diagnostic, no batch at all)
    "a line too long, not yet whole": (TOO_LONG, ("--max-line-bytes", "200")),
    # (no line whole yet: nothing to send)
    "a line not yet whole": (TOO_LONG[:40], ()),
}


@pytest.mark.parametrize("case", sorted(CAME_TO_NOTHING))
def test_lines_held_come_out_at_a_pause_after_lines_that_came_to_nothing(tmp_path: Path, case: str):
    """A run's first lines that ensure_run_started holds, looking for its run_started, then at once (no pause) lines
    that come to no batch (a stage holds them whole, read leaves them out or has no line whole yet), and the writer
    pauses: the pause went no further than where the lines stopped, and the run's first lines waited for the writer's
    next write (here its end). An empty batch marked pause goes on instead. Found by the last review."""
    second, args = CAME_TO_NOTHING[case]
    first = b"".join(orjson.dumps(event(n, kind)) + b"\n" for n, kind in ((1, "user_message"), (2, "assistant_message")))
    (tmp_path / "first").write_bytes(first)
    (tmp_path / "second").write_bytes(second)
    writer = [sys.executable, "-c", SECOND_AT_ONCE, str(tmp_path / "first"), str(tmp_path / "second")]
    types, _ = types_while_paused(writer, 3, *args)  # (its exit: 1 when a line is bad at the end)
    assert types == ["run_started", "user_message", "assistant_message"]


@pytest.mark.parametrize("command", ["read", "heal"])
def test_a_grace_that_is_no_number_is_refused_before_a_file_is_read(tmp_path: Path, command: str):
    """REPLAY_PAUSE_GRACE_MS is read once, when the read stage starts: a bad value is refused before anything is read,
    for files too (which never pause; it was read at a pipe's first short read only, and a file's run ignored it)."""
    path = tmp_path / "runs.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in RUN_A))
    run = run_replay(command, str(path), env={PAUSE_GRACE_VARIABLE: "lots"}, process=True)
    assert run.returncode == 2 and run.stdout == b""
    error, = errors_of(run.stderr)
    assert error["code"] == "E_USAGE_INVALID" and error["path"] == PAUSE_GRACE_VARIABLE and error["received"] == "lots"
    assert error["howToFix"]


def test_a_grace_that_is_no_number_is_refused_before_a_pipe_is_read():
    """A live pipe (its writer waiting after whole lines): refused before any of it is read (it was refused at the first
    short read, after its lines had gone on), the lines left in the pipe."""
    read_end, write_end = os.pipe()
    try:
        written = b"".join(line + b"\n" for line in RUN_A)
        os.write(write_end, written)
        run = subprocess.run([REPLAY, "heal"], stdin=read_end, capture_output=True, timeout=60, check=False,
                             env={**os.environ, PAUSE_GRACE_VARIABLE: "0"})
        assert run.returncode == 2 and run.stdout == b""
        assert [error["path"] for error in errors_of(run.stderr)] == [PAUSE_GRACE_VARIABLE]
        os.set_blocking(read_end, False)
        assert os.read(read_end, 1 << 16) == written  # (none of it read)
    finally:
        os.close(read_end)
        os.close(write_end)

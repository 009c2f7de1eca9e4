"""Runs longer than the screen holds (issue 11): judged a part at a time and spooled, they take the fast lane when
clean, and heal and validate write, log and report exactly what they do without the fast lane (the same hold limits,
tiny here, so that every run is long), whatever breaks late in a run; the lines of a long run wait in a spool, not in
memory."""

from __future__ import annotations

import random
import shutil
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import orjson
from conftest import REPLAY, ROOT, run_replay
from heal_support import batches_as_read
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_screen import clean_run, screened, sent

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.batch import Batch
from replay.stages.heal import rule_stages
from replay.stages.heal_summary import SummarizeRepairs
from replay.stages.join_split_records import JoinSplitRecords
from replay.stages.parse import ParseLines
from replay.stages.screen import ScreenRuns
from replay.stages.validate import ValidateEvents
from replay.stages.validate_summary import ValidateSummary

SPEC = (ROOT / "pipeline" / "specs" / "heal.toml").read_text()
VALIDATE_SPEC = (ROOT / "pipeline" / "specs" / "validate.toml").read_text()


def late(rng: random.Random, events: list[dict], how: str) -> list[dict]:
    """``events`` (a clean run) broken near its end (or, for some, anywhere) in the way ``how`` names."""
    k = max(1, len(events) - rng.randint(1, 3))  # (an event near the end, not the first)
    if how == "no end":
        return events[:-1]
    if how == "seq":
        events[k] = {**events[k], "seq": events[k]["seq"] + 1000}
    elif how == "alias":
        events[k] = {**events[k], "type": "llm_message"}
    elif how == "unanswered":
        events.insert(k, {**events[k], "type": "tool_called", "payload": {"callId": "never", "toolName": "bash"}})
        for seq, event in enumerate(events, start=1):
            event["seq"] = seq
    elif how == "orphan":
        events[k] = {**events[k], "type": "tool_completed", "payload": {"callId": "orphan"}}
    elif how == "back":
        events[k] = {**events[k], "timestamp": "2026-03-01T11:00:00.000Z"}
    elif how == "junk":
        events[rng.randrange(1, len(events))]["payload"] = "text"
    elif how == "again":  # a call id answered early used again late (the exact walk lets it be)
        first = next((e for e in events if e["type"] == "tool_called"), None)
        if first is not None:
            cid = first["payload"]["callId"]
            for event in events[k - 2:k]:
                if event["type"] in ("tool_called", "tool_completed", "tool_failed"):
                    event["payload"] = {**event["payload"], "callId": cid}
    elif how == "stamp":  # another shape of timestamp (no milliseconds) late in the run
        events[k] = {**events[k], "timestamp": events[k]["timestamp"][:19] + "Z"}
    return events


HOW = ["clean", "clean", "clean", "no end", "seq", "alias", "unanswered", "orphan", "back", "junk", "again", "stamp"]


@st.composite
def long_journals(draw: st.DrawFn) -> list[bytes]:
    """Runs of 10 to 60 events, each clean or broken late (``late``), some after a run record (some with a response:
    an assistant message then wanted), call ids unique in the journal or not."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    unique = draw(st.booleans())
    lines: list[bytes] = []
    for k in range(draw(st.integers(1, 4))):
        rid = f"r{k}"
        events = late(rng, clean_run(rng, draw(st.integers(10, 60)), rid, f"{rid}-c" if unique else "c", 100 * k),
                      draw(st.sampled_from(HOW)))
        if draw(st.integers(0, 3)) == 0:
            record = {"$record": "run", "runId": rid, "status": draw(st.sampled_from(["ok", "failed", "running"]))}
            if draw(st.booleans()):
                record["response"] = "hello"
            lines.append(exactjson.dumps(record))
        lines += [exactjson.dumps(e) for e in events]
    return lines


LIMITS = st.tuples(st.integers(1, 12), st.sampled_from([1 << 30, 300, 1500, 4000]))


def heal_chain(lines: list[bytes], size: int, limits: tuple[int, int], *, fast: bool, repair_log: bool = True,
               joins: bool = False) -> tuple[bytes, list]:
    stages = [*([JoinSplitRecords()] if joins else []),
              ScreenRuns(fast=fast, repair_log=repair_log, max_run_lines=limits[0], max_run_bytes=limits[1]),
              ParseLines(torn_tail="repair"), *rule_stages(None), SummarizeRepairs()]
    return screened(stages, lines, size, {len(stages) - 1: ("repairs",)})


@settings(max_examples=250, deadline=None)
@given(long_journals(), st.integers(1, 40), LIMITS, st.booleans())
def test_heal_of_long_runs_is_the_same_with_and_without_the_fast_lane(lines, size, limits, joins):
    slow = heal_chain(lines, size, limits, fast=False, joins=joins)
    assert heal_chain(lines, size, limits, fast=True, joins=joins) == slow
    out, side = heal_chain(lines, size, limits, fast=True, repair_log=False, joins=joins)  # (`replay heal` without --log)
    assert out == slow[0] and set(side) <= set(slow[1])


@settings(max_examples=250, deadline=None)
@given(long_journals(), st.integers(1, 40), LIMITS)
def test_validate_of_long_runs_counts_and_reports_the_same_with_and_without_the_fast_lane(lines, size, limits):
    def chain(fast: bool) -> tuple[bytes, list]:
        screen = ScreenRuns(mode="validate", fast=fast, max_run_lines=limits[0], max_run_bytes=limits[1])
        return screened([screen, ParseLines(), ValidateEvents(), ValidateSummary()], lines, size)

    assert chain(True) == chain(False)


def with_limits(spec: str, tmp_path: Path, name: str, limits: tuple[int, int], fast: bool, log: Path | None = None) -> Path:
    """``spec`` (heal's or validate's graph) with the screen's hold limits set (and the fast lane off unless ``fast``),
    the heal log written to ``log`` if given."""
    options = f"max_run_lines = {limits[0]}\nmax_run_bytes = {limits[1]}\n" + ("" if fast else "fast = false\n")
    text = spec.replace('type = "screen"', f'type = "screen"\n{options}', 1)
    if log is not None:
        text += f'\n[stages.log]\ntype = "write"\npath = "{log}"\ninputs = ["heal.repairs"]\n'
    path = tmp_path / name
    path.write_text(text)
    return path


def outputs(spec: str, tmp_path: Path, limits: tuple[int, int], fast: bool, paths: list[str], logged: bool) -> tuple:
    log = tmp_path / f"log-{fast}.jsonl" if logged else None
    done = run_replay("run", str(with_limits(spec, tmp_path, f"spec-{fast}.toml", limits, fast, log)), *paths)
    return done.stdout, sorted(map(logged_line, done.stderr.splitlines())), done.returncode, \
        log.read_bytes() if log is not None else None


def logged_line(line: bytes) -> bytes:
    """A line of stderr, without the time it was logged at (a warning's ``timestamp``, next to its ``level``)."""
    record = orjson.loads(line)
    if isinstance(record, dict) and "level" in record:
        record.pop("timestamp", None)
    return orjson.dumps(record, option=orjson.OPT_SORT_KEYS)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(long_journals(), min_size=1, max_size=3), LIMITS, st.booleans())
def test_heal_and_validate_of_several_files_of_long_runs_are_the_same_with_and_without_the_fast_lane(tmp_path: Path, files,
                                                                                                    limits, logged):
    """From the command's graph, several files (one of them twice): the same stdout, heal log, diagnostics (in any order:
    stages that run as tasks of their own) and exit code."""
    paths = []
    for k, lines in enumerate(files):
        path = tmp_path / f"in{k}.jsonl"
        path.write_bytes(b"".join(line + b"\n" for line in lines))
        paths.append(str(path))
    paths.append(paths[0])
    for spec in (SPEC, VALIDATE_SPEC):
        assert outputs(spec, tmp_path, limits, True, paths, logged and spec is SPEC) == \
            outputs(spec, tmp_path, limits, False, paths, logged and spec is SPEC)


def test_a_long_clean_run_takes_the_fast_lane_from_a_spool_with_hold_limits_of_one_line():
    """The least the limits allow: the lines judged and spooled as they come (a line at a time once more than one is
    held; with one byte, each batch's first line: the run's record alone is a part). The run goes on whole, in clean
    batches: the first begins it, each after it goes on with it; its lines and their places as they came."""
    rng = random.Random(3)
    record = exactjson.dumps({"$record": "run", "runId": "r1", "status": "ok", "response": "hi"})
    events = clean_run(rng, 30, "r1")
    events[-1:] = [{**events[-1], "type": "assistant_message"}, {**events[-1], "type": "run_completed", "seq": len(events) + 1}]
    lines = [record, *map(exactjson.dumps, events)]
    for limits, first in [((1, 1 << 30), (1, 1, ("r1",))), ((1 << 30, 1), (1, 0, ("r1",)))]:
        screen = ScreenRuns(max_run_lines=limits[0], max_run_bytes=limits[1])
        out = [b for batch in batches_as_read(lines, 4) for b in sent(screen(batch))] + sent(screen.flush())
        assert len(out) > 5 and all(b.clean is not None for b in out)
        assert out[0].clean == first and all(b.clean[0] == 0 and not b.clean[2] for b in out[1:])  # type: ignore[index]
        assert sum(b.clean[1] for b in out) == len(events)  # type: ignore[index]
        assert b"".join(b.to_jsonl() for b in out) == b"".join(line + b"\n" for line in lines)
        assert [line for b in out for line in b.lines] == list(range(1, len(lines) + 1))
        assert [offset for b in out for offset in b.offsets] == Batch.from_lines(lines).offsets


def one_run(n: int) -> Iterator[Batch]:
    """A clean run of ``n`` events (a call and its result, over and over; about 330 bytes a line), as the line cutter
    sends it: blocks of 1,024 lines, made as they are taken."""
    pad = "x" * 200
    offset = 0
    for first in range(1, n + 1, 1024):
        lines = []
        for seq in range(first, min(first + 1024, n + 1)):
            kind = "run_started" if seq == 1 else "run_completed" if seq == n else "tool_called" if seq % 2 == 0 \
                else "tool_completed"
            second = seq // 1000  # (a millisecond apart)
            stamp = f"2026-03-01T{second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}.{seq % 1000:03d}Z"
            lines.append(orjson.dumps({"seq": seq, "timestamp": stamp, "type": kind, "runId": "r1",
                                       "payload": {"callId": f"c{seq - seq % 2}", "text": pad}}))
        block = b"\n".join(lines)
        yield Batch.folded("one.jsonl", len(lines), block, first, offset)
        offset += len(block) + 1


def test_a_long_clean_run_waits_in_a_spool_not_in_memory():
    """A clean run of ~40 MB through the screen (holding up to 2,048 lines or 1 MiB): it goes on whole, as clean batches,
    and what the screen allocates at most stays far below the run's size (the spool is a temporary file). Held in
    memory, the run would take all of it, and more."""
    n = 120_000  # (events of ~330 bytes: ~40 MB)
    screen = ScreenRuns(max_run_lines=2048, max_run_bytes=1 << 20)
    clean = lines = 0
    tracemalloc.start()
    try:
        for batch in one_run(n):
            assert screen(batch) is None  # (held or spooled: nothing goes on before the run ends)
        out = screen.flush()
        assert isinstance(out, list)
        for part in out:
            for batch in [part] if isinstance(part, Batch) else part:  # (read back from the spool as taken)
                clean += batch.clean is not None
                lines += len(batch)
                assert len(batch.to_jsonl()) < 1 << 20
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert lines == n and clean > 100
    assert peak < 24 << 20, peak


def test_long_runs_from_a_pipe_that_pauses_are_healed_and_validated_as_from_a_file(tmp_path: Path):
    """From a pipe, a read that comes back short may be followed by a wait: the run in progress goes on then, the slow
    way, with what was spooled of it before (``batch.pause``). The stream heal writes and validate's summary are
    those of the file without the fast lane (the heal log's order may follow where the reads came back short)."""
    rng = random.Random(7)
    lines = []
    for k in range(24):
        events = late(rng, clean_run(rng, 250, f"r{k}", f"r{k}-c", 1000 * k), HOW[k % len(HOW)])
        lines += [exactjson.dumps(e) for e in events]
    data = b"".join(line + b"\n" for line in lines)
    path = tmp_path / "in.jsonl"
    path.write_bytes(data)
    for spec in (SPEC, VALIDATE_SPEC):
        piped = run_replay("run", str(with_limits(spec, tmp_path, "fast.toml", (50, 1 << 30), True)), input=data, process=True)
        whole = run_replay("run", str(with_limits(spec, tmp_path, "slow.toml", (50, 1 << 30), False)), str(path))
        assert piped.returncode == whole.returncode
        assert piped.stdout.replace(b"<stdin>", str(path).encode()) == whole.stdout


def test_what_a_long_run_spooled_goes_on_when_the_input_pauses():
    """A batch after which the input may wait (``pause``): what the run in progress holds goes on, the slow way, also
    when all of it was just spooled (the spool is no place to wait in: a live stream flows)."""
    lines = [exactjson.dumps(e) for e in clean_run(random.Random(1), 12, "r1")]
    for fast in (True, False):
        screen, fed, gone = ScreenRuns(fast=fast, max_run_lines=3), 0, 0
        for batch in batches_as_read(lines, 4):
            batch.pause = True
            gone += sum(len(b) for b in sent(screen(batch)))
            fed += len(batch)
            assert gone == fed


HEAL_DIR_SPEC = (ROOT / "pipeline" / "specs" / "heal-dir.toml").read_text()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(long_journals(), LIMITS)
def test_heal_of_long_runs_into_a_folder_writes_the_same_files_with_and_without_the_fast_lane(tmp_path: Path, lines, limits):
    (tmp_path / "in").mkdir(exist_ok=True)
    source = tmp_path / "in" / "j.jsonl"
    source.write_bytes(b"".join(line + b"\n" for line in lines))
    done = []
    for fast in (True, False):
        spec = HEAL_DIR_SPEC.replace('out_dir = "healed"', f'out_dir = "{tmp_path / str(fast)}"', 1)
        done.append(run_replay("run", str(with_limits(spec, tmp_path, f"dir-{fast}.toml", limits, fast)), str(source)))
    assert done[0].returncode == done[1].returncode
    for name in ("j.healed.jsonl", "j.heal-log.json"):
        assert (tmp_path / "True" / name).read_bytes() == (tmp_path / "False" / name).read_bytes(), name
    for fast in (True, False):
        shutil.rmtree(tmp_path / str(fast))


def test_a_long_run_goes_the_slow_way_when_no_temporary_file_can_be_made(monkeypatch):
    """The spool is a temporary file: when none can be made (``$TMPDIR`` gone), the run goes on the slow way, every
    line of it."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", "/nonexistent/replay-test")
    n = 8_000
    screen = ScreenRuns(max_run_lines=2048, max_run_bytes=1 << 20)
    out, fed = [], b""
    for batch in one_run(n):
        fed += batch.to_jsonl()
        out += sent(screen(batch))
    out += sent(screen.flush())
    assert b"".join(b.to_jsonl() for b in out) == fed
    assert out and not any(b.clean for b in out)


def test_a_long_run_goes_the_slow_way_when_its_spool_cannot_be_written(tmp_path: Path):
    """A spool write that fails (here a file size limit, ``ulimit -f``; a full disk alike) sends the run the slow way
    from there, the parts spooled before read back whole: heal writes every line, as without the fast lane, exit 0.
    (The spool's writes went through a buffer: a part smaller than it failed only when read back, and the command
    failed with E_STAGE_FAILED and wrote nothing.)"""
    import resource
    import subprocess

    path = tmp_path / "one.jsonl"
    path.write_bytes(b"".join(batch.to_jsonl() for batch in one_run(12_000)))  # (~4 MB, one clean run)
    spec = with_limits(SPEC, tmp_path, "spec.toml", (1 << 30, 20_000), True)

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (512 << 10, 512 << 10))

    done = subprocess.run([REPLAY, "run", str(spec), str(path)],
                          capture_output=True, preexec_fn=small_files, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == path.read_bytes()


def test_a_run_longer_than_a_spool_holds_goes_the_slow_way_from_there():
    """The spool holds at most ``max_spool_bytes`` (the disk, or a tmpfs's memory, stays bounded): a clean run longer
    than that goes the slow way from there, every line of it as it came (what was spooled read back first)."""
    screen = ScreenRuns(max_run_lines=1024, max_run_bytes=1 << 30, max_spool_bytes=1 << 20)
    out, fed = [], b""
    for batch in one_run(8_000):  # (~2.6 MB)
        fed += batch.to_jsonl()
        out += sent(screen(batch))
    out += sent(screen.flush())
    assert b"".join(b.to_jsonl() for b in out) == fed
    assert out and not any(b.clean for b in out)

"""One journal file cut into pieces run at once (``--workers``, ``engine/forked_pieces.py``) gives exactly what one run over
it gives: validate, heal and report write the same bytes, say the same diagnostics and exit the same, whatever the
journal holds; the pieces are used when they can be and one run is made when they cannot (issue 11)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import orjson
import pytest
from conftest import CORPUS, ROOT, run_replay
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_screen import clean_run, journals

from replay.pipeline.engine import exactjson
from replay.pipeline.io.journals import CHUNK_BYTES

sys.path.insert(0, str(ROOT / "tests" / "bench"))
from journal_gen import ALIASES, write_broken_journal, write_journal

COMMANDS = {
    "validate": ["validate"],
    "heal": ["heal"],
    "heal --no-summary": ["heal", "--no-summary"],
    "heal --log": ["heal"],
    "report": ["report"],
    "report json": ["report", "--format", "json"],
    "report, input lines up to 1000 bytes": ["report", "--max-line-bytes", "1000"],  # (a run's summary is longer)
    "report html": ["report", "--format", "html"],
    "report junit, failing on failed runs": ["report", "--format", "junit", "--fail-on-error"],
    "report markdown, failing on runs of no end": ["report", "--format", "markdown", "--fail-on-unknown"],
}


LOGGED = {"heal --log"}  # (--log FILE: the heal log, beside the journal)


def said(stderr: bytes) -> list[dict]:
    """What a run said on stderr but what it did (info) and when (timestamps): the diagnostics and warnings."""
    lines = [orjson.loads(line) for line in stderr.splitlines()]
    return [{k: v for k, v in line.items() if k != "timestamp"} for line in lines if line.get("level") != "info"]


def in_pieces(command: str, path: Path, piece_bytes: int, workers: int = 3) -> tuple[bool, str]:
    """Run ``command`` over ``path`` once and in pieces and check they agree; (whether the pieces were used, why not).
    A command that writes a heal log (``LOGGED``) writes it beside ``path`` both times: the logs agree too."""
    args = COMMANDS[command]
    logs = [path.with_name(f"{path.stem}.{name}.log.jsonl") for name in ("one", "many")]
    one = run_replay(*args, *(["--log", str(logs[0])] if command in LOGGED else []), "--workers", "1", str(path))
    many = run_replay("--log-level", "info", *args, *(["--log", str(logs[1])] if command in LOGGED else []),
                      "--workers", str(workers), str(path), env={"REPLAY_PIECE_BYTES": str(piece_bytes)}, process=True)
    assert many.stdout == one.stdout, command
    assert said(many.stderr) == said(one.stderr), command
    assert many.returncode == one.returncode, command
    if command in LOGGED:
        assert logs[1].read_bytes() == logs[0].read_bytes(), command
    notes = [orjson.loads(line) for line in many.stderr.splitlines() if b'"event":"pieces.' in line]
    assert len(notes) <= 1
    return bool(notes) and notes[0]["event"] == "pieces.done", notes[0].get("why", "") if notes else "not cut"


@pytest.mark.parametrize("command", COMMANDS)
def test_a_clean_journal_is_cut_and_every_command_gives_what_one_run_gives(tmp_path: Path, command: str):
    path = tmp_path / "runs.jsonl"
    write_journal(path, 400_000)
    used, why = in_pieces(command, path, 60_000, workers=4)
    assert used, why


def test_a_report_written_to_a_file_is_the_same_file(tmp_path: Path):
    path = tmp_path / "runs.jsonl"
    write_journal(path, 300_000)
    one = run_replay("report", "--workers", "1", "--out", str(tmp_path / "one.html"), str(path))
    many = run_replay("--log-level", "info", "report", "--workers", "2", "--out", str(tmp_path / "many.html"), str(path),
                      env={"REPLAY_PIECE_BYTES": "50000"}, process=True)
    assert b'"event":"pieces.done"' in many.stderr
    assert one.returncode == many.returncode == 0 and one.stdout == many.stdout == b""
    assert (tmp_path / "one.html").read_bytes() == (tmp_path / "many.html").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["many.html", "one.html", "runs.jsonl"]


@pytest.mark.parametrize("command", ["heal", "heal --log", "validate", "report json"])
def test_a_journal_whose_runs_need_repairs_is_cut_and_agrees(tmp_path: Path, command: str):
    path = tmp_path / "broken.jsonl"
    write_broken_journal(path, 300_000)
    used, why = in_pieces(command, path, 50_000)
    assert used or command == "validate", why  # (validate says what is wrong: that is one run's to say)


def test_the_last_run_of_a_piece_logs_its_repairs_in_one_run_s_order(tmp_path: Path):
    """Each run has orphaned results and calls never answered (pair_tool_calls drops the first and answers the others at
    the run's end) and so seq numbers to shift (renumber): a run that another follows logs each
    rule's lines in turn, where an input's last run logs its passing lines first and its end's after them. A piece's
    last run is followed by the next piece's first: its log is the former's, not the latter's."""
    rng = random.Random(6)
    runs = []
    for k in range(60):
        n = rng.randint(20, 40)
        run = [{"seq": 1, "timestamp": "2026-03-01T12:00:01.000Z", "type": "run_started", "runId": f"r{k:03d}",
                "payload": {}}]
        called = set()
        for s in range(2, n):
            kind = rng.choice(["tool_called", "tool_completed", "assistant_message"])
            cid = f"c{s // 2}" if kind != "tool_completed" or f"c{s // 2}" in called else f"gone{s}"  # (no call later)
            if kind == "tool_called":
                called.add(cid)
            run.append({"seq": s, "timestamp": f"2026-03-01T12:{s // 60:02d}:{s % 60:02d}.000Z", "type": kind,
                        "runId": f"r{k:03d}", "payload": {"callId": cid, "toolName": "bash"}})
        run.append({"seq": n, "timestamp": f"2026-03-01T12:{n // 60:02d}:{n % 60:02d}.000Z", "type": "run_completed",
                    "runId": f"r{k:03d}", "payload": {}})
        runs.append(run)
    path = tmp_path / "unpaired.jsonl"
    path.write_bytes(lines_of(*runs))
    used, why = in_pieces("heal --log", path, len(path.read_bytes()) // 4, workers=4)
    assert used, why


@pytest.mark.parametrize("at", [3, 37])
def test_a_piece_whose_stream_went_the_slow_way_is_one_run_s_to_heal(tmp_path: Path, at: int):
    """A source record sends the rest of its piece's stream the slow way, where the rules cut its runs as its reads cut
    them (a piece reads from another place than one run) and end a piece's last run with the input: its heal log may
    be in another order, so one run heals the file, wherever the piece is."""
    rng = random.Random(7)
    runs = [clean_run(rng, 30, f"r{k}") for k in range(40)]
    for run in runs[8:]:  # (a seq out of line and no end: renumber logs as lines pass, ensure_terminal at the end)
        run[3]["seq"] += 1000
        run.pop()
    path = tmp_path / "relabeled.jsonl"
    path.write_bytes(lines_of(*runs[:at], [{"$record": "source", "source": "other.jsonl"}], *runs[at:]))
    used, why = in_pieces("heal --log", path, len(path.read_bytes()) // 4, workers=4)
    assert not used and "follow where its reads cut it" in why


def test_a_run_too_long_to_hold_that_needs_repairs_is_one_run_s_to_heal(tmp_path: Path):
    """A run longer than the screen holds (16,384 lines) that needs repairs goes on the slow way in parts, where holding
    it reached the limit: in a piece that is where the piece's reads cut it, not one run's, so one run heals the file."""
    events = [{"seq": 1, "timestamp": "2026-03-01T12:00:00.000Z", "type": "run_started", "runId": "long", "payload": {}}]
    for i in range(2, 16_401):  # (no end: ensure_terminal; seqs shifted near its end: renumber)
        events.append({"seq": i + 5 * (i > 16_390), "timestamp": "2026-03-01T12:00:01.000Z", "type": "assistant_message",
                       "runId": "long", "payload": {}})
    rng = random.Random(8)
    path = tmp_path / "long.jsonl"
    path.write_bytes(lines_of(events, *[clean_run(rng, 30, f"s{k}") for k in range(300)]))
    used, why = in_pieces("heal --log", path, len(path.read_bytes()) // 2, workers=2)
    assert not used and "follow where its reads cut it" in why


def near_the_most_held(runs_before: list[int]) -> bytes:
    """Clean runs, then a run of 2,014 lines of 2,000 bytes that needs repairs (aliases, timestamps with a space, seqs
    shifted, no end): 3.8 MiB, under the 4 MiB heal holds of a run, but held as the blocks its lines came in."""
    def event(seq: int, kind: str, rid: str, text: str = "") -> dict:
        return {"seq": seq, "timestamp": f"2026-03-01T12:{seq // 60000 % 60:02d}:{seq // 1000 % 60:02d}.{seq % 1000:03d}Z",
                "type": kind, "runId": rid, "payload": {"text": text}}
    rng, lines = random.Random(10), []
    for j, before in enumerate(runs_before):
        lines += [lines_of(clean_run(rng, 5, f"s{j}_{k}")) for k in range(before)]
        for i in range(1, 2015):
            kind = "run_started" if i == 1 else "llm_message" if i % 97 == 0 or (i > 1950 and i % 3 == 0) else "assistant_message"
            line = event(i + (i > 300), kind, f"big{j}")
            if i % 5 == 0:
                line["timestamp"] = line["timestamp"].replace("T", " ")
            line["payload"]["text"] = "x" * (2000 - len(exactjson.dumps(line)) - 1)
            lines.append(exactjson.dumps(line) + b"\n")
    return b"".join(lines)


def test_a_run_that_needs_repairs_near_the_most_heal_holds_logs_as_one_run_logs_it(tmp_path: Path):
    """One run over the file holds such a run as the blocks its lines came in: after 60 runs it went whole, after 101 in
    two parts (alias lines logged in two turns). A piece reads its blocks from another place: its heal log may differ,
    so one run heals the file with --log; without a log (the stream is one whatever the parts) the pieces are used."""
    path = tmp_path / "near.jsonl"
    path.write_bytes(near_the_most_held([60, 101]))
    used, why = in_pieces("heal --log", path, len(path.read_bytes()) // 3, workers=4)
    assert not used and "near the most heal holds" in why
    used, why = in_pieces("heal", path, len(path.read_bytes()) // 3, workers=4)
    assert used, why


def test_a_line_longer_than_a_block_by_a_cut_is_one_run_s_to_heal_with_a_log(tmp_path: Path):
    """One run reads the run after a 3.9 MB line in blocks that hold that line too, and counts it as held (past the
    4 MiB heal holds: the run that needs repairs goes on in parts, its alias lines logged in two turns); its piece,
    read from the cut, holds it alone (1.4 MB, whole). With a log, one run heals the file; without, the pieces do."""
    rng = random.Random(12)
    before = lines_of(*[clean_run(rng, 7, f"a{k}") for k in range(30)])
    giant = clean_run(rng, 7, "giant")
    head = before + lines_of(giant[:3])
    giant[3]["payload"]["text"] = ""
    bare = len(exactjson.dumps(giant[3])) + 1
    # (the long line ends 1,000 bytes into a block, whose rest holds the giant run's end and the next run's start)
    giant[3]["payload"]["text"] = "y" * (3_900_000 - (len(head) + 3_900_000 + bare) % CHUNK_BYTES + 1_000)
    path = tmp_path / "giant.jsonl"
    path.write_bytes(before + lines_of(giant) + near_the_most_held([0])[:1_400_000].rpartition(b"\n")[0] + b"\n"
                     + lines_of(*[clean_run(rng, 7, f"b{k}") for k in range(600)]))
    used, why = in_pieces("heal --log", path, 2_500_000, workers=2)
    assert not used and "longer than a read's block lies by a cut" in why
    used, why = in_pieces("heal", path, 2_500_000, workers=2)
    assert used, why


def test_a_long_run_spooled_clean_that_needs_a_repair_at_its_end_is_one_run_s_to_heal_with_a_log(tmp_path: Path):
    """A run longer than heal holds, clean as far as it was held, is spooled in parts where holding it reached its
    limits; its end missing, it goes the slow way a part at a time: parts a piece's reads may cut elsewhere."""
    rng = random.Random(11)
    long = [{"seq": i, "timestamp": "2026-03-01T12:00:00.000Z", "type": "run_started" if i == 1 else "assistant_message",
             "runId": "long", "payload": {}} for i in range(1, 17_001)]
    path = tmp_path / "spooled.jsonl"
    path.write_bytes(lines_of(long, *[clean_run(rng, 30, f"s{k}") for k in range(300)]))
    used, why = in_pieces("heal --log", path, len(path.read_bytes()) // 2, workers=2)
    assert not used and "follow where its reads cut it" in why


@pytest.mark.parametrize("command", ["heal --log", "report json", "report markdown, failing on runs of no end"])
def test_an_empty_run_id_is_no_place_to_cut(tmp_path: Path, command: str):
    """An event whose runId is "" names no run: it is of the run before (fill_run_id names it so), never a piece's first."""
    rng = random.Random(9)
    runs = [clean_run(rng, 12, f"r{k}") for k in range(60)]
    for k, run in enumerate(runs):
        run[len(run) // 2]["runId"] = ""
        if k % 2:
            run[-1]["runId"] = ""
    path = tmp_path / "unnamed.jsonl"
    path.write_bytes(lines_of(*runs))
    used, why = in_pieces(command, path, len(path.read_bytes()) // 4, workers=4)
    assert used, why


def lines_of(*runs: list[dict]) -> bytes:
    return b"".join(exactjson.dumps(event) + b"\n" for run in runs for event in run)


def test_a_run_id_in_two_pieces_is_one_run_s_to_warn_of(tmp_path: Path):
    """r0 comes back at the end: each piece alone is clean, one run warns (E_RUN_ID_REUSED); so the pieces are
    not used, and the command says what one run says."""
    rng = random.Random(3)
    runs = [clean_run(rng, 30, f"r{k}") for k in range(40)] + [clean_run(rng, 30, "r0")]
    path = tmp_path / "back.jsonl"
    path.write_bytes(lines_of(*runs))
    for command in ("validate", "heal"):
        used, why = in_pieces(command, path, len(path.read_bytes()) // 4)
        assert not used and "two pieces" in why, command
    one = run_replay("validate", str(path))
    assert b"E_RUN_ID_REUSED" in one.stderr  # (what the pieces alone would not have said)
    used, _ = in_pieces("report json", path, len(path.read_bytes()) // 4)  # (a report reads each run alone: cut)
    assert used


def test_a_warning_in_one_piece_makes_one_run_say_it(tmp_path: Path):
    rng = random.Random(4)
    runs = [clean_run(rng, 30, f"r{k}") for k in range(40)]
    runs[30][5]["timestamp"] = "2020-01-01T00:00:00.000Z"  # a timestamp going back: a notice, nothing fails
    path = tmp_path / "back-in-time.jsonl"
    path.write_bytes(lines_of(*runs))
    for command in ("validate", "heal"):
        used, why = in_pieces(command, path, len(path.read_bytes()) // 4)
        assert not used and "stderr" in why, command
    used, _ = in_pieces("report", path, len(path.read_bytes()) // 4)  # (report has nothing to say of it)
    assert used


def test_a_run_dropped_whole_before_the_last_piece_is_one_run_s_to_count(tmp_path: Path):
    """heal writes a heal record for a run it dropped whole at the end of its stream: the pieces' streams would have
    it at the end of the first piece."""
    rng = random.Random(5)
    runs = [clean_run(rng, 30, f"r{k}") for k in range(40)]
    orphans = [{"seq": 1, "timestamp": "2026-03-01T13:00:01.000Z", "type": "tool_completed", "runId": "gone",
                "payload": {"callId": "never-called"}}]
    path = tmp_path / "dropped.jsonl"
    path.write_bytes(lines_of(*runs[:5], orphans, *runs[5:]))
    used, why = in_pieces("heal", path, len(path.read_bytes()) // 4)
    assert not used and "dropped whole" in why
    used, _ = in_pieces("heal", tmp_path / "dropped.jsonl", len(path.read_bytes()) // 4, workers=1)
    assert not used  # (--workers 1: never cut)


def quietly_broken(rng: random.Random, run: list[dict]) -> list[dict]:
    """``run`` with one or two repairs heal makes without a word: a type alias, a seq out of line, an exact duplicate,
    no end (two rules: the one that logs at the run's end, and the one that logs as lines pass, log in one order)."""
    for fix in rng.sample(["alias", "seq", "duplicate", "end"], rng.randint(1, 2)):
        if fix == "alias":
            event = rng.choice(run)
            event["type"] = ALIASES.get(event["type"], event["type"])
        elif fix == "seq":
            rng.choice(run[:-1] or run)["seq"] += 1000  # (a run its end left with one event: that one)
        elif fix == "duplicate" and len(run) > 2:
            run.insert(2, dict(run[1]))
        elif fix == "end":
            run.pop()
    return run


@st.composite
def pieced_journals(draw: st.DrawFn) -> bytes:
    """Runs clean or quietly repaired (a run id now and then again; a run record before, a heal record after or one of
    the run before in the middle, now and then) around the journals the screen's tests break every way."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    parts = []
    for k in range(draw(st.integers(2, 10))):
        kind = draw(st.integers(0, 7))
        if kind == 0:
            parts.append(draw(journals()))
            continue
        rid = draw(st.sampled_from([*[f"c{k}"] * 10, "c0", "r0"]))
        run = clean_run(rng, draw(st.integers(2, 14)), rid)
        before = [{"$record": "run", "runId": rid, "status": "ok"}] if draw(st.booleans()) else []
        after = [{"$record": "heal", "runId": rid, "repairs": 1, "byRule": {"dedupe": 1}}] if draw(st.booleans()) else []
        run = quietly_broken(rng, run) if kind < 3 else run
        if k and draw(st.integers(0, 4)) == 0:  # the heal record of the run before, in the middle of this one
            run.insert(rng.randrange(len(run) + 1), {"$record": "heal", "runId": f"c{k - 1}", "repairs": 1})
        parts.append(lines_of(before, run, after))
    data = b"".join(part if part.endswith(b"\n") else part + b"\n" for part in parts)
    return data


@pytest.mark.parametrize("command", ["validate", "heal", "heal --log", "report json"])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=pieced_journals(), piece_bytes=st.integers(100, 2000), workers=st.integers(2, 4))
def test_whatever_a_journal_holds_its_pieces_agree_with_one_run(tmp_path: Path, command: str, data: bytes,
                                                                piece_bytes: int, workers: int):
    path = tmp_path / "j.jsonl"
    path.write_bytes(data)
    in_pieces(command, path, piece_bytes, workers)


def test_real_logs_healed_into_one_journal_agree_in_pieces(tmp_path: Path):
    """Claude Code, Codex, OpenHands and mini-swe-agent logs healed into replay's own stream (run records, heal
    records, what real agents write), three times over with other run ids: one journal that is cut and agrees."""
    healed = []
    for path in sorted(p for p in CORPUS.rglob("*") if p.suffix in (".jsonl", ".json")):
        run = run_replay("heal", str(path))
        assert run.returncode in (0, 1), path
        healed.append(run.stdout)
    journal = tmp_path / "real.jsonl"
    with journal.open("wb") as out:
        for copy in range(3):
            for stream in healed:
                for line in stream.splitlines():
                    record = orjson.loads(line)
                    if isinstance(record.get("runId"), str):
                        record["runId"] += f"-{copy}"
                    out.write(exactjson.dumps(record) + b"\n")
    size = journal.stat().st_size
    used = {command: in_pieces(command, journal, size // 5)[0] for command in ("validate", "heal", "report json")}
    assert used["report json"], used  # (validate and heal may have something to say of what heal made of real logs)


def test_a_healed_journal_is_cut_after_its_heal_records(tmp_path: Path):
    broken = tmp_path / "broken.jsonl"
    write_broken_journal(broken, 300_000)
    healed = tmp_path / "healed.jsonl"
    healed.write_bytes(run_replay("heal", str(broken)).stdout)
    lines = healed.read_bytes().splitlines()
    assert sum(line.startswith(b'{"$record":"heal"') for line in lines) > 20  # (a heal record after most runs)
    for command in ("validate", "heal", "report json"):
        used, why = in_pieces(command, healed, 50_000)
        assert used, (command, why)


@pytest.mark.parametrize("run_id", ["previous", None])
def test_a_heal_record_in_the_middle_of_a_run_is_no_place_to_cut(tmp_path: Path, run_id: str | None):
    """A heal record of the run before (or of none) written after the next run's first event closes no run: the
    events after it are still that run's, and a report counts them so."""
    rng = random.Random(6)
    runs = [clean_run(rng, 12, f"r{k}") for k in range(60)]
    lines = []
    for k, run in enumerate(runs):
        note = {"$record": "heal", "runId": f"r{k - 1}" if run_id else None, "repairs": 1, "byRule": {"dedupe": 1}}
        lines += [*run[:5], *([note] if k else []), *run[5:]]
    path = tmp_path / "mid.jsonl"
    path.write_bytes(lines_of(lines))
    for parts in (3, 4, 5, 7):  # (cuts planned at several places: some inside a run, before its heal record)
        for command in ("report", "report json", "validate", "heal"):
            in_pieces(command, path, len(path.read_bytes()) // parts, workers=parts)


@pytest.mark.parametrize("command", ["report", "report json", "report html"])
def test_a_record_that_is_no_event_is_reported_as_one_run_reports_it(tmp_path: Path, command: str):
    """Records that are no events (no `type`, an empty one, a number) in one piece: that piece is not clean (it reports
    them), so one run makes the report, which counts them as input problems, each at its line, and leaves them out."""
    rng = random.Random(13)
    runs = [clean_run(rng, 20, f"r{k}") for k in range(60)]
    runs[40][3:3] = [{"a": 1}, {"type": "", "runId": "r40"}, {"type": 7}]
    at = sum(map(len, runs[:40])) + 4
    path = tmp_path / "no-events.jsonl"
    path.write_bytes(lines_of(*runs))
    used, why = in_pieces(command, path, len(path.read_bytes()) // 4, workers=4)
    assert not used and "stderr" in why
    one = run_replay(*COMMANDS[command], "--workers", "1", str(path))
    errors = [orjson.loads(line)["error"] for line in one.stderr.splitlines()]
    assert one.returncode == 1 and [e["code"] for e in errors] == ["E_ARTIFACT_EVENT_TYPE_INVALID"] * 3
    assert [e["line"] for e in errors] == [at, at + 1, at + 2]

"""check_run_ids in heal and validate: a runId that comes back after another run of its input (runs written
interleaved) is said where it comes back, with what to do; whole runs the screen passes unread count."""

from __future__ import annotations

from pathlib import Path

import orjson
from conftest import run_replay

from replay.pipeline.model.runs import RecentIds


def event(seq: int, kind: str, run: str) -> bytes:
    return orjson.dumps({"seq": seq, "timestamp": f"2026-03-01T12:00:{seq:02}.000Z", "type": kind, "runId": run,
                         "payload": {}}) + b"\n"


def whole(run: str) -> bytes:
    return b"".join(event(k, kind, run) for k, kind in enumerate(["run_started", "user_message", "run_completed"], 1))


def said(stderr: bytes) -> list[tuple[str, str, int]]:
    return [(w["runId"], w["source"].rsplit("/", 1)[-1], w["line"]) for w in map(orjson.loads, stderr.splitlines())
            if w.get("rule") == "check_run_ids"]


def test_runs_written_in_turn_are_said_where_each_comes_back(tmp_path: Path) -> None:
    path = tmp_path / "inter.jsonl"
    path.write_bytes(event(1, "run_started", "A") + event(1, "run_started", "B") + event(2, "run_completed", "A")
                     + event(2, "run_completed", "B"))
    healed = run_replay("heal", str(path))
    assert healed.returncode == 0 and said(healed.stderr) == [("A", "inter.jsonl", 3), ("B", "inter.jsonl", 4)]
    checked = run_replay("validate", str(path))
    assert said(checked.stderr) == said(healed.stderr)
    assert b"Split the input by runId" in healed.stderr


def test_each_input_is_judged_alone_as_a_worker_judges_it(tmp_path: Path) -> None:
    """A run split across two files is two runs everywhere (runs are cut where an input begins): not a run coming back,
    so heal over a folder says the same in one process and in worker processes, one input each."""
    (tmp_path / "rot").mkdir()
    (tmp_path / "rot" / "part1.jsonl").write_bytes(event(1, "run_started", "r") + event(2, "user_message", "r"))
    (tmp_path / "rot" / "part2.jsonl").write_bytes(event(3, "assistant_message", "r") + event(4, "run_completed", "r")
                                                   + whole("s") + event(5, "user_message", "r"))
    one = run_replay("heal", str(tmp_path / "rot"), "--workers", "1")
    assert said(one.stderr) == [("r", "part2.jsonl", 6)]  # (r came back after s, in part2 alone)
    assert said(run_replay("heal", str(tmp_path / "rot"), "--workers", "2").stderr) == said(one.stderr)
    assert said(run_replay("heal", input=run_replay("read", str(tmp_path / "rot")).stdout).stderr) == said(one.stderr)


def test_a_whole_run_the_screen_passes_unread_is_still_seen_coming_back(tmp_path: Path) -> None:
    """A and B are whole: the fast lane passes them as bytes. A whole A again comes back after B: said."""
    path = tmp_path / "again.jsonl"
    path.write_bytes(whole("A") + whole("B") + whole("A") + whole("C"))
    for command in ("heal", "validate"):
        done = run_replay(command, str(path))
        assert said(done.stderr) == [("A", "again.jsonl", 7)], command
    assert run_replay("heal", str(path)).stdout == path.read_bytes()  # said, not changed


def test_runs_of_distinct_ids_say_nothing(tmp_path: Path) -> None:
    path = tmp_path / "fine.jsonl"
    path.write_bytes(b"".join(whole(f"r{k}") for k in range(50)))
    assert run_replay("heal", str(path)).stderr == b"" and run_replay("validate", str(path)).stderr == b""


def test_a_run_of_the_same_id_right_after_the_one_before_comes_back_after_no_other(tmp_path: Path) -> None:
    """Heal keeps two pieces of one id apart with a run record; that is no run coming back after another run."""
    record = orjson.dumps({"$record": "run", "runId": "A"}) + b"\n"
    path = tmp_path / "twice.jsonl"
    path.write_bytes(record + whole("A") + record + whole("A"))
    for command in ("heal", "validate"):
        assert said(run_replay(command, str(path)).stderr) == [], command


def test_the_same_file_read_twice_is_two_inputs_whose_runs_come_back_in_neither(tmp_path: Path) -> None:
    """`heal a.jsonl a.jsonl` (two inputs of one name): the second read's runs were said to come back after another
    run of "this input", and went the slow way."""
    path = tmp_path / "a.jsonl"
    path.write_bytes(whole("A") + whole("B"))
    for command in ("heal", "validate"):
        assert said(run_replay(command, str(path), str(path)).stderr) == [], command
    assert said(run_replay("heal", input=run_replay("read", str(path), str(path)).stdout).stderr) == []


def test_recent_ids_keep_the_last_ones_only() -> None:
    recent = RecentIds(size=2)
    recent.add_all(["a", "b", "c", "d"])
    recent.add("a")  # seen again: the latest now
    recent.add("e")  # more than twice the size: the oldest go, the last two stay
    assert [recent.comes_back(rid) for rid in "abcde"] == [True, False, False, False, False]  # (e: the run before)
    assert recent.any_come_back(["x", "a"]) and recent.any_come_back(["x", "y", "x"]) and not recent.any_come_back(["e", "x"])

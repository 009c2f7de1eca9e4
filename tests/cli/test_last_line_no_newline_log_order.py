"""A file whose last (complete) line has no newline: heal logs its repairs in the order it logs them for the file with
a newline added and for `replay read FILE | replay heal`. Its last line came in a batch of its own (read holds it
back to tell whether it was cut off), so a rule that decided in the batch before it (ensure_run_started, after a run's
first 16 events) logged before the rules before it had logged that line. Found by a read-only tester."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import orjson
from conftest import CORPUS, REPLAY, run_replay


def order(log: Path) -> list[tuple[str, object]]:
    return [(entry["rule"], entry.get("line")) for entry in map(orjson.loads, log.read_bytes().splitlines())]


def test_a_claude_code_log_without_a_last_newline_logs_as_with_one_and_down_a_pipe(tmp_path: Path):
    lines = (CORPUS / "claude-code" / "edge_cases.jsonl").read_bytes().split(b"\n")
    assert lines[-1]  # (the corpus file's last line has no newline)
    kept = b"\n".join(line for k, line in enumerate(lines, 1) if k not in (13, 15, 16))  # (its 3 non-record lines)
    bare, ended = tmp_path / "a.jsonl", tmp_path / "nl.jsonl"
    bare.write_bytes(kept)
    ended.write_bytes(kept + b"\n")
    done = {name: run_replay("heal", str(path), "--log", str(tmp_path / f"{name}.log"))
            for name, path in (("bare", bare), ("ended", ended))}
    piped = run_replay("read", str(bare)).stdout
    done["pipe"] = run_replay("heal", "--log", str(tmp_path / "pipe.log"), input=piped)
    assert done["bare"].stdout == done["ended"].stdout == done["pipe"].stdout
    expected = order(tmp_path / "ended.log")
    assert ("ensure_run_started", 1) in expected and ("fix_timestamp", 16) in expected
    # repairs in line order rule by rule, then what only the run's end decides: ensure_run_started decided after the
    # run's first 16 events, among the rules' lines, after fix_timestamp's of line 16 (the log is the run's, whole)
    assert expected.index(("fix_timestamp", 16)) < expected.index(("ensure_run_started", 1))
    assert order(tmp_path / "bare.log") == expected
    assert order(tmp_path / "pipe.log") == expected


def test_a_replay_journal_without_a_last_newline_logs_as_with_one_with_the_screen_off(tmp_path: Path):
    """The same with replay's own journal where no screen holds its run whole (--dialect-out: the batches are read's)."""
    rows = [{"seq": i, "timestamp": f"2025-01-01T00:00:{i:02d}Z", "type": "user_message", "runId": "r1", "payload": {}}
            for i in range(1, 19)]
    del rows[-1]["timestamp"]
    data = b"\n".join(map(orjson.dumps, rows))
    logs = []
    for name, body in (("bare", data), ("ended", data + b"\n")):
        (tmp_path / f"{name}.jsonl").write_bytes(body)
        run_replay("heal", str(tmp_path / f"{name}.jsonl"), "--dialect-out", "auto", "--log", str(tmp_path / f"{name}.log"))
        logs.append(order(tmp_path / f"{name}.log"))
    assert logs[0] == logs[1]
    assert logs[1].index(("fix_timestamp", 18)) < logs[1].index(("ensure_run_started", 1))


def test_a_last_line_orjson_alone_refuses_but_parse_reads_is_whole_too(tmp_path: Path):
    """A last line with a lone surrogate's escape (``"\\ud800"``) is JSON to parse (``exactjson``), not to orjson alone:
    read took it for torn and sent it alone (join_split_records did not), so heal logged in the order of a torn line."""
    rows = [{"seq": i, "timestamp": f"2025-01-01T00:00:{i:02d}Z", "type": "user_message", "runId": "r1", "payload": {}}
            for i in range(1, 19)]
    del rows[-1]["timestamp"]
    data = b"\n".join(map(orjson.dumps, rows))[:-1] + b',"note":"\\ud800"}'
    logs, outs = [], []
    for name, body in (("bare", data), ("ended", data + b"\n")):
        (tmp_path / f"{name}.jsonl").write_bytes(body)
        done = run_replay("heal", str(tmp_path / f"{name}.jsonl"), "--dialect-out", "auto", "--log",
                          str(tmp_path / f"{name}.log"))
        logs.append(order(tmp_path / f"{name}.log"))
        outs.append(done.stdout)
    assert outs[0] == outs[1]
    assert logs[0] == logs[1]
    assert logs[1].index(("fix_timestamp", 18)) < logs[1].index(("ensure_run_started", 1))


def test_a_pipe_whose_writer_is_gone_logs_as_the_file_does(tmp_path: Path):
    """`cat FILE | replay heal`, the last line without a newline: the writer had written it all and gone when heal read
    it, so the read that gave the last line was no pause (the next one did not wait: it gave the end), and heal logs as
    for the file; the lines before that line went on first, a batch of their own, as if the writer paused there."""
    lines = (CORPUS / "claude-code" / "edge_cases.jsonl").read_bytes().split(b"\n")
    bare = tmp_path / "a.jsonl"
    bare.write_bytes(b"\n".join(line for k, line in enumerate(lines, 1) if k not in (13, 15, 16)))
    from_file = run_replay("heal", str(bare), "--log", str(tmp_path / "file.log"))
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, bare.read_bytes())  # (a few KiB: the pipe holds it all)
        os.close(write_end)
        piped = subprocess.run([REPLAY, "heal", "--log", str(tmp_path / "pipe.log")], stdin=read_end,
                               capture_output=True, timeout=120, check=False)
    finally:
        os.close(read_end)
    assert (piped.stdout, piped.returncode) == (from_file.stdout, from_file.returncode), piped.stderr
    assert order(tmp_path / "pipe.log") == order(tmp_path / "file.log")
    assert order(tmp_path / "file.log").index(("fix_timestamp", 16)) < order(tmp_path / "file.log").index(
        ("ensure_run_started", 1))

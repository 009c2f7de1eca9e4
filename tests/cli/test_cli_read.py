"""`replay read` through the real executable: formats, positions, exit codes, pipes, signals, follow."""

from __future__ import annotations

import gzip
import os
import pty
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest
from conftest import CORPUS, REPLAY, errors_of, jsonl, run_replay
from process_support import wait_until_read

EVENTS = [
    {"seq": 1, "timestamp": "2026-03-01T12:00:00.000Z", "type": "run_started", "runId": "r1", "payload": {}},
    {"seq": 2, "timestamp": "2026-03-01T12:00:01.000Z", "type": "user_message", "runId": "r1", "payload": {"text": "hi"}},
    {"seq": 3, "timestamp": "2026-03-01T12:00:02.000Z", "type": "run_completed", "runId": "r1", "payload": {}},
]
# Deliberately not orjson's spacing: output must be these exact bytes, not a re-serialisation.
LINES = [orjson.dumps(e).replace(b'","', b'", "') for e in EVENTS]
JOURNAL = b"\n".join(LINES) + b"\n"


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def big_journal(path: Path, events: int) -> Path:
    line = orjson.dumps({**EVENTS[1], "payload": {"text": "x" * 200}})
    with open(path, "wb") as out:
        for _ in range(events // 1000):
            out.write((line + b"\n") * 1000)
    return path


# formats -----------------------------------------------------------------------------------
def test_a_canonical_journal_comes_out_byte_identical(tmp_path: Path):
    journal = write(tmp_path / "run.jsonl", JOURNAL)
    before = (journal.stat().st_mtime_ns, journal.read_bytes())
    done = run_replay("read", str(journal))
    assert done.returncode == 0 and done.stderr == b""
    assert done.stdout == JOURNAL
    assert (journal.stat().st_mtime_ns, journal.read_bytes()) == before  # inputs are never modified


def test_run_records_pass_through_ahead_of_their_events(tmp_path: Path):
    record = b'{"$record":"run","runId":"r1","prompt":"hi","status":"ok"}'
    journal = write(tmp_path / "runs.jsonl", record + b"\n" + JOURNAL)
    done = run_replay("read", str(journal))
    assert done.returncode == 0 and done.stdout == record + b"\n" + JOURNAL


def test_stdin_by_default_and_with_a_dash(tmp_path: Path):
    assert run_replay("read", input=JOURNAL).stdout == JOURNAL
    assert run_replay("read", "-", input=JOURNAL).stdout == JOURNAL
    with open(write(tmp_path / "in.jsonl", JOURNAL), "rb") as handle:  # stdin that is a file
        done = subprocess.run([REPLAY, "read"], stdin=handle, capture_output=True, timeout=60)
    assert done.stdout == JOURNAL


def test_stdin_that_is_a_terminal():
    """A terminal named as `-` is read: typed lines, Ctrl-D ends them (with no path at all, it is refused:
    test_terminal_stdin_refused.py)."""
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen([REPLAY, "read", "-"], stdin=follower, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        os.write(leader, LINES[0] + b"\n")
        os.write(leader, b"\x04")  # Ctrl-D: end of input on a terminal
        out, err = proc.communicate(timeout=60)
    finally:
        os.close(leader)
        os.close(follower)
    assert proc.returncode == 0, err
    assert jsonl(out) == [EVENTS[0]]


def test_gzip_is_read_transparently(tmp_path: Path):
    packed = write(tmp_path / "run.jsonl.gz", gzip.compress(JOURNAL))
    assert run_replay("read", str(packed)).stdout == JOURNAL
    assert run_replay("read", input=gzip.compress(JOURNAL)).stdout == JOURNAL  # gzip on stdin too


def test_a_truncated_gzip_keeps_what_was_whole_and_fails(tmp_path: Path):
    data = gzip.compress(b"".join(LINES[1] + b"\n" for _ in range(20000)))
    packed = write(tmp_path / "cut.jsonl.gz", data[: len(data) // 2])
    done = run_replay("read", str(packed))
    assert done.returncode == 1
    *out, last = done.stdout.splitlines()
    assert out and all(line == LINES[1] for line in out)  # no partial line ever comes out
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_GZIP_INVALID" and error["source"] == str(packed)
    assert error["line"] == len(out) + 1 and error["offset"] == sum(len(line) + 1 for line in out)  # where it stopped
    # and in the stream, where it stopped: a heal down the pipe fails as a heal of the file does
    assert orjson.loads(last) == {"$record": "dropped", **{k: v for k, v in error.items() if k != "stage"}}
    piped = run_replay("heal", input=done.stdout)
    assert piped.returncode == run_replay("heal", str(packed)).returncode == 1
    assert [(e["code"], e["line"]) for e in errors_of(piped.stderr)] == [("E_GZIP_INVALID", error["line"])]


def test_zeros_that_pad_a_gzip_file_are_read_past_as_gzip_reads_them(tmp_path: Path):
    """NUL bytes after a member (a file padded to a block's size, between members or at its end) are no data: gzip(1)
    and Python's gzip skip them. They were E_GZIP_INVALID ("incorrect header check"), exit 1."""
    padded = gzip.compress(JOURNAL) + bytes(100) + gzip.compress(JOURNAL) + bytes(70000)
    assert gzip.decompress(padded) == JOURNAL * 2
    done = run_replay("read", str(write(tmp_path / "padded.jsonl.gz", padded)))
    assert (done.returncode, done.stdout, done.stderr) == (0, JOURNAL * 2, b"")


@pytest.mark.parametrize("size", [1, 20000], ids=["small", "larger-than-a-read"])
def test_a_gzip_zlib_refuses_keeps_every_line_it_inflated_first(tmp_path: Path, size: int):
    """A gzip whose trailer's check is wrong (every line inflated whole): the lines come out, then E_GZIP_INVALID where
    they stopped, naming the compressed byte zlib refused. What zlib inflated in the read it refused was lost with it:
    a small file gave no line at all and said it stopped at line 1, a larger one lost its last chunk's lines."""
    journal = JOURNAL * size
    data = bytearray(gzip.compress(journal))
    data[-8] ^= 0xFF  # the CRC-32 of the member
    packed = write(tmp_path / "crc.jsonl.gz", bytes(data))
    done = run_replay("read", str(packed))
    assert done.returncode == 1
    *out, last = done.stdout.splitlines(keepends=True)
    assert b"".join(out) == journal
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_GZIP_INVALID" and (error["line"], error["offset"]) == (len(out) + 1, len(journal))
    assert error["message"].endswith(f"incorrect data check (compressed byte {len(data) - 5})")
    assert orjson.loads(last) == {"$record": "dropped", **{k: v for k, v in error.items() if k != "stage"}}


@pytest.mark.parametrize("cut", [lambda data: data[:2], lambda data: data[:12] + bytes([data[12] ^ 0xFF]) + data[13:]],
                         ids=["header-only", "corrupt-from-the-start"])
def test_a_gzip_that_fails_at_its_first_byte_says_where(tmp_path: Path, cut):
    """A gzip that gives no byte at all still has a position, line 1 at offset 0 (it had none), in the error, in the
    dropped record, and down the pipe."""
    packed = write(tmp_path / "bad.jsonl.gz", cut(gzip.compress(JOURNAL)))
    done = run_replay("read", str(packed))
    assert done.returncode == 1
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_GZIP_INVALID" and (error["line"], error["offset"]) == (1, 0)
    assert error["howToFix"] == "Recompress the file or read the uncompressed journal."  # nothing came out
    assert orjson.loads(done.stdout) == {"$record": "dropped", **{k: v for k, v in error.items() if k != "stage"}}
    piped = run_replay("heal", input=done.stdout)
    assert [(e["code"], e["line"], e["offset"]) for e in errors_of(piped.stderr)] == [("E_GZIP_INVALID", 1, 0)]


@pytest.mark.parametrize("indent", [True, False], ids=["pretty", "one-line"])
def test_an_artifact_becomes_its_run_record_and_events(tmp_path: Path, indent: bool):
    artifact = {"schemaVersion": "1.0.0", "artifactType": "replay", "id": "art_1", "timestamp": "2026-03-01T12:00:03.000Z",
                "prompt": "hi", "status": "ok", "response": "hello", "events": EVENTS}
    path = write(tmp_path / "run.json", orjson.dumps(artifact, option=orjson.OPT_INDENT_2 if indent else 0))
    done = run_replay("read", str(path))
    assert done.returncode == 0, done.stderr
    records = jsonl(done.stdout)
    assert records[0]["$record"] == "run"
    assert (records[0]["runId"], records[0]["artifactId"], records[0]["response"]) == ("r1", "art_1", "hello")
    assert records[1:] == EVENTS


@pytest.mark.parametrize("indent", [True, False], ids=["pretty", "one-line"])
def test_an_array_of_events(tmp_path: Path, indent: bool):
    path = write(tmp_path / "events.json", orjson.dumps(EVENTS, option=orjson.OPT_INDENT_2 if indent else 0))
    done = run_replay("read", str(path))
    assert done.returncode == 0 and jsonl(done.stdout) == EVENTS


def test_a_non_object_in_an_array_is_reported_by_its_json_path(tmp_path: Path):
    path = write(tmp_path / "events.json", orjson.dumps([EVENTS[0], 5, EVENTS[1]], option=orjson.OPT_INDENT_2))
    done = run_replay("read", str(path))
    first, dropped, second = jsonl(done.stdout)  # a dropped record where the element was, as for a line
    assert done.returncode == 1 and [first, second] == EVENTS[:2]
    assert (dropped["$record"], dropped["code"], dropped["path"]) == ("dropped", "E_EVENT_NOT_OBJECT", "$[1]")
    [error] = errors_of(done.stderr)
    assert (error["code"], error["path"], error["source"]) == ("E_EVENT_NOT_OBJECT", "$[1]", str(path))


def test_a_directory_is_read_recursively_in_sorted_order(tmp_path: Path):
    root = tmp_path / "runs"
    write(root / "b" / "2.jsonl", LINES[1] + b"\n")
    write(root / "a" / "deep" / "1.jsonl.gz", gzip.compress(LINES[0] + b"\n"))
    write(root / "c.jsonl", LINES[2] + b"\n")
    write(root / "README.md", b"# not a journal\n")
    write(root / "a" / "x.raw.json", b"{not even json")
    done = run_replay("read", str(root))
    assert done.returncode == 0, done.stderr
    marks, lines = split_sources(done.stdout)
    assert lines == JOURNAL
    assert marks == [str(root / "a" / "deep" / "1.jsonl.gz"), str(root / "b" / "2.jsonl"), str(root / "c.jsonl")]


def test_several_paths_in_the_order_given(tmp_path: Path):
    a = write(tmp_path / "a.jsonl", LINES[2] + b"\n")
    b = write(tmp_path / "b.jsonl", LINES[0] + b"\n")
    marks, lines = split_sources(run_replay("read", str(a), str(b)).stdout)
    assert (marks, lines) == ([str(a), str(b)], LINES[2] + b"\n" + LINES[0] + b"\n")


def test_one_input_gets_no_source_record_and_several_get_one_each(tmp_path: Path):
    a = write(tmp_path / "a.jsonl", LINES[0] + b"\n")
    assert run_replay("read", str(a)).stdout == LINES[0] + b"\n"
    out = run_replay("read", str(a), "-", input=LINES[1] + b"\n").stdout
    assert out.splitlines() == [orjson.dumps({"$record": "source", "source": str(a)}), LINES[0],
                                b'{"$record":"source","source":"<stdin>"}', LINES[1]]


def split_sources(stdout: bytes) -> tuple[list[str], bytes]:
    """The file names of the source records, and the other lines as they came."""
    marks, kept = [], []
    for line in stdout.splitlines(keepends=True):
        if line.startswith(b'{"$record":"source"'):
            marks.append(orjson.loads(line)["source"])
        else:
            kept.append(line)
    return marks, b"".join(kept)


@pytest.mark.parametrize("path", sorted(CORPUS.rglob("*.jsonl")), ids=lambda p: f"{p.parent.name}/{p.name[:30]}")
def test_real_world_jsonl_keeps_every_object_line_byte_identical(path: Path):
    lines = path.read_bytes().split(b"\n")
    kept, bad = [], 0
    for line in lines:
        try:
            record = orjson.loads(line) if line.strip() else None
        except orjson.JSONDecodeError:
            record, bad = None, bad + 1
        if type(record) is dict:
            kept.append(line)
        elif record is not None:
            bad += 1
    done = run_replay("read", str(path))
    out = done.stdout.split(b"\n")[:-1]
    assert [ln for ln in out if not ln.startswith(b'{"$record":"dropped"')] == kept
    assert len([ln for ln in out if ln.startswith(b'{"$record":"dropped"')]) == bad  # each left-out line marked
    assert len(errors_of(done.stderr)) == bad
    assert done.returncode == (1 if bad else 0)


@pytest.mark.parametrize("path", sorted(CORPUS.rglob("*.json")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_world_json_documents_are_read_whole(path: Path):
    document = orjson.loads(path.read_bytes())
    done = run_replay("read", str(path))
    assert done.returncode == 0, done.stderr
    mark, *records = jsonl(done.stdout)  # another agent's log: named after its file down a pipe
    assert mark == {"$record": "source", "source": str(path)}
    if isinstance(document, list):
        assert records == [r for r in document if isinstance(r, dict)]
    else:
        assert records[1:] == document["events"]


# odd contents --------------------------------------------------------------------------------
def test_empty_and_blank_inputs_give_nothing_and_succeed(tmp_path: Path):
    for name, data in (("empty.jsonl", b""), ("blank.jsonl", b"\n\n  \n\r\n")):
        done = run_replay("read", str(write(tmp_path / name, data)))
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert run_replay("read", input=b"").returncode == 0


def test_crlf_lines_keep_their_bytes(tmp_path: Path):
    data = b"".join(line + b"\r\n" for line in LINES)
    done = run_replay("read", str(write(tmp_path / "dos.jsonl", data)))
    assert done.returncode == 0 and done.stdout == data


DROPPED = b'{"$record":"dropped"'


def kept(stdout: bytes) -> bytes:
    """stdout without the dropped records read writes where it left a line out."""
    return b"".join(ln + b"\n" for ln in stdout.split(b"\n")[:-1] if not ln.startswith(DROPPED))


def dropped(stdout: bytes) -> list[dict]:
    return [orjson.loads(ln) for ln in stdout.split(b"\n") if ln.startswith(DROPPED)]


@pytest.mark.parametrize("command", ["read", "validate", "heal"])
def test_a_byte_that_is_not_utf8_is_reported_at_its_column(tmp_path: Path, command: str):
    """read, validate and heal (parse, check_lines, the screen's slow lane) name the byte and its column, not column 1;
    the other lines still go through."""
    bad = b'{"seq":2,"type":"x","payload":{"t":"caf\xe9 ok"}}'
    journal = write(tmp_path / "u.jsonl", LINES[0] + b"\n" + bad + b"\n" + LINES[2] + b"\n")
    done = run_replay(command, str(journal), cwd=tmp_path)
    assert done.returncode == 1
    [error] = [e for e in errors_of(done.stderr) if e["line"] == 2]  # (validate: the seq after it is out of order too)
    column = bad.index(b"\xe9") + 1
    assert (error["code"], error["line"], error["column"], error["offset"]) == ("E_JSONL_LINE_INVALID", 2, column, len(LINES[0]) + 1)
    assert f"byte 0xe9 at column {column} is not UTF-8" in error["message"]
    if command == "read":
        assert kept(done.stdout) == LINES[0] + b"\n" + LINES[2] + b"\n"
        again = run_replay("heal", "-", input=done.stdout, cwd=tmp_path)  # the dropped record carries it down the pipe
        assert [(e["line"], e["column"], e["message"]) for e in errors_of(again.stderr)] == \
            [(error["line"], error["column"], error["message"])]


def test_a_utf8_byte_order_mark_is_skipped_and_offsets_still_count_it(tmp_path: Path):
    bom = b"\xef\xbb\xbf"
    done = run_replay("read", str(write(tmp_path / "win.jsonl", bom + LINES[0] + b"\nbad\n")))
    assert kept(done.stdout) == LINES[0] + b"\n"
    [error] = errors_of(done.stderr)
    assert (error["line"], error["offset"]) == (2, 3 + len(LINES[0]) + 1)
    artifact = bom + orjson.dumps({"id": "a", "status": "ok", "events": EVENTS}, option=orjson.OPT_INDENT_2)
    done = run_replay("read", str(write(tmp_path / "win.json", artifact)))
    assert done.returncode == 0 and jsonl(done.stdout)[1:] == EVENTS


def test_a_last_line_without_newline_is_kept_when_it_is_whole(tmp_path: Path):
    done = run_replay("read", str(write(tmp_path / "run.jsonl", JOURNAL[:-1])))
    assert done.returncode == 0 and done.stdout == JOURNAL


def test_a_torn_last_line_is_reported_with_its_offset_and_never_emitted(tmp_path: Path):
    torn = LINES[2][:25]
    journal = write(tmp_path / "run.jsonl", LINES[0] + b"\n" + LINES[1] + b"\n" + torn)
    done = run_replay("read", str(journal))
    assert done.returncode == 1
    assert kept(done.stdout) == LINES[0] + b"\n" + LINES[1] + b"\n"
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_JSONL_LINE_TORN"
    [mark] = dropped(done.stdout)  # what a heal down the pipe logs as drop_torn_line
    assert (mark["code"], mark["line"], mark["offset"], mark["original"]) == \
        (error["code"], error["line"], error["offset"], torn.decode())
    assert (error["source"], error["line"], error["offset"]) == (str(journal), 3, len(LINES[0]) + len(LINES[1]) + 2)


@pytest.mark.parametrize("dialect", [(), ("--dialect", "auto")])
def test_a_dropped_record_fits_the_line_limit_it_was_read_under(tmp_path: Path, dialect: tuple[str, ...]):
    """A torn line of 3,000 bytes, quotes in it, escaped in the dropped record's `original`, made it a 5,000-byte line:
    `read --max-line-bytes 4000 | heal --max-line-bytes 4000` refused it (E_JSONL_LINE_TOO_LONG) and logged no
    drop_torn_line. Its `original` is cut to fit (`originalBytes`: the line's length), and the heal goes as on the file."""
    torn = orjson.dumps({**EVENTS[1], "payload": {"text": '"q" ' * 1500}})[:3000]
    journal = write(tmp_path / "t.jsonl", LINES[0] + b"\n" + torn)
    read = run_replay("read", "--max-line-bytes", "4000", *dialect, str(journal))
    [mark] = dropped(read.stdout)
    line = next(x for x in read.stdout.splitlines() if b'"dropped"' in x)
    assert len(line) <= 4000 < len(orjson.dumps({**mark, "original": torn.decode()}))
    assert mark["originalBytes"] == 3000 and torn.decode().startswith(mark["original"]) and len(mark["original"]) > 1000
    piped = run_replay("heal", "--max-line-bytes", "4000", "--log", str(tmp_path / "piped.jsonl"), input=read.stdout)
    direct = run_replay("heal", "--max-line-bytes", "4000", "--log", str(tmp_path / "direct.jsonl"), str(journal))
    assert piped.returncode == direct.returncode == 0 and b"E_JSONL_LINE_TOO_LONG" not in piped.stderr
    assert piped.stdout == direct.stdout
    logged = jsonl((tmp_path / "piped.jsonl").read_bytes())
    assert [r["rule"] for r in logged] == [r["rule"] for r in jsonl((tmp_path / "direct.jsonl").read_bytes())]
    assert logged[0]["rule"] == "drop_torn_line" and logged[0]["original"] == mark["original"]
    small = run_replay("read", *dialect, str(journal))  # (under the default limit, nothing is cut)
    assert dropped(small.stdout)[0]["original"] == torn.decode() and "originalBytes" not in dropped(small.stdout)[0]


# Deeper than replay reads (1024 levels). On 3.12+ msgspec's depth follows the C stack, and a whole line between 1025
# levels and that depth (~1,500 on 3.12, ~10,000 on 3.13) is the README's known limit: the line is deeper there.
DEEP = 1100 if sys.version_info < (3, 12) else 20_000
TORN_BUT_WRONG = {  # a last line with no newline whose bytes are wrong already: what is wrong, at its column
    "not-utf8-cut": (b'{"seq":3,"type":"x","t":"caf\xe9 o', "E_JSONL_LINE_INVALID", "is not UTF-8"),
    "not-utf8-whole": (b'{"seq":3,"type":"x","t":"caf\xe9"}', "E_JSONL_LINE_INVALID", "is not UTF-8"),
    "too-deep-cut": (b'{"seq":3,"p":' + b"[" * 1100, "E_JSONL_LINE_INVALID", "nested deeper than 1024 levels"),
    "too-deep-whole": (b'{"seq":3,"p":' + b"[" * DEEP + b"]" * DEEP + b"}", "E_JSONL_LINE_INVALID", "nested deeper than 1024 levels"),
    "deep-cut": (b'{"seq":3,"p":' + b"[" * 300, "E_JSONL_LINE_TORN", "the write was cut off"),  # (orjson runs out of room)
    "utf8-char-cut": (b'{"seq":3,"type":"x","t":"caf\xc3', "E_JSONL_LINE_TORN", "the write was cut off"),  # the cut, not a wrong byte
}


@pytest.mark.parametrize("command", ["read", "validate", "heal"])
@pytest.mark.parametrize("case", list(TORN_BUT_WRONG))
def test_a_last_line_without_newline_is_torn_only_when_what_is_there_is_right_so_far(tmp_path: Path, command: str, case: str):
    """A torn last line is a write cut off: bytes that are not UTF-8 before its end, or nesting deeper than replay
    reads, are wrong whatever came after them, and reported as such (heal fails on them, as on any bad line); a
    UTF-8 character cut in two at the very end is the cut. The lines before it still come out."""
    last, code, words = TORN_BUT_WRONG[case]
    journal = write(tmp_path / "run.jsonl", LINES[0] + b"\n" + LINES[1] + b"\n" + last)
    done = run_replay(command, str(journal), cwd=tmp_path)
    errors = [e for e in errors_of(done.stderr) if e.get("line") == 3]
    if code == "E_JSONL_LINE_TORN" and command == "heal":
        assert done.returncode == 0 and errors == []  # (dropped and logged: the journal rule)
    else:
        assert done.returncode == 1
        [error] = errors
        assert (error["code"], error["offset"]) == (code, len(LINES[0]) + len(LINES[1]) + 2)
        assert words in error["message"]
    if command == "read":
        assert kept(done.stdout) == LINES[0] + b"\n" + LINES[1] + b"\n"


def test_a_file_that_is_only_a_torn_line(tmp_path: Path):
    done = run_replay("read", str(write(tmp_path / "torn.jsonl", b'{"seq":1,"ty')))
    assert done.returncode == 1 and kept(done.stdout) == b""
    assert [(e["code"], e["offset"]) for e in errors_of(done.stderr)] == [("E_JSONL_LINE_TORN", 0)]
    assert [(m["code"], m["offset"]) for m in dropped(done.stdout)] == [("E_JSONL_LINE_TORN", 0)]


def test_bad_lines_are_reported_with_positions_and_the_rest_flows_in_order(tmp_path: Path):
    data = LINES[0] + b"\nnot json\n[1,2]\n" + LINES[1] + b'\n{"seq": 9,\n' + LINES[2] + b"\n"
    journal = write(tmp_path / "mixed.jsonl", data)
    done = run_replay("read", str(journal))
    assert done.returncode == 1
    assert kept(done.stdout) == JOURNAL
    errors = errors_of(done.stderr)
    assert [(m["code"], m["line"], m["offset"]) for m in dropped(done.stdout)] == \
        [(e["code"], e["line"], e["offset"]) for e in errors]  # each line left out is marked where it was
    assert [(e["code"], e["line"]) for e in errors] == [
        ("E_JSONL_LINE_INVALID", 2), ("E_EVENT_NOT_OBJECT", 3), ("E_JSONL_LINE_INVALID", 5),
    ]
    assert errors[0]["offset"] == len(LINES[0]) + 1 and errors[0]["column"] == 1
    for e in errors:
        assert data[e["offset"]:].startswith(data.split(b"\n")[e["line"] - 1])  # the offset is the line's first byte
    assert all(line.startswith(b'{"error"') for line in done.stderr.splitlines())  # stderr: errors only


def test_strict_stops_at_the_first_error(tmp_path: Path):
    data = LINES[0] + b"\nbad one\nbad two\n" + b"".join(LINES[1] + b"\n" for _ in range(50000))
    done = run_replay("read", "--strict", str(write(tmp_path / "run.jsonl", data)))
    assert done.returncode == 1
    assert [e["line"] for e in errors_of(done.stderr)] == [2]
    assert len(done.stdout.splitlines()) < 50001


def test_a_line_over_the_limit_is_reported_and_skipped(tmp_path: Path):
    long_line = orjson.dumps({**EVENTS[1], "payload": {"text": "y" * 5000}})
    data = LINES[0] + b"\n" + long_line + b"\n" + LINES[2] + b"\n"
    path = write(tmp_path / "run.jsonl", data)
    done = run_replay("read", "--max-line-bytes", "1000", str(path))
    assert done.returncode == 1
    [error] = errors_of(done.stderr)
    assert (error["code"], error["line"], error["offset"]) == ("E_JSONL_LINE_TOO_LONG", 2, len(LINES[0]) + 1)
    # in its place a dropped record, so a heal down the pipe reports it and fails as a heal of the file does
    first, mark, last = done.stdout.splitlines()
    assert (first, last) == (LINES[0], LINES[2])
    assert orjson.loads(mark) == {"$record": "dropped", **{k: v for k, v in error.items() if k != "stage"}}
    piped = run_replay("heal", input=done.stdout)
    assert piped.returncode == run_replay("heal", "--max-line-bytes", "1000", str(path)).returncode == 1
    assert [(e["code"], e["line"]) for e in errors_of(piped.stderr)] == [("E_JSONL_LINE_TOO_LONG", 2)]


ARTIFACT = {"schemaVersion": "1.0.0", "artifactType": "replay", "id": "art_1", "timestamp": "2026-03-01T12:00:03.000Z",
            "prompt": "hi", "status": "ok", "response": "hello", "events": EVENTS}


@pytest.mark.parametrize("follow", [False, True], ids=["read", "follow"])
def test_a_pretty_printed_document_over_the_limit_is_one_error_not_its_lines(tmp_path: Path, follow: bool):
    """A document is read whole up to --max-line-bytes: one longer is one error saying so, not read as JSONL (one
    error a line); --follow reads a document as read does (whole, and it is done), not as lines."""
    data = orjson.dumps(ARTIFACT, option=orjson.OPT_INDENT_2)
    path = write(tmp_path / "run.json", data)
    flags = ["--follow"] if follow else []
    done = subprocess.run([REPLAY, "read", *flags, "--max-line-bytes", "200", str(path)], capture_output=True, timeout=60)
    assert done.returncode == 1
    [error] = errors_of(done.stderr)
    assert (error["code"], error["line"], error["offset"]) == ("E_JSONL_LINE_TOO_LONG", 1, 0)
    assert "one JSON document" in error["message"] and "--max-line-bytes" in error["howToFix"]
    assert [r["$record"] for r in jsonl(done.stdout)] == ["dropped"]
    whole = subprocess.run([REPLAY, "read", *flags, str(path)], capture_output=True, timeout=60)
    assert whole.returncode == 0 and whole.stderr == b""
    assert jsonl(whole.stdout)[1:] == EVENTS


def test_a_huge_line_within_the_default_limit_passes(tmp_path: Path):
    huge = orjson.dumps({**EVENTS[1], "payload": {"text": "z" * (3 << 20)}})
    data = LINES[0] + b"\n" + huge + b"\n" + LINES[2] + b"\n"
    done = run_replay("read", str(write(tmp_path / "run.jsonl", data)))
    assert done.returncode == 0 and done.stdout == data


def test_a_file_name_that_is_not_utf8_still_gets_a_json_diagnostic(tmp_path: Path):
    folder = os.fsencode(tmp_path)
    with open(folder + b"/\xff.jsonl", "wb") as out:
        out.write(LINES[0] + b"\nbad\n")
    done = run_replay("read", str(tmp_path))
    assert done.returncode == 1 and kept(done.stdout) == LINES[0] + b"\n"
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_JSONL_LINE_INVALID" and error["source"].endswith("\ufffd.jsonl")


# refusals (exit 2, nothing on stdout) ------------------------------------------------------------
def test_a_missing_path_is_refused_before_any_output(tmp_path: Path):
    good = write(tmp_path / "a.jsonl", JOURNAL)
    done = run_replay("read", str(good), str(tmp_path / "missing.jsonl"))
    assert done.returncode == 2 and done.stdout == b""
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_INPUT_PATH_NOT_FOUND" and error["path"] == str(tmp_path / "missing.jsonl")
    assert len(done.stderr.splitlines()) == 1


def test_a_socket_is_neither_file_nor_directory(tmp_path: Path):
    path = tmp_path / "s.jsonl"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        done = run_replay("read", str(path))
    assert done.returncode == 2 and errors_of(done.stderr)[0]["code"] == "E_INPUT_NOT_FILE_OR_DIR"


def test_bad_usage_is_refused():
    for args in (["--max-line-bytes", "0"], ["--max-line-bytes", "lots"], ["--nope"]):
        done = run_replay("read", *args, input=b"")
        assert done.returncode == 2 and done.stdout == b""
        [error] = errors_of(done.stderr)
        assert error["code"] in ("E_USAGE_INVALID", "E_UNKNOWN_FLAG")
    assert errors_of(run_replay("read", "--nope").stderr)[0]["code"] == "E_UNKNOWN_FLAG"


def test_follow_needs_exactly_one_file(tmp_path: Path):
    for args in ([], ["-"], [str(tmp_path)]):
        done = run_replay("read", "--follow", *args, input=b"")
        assert done.returncode == 2
        assert errors_of(done.stderr)[0]["code"] == "E_USAGE_INVALID"


# unreadable inputs (exit 1: the others are still read) ---------------------------------------------
def test_an_input_that_fails_mid_read_is_reported_and_the_next_is_read(tmp_path: Path):
    good = write(tmp_path / "a.jsonl", JOURNAL)
    done = run_replay("read", "/proc/self/mem", str(good))  # exists, opens, then fails with EIO
    assert done.returncode == 1
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_INPUT_UNREADABLE" and error["source"] == "/proc/self/mem"
    assert (error["line"], error["offset"]) == (1, 0)  # its first read failed
    mark = orjson.dumps({"$record": "dropped", **{k: v for k, v in error.items() if k != "stage"}})
    assert split_sources(done.stdout) == (["/proc/self/mem", str(good)], mark + b"\n" + JOURNAL)
    assert [e["code"] for e in errors_of(run_replay("heal", input=done.stdout).stderr)] == ["E_INPUT_UNREADABLE"]


@pytest.mark.skipif(os.geteuid() == 0, reason="permissions do not apply to root")
def test_a_file_without_read_permission(tmp_path: Path):
    locked = write(tmp_path / "locked.jsonl", JOURNAL)
    locked.chmod(0)
    try:
        done = run_replay("read", str(locked))
    finally:
        locked.chmod(0o600)
    assert done.returncode == 1
    assert errors_of(done.stderr)[0]["code"] == "E_INPUT_UNREADABLE"


# pipes and signals -----------------------------------------------------------------------------
@pytest.mark.parametrize("events", [3, 300_000], ids=["small", "large"])
def test_a_reader_that_leaves_early_ends_the_run_quietly(tmp_path: Path, events: int):
    journal = big_journal(tmp_path / "big.jsonl", events) if events > 3 else write(tmp_path / "s.jsonl", JOURNAL)
    done = subprocess.run(f"'{REPLAY}' read '{journal}' | head -1", shell=True, capture_output=True, timeout=120,
                          executable="/bin/bash")
    assert done.stderr == b""
    assert len(done.stdout.splitlines()) == 1
    piped = subprocess.run(f"'{REPLAY}' read '{journal}' | head -1 >/dev/null; echo ${{PIPESTATUS[0]}}", shell=True,
                           capture_output=True, timeout=120, executable="/bin/bash")
    assert piped.stdout.strip() == b"0" and piped.stderr == b""


def test_a_pipe_closed_by_the_reader_from_the_start(tmp_path: Path):
    journal = big_journal(tmp_path / "big.jsonl", 50_000)
    proc = subprocess.Popen([REPLAY, "read", str(journal)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # nobody will ever read
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and err == b""


def test_ctrl_c_exits_130_without_a_traceback():
    proc = subprocess.Popen([REPLAY, "read"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdin.write(JOURNAL)
    proc.stdin.flush()
    assert proc.stdout.readline() == LINES[0] + b"\n"  # it is running and streaming
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert b"Traceback" not in err and err == b""


# follow --------------------------------------------------------------------------------------
def lines_of(proc: subprocess.Popen) -> queue.Queue:
    q: queue.Queue = queue.Queue()

    def pump() -> None:
        for line in proc.stdout:
            q.put(line)
        q.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return q


def test_follow_streams_lines_appended_later_and_ctrl_c_ends_it(tmp_path: Path):
    journal = write(tmp_path / "live.jsonl", LINES[0] + b"\n")
    proc = subprocess.Popen([REPLAY, "read", "--follow", str(journal)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    got = lines_of(proc)
    assert got.get(timeout=60) == LINES[0] + b"\n"
    with open(journal, "ab") as out:
        out.write(LINES[1][:20])  # a line still being written is held back...
        out.flush()
        out.write(LINES[1][20:] + b"\n")  # ...until its newline arrives
        out.flush()
    assert got.get(timeout=60) == LINES[1] + b"\n"
    with open(journal, "ab") as out:
        out.write(LINES[2] + b"\n")
    assert got.get(timeout=60) == LINES[2] + b"\n"
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 130
    assert proc.stderr.read() == b""
    assert journal.read_bytes() == JOURNAL  # followed, never touched


def test_ctrl_c_during_follow_says_the_unfinished_last_line_was_not_read(tmp_path: Path):
    """The last line has no newline yet when Ctrl-C stops --follow: it is not read (it may still be being written),
    and a warning says so, naming the file, the line and the byte where it starts."""
    journal = write(tmp_path / "live.jsonl", LINES[0] + b"\n" + LINES[1][:20])
    proc = subprocess.Popen([REPLAY, "read", "--follow", str(journal)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        got = lines_of(proc)
        assert got.get(timeout=60) == LINES[0] + b"\n"
        time.sleep(0.5)  # (it has read on to the end of the file and polls it for more)
    finally:
        proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 130
    assert got.get(timeout=60) is None  # nothing more came out
    [notice] = jsonl(proc.stderr.read())
    assert (notice["event"], notice["level"], notice["code"]) == ("read.unfinished", "warning", "E_JSONL_LINE_UNFINISHED")
    assert (notice["source"], notice["line"], notice["offset"], notice["bytes"]) == (str(journal), 2, len(LINES[0]) + 1, 20)
    assert "no newline yet" in notice["message"] and "not read" in notice["message"]


def test_follow_reads_a_gzip_journal_as_it_is_written(tmp_path: Path):
    """--follow of a .gz still being written: its stream, cut off at its end for now, was E_GZIP_INVALID ("truncated",
    exit 1, following stopped); a member appended later (`gzip -c >> log.gz`) was never read. Both are read as they come."""
    import zlib

    journal = tmp_path / "live.jsonl.gz"
    packer = zlib.compressobj(wbits=31)
    with open(journal, "wb") as out:
        out.write(packer.compress(LINES[0] + b"\n") + packer.flush(zlib.Z_SYNC_FLUSH))  # a member begun, not ended
    proc = subprocess.Popen([REPLAY, "read", "--follow", str(journal)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        got = lines_of(proc)
        assert got.get(timeout=60) == LINES[0] + b"\n"
        with open(journal, "ab") as out:
            out.write(packer.compress(LINES[1] + b"\n") + packer.flush())  # the member ends
        assert got.get(timeout=60) == LINES[1] + b"\n"
        with open(journal, "ab") as out:
            out.write(gzip.compress(LINES[2] + b"\n"))  # another member
        assert got.get(timeout=60) == LINES[2] + b"\n"
    finally:
        proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 130
    assert proc.stderr.read() == b""


def test_follow_tells_a_gzip_journal_that_was_empty_when_opened(tmp_path: Path):
    """--follow of a .gz its writer had not flushed yet (empty): whether it is gzip was told from its first read, so it
    was read as text, its compressed bytes one unfinished line (or lines of garbage); now it is told when they come."""
    journal = write(tmp_path / "live.jsonl.gz", b"")
    proc = subprocess.Popen([REPLAY, "read", "--follow", str(journal)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        got = lines_of(proc)
        time.sleep(0.5)  # (it has opened the file and polls it)
        with open(journal, "ab") as out:
            out.write(gzip.compress(JOURNAL))
        assert [got.get(timeout=60) for _ in LINES] == [line + b"\n" for line in LINES]
    finally:
        proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 130
    assert proc.stderr.read() == b""


@pytest.mark.parametrize("head", [LINES[0] + b"\n", b""], ids=["after-a-line", "first-line"])
def test_ctrl_c_on_a_pipe_says_the_unfinished_last_line_was_not_read(head: bytes):
    """`tail -f x | replay read`: Ctrl-C while the pipe's last line has no newline yet says so, as --follow does (the
    same read.unfinished warning), rather than dropping the line in silence; the pipe stays open (tail -f writes on)."""
    proc = subprocess.Popen([REPLAY, "read"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        got = lines_of(proc)
        proc.stdin.write(head + LINES[1][:20])
        proc.stdin.flush()
        if head:
            assert got.get(timeout=60) == head
        wait_until_read(proc.stdin)  # (on a loaded machine start-up alone may take longer than any fixed sleep)
        time.sleep(0.5)  # (it has read all the pipe holds and waits for more)
    finally:
        proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 130
    proc.stdin.close()
    assert got.get(timeout=60) is None  # nothing more came out
    [notice] = jsonl(proc.stderr.read())
    assert (notice["event"], notice["level"], notice["code"]) == ("read.unfinished", "warning", "E_JSONL_LINE_UNFINISHED")
    assert (notice["source"], notice["line"], notice["offset"], notice["bytes"]) == ("<stdin>", 1 + bool(head), len(head), 20)
    assert "no newline yet" in notice["message"] and "not read" in notice["message"]


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_follow_reads_a_truncated_journal_again_from_its_start(tmp_path: Path, gz: bool):
    """A journal truncated while followed (a log that starts over) is read from its start again, as `tail -f` does:
    reading on at the old offset lost the new lines (they were never read, or read from their middle). A .gz is
    decompressed again from its start (it was read on at the old offset: nothing more ever came)."""
    packed = gzip.compress if gz else bytes
    journal = write(tmp_path / ("live.jsonl.gz" if gz else "live.jsonl"), packed(LINES[0] + b"\n" + LINES[1] + b"\n"))
    proc = subprocess.Popen([REPLAY, "read", "--follow", str(journal)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        got = lines_of(proc)
        assert [got.get(timeout=60), got.get(timeout=60)] == [LINES[0] + b"\n", LINES[1] + b"\n"]
        journal.write_bytes(packed(LINES[2] + b"\n"))  # truncated, and shorter than what was read of it
        assert got.get(timeout=30) == LINES[2] + b"\n"
    finally:
        proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 130
    [notice] = jsonl(proc.stderr.read())
    assert (notice["event"], notice["code"], notice["source"]) == ("read.truncated", "E_INPUT_TRUNCATED", str(journal))


def test_a_json_object_over_several_lines_that_is_no_artifact_is_one_error_not_one_a_line(tmp_path: Path) -> None:
    """`{"a": 1, "b": [1, 2]}` pretty-printed in a .json file was read as lines: an E_JSONL_LINE_INVALID for each
    (capture's .raw.json named directly: twenty, and a report of 0 runs). One error says what it is; a raw capture
    file is named as one, with what to read instead."""
    small = tmp_path / "small.json"
    small.write_bytes(b'{\n  "a": 1,\n  "b": [1, 2]\n}\n')
    done = run_replay("read", str(small))
    [error] = errors_of(done.stderr)
    assert done.returncode == 1 and error["code"] == "E_ARTIFACT_EVENTS_INVALID" and error["line"] == 1
    raw = tmp_path / "run_1.raw.json"
    raw.write_bytes(b'{\n  "artifactType": "raw-capture",\n  "request": {}\n}\n')
    [error] = errors_of(run_replay("report", str(raw)).stderr)
    # its artifactType is refused first (validate's order: version, type, events), with the raw capture's advice
    assert error["code"] == "E_ARTIFACT_TYPE_INVALID" and "raw runner output" in error["howToFix"]
    one = tmp_path / "one.json"
    one.write_bytes(b'{"seq": 1, "timestamp": "2026-03-01T12:00:00Z", "type": "run_started", "runId": "r", "payload": {}}\n')
    # one record on one line in a .json file: an object without an `events` array, which validate judges an artifact
    # that has none; read refuses it so too (a journal of one record is named .jsonl)
    done = run_replay("read", str(one))
    [error] = errors_of(done.stderr)
    assert done.returncode == 1 and error["code"] == "E_ARTIFACT_EVENTS_INVALID" and ".jsonl" in error["howToFix"]
    journal = tmp_path / "one.jsonl"
    journal.write_bytes(one.read_bytes())
    assert run_replay("read", str(journal)).stdout == one.read_bytes()


def test_a_pretty_printed_journal_is_told_to_be_one_not_to_fix_each_line() -> None:
    """`jq . run.jsonl | replay report` said "Fix or delete the line" for every line of every record; a line that is a
    piece of a record written over several lines says so (one record a line, or let heal join them)."""
    pretty = b'{\n  "seq": 1,\n  "type": "run_started"\n}\n'
    errors = errors_of(run_replay("read", input=pretty).stderr)
    assert [e["line"] for e in errors] == [1, 2, 3, 4] and all("`jq -c .`" in e["howToFix"] for e in errors)
    [other] = errors_of(run_replay("read", input=b'{"seq": 1,\nnot json\n').stderr)[1:]
    assert "`jq -c .`" not in other["howToFix"]  # (a line that is no piece of a record keeps the usual advice)


def test_stdin_named_twice_is_refused_before_anything_is_read(tmp_path: Path) -> None:
    """`replay read - -` read stdin for the first `-` and an empty input for the second, without a word (stdin can be
    read once): refused before anything is read, as the user typed it on the command line, and at the key in a config."""
    line = b'{"seq":1,"type":"run_started","runId":"r","payload":{}}\n'
    done = subprocess.run([REPLAY, "read", "-", "-"], input=line, capture_output=True, timeout=60)
    (error,) = errors_of(done.stderr)
    assert (done.returncode, done.stdout, error["code"], error["path"]) == (2, b"", "E_USAGE_INVALID", "-")
    (tmp_path / "c.toml").write_text('[stages.r]\ntype = "read"\npaths = ["-", "-"]\n[stages.o]\ntype = "write"\n'
                                     'inputs = ["r"]\n')
    done = subprocess.run([REPLAY, "run", str(tmp_path / "c.toml")], input=line, capture_output=True, timeout=60)
    (error,) = errors_of(done.stderr)
    assert (done.returncode, done.stdout, error["code"], error["path"]) == (2, b"", "E_CONFIG_OPTION_INVALID",
                                                                            "stages.r.paths")
    done = subprocess.run([REPLAY, "read", "-"], input=line, capture_output=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, line)  # (once is read)

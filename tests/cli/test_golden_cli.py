"""`replay golden check`: exit 0 same after normalisation, 1 with the first difference (both lines), 2 unusable."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from conftest import REPLAY, errors_of, jsonl

from replay.pipeline.cli.app import run_cli

RECORDED = [
    {"type": "session/start", "ts": "2026-03-01T12:00:00.000Z", "sessionId": "9b2f0c1e-1111-4d1a-947b-66c16ed000d0"},
    {"type": "tool/result", "ts": "2026-03-01T12:00:00.100Z", "toolCallId": "c1", "output": "hi", "durationMs": 0.01, "seed": 7},
    {"type": "session/end", "ts": "2026-03-01T12:00:01.000Z", "sessionId": "9b2f0c1e-1111-4d1a-947b-66c16ed000d0"},
]


def write(path: Path, records: list[dict]) -> str:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return str(path)


def later(records: list[dict], **changes) -> list[dict]:
    """The same journal from another run: new times, ids and durations; plus ``changes`` to line 2."""
    out = [dict(r, ts=r["ts"].replace("2026-03-01T12", "2026-11-30T08")) for r in records]
    for r in out:
        if "sessionId" in r:
            r["sessionId"] = "fa0fb499-b2f4-4d1a-947b-66c16ed000d0"
    out[1] |= {"durationMs": 3.5} | changes
    return out


def golden(capsysbinary: pytest.CaptureFixture[bytes], *args: str) -> tuple[int, list[dict], list[dict]]:
    code = run_cli(["golden", "check", *args])
    out, err = capsysbinary.readouterr()
    return code, jsonl(out), errors_of(err)


def test_a_journal_from_another_run_is_the_same_after_normalisation(tmp_path, capsysbinary):
    recorded = write(tmp_path / "recorded.jsonl", RECORDED)
    new = write(tmp_path / "new.jsonl", later(RECORDED))
    assert golden(capsysbinary, recorded, new) == (0, [{"same": True, "recorded": recorded, "new": new, "lines": 3}], [])


def test_a_difference_is_reported_with_both_lines_and_exit_1(tmp_path, capsysbinary):
    recorded = write(tmp_path / "recorded.jsonl", RECORDED)
    new = write(tmp_path / "new.jsonl", later(RECORDED, output="HI"))
    code, [result], [error] = golden(capsysbinary, recorded, new)
    assert code == 1
    assert result["same"] is False and result["line"] == 2
    assert result["recordedLine"] == orjson.dumps(RECORDED[1]).decode()
    assert '"output":"HI"' in result["newLine"]
    assert error["code"] == "E_GOLDEN_MISMATCH" and error["line"] == 2 and error["source"] == new
    assert error["expected"] == result["recordedLine"] and error["received"] == result["newLine"]
    assert error["normalised"]["recorded"] == ('{"type":"tool/result","ts":"<time>","toolCallId":"<id:2>","output":"hi",'
                                              '"durationMs":"<ignored>","seed":7}')  # (a call id is an id, as to diff)


@pytest.mark.parametrize("line", [b'{"type":"tool/result","output":"caf%s"}', b"plain text caf%s"])
def test_lines_that_differ_only_in_bytes_that_are_not_utf8_differ(tmp_path, capsysbinary, line):
    recorded, new = tmp_path / "recorded.txt", tmp_path / "new.txt"  # (transcripts: a journal refuses the line)
    recorded.write_bytes(line % b"\xe9" + b"\n")
    new.write_bytes(line % b"\xe8" + b"\n")
    code, [result], [error] = golden(capsysbinary, str(recorded), str(new))
    assert code == 1 and result["line"] == 1 and error["code"] == "E_GOLDEN_MISMATCH"
    assert "caf\\xe9" in result["recordedLine"] and "caf\\xe8" in result["newLine"]  # shown as the bytes they are
    # stderr shows them as stdout does (it showed both as "caf\ufffd": the same text for two different lines)
    assert (error["expected"], error["received"]) == (result["recordedLine"], result["newLine"])
    recorded.write_bytes(line % b"\xe8" + b"\n")
    assert golden(capsysbinary, str(recorded), str(new))[0] == 0


@pytest.mark.parametrize(("recorded_text", "new_text", "line", "why"), [
    (b"hello\nworld\n", b"hello\nworld\r\n", 2, "the new line ends with a carriage return (CRLF)"),
    (b"hello\r\nworld\n", b"hello\nworld\n", 1, "the recorded line ends with a carriage return (CRLF)"),
    (b'{"ts":"2026-03-01T12:00:00Z","a":1}\n', b'\xef\xbb\xbf{"ts":"2026-11-30T08:00:00Z","a":1}\n', 1,
     "the new file begins with a byte order mark"),
    (b"\xef\xbb\xbfhello\n", b"hello\r\n", 1,
     "the recorded file begins with a byte order mark and the new line ends with a carriage return (CRLF)"),
])
def test_lines_that_differ_only_in_a_line_ending_or_a_byte_order_mark_differ_and_say_so(
        tmp_path, capsysbinary, recorded_text, new_text, line, why):
    """A golden is compared byte for byte but for what is normalised: a CRLF or a byte order mark is a difference, and
    the difference says that is all there is (it said only "differs after normalisation", the bytes invisible)."""
    recorded, new = tmp_path / "recorded.txt", tmp_path / "new.txt"
    recorded.write_bytes(recorded_text)
    new.write_bytes(new_text)
    code, [result], [error] = golden(capsysbinary, str(recorded), str(new))
    assert code == 1 and result["line"] == line
    assert result["difference"] == error["message"].split(": ", 1)[1] == f"line {line}: the lines differ only in that {why}"


def test_lines_that_differ_in_more_than_a_line_ending_say_only_that_they_differ(tmp_path, capsysbinary):
    recorded, new = tmp_path / "recorded.txt", tmp_path / "new.txt"
    recorded.write_bytes(b"hello\n")
    new.write_bytes(b"hullo\r\n")
    code, [result], _ = golden(capsysbinary, str(recorded), str(new))
    assert code == 1 and result["difference"] == "line 1 differs after normalisation"


def test_a_journal_that_ends_early_differs_at_the_line_it_lacks(tmp_path, capsysbinary):
    recorded = write(tmp_path / "recorded.jsonl", RECORDED)
    new = write(tmp_path / "new.jsonl", later(RECORDED)[:2])
    code, [result], [error] = golden(capsysbinary, recorded, new)
    assert code == 1 and result["line"] == 3 and result["newLine"] is None
    assert error["received"] == "(the new file ends)"


def test_more_keys_can_be_normalised_from_the_command_line(tmp_path, capsysbinary):
    owned = [RECORDED[0], RECORDED[1] | {"owner": "u1"}, RECORDED[2]]
    recorded = write(tmp_path / "recorded.jsonl", owned)
    new = write(tmp_path / "new.jsonl", later(owned, seed=8, owner="u9"))
    assert golden(capsysbinary, recorded, new)[0] == 1
    assert golden(capsysbinary, "--ignore-key", "seed", recorded, new)[0] == 1  # the owner still differs
    code, [result], errors = golden(capsysbinary, "--ignore-key", "seed", "--id-key", "owner", recorded, new)
    assert (code, result["same"], errors) == (0, True, [])


def test_the_new_journal_may_come_on_stdin(tmp_path, capsysbinary, monkeypatch):
    recorded = write(tmp_path / "recorded.jsonl", RECORDED)
    data = b"".join(orjson.dumps(r) + b"\n" for r in later(RECORDED))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    code, [result], _ = golden(capsysbinary, recorded, "-")
    assert code == 0 and result["new"] == "-"


@pytest.mark.parametrize("which", ["recorded", "new"])
def test_a_missing_file_is_refused_before_any_output(tmp_path, capsysbinary, which):
    present = write(tmp_path / "present.jsonl", RECORDED)
    args = [str(tmp_path / "missing.jsonl"), present] if which == "recorded" else [present, str(tmp_path / "missing.jsonl")]
    code, out, [error] = golden(capsysbinary, *args)
    assert (code, out, error["code"]) == (2, [], "E_INPUT_PATH_NOT_FOUND")


def test_the_recorded_golden_cannot_be_stdin(tmp_path, capsysbinary):
    code, out, [error] = golden(capsysbinary, "-", write(tmp_path / "new.jsonl", RECORDED))
    assert (code, out, error["code"]) == (2, [], "E_USAGE_INVALID")


def test_a_folder_is_refused_as_unreadable_not_as_a_missing_path(tmp_path, capsysbinary):
    """A folder is there: it was E_INPUT_PATH_NOT_FOUND ("is not a file"), as if it were missing; reading it fails
    (ERROR_CODES.md: E_INPUT_UNREADABLE, "Is a directory")."""
    code, out, [error] = golden(capsysbinary, write(tmp_path / "recorded.jsonl", RECORDED), str(tmp_path))
    assert (code, out, error["code"], error["received"]) == (2, [], "E_INPUT_UNREADABLE", "Is a directory")


def test_the_new_journal_may_come_from_a_pipe_such_as_process_substitution(tmp_path):
    """`replay golden check golden.jsonl <(python agent.py)`: NEW is a pipe, /dev/fd/N. It was refused as "not a file"
    (only `-` could stream)."""
    recorded = write(tmp_path / "recorded.jsonl", RECORDED)
    data = b"".join(orjson.dumps(r) + b"\n" for r in later(RECORDED))
    reading, writing = os.pipe()
    os.write(writing, data)
    os.close(writing)
    try:
        proc = subprocess.run([REPLAY, "golden", "check", recorded, f"/dev/fd/{reading}"], pass_fds=(reading,),
                              capture_output=True, check=False, timeout=60)
    finally:
        os.close(reading)
    assert proc.returncode == 0, proc.stderr
    assert jsonl(proc.stdout)[0]["same"] is True


def test_a_closed_stdin_is_refused_as_unreadable(tmp_path):
    """`-` with stdin closed was E_UNHANDLED (AttributeError on sys.stdin.buffer)."""
    proc = subprocess.run([REPLAY, "golden", "check", write(tmp_path / "recorded.jsonl", RECORDED), "-"],
                          stdin=subprocess.DEVNULL, capture_output=True, check=False,
                          preexec_fn=lambda: os.close(0))
    assert proc.returncode == 2 and proc.stdout == b""
    assert [e["code"] for e in errors_of(proc.stderr)] == ["E_INPUT_UNREADABLE"]


@pytest.mark.parametrize("depth", [600, 1024])
def test_a_line_nested_as_deep_as_replay_reads_is_compared(tmp_path, capsysbinary, depth):
    """A JSON line nested 600 levels deep (replay reads 1024) was E_UNHANDLED (RecursionError) while normalising."""
    recorded, new = tmp_path / "recorded.jsonl", tmp_path / "new.jsonl"
    recorded.write_bytes(b'{"a":' * depth + b'"2026-03-01T12:00:00Z"' + b"}" * depth + b"\n")
    new.write_bytes(b'{"a":' * depth + b'"2026-11-30T08:00:00Z"' + b"}" * depth + b"\n")
    assert golden(capsysbinary, str(recorded), str(new))[0] == 0
    new.write_bytes(b'{"a":' * depth + b'"other"' + b"}" * depth + b"\n")
    code, [result], [error] = golden(capsysbinary, str(recorded), str(new))
    assert (code, result["line"], error["code"]) == (1, 1, "E_GOLDEN_MISMATCH")


def test_long_lines_are_shown_on_stderr_where_they_differ(tmp_path, capsysbinary):
    """stderr shows 400 characters of each line: both were cut to their first 400, the same for lines that differ
    after them, so expected and received read the same."""
    recorded, new = tmp_path / "recorded.txt", tmp_path / "new.txt"
    recorded.write_bytes(b"a" * 1000 + b"X" + b"b" * 1000 + b"\n")
    new.write_bytes(b"a" * 1000 + b"Y" + b"b" * 1000 + b"\n")
    code, _, [error] = golden(capsysbinary, str(recorded), str(new))
    assert code == 1 and error["expected"] != error["received"]
    assert error["expected"] == "…" + "a" * 200 + "X" + "b" * 199 + "…"
    assert error["received"] == "…" + "a" * 200 + "Y" + "b" * 199 + "…"
    new.write_bytes(b"a" * 1000 + b"X" + b"b" * 1000 + b"c\n")  # differs at its end: the window ends there
    code, _, [error] = golden(capsysbinary, str(recorded), str(new))
    assert error["received"] == "…" + "b" * 399 + "c" and error["expected"] == "…" + "b" * 400


def test_a_line_longer_than_max_line_bytes_is_refused_not_held_whole(tmp_path: Path):
    """Found by fuzzing the CLI: golden check held each line whole, however long: `replay golden check rec.jsonl
    /dev/zero` (a line without end) was E_UNHANDLED (MemoryError), exit 1, under a memory limit. A line longer than
    --max-line-bytes (64 MiB, as for every command that reads lines) is E_JSONL_LINE_TOO_LONG now, exit 2."""
    recorded = tmp_path / "recorded.jsonl"
    recorded.write_bytes(b'{"a":1}\n{"b":"' + b"x" * 100 + b'"}\n')
    limited = subprocess.run(f"ulimit -v 1000000; exec {REPLAY} golden check {recorded} /dev/zero", shell=True,
                             capture_output=True, timeout=120, check=False)
    assert limited.returncode == 2 and limited.stdout == b"", limited.stderr
    error, = errors_of(limited.stderr)
    assert (error["code"], error["source"], error["line"], error["offset"]) == ("E_JSONL_LINE_TOO_LONG", "/dev/zero", 1, 0)
    same = subprocess.run([REPLAY, "golden", "check", "--max-line-bytes", "108", str(recorded), "-"],
                          input=recorded.read_bytes(), capture_output=True, timeout=60, check=False)
    assert same.returncode == 0, same.stderr  # (a line of exactly the limit, its newline aside, is read)
    short = subprocess.run([REPLAY, "golden", "check", "--max-line-bytes", "107", str(recorded), "-"],
                           input=recorded.read_bytes(), capture_output=True, timeout=60, check=False)
    error, = errors_of(short.stderr)
    assert short.returncode == 2 and (error["line"], error["offset"]) == (2, 8), short.stderr


def test_a_key_written_twice_is_a_difference_and_a_warning(tmp_path: Path, capsysbinary):
    """`{"a":"x","a":"y"}` was the same as `{"a":"y"}`, silently (only the last value was compared). A reader may keep
    either value: the line is compared as written, keys written twice kept twice, and each such line is warned about
    (E_JSON_DUPLICATE_KEY), as every other command warns."""
    twice, once = tmp_path / "k8.jsonl", tmp_path / "k9.jsonl"
    twice.write_bytes(b'{"a":"x","a":"y"}\n')
    once.write_bytes(b'{"a":"y"}\n')
    done = subprocess.run([REPLAY, "golden", "check", str(twice), str(once)], capture_output=True, check=False)
    result = orjson.loads(done.stdout)
    assert (done.returncode, result["same"], result["line"]) == (1, False, 1)
    assert "written twice" in result["difference"] and "$.a" in result["difference"]
    notes = [orjson.loads(line) for line in done.stderr.splitlines() if b"E_JSON_DUPLICATE_KEY" in line]
    assert [(n["source"], n["line"], n["keys"], n["level"]) for n in notes] == [(str(twice), 1, ["$.a"], "warning")]
    same = subprocess.run([REPLAY, "golden", "check", str(twice), str(twice)], capture_output=True, check=False)
    assert same.returncode == 0 and orjson.loads(same.stdout)["same"] is True  # (written twice alike: the same)
    assert same.stderr.count(b"E_JSON_DUPLICATE_KEY") == 2  # (once per file)
    other = tmp_path / "k10.jsonl"
    other.write_bytes(b'{"a":"z","a":"y"}\n')  # (the same last value, another first one)
    assert subprocess.run([REPLAY, "golden", "check", str(twice), str(other)], capture_output=True,
                          check=False).returncode == 1


def test_a_gzipped_copy_is_the_same_session(tmp_path: Path):
    """golden check read a .gz file's compressed bytes as lines ("line 1 different"); script and read gunzip it."""
    import gzip

    recorded = write(tmp_path / "recorded.jsonl", RECORDED)
    packed = tmp_path / "recorded.jsonl.gz"
    packed.write_bytes(gzip.compress(Path(recorded).read_bytes()))
    for args, stdin in (([recorded, str(packed)], None), ([str(packed), "-"], packed.read_bytes())):
        done = subprocess.run([REPLAY, "golden", "check", *args], input=stdin, capture_output=True, check=False)
        assert (done.returncode, orjson.loads(done.stdout)["same"], done.stderr) == (0, True, b""), done.stderr
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(packed.read_bytes()[:40])
    done = subprocess.run([REPLAY, "golden", "check", recorded, str(cut)], capture_output=True, check=False)
    (error,) = errors_of(done.stderr)
    assert (done.returncode, done.stdout, error["code"], error["source"]) == (2, b"", "E_GZIP_INVALID", str(cut))


def test_an_integer_and_a_float_of_one_value_differ_and_say_so(tmp_path: Path, capsysbinary):
    """1e2 is a float (100.0) to a JSON reader, 100 an integer: different values, as a Python or typed reader of the
    session reads them; the difference says that is all. 1e2 and 100.0 are one value."""
    a, b, c = (tmp_path / f"{n}.jsonl" for n in "abc")
    a.write_bytes(b'{"a":1e2,"b":[1]}\n')
    b.write_bytes(b'{"a":100,"b":[1]}\n')
    c.write_bytes(b'{"a":100.0,"b":[1]}\n')
    code, [result], _ = golden(capsysbinary, str(a), str(b))
    assert code == 1 and "how a number is written ($.a" in result["difference"], result
    assert golden(capsysbinary, str(a), str(c))[0] == 0


def test_max_line_bytes_help_says_a_longer_line_is_refused():
    """The help said "longer lines are reported and skipped"; golden check refuses the file (exit 2)."""
    helped = " ".join(subprocess.run([REPLAY, "golden", "check", "--help"], capture_output=True, text=True,
                                     check=False).stdout.split())
    assert "skipped" not in helped and "longer line cannot be compared: refused" in helped

"""`replay golden check`: a byte order mark or blank around a JSON line, duplicate-key offsets, lines shown unambiguously,
and a folder or socket given as a file (each was wrong, found by a tester)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from conftest import errors_of, jsonl, run_replay

BOM = b"\xef\xbb\xbf"
RUN_A = b'{"type":"session/start","ts":1764490738538,"sessionId":"s_001"}\n{"type":"turn","id":"call_1"}\n'
RUN_B = b'{"type":"session/start","ts":1764490999999,"sessionId":"s_002"}\n{"type":"turn","id":"call_2"}\n'


def check(tmp_path: Path, recorded: bytes, new: bytes, name: str = "run.jsonl"):
    a, b = tmp_path / f"a-{name}", tmp_path / f"b-{name}"
    a.write_bytes(recorded)
    b.write_bytes(new)
    done = run_replay("golden", "check", str(a), str(b))
    return done.returncode, jsonl(done.stdout), done.stderr


@pytest.mark.parametrize(("recorded", "new"), [
    (BOM + RUN_A, BOM + RUN_B),  # (a mark on both sides: was "the recorded file begins with a byte order mark and the
                                 # new file begins with a byte order mark", a difference named on both sides)
    (RUN_A.replace(b"\n{", b"\n" + BOM + b"{"), RUN_B.replace(b"\n{", b"\n" + BOM + b"{")),  # (files joined)
    (b" " + RUN_A.replace(b"}\n", b"} \t\n"), b" " + RUN_B.replace(b"}\n", b"}\r\n")),  # (JSON's blank around it)
])
def test_a_json_line_with_a_mark_or_blank_around_it_is_still_normalised(tmp_path, recorded, new):
    """A JSON line counts as its value re-serialised: a mark or blank before `{` made it compared as text, so its
    times and ids were not normalised and two runs alike differed."""
    code, [result], stderr = check(tmp_path, recorded, new)
    assert (code, result["same"], result["lines"]) == (0, True, 2), stderr


@pytest.mark.parametrize(("recorded", "new", "why"), [
    (RUN_A, BOM + RUN_B, "line 1: the lines differ only in that the new file begins with a byte order mark"),
    (BOM + RUN_A, RUN_B, "line 1: the lines differ only in that the recorded file begins with a byte order mark"),
    (RUN_A, RUN_B.replace(b"\n{", b"\n" + BOM + b"{"),
     "line 2: the lines differ only in that the new line begins with a byte order mark"),
])
def test_a_mark_on_one_side_only_is_still_the_difference(tmp_path, recorded, new, why):
    code, [result], stderr = check(tmp_path, recorded, new)
    assert (code, result["difference"]) == (1, why)
    assert errors_of(stderr)[0]["message"].endswith(why)


def test_a_mark_on_both_sides_is_never_named_as_a_difference(tmp_path):
    """Transcript lines that both begin with a mark and differ only in a CRLF: only the CRLF is the difference."""
    code, [result], _ = check(tmp_path, BOM + b"hello\r\n", BOM + b"hello\n", "out.txt")
    assert (code, result["difference"]) == (
        1, "line 1: the lines differ only in that the recorded line ends with a carriage return (CRLF)")


def test_a_key_written_twice_is_warned_about_with_its_offset_as_diff_warns(tmp_path):
    """golden check's E_JSON_DUPLICATE_KEY warnings had the source and line only; `replay diff` (and README) give the
    byte offset of the line too (after a byte order mark, as `replay read` counts)."""
    for data, where in ((b'{"a":1}\n{"b":1,"b":2}\n', [(2, 8)]), (BOM + b'{"b":1,"b":2}\n', [(1, 3)])):
        path = tmp_path / "dk.jsonl"
        path.write_bytes(data)
        golden = run_replay("golden", "check", str(path), str(path))
        diff = run_replay("diff", str(path), str(path))
        notes = [n for n in jsonl(golden.stderr) if n.get("code") == "E_JSON_DUPLICATE_KEY"]
        diff_notes = [n for n in jsonl(diff.stderr) if n.get("code") == "E_JSON_DUPLICATE_KEY"]
        assert [(n["source"], n["line"], n["offset"]) for n in notes] == [(str(path), *w) for w in where] * 2
        assert [(n["line"], n["offset"]) for n in notes] == [(n["line"], n["offset"]) for n in diff_notes]


def test_a_byte_that_is_not_utf8_and_its_escape_written_out_never_read_the_same(tmp_path):
    """The byte ff was shown as `\\xff`, and so were the four characters `\\xff`: two lines that differ read alike."""
    code, [result], stderr = check(tmp_path, b"a\xffb\n", b"a\\xffb\n", "out.txt")
    assert code == 1 and result["recordedLine"] != result["newLine"]
    assert (result["recordedLine"], result["newLine"]) == ("a\\xffb", "a\\\\xffb")
    [error] = errors_of(stderr)
    assert (error["expected"], error["received"]) == (result["recordedLine"], result["newLine"])
    # lines that are UTF-8 are shown as they are, their backslashes too
    code, [result], _ = check(tmp_path, b'{"a":"x\\ny"}\n', b'{"a":"x\\nz"}\n')
    assert (code, result["recordedLine"], result["newLine"]) == (1, '{"a":"x\\ny"}', '{"a":"x\\nz"}')


@pytest.mark.parametrize("which", [0, 1])
def test_a_folder_given_as_a_file_is_unreadable(tmp_path, which):
    """It was E_USAGE_INVALID; ERROR_CODES.md: a folder where a file is read is E_INPUT_UNREADABLE, "Is a directory"."""
    journal = tmp_path / "run.jsonl"
    journal.write_bytes(RUN_A)
    args = [str(journal), str(journal)]
    args[which] = str(tmp_path)
    done = run_replay("golden", "check", *args)
    [error] = errors_of(done.stderr)
    assert (done.returncode, done.stdout) == (2, b"")
    assert (error["code"], error["received"], error["path"]) == ("E_INPUT_UNREADABLE", "Is a directory", str(tmp_path))


def test_a_socket_given_as_a_file_is_neither_file_nor_folder(tmp_path):
    journal = tmp_path / "run.jsonl"
    journal.write_bytes(RUN_A)
    sock = socket.socket(socket.AF_UNIX)
    path = tmp_path / "s.sock"
    try:
        sock.bind(str(path))
        done = run_replay("golden", "check", str(journal), str(path))
    finally:
        sock.close()
        os.unlink(path)
    [error] = errors_of(done.stderr)
    assert (done.returncode, done.stdout, error["code"], error["received"]) == (2, b"", "E_INPUT_NOT_FILE_OR_DIR",
                                                                                "socket")

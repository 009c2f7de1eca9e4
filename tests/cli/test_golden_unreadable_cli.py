"""`replay golden check` of session journals with a line that is no JSON: reported as `replay read` reports it, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import EXAMPLES, errors_of, jsonl, run_replay

SESSION = (EXAMPLES / "echo-agent" / "scenarios" / "echo" / "session.jsonl").read_bytes()
LINES = SESSION.splitlines(keepends=True)
TORN = SESSION + LINES[0][:30]  # a run that stopped mid-write: line 28 cut off, no newline
OOPS = b"".join(LINES[:3]) + b"{oops\n" + b"".join(LINES[3:])  # line 4 is no JSON
NOT_UTF8 = b"".join(LINES[:2]) + LINES[2].replace(b'"type":"', b'"type":"\xc3', 1) + b"".join(LINES[3:])  # a lone 0xc3


def check(*args: str, input: bytes | None = None) -> tuple[int, bytes, list[dict]]:
    proc = run_replay("golden", "check", *args, input=input, process=True)  # (the installed .venv/bin/replay)
    return proc.returncode, proc.stdout, errors_of(proc.stderr)


def write(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


def test_a_new_journal_cut_off_mid_line_is_torn_at_its_offset_not_a_difference(tmp_path):
    """It was E_GOLDEN_MISMATCH "line 28: the recorded file ends here", exit 1, no offset and no E_JSONL_LINE_TORN."""
    recorded, new = write(tmp_path / "sess.jsonl", SESSION), write(tmp_path / "sess-torn.jsonl", TORN)
    code, out, [error] = check(recorded, new)
    assert (code, out) == (2, b"")
    assert error["code"] == "E_JSONL_LINE_TORN" and error["side"] == "new" and error["source"] == new
    assert (error["line"], error["offset"]) == (28, len(SESSION))
    assert error["message"].startswith(f"the new file's last line 28 (byte {len(SESSION)})")
    assert "run the agent again" in error["howToFix"]


@pytest.mark.parametrize(("data", "code", "line", "column"), [
    (TORN, "E_JSONL_LINE_TORN", 28, None),
    (OOPS, "E_JSONL_LINE_INVALID", 4, 2),
    (NOT_UTF8, "E_JSONL_LINE_INVALID", 3, 10),
], ids=["torn", "not-json", "not-utf8"])
def test_a_golden_that_cannot_be_read_as_a_session_does_not_pass_as_the_same(tmp_path, data, code, line, column):
    """A file compared with itself was {"same":true}, exit 0, whatever its lines were: each side's line is reported,
    at its line, byte offset and (a line that is no JSON) column, and nothing is said on stdout."""
    path = write(tmp_path / "sess-bad.jsonl", data)
    status, out, errors = check(path, path)
    assert (status, out) == (2, b"")
    offset = len(b"".join(LINES[:line - 1]))
    assert [(e["code"], e["side"], e["source"], e["line"], e["offset"], e.get("column")) for e in errors] == [
        (code, side, path, line, offset, column) for side in ("recorded", "new")]
    assert all(e["message"].startswith(f"the {e['side']} file's ") and e["howToFix"] for e in errors)


def test_a_difference_before_an_unreadable_line_is_the_difference(tmp_path):
    """Files are compared in lockstep: the first thing wrong is what is said."""
    recorded = write(tmp_path / "sess.jsonl", SESSION)
    new = write(tmp_path / "new.jsonl", LINES[0] + LINES[2] + TORN[len(b"".join(LINES[:2])):])
    code, out, [error] = check(recorded, new)
    assert code == 1 and jsonl(out)[0]["line"] == 2 and error["code"] == "E_GOLDEN_MISMATCH"


def test_a_transcript_golden_compares_text_lines_that_are_no_json(tmp_path):
    """A golden not named .jsonl/.ndjson is a transcript (the agent's stdout): a line `{oops` is text there."""
    transcript = write(tmp_path / "stdout.txt", OOPS)
    code, out, errors = check(transcript, transcript)
    assert (code, errors) == (0, []) and jsonl(out)[0]["same"] is True


def test_a_mismatch_on_stdin_names_its_source_stdin(tmp_path):
    """It said "source":"-", where every other command says "<stdin>"."""
    recorded = write(tmp_path / "sess.jsonl", SESSION)
    code, _, [error] = check(recorded, "-", input=SESSION.replace(b"echo hello world", b"echo hello there", 1))
    assert code == 1 and error["code"] == "E_GOLDEN_MISMATCH"
    assert error["source"] == "<stdin>" and error["message"].startswith("<stdin> differs from ")


def test_an_unreadable_line_on_stdin_names_its_source_stdin(tmp_path):
    recorded = write(tmp_path / "sess.jsonl", SESSION)
    code, out, [error] = check(recorded, "-", input=OOPS)
    assert (code, out) == (2, b"")
    assert (error["code"], error["source"], error["side"], error["line"]) == ("E_JSONL_LINE_INVALID", "<stdin>", "new", 4)


def test_a_byte_order_mark_a_crlf_and_a_blank_line_are_read_in_a_journal(tmp_path):
    """What `replay read` reads is no unreadable line: a journal with them is compared (and the difference says what
    it is only)."""
    odd = write(tmp_path / "odd.jsonl", b'\xef\xbb\xbf{"a":1}\r\n\n{"b":2}\n')
    plain = write(tmp_path / "plain.jsonl", b'{"a":1}\n\n{"b":2}\n')
    assert check(odd, odd)[0] == 0
    code, out, [error] = check(odd, plain)
    assert code == 1 and error["code"] == "E_GOLDEN_MISMATCH" and "byte order mark" in jsonl(out)[0]["difference"]


def test_a_line_after_a_byte_order_mark_is_placed_as_replay_read_places_it(tmp_path):
    path = write(tmp_path / "bom.jsonl", b"\xef\xbb\xbf{oops\n")
    _, _, [recorded, _] = check(path, path)
    [read] = errors_of(run_replay("read", path).stderr)
    assert {k: recorded[k] for k in ("code", "line", "column", "offset")} == {
        k: read[k] for k in ("code", "line", "column", "offset")} == {
        "code": "E_JSONL_LINE_INVALID", "line": 1, "column": 2, "offset": 3}

"""`replay golden check`: compare a new session journal (or transcript) with a recorded golden after normalisation.

Not a stage graph: the two files are read in lockstep, line by line, which a graph's merged inputs
cannot do; the comparison lives in ``replay.pipeline.testing.goldens`` for tests to call directly.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from replay.pipeline.cli.app import logger, max_errors
from replay.pipeline.cli.command import ReplayCommandGroup
from replay.pipeline.cli.commands.read import max_line_bytes_option
from replay.pipeline.engine import exactjson
from replay.pipeline.engine.batch import keys_twice_note
from replay.pipeline.engine.errors import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_REFUSED,
    ReplayError,
    counted_before,
    diagnostic,
    error_line,
    folder_for_a_file,
    input_unreadable,
    printable,
)
from replay.pipeline.engine.log import log_record, write_stderr
from replay.pipeline.engine.preflight import refuse_stdout_into_an_input
from replay.pipeline.engine.quota import Quota
from replay.pipeline.io.fdio import write_stdout
from replay.pipeline.io.journals import GzipUnreadable, not_file_or_dir, path_kind, require_stdin, source_name
from replay.pipeline.testing.goldens import (
    LineTooLong,
    Normalisation,
    UnreadableLines,
    bounded_lines,
    file_lines,
    first_difference,
    is_jsonl_name,
)

STDIN = "-"
RECORDED, NEW = "recorded golden", "new journal or transcript"  # (each input, named in its errors)


@click.group(cls=ReplayCommandGroup, epilog="""\b
Examples:
  replay golden check scenarios/echo/session.jsonl new-session.jsonl
  python agent.py < inputs.txt | replay golden check scenarios/echo/stdout.txt -""")
def golden() -> None:
    """Behavioural goldens: is a new run's session journal (or stdout transcript) the recorded one?"""


@golden.command(epilog="""\b
Normalised on both sides before comparing (see `replay.pipeline.testing.goldens`):
  values of time keys (ts, timestamp, time, createdAt, ...)      -> "<time>"
  values of id keys (id, sessionId, runId, ...)                  -> "<id:N>", numbered per file
  values of duration keys (durationMs, elapsedMs, ...)           -> "<ignored>"
  RFC 3339 timestamps and UUIDs inside any string or text line   -> <time>, <id:N>
A JSON line counts as its value re-serialised (100 and 1e2 are an integer and a float: they
differ); a key written twice is kept twice, and warned about (E_JSON_DUPLICATE_KEY). A .gz file
(or stdin) is read gunzipped. A RECORDED named .jsonl or .ndjson is a session journal: a line of
either file that is not JSON cannot be compared, and is refused as `replay read` reports it
(E_JSONL_LINE_TORN, E_JSONL_LINE_INVALID; exit 2); any other RECORDED is a transcript of text lines.
\b
Examples:
  replay golden check recorded.jsonl new.jsonl
  replay golden check --ignore-key seed --id-key traceparent recorded.jsonl new.jsonl""")
@click.argument("recorded")
@click.argument("new")
@click.option("--time-key", multiple=True, metavar="KEY", help="Also treat KEY's values as times (repeatable).")
@click.option("--id-key", multiple=True, metavar="KEY", help="Also treat KEY's values as ids (repeatable).")
@click.option("--ignore-key", multiple=True, metavar="KEY", help="Ignore KEY's values altogether (repeatable).")
@max_line_bytes_option("Longest line accepted; a file with a longer line cannot be compared: refused "
                       "(E_JSONL_LINE_TOO_LONG, exit 2).")
def check(recorded: str, new: str, time_key: tuple[str, ...], id_key: tuple[str, ...], ignore_key: tuple[str, ...],
          max_line_bytes: int) -> int:
    """Compare NEW (`-` for stdin) with the golden RECORDED, line by line after normalisation.

    Prints one JSON line: {"same": true, "lines": N} or the first difference with both lines
    (also reported on stderr as E_GOLDEN_MISMATCH). Exit 0 same, 1 different, 2 unusable input.
    """
    if recorded == STDIN:
        raise ReplayError("E_USAGE_INVALID", "the recorded golden must be a file; only NEW may be `-` (stdin)",
                          received=recorded)
    for path, what in ((recorded, RECORDED), (new, NEW)):
        _check_input(path, what)
    refuse_stdout_into_an_input([recorded, new])
    rules = Normalisation().extended(time_keys=time_key, id_keys=id_key, ignore_keys=ignore_key)
    names, quota, log = {"recorded": recorded, "new": new}, Quota(max_errors()), logger()

    def twice(side: str, line: int, offset: int, keys: list[str]) -> None:  # (a warning, as every command gives it)
        note = keys_twice_note(keys, {"source": source_name(names[side]), "line": line, "offset": offset},
                               f"the {side} file's line is compared as written, each value kept")
        if quota.admit(note):
            log_record(log, "warning", "notice", note)

    try:
        difference, lines = first_difference(_lines(recorded, RECORDED, max_line_bytes),
                                             _lines(new, NEW, max_line_bytes), rules, twice,
                                             journal=is_jsonl_name(recorded))
    except UnreadableLines as exc:
        _say_unreadable(exc, names)
        return EXIT_REFUSED
    finally:
        for summary in quota.left_out("warning"):
            log_record(log, "warning", "notice", summary)
    result: dict[str, Any] = {"same": difference is None, "recorded": printable(recorded), "new": printable(new)}
    if difference is None:
        result["lines"] = lines
        _out(result)
        return EXIT_OK
    shown = _escaped((difference.recorded, difference.new, difference.recorded_normalised, difference.new_normalised))
    result |= {"line": difference.line, "difference": difference.describe(),
               "recordedLine": _text(difference.recorded, shown), "newLine": _text(difference.new, shown)}
    normalised = None
    if (difference.recorded_normalised, difference.new_normalised) != (difference.recorded, difference.new):
        normalised = {"recorded": _text(difference.recorded_normalised, shown),
                      "new": _text(difference.new_normalised, shown)}
    try:
        with counted_before(1):  # (stdout's reader gone: the difference found is the verdict so far, exit 1, as diff's)
            _out(result)
    finally:  # (stdout refusing the line, a full disk, is said too, but the verdict is still said: as `replay diff`)
        write_stderr(error_line(diagnostic(
            "E_GOLDEN_MISMATCH", f"{source_name(new)} differs from {printable(recorded)}: {difference.describe()}",
            source=source_name(new), line=difference.line,
            **_excerpts(difference.recorded, difference.new, shown), normalised=normalised,
        )))
    return EXIT_FAILED


def _say_unreadable(exc: UnreadableLines, names: dict[str, str]) -> None:
    """Report each line that stopped the comparison, as ``replay read`` reports it, with the ``side`` it is on: a
    session journal that cannot be read is not compared (exit 2, nothing on stdout), so it neither passes as the same
    nor fails as a difference."""
    for problem in exc.problems:
        fields = dict(problem.fields)
        message = fields.pop("message")
        advice = fields.pop("howToFix", "Fix or delete the line.")
        if problem.code == "E_JSONL_LINE_TORN":
            fix = ("Its writer stopped mid-line: " + ("run the agent again" if problem.side == "new" else
                                                      "record the golden again") +
                   ", or drop the line with `replay heal`, then compare.")
        else:
            fix = advice.removesuffix(" Other lines are still read.")
        write_stderr(error_line(diagnostic(
            problem.code, f"the {problem.side} file's {message}", source=source_name(names[problem.side]),
            side=problem.side, **fields, howToFix=f"{fix} {JOURNALS_READ}")))


JOURNALS_READ = ("A .jsonl or .ndjson golden and the new file are compared as session journals, each line JSON; "
                 "a transcript (a golden of another name) is compared as text lines.")


def _check_input(path: str, what: str) -> None:
    """Refuse, before anything is read, an input that is not there (E_INPUT_PATH_NOT_FOUND), a folder
    (E_INPUT_UNREADABLE, "Is a directory", as a file a flag names) or a socket (E_INPUT_NOT_FILE_OR_DIR); a file, a
    pipe (``<(agent)``) or a device is read, line by line (ERROR_CODES.md). All exit 2."""
    if path == STDIN:
        require_stdin()
        return
    kind = path_kind(Path(path)) if path else None  # (a local path, even one that looks like a URL; "" names nothing)
    if kind is None:
        raise ReplayError("E_INPUT_PATH_NOT_FOUND", f"{printable(path)!r} does not exist", path=printable(path),
                          howToFix="Pass the recorded golden and the new journal (or transcript) as files.")
    expected = "a file, a pipe or a device (or `-` for NEW on stdin)"
    if kind == "directory":
        raise folder_for_a_file(path, what=what, expected=expected,
                                howToFix="Name the session journal (or transcript) in it, e.g. "
                                         f"{printable(os.path.join(path, 'session.jsonl'))!r}.")
    if kind == "other" and stat.S_ISSOCK(os.stat(path).st_mode):  # (open() cannot open one: ENXIO)
        raise not_file_or_dir(printable(path), what, "Pass the file, or stream it on stdin (`-`) or as a pipe.",
                              expected=expected)


def _lines(path: str, what: str, limit: int) -> Iterator[bytes]:
    """The lines of ``path`` (``-``: stdin), gunzipped when it is gzip; one that cannot be opened or read is
    E_INPUT_UNREADABLE, a gzip stream corrupt or cut off E_GZIP_INVALID, a line longer than ``limit``
    E_JSONL_LINE_TOO_LONG, all refusals (exit 2): nothing is printed before both files are read to their first
    difference."""
    try:
        if path == STDIN:
            yield from bounded_lines(sys.stdin.buffer, limit)
        else:
            yield from file_lines(path, limit)
    except OSError as exc:
        raise input_unreadable(path, exc, what=what, exit_code=EXIT_REFUSED, source=source_name(path)) from exc
    except LineTooLong as exc:
        raise ReplayError("E_JSONL_LINE_TOO_LONG", f"line {exc.line} of the {what} is longer than {limit} bytes",
                          source=source_name(path), line=exc.line, offset=exc.offset, expected=f"at most {limit} bytes",
                          howToFix="Raise --max-line-bytes, or compare files of lines.") from exc
    except GzipUnreadable as exc:
        raise ReplayError("E_GZIP_INVALID", f"the {what} is gzip, and could not be read from line {exc.line} on: {exc}",
                          source=source_name(path), line=exc.line, offset=exc.offset, exit_code=EXIT_REFUSED) from exc


def _escaped(lines: tuple[bytes | None, ...]) -> bool:
    """Are the lines of a difference shown escaped (``_text``): is a byte of any of them not UTF-8?"""
    try:
        for line in lines:
            if line is not None:
                line.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _text(line: bytes | None, escaped: bool) -> str | None:
    """A line as text: as it is, or ``escaped`` (the lines of a difference that has a byte that is not UTF-8, both
    sides alike), each byte that is not UTF-8 as ``\\xNN`` and so each backslash as ``\\\\``: a byte ``ff`` and
    the four characters ``\\xff`` read the same no more. (A backslash is never part of a UTF-8 sequence.)"""
    if line is None or not escaped:
        return None if line is None else line.decode("utf-8")
    return line.replace(b"\\", b"\\\\").decode("utf-8", "backslashreplace")


EXCERPT_CHARS = 400


def _excerpts(recorded: bytes | None, new: bytes | None, escaped: bool) -> dict[str, str]:
    """The error's ``expected`` and ``received``: each line as stdout shows it (``_text``: a byte that is not UTF-8 as
    ``\\xNN``, a backslash then as ``\\\\``, so two lines that differ only there do not read the same), a long one
    cut to the part where the two first differ (not both to their same first characters)."""
    texts = _text(recorded, escaped), _text(new, escaped)
    at = 0
    if texts[0] is not None and texts[1] is not None:
        at = next((i for i, (a, b) in enumerate(zip(texts[0], texts[1], strict=False)) if a != b),
                  min(len(texts[0]), len(texts[1])))
    return {"expected": _excerpt(texts[0], at, "(the recorded file ends)"),
            "received": _excerpt(texts[1], at, "(the new file ends)")}


def _excerpt(text: str | None, at: int, ended: str) -> str:
    if text is None:
        return ended
    if len(text) <= EXCERPT_CHARS:
        return text
    start = max(0, min(at - EXCERPT_CHARS // 2, len(text) - EXCERPT_CHARS))
    end = start + EXCERPT_CHARS
    return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")


def _out(result: dict[str, Any]) -> None:
    write_stdout(exactjson.dumps(result) + b"\n")

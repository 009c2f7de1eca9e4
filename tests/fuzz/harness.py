"""Fuzz targets and their invariants: the reader, parse and heal (as stages and as commands), and the runner protocol.

Every target takes bytes and raises ``Finding`` (or lets an exception escape) when an invariant breaks:

- never a traceback: no exception escapes a stage, a command or the protocol reader;
- never ``E_UNHANDLED`` nor ``E_STAGE_FAILED``; every code on stderr is in the catalogue;
- every input line accounted for: it comes out (a record whose line is that line), or it is reported
  (an error, a repair or a notice naming that line, at that line's byte offset);
- the exit code keeps the contract: 0 with no error on stderr, 1 with at least one, 2 refused before output.

``fuzz_atheris.py`` drives these with atheris (coverage-guided); ``fuzz_hypothesis.py`` with hypothesis.
"""

from __future__ import annotations

from typing import Any

import orjson
from inprocess import run_cli_in_process

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.errors import CATALOGUE
from replay.pipeline.engine.inline import run_inline
from replay.pipeline.io.journals import LineCutter, as_document
from replay.pipeline.model.runner_facts import run_facts
from replay.pipeline.model.runner_protocol import check_output, read_reply
from replay.stages.dialect import MapDialect
from replay.stages.heal import rule_stages
from replay.stages.heal_summary import SummarizeRepairs
from replay.stages.parse import ParseLines
from replay.stages.read import _dialect_document, _parsed
from replay.stages.validate import ValidateEvents

SOURCE = "fuzz.jsonl"
BAD_CODES = ("E_UNHANDLED", "E_STAGE_FAILED")


class Finding(AssertionError):
    """An invariant did not hold."""


def _lines(data: bytes) -> dict[int, int]:
    """Non-blank line number -> byte offset."""
    out: dict[int, int] = {}
    offset = 0
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if raw.strip(b" \t\r"):
            out[number] = offset
        offset += len(raw) + 1
    if data.endswith(b"\n"):
        out.pop(data.count(b"\n") + 1, None)
    return out


def _cut(data: bytes, chunk: int, max_line: int) -> tuple[list[Batch], list[dict[str, Any]]]:
    cutter = LineCutter(SOURCE, max_line, 7)
    batches: list[Batch] = []
    errors: list[dict[str, Any]] = []
    items: list[Any] = []
    for start in range(0, len(data), chunk):
        items.extend(cutter.feed(data[start:start + chunk]))
    items.extend(cutter.finish())
    for item in items:
        (errors if isinstance(item, dict) else batches).append(item)
    return batches, errors


def heal_stages(data: bytes) -> None:
    """parse (torn tail repaired) -> dialect -> every heal rule -> heal records -> validate, in-process."""
    chunk = 1 + (data[0] if data else 0) % 64
    max_line = 256 + 64 * (data[1] if len(data) > 1 else 0)
    batches, cut_errors = _cut(data, chunk, max_line)
    stages = [ParseLines(torn_tail="repair"), MapDialect(), *rule_stages(), SummarizeRepairs(),
              ValidateEvents(report_as="E_HEALED_ARTIFACT_INVALID")]
    result = run_inline(stages, batches, feed_side={len(stages) - 2: ("repairs",)})
    side = [*cut_errors, *(r for records in result.side.values() for r in records)]
    for record in side:
        code = record.get("code")
        if code is not None and (code in BAD_CODES or code not in CATALOGUE):
            raise Finding(f"bad code {code}: {record}")
    for batch in result.batches:
        batch.to_jsonl()  # every event can be written
    if b'"$record"' in data:
        return  # source / dropped records relabel lines by design (what a pipe from `replay read` carries)
    seen: dict[int, set[int | None]] = {}
    for batch in result.batches:
        if batch.source == SOURCE:
            for line, offset in zip(batch.lines, batch.offsets, strict=True):
                if line is not None:
                    seen.setdefault(line, set()).add(offset)
    for record in side:
        if record.get("source", SOURCE) == SOURCE and isinstance(record.get("line"), int):
            seen.setdefault(record["line"], set()).add(record.get("offset"))
    dialect = [b for b in result.batches if any("$origin" in e for e in (b.events or ()))]
    for line, offset in _lines(data).items():
        if line in seen:
            if offset not in seen[line] and None not in seen[line]:
                raise Finding(f"line {line} reported at offset {seen[line]}, it is at {offset}")
            continue
        if dialect:
            continue  # another agent's log: its records map to events (or to nothing) by the dialect's table
        raise Finding(f"line {line} (offset {offset}) neither came out nor was reported")


def runner_protocol(data: bytes) -> None:
    """A runner's stdout: read as one output object or streamed lines; the first problem noted, never raised."""
    reply = read_reply(data)
    if reply.problem is not None and reply.problem.get("code") not in CATALOGUE:
        raise Finding(f"bad code in {reply.problem}")
    if reply.problem is None and (reply.output is None or check_output(reply.output) is not None):
        raise Finding("no problem noted, but no valid output object")
    run_facts(reply.output)
    if reply.events:
        events = [c for c in reply.events if isinstance(c[0], dict)]
        if events:
            batch = Batch.from_columns(events, "<runner>")
            run_inline([*rule_stages(), SummarizeRepairs()], [batch], feed_side={len(rule_stages()): ("repairs",)})


COMMANDS = (("read",), ("heal",), ("validate",), ("report",), ("report", "--format", "json"), ("heal", "--strict"))


def cli(data: bytes, which: int = 0) -> None:
    """A command, in-process, with ``data`` on stdin: exit codes and stderr per the contract."""
    args = COMMANDS[which % len(COMMANDS)]
    code, out, err = run_cli_in_process(list(args), data)
    errors = []
    for line in err.splitlines():
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError as exc:  # a traceback, or a print: stderr carries JSON lines only
            raise Finding(f"replay {' '.join(args)}: stderr line is not JSON: {line[:200]!r}") from exc
        if "error" in value:
            errors.append(value["error"])
    for error in errors:
        if error.get("code") in BAD_CODES or error.get("code") not in CATALOGUE:
            raise Finding(f"replay {' '.join(args)}: bad code {error}")
    if code not in (0, 1, 2):
        raise Finding(f"exit {code}")
    if code == 0 and errors:
        raise Finding(f"exit 0 with errors: {errors[:2]}")
    if code == 1 and not errors:
        raise Finding("exit 1 without an error on stderr")
    if code == 2 and out:
        raise Finding("exit 2 (refused) after writing output")
    if args == ("read",) and code != 2 and _is_jsonl(data) and not _cut_off_document(errors):
        kept = [ln for ln in out.split(b"\n")[:-1]]
        if len(kept) != len(_lines(data)) and not any(e.get("code") == "E_JSONL_LINE_TOO_LONG" for e in errors):
            raise Finding(f"read: {len(_lines(data))} lines in, {len(kept)} records (kept or dropped) out")


def _is_jsonl(data: bytes) -> bool:
    """Read as lines (not one JSON document, not gzip): each line is a record out, or a dropped record."""
    body = data.removeprefix(b"\xef\xbb\xbf")
    return not body.startswith(b"\x1f\x8b") and as_document(body) is None and _dialect_document(body, _parsed(body)) is None


def _cut_off_document(errors: list[dict]) -> bool:
    """Did read take stdin for one JSON document whose write was cut off (its head opens a document over lines: one
    E_ARTIFACT_JSON_INVALID for it, not a dropped record per line)?"""
    return any(e.get("code") == "E_ARTIFACT_JSON_INVALID" and "cut off" in e.get("message", "") for e in errors)


def one(data: bytes) -> None:
    """Dispatch on the first byte: most inputs go to the fast stage target, some to commands and the protocol."""
    if not data:
        return
    kind, body = data[0], data[1:]
    if kind < 200:
        heal_stages(body)
    elif kind < 230:
        runner_protocol(body)
    else:
        cli(body, kind)

"""JUnit XML report: one testsuite, one testcase per run, a failure element for each run that failed; when the input
had problems (lines not read, records that are no events), one more testcase, ``input``, with an error element
listing them (counted by code, the first few with their line), so CI does not read the report as green."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator, Sequence
from typing import Any

from replay.pipeline.model.markup import xml_text as text  # (ElementTree escapes the rest)
from replay.pipeline.report.model import (
    CACHE_TOKENS,
    format_cost,
    format_counts,
    format_ms,
    format_tokens_in,
    run_label,
    status_of,
)

LISTED = 200  # errors and tool calls listed per testcase


def given(value: Any) -> str:
    """A count as JUnit writes it: its digits, ``-`` when it was not given (None)."""
    return "-" if value is None else str(value)


def seconds(ms: Any) -> str:
    return f"{(ms or 0) / 1000:.3f}"


def render_chunks(summaries: Sequence[dict[str, Any]], agg: dict[str, Any], title: str) -> Iterator[bytes]:
    """The document a piece at a time: the suite around its testcases, each run's testcase made and written on its
    own, so that memory stays flat however many runs there are (``summaries``, spooled ones, are read once)."""
    failures = agg["runs"]["error"]
    diag = agg["diagnostics"]
    errors = 1 if diag["total"] else 0  # the input testcase
    tests = str(len(summaries) + errors)
    root = ET.Element("testsuites", name=text(title), tests=tests, failures=str(failures),
                      errors=str(errors), time=seconds(agg["durationMs"]))
    suite = ET.SubElement(root, "testsuite", name=text(title), tests=tests, failures=str(failures),
                          errors=str(errors), skipped=str(agg["runs"]["unknown"]), time=seconds(agg["durationMs"]))
    if agg["startedAt"]:
        suite.set("timestamp", agg["startedAt"])
    props = ET.SubElement(suite, "properties")
    usage = agg["usage"]
    for name, value in (
        ("events", agg["events"]["total"]), ("toolCalls", agg["toolCalls"]["total"]),
        ("failedToolCalls", agg["toolCalls"]["error"]), ("repairs", agg["repairs"]["total"]),
        ("unattributedRepairs", agg["unattributedRepairs"]["total"]),
        # (a count no run gave: "-", as the other formats say, not 0 tokens counted)
        ("inputTokens", given(usage["inputTokens"])), ("outputTokens", given(usage["outputTokens"])),
        ("costUsd", given(usage["costUsd"])),
        *((key, usage[key]) for key in CACHE_TOKENS if key in usage),  # (when some usage object counted them)
        ("inputProblems", agg["diagnostics"]["total"]),
    ):
        ET.SubElement(props, "property", name=name, value=text(value))
    runs = ET.SubElement(suite, _RUNS) if len(summaries) else None  # where the runs' testcases go
    if errors:
        _input_problems(suite, diag)
    unattributed = agg["unattributedRepairs"]["runs"]
    if unattributed:  # repairs of no testcase here: of runs heal dropped whole
        lines = [f"{u['runId'] or '-'} ({u['source'] or '-'}): {u['total']} ({format_counts(u['byRule'])})"
                 for u in unattributed[:LISTED]]
        if len(unattributed) > LISTED:
            lines.append(f"… {len(unattributed) - LISTED} more")
        ET.SubElement(suite, "system-out").text = text(
            "repairs in no run of this report (heal dropped every event of their run):\n" + "\n".join(lines))
    ET.indent(root)
    page = b'<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="utf-8", xml_declaration=False) + b"\n"
    if runs is None:
        yield page
        return
    between, last = suite.text, runs.tail  # what goes between two of the suite's elements, and after the last run's
    before, _, after = page.partition(b"<" + _RUNS.encode() + b" />" + (last or "").encode())
    yield before
    held = None
    for n, s in enumerate(summaries, 1):
        if held is not None:
            yield _written(held, between)
        held = _testcase(s, n)
    assert held is not None
    yield _written(held, last)
    yield after


_RUNS = "replay-runs"  # (a name no element of the document has: where the testcases of the runs go)


def _written(case: ET.Element, tail: str | None) -> bytes:
    """A testcase as the whole document's indentation writes it, followed by ``tail``."""
    ET.indent(case, level=2)
    case.tail = tail
    return ET.tostring(case, encoding="utf-8", xml_declaration=False)


def _testcase(s: dict[str, Any], n: int) -> ET.Element:
    """The testcase of run ``s``, the ``n``th: a failure when the run failed, skipped when nothing tells how it ended
    (neither passed nor failed: status unknown), its details as system-out."""
    case = ET.Element("testcase", name=text(run_label(s, n)), classname=text(s.get("source") or "replay"),
                      time=seconds(s["durationMs"]))
    status = status_of(s)  # (as the suite's counts take it: a summary read back may say anything)
    if status == "error":
        first = next((e for e in s["errors"] if e["kind"] in ("run", "run_failed")), None) or (s["errors"] or [None])[0]
        failure = ET.SubElement(case, "failure", message=text(first["message"] if first else "run failed"),
                                type=text((first.get("code") or first["kind"]) if first else "run_failed"))
        lines = [f"{e['kind']}{' ' + e['code'] if e.get('code') else ''}{' (' + e['toolName'] + ')' if e.get('toolName') else ''}"
                 f"{' at seq ' + str(e['seq']) if e.get('seq') is not None else ''}: {e['message']}"
                 for e in s["errors"][:LISTED]]
        if len(s["errors"]) > LISTED:
            lines.append(f"… {len(s['errors']) - LISTED} more")
        failure.text = text("\n".join(lines) or "the run's status is error")
    elif status == "unknown":
        ET.SubElement(case, "skipped", message="the journal does not tell how the run ended (no terminal event, no "
                                               "run record's status): neither passed nor failed")
    out = ET.SubElement(case, "system-out")
    out.text = text(_details(s))
    return case


def _input_problems(suite: ET.Element, diag: dict[str, Any]) -> None:
    """The testcase ``input``: an error that counts the input's problems by code and lists the first few."""
    summary = f"{diag['total']} input problem{'s' * (diag['total'] != 1)}: {format_counts(diag['byCode'])}"
    first = diag["first"]
    lines = [summary, *(f"{p.get('source') or '-'}{' line ' + str(p['line']) if p.get('line') is not None else ''}: "
                        f"{p.get('code') or '-'} {p.get('message') or ''}".rstrip() for p in first)]
    if diag["total"] > len(first):
        lines.append(f"… {diag['total'] - len(first)} more (all of them on stderr)")
    case = ET.SubElement(suite, "testcase", name="input", classname="replay", time=seconds(0))
    error = ET.SubElement(case, "error", message=text(summary),
                          type=text(first[0].get("code") or "input_problems") if first else "input_problems")
    error.text = text("\n".join(lines))


def _details(s: dict[str, Any]) -> str:
    tc, u = s["toolCalls"], s["usage"]
    lines = [
        f"status: {s['status']}",
        f"duration: {format_ms(s['durationMs'])} ({s['startedAt'] or '-'} .. {s['endedAt'] or '-'})",
        f"events: {s['events']['total']} ({format_counts(s['events']['byType'])})",
        f"tool calls: {tc['total']} ({tc['error']} failed)",
    ]
    lines += [f"  {c['toolName']} {c['status']} {format_ms(c['durationMs'])}" for c in tc["calls"][:LISTED]]
    if len(tc["calls"]) > LISTED:
        lines.append(f"  … {len(tc['calls']) - LISTED} more")
    lines.append(f"usage: {format_tokens_in(u, given)}, {given(u['outputTokens'])} tokens out, {format_cost(u['costUsd'])}"
                 if u else "usage: -")
    lines.append(f"repairs: {s['repairs']['total']} ({format_counts(s['repairs']['byRule'])})")
    if s.get("prompt") is not None:
        lines.append(f"prompt: {s['prompt']}")
    return "\n".join(lines)

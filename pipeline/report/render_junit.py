"""JUnit XML report: one testsuite, one testcase per run, a failure element for each run that failed."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from replay.pipeline.model.markup import xml_text as text  # (ElementTree escapes the rest)
from replay.pipeline.report.model import format_cost, format_counts, format_ms, run_label

LISTED = 200  # errors and tool calls listed per testcase


def seconds(ms: Any) -> str:
    return f"{(ms or 0) / 1000:.3f}"


def render(summaries: list[dict[str, Any]], agg: dict[str, Any], title: str) -> bytes:
    failures = agg["runs"]["error"]
    root = ET.Element("testsuites", name=text(title), tests=str(len(summaries)), failures=str(failures),
                      errors="0", time=seconds(agg["durationMs"]))
    suite = ET.SubElement(root, "testsuite", name=text(title), tests=str(len(summaries)), failures=str(failures),
                          errors="0", skipped="0", time=seconds(agg["durationMs"]))
    if agg["startedAt"]:
        suite.set("timestamp", agg["startedAt"])
    props = ET.SubElement(suite, "properties")
    usage = agg["usage"]
    for name, value in (
        ("events", agg["events"]["total"]), ("toolCalls", agg["toolCalls"]["total"]),
        ("failedToolCalls", agg["toolCalls"]["error"]), ("repairs", agg["repairs"]["total"]),
        ("unattributedRepairs", agg["unattributedRepairs"]["total"]),
        ("inputTokens", usage["inputTokens"]), ("outputTokens", usage["outputTokens"]), ("costUsd", usage["costUsd"]),
        ("inputProblems", agg["diagnostics"]["total"]),
    ):
        ET.SubElement(props, "property", name=name, value=text(value))
    for n, s in enumerate(summaries, 1):
        case = ET.SubElement(suite, "testcase", name=text(run_label(s, n)), classname=text(s.get("source") or "replay"),
                             time=seconds(s["durationMs"]))
        if s["status"] == "error":
            first = next((e for e in s["errors"] if e["kind"] in ("run", "run_failed")), None) or (s["errors"] or [None])[0]
            failure = ET.SubElement(case, "failure", message=text(first["message"] if first else "run failed"),
                                    type=text((first.get("code") or first["kind"]) if first else "run_failed"))
            lines = [f"{e['kind']}{' ' + e['code'] if e.get('code') else ''}{' (' + e['toolName'] + ')' if e.get('toolName') else ''}"
                     f"{' at seq ' + str(e['seq']) if e.get('seq') is not None else ''}: {e['message']}"
                     for e in s["errors"][:LISTED]]
            if len(s["errors"]) > LISTED:
                lines.append(f"… {len(s['errors']) - LISTED} more")
            failure.text = text("\n".join(lines) or "the run's status is error")
        out = ET.SubElement(case, "system-out")
        out.text = text(_details(s))
    unattributed = agg["unattributedRepairs"]["runs"]
    if unattributed:  # repairs of no testcase here: of runs heal dropped whole
        lines = [f"{u['runId'] or '-'} ({u['source'] or '-'}): {u['total']} ({format_counts(u['byRule'])})"
                 for u in unattributed[:LISTED]]
        if len(unattributed) > LISTED:
            lines.append(f"… {len(unattributed) - LISTED} more")
        ET.SubElement(suite, "system-out").text = text(
            "repairs in no run of this report (heal dropped every event of their run):\n" + "\n".join(lines))
    ET.indent(root)
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="utf-8", xml_declaration=False) + b"\n"


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
    lines.append(f"usage: {u['inputTokens']} tokens in, {u['outputTokens']} tokens out, {format_cost(u['costUsd'])}"
                 if u else "usage: -")
    lines.append(f"repairs: {s['repairs']['total']} ({format_counts(s['repairs']['byRule'])})")
    if s.get("prompt") is not None:
        lines.append(f"prompt: {s['prompt']}")
    return "\n".join(lines)

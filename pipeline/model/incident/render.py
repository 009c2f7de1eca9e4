"""The files of an incident folder besides the JSON documents: trace.jsonl, junit.xml and an escaped, script-free report.html.

Everything rendered comes from the sanitized incident, its evaluation and the replay verdict (which
never holds candidate values), so these files carry nothing the redacted bundle does not.
"""

from __future__ import annotations

import html
from typing import Any
from xml.sax.saxutils import quoteattr as _quoteattr

import orjson

from replay.pipeline.engine import exactjson
from replay.pipeline.model.incident.bundle import bundle_document, pretty
from replay.pipeline.model.incident.matching import AGENT_ERROR
from replay.pipeline.model.markup import shown_text, xml_text

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:24px auto;max-width:1100px;padding:0 16px;color:#1d2330}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #dde2ea;padding-bottom:4px}
.verdict{font-size:18px;font-weight:600;padding:10px 14px;border-radius:6px;margin:14px 0;background:#eef2f7}
.fail,.diverged,.agent_error,.inconclusive{color:#a8071a}.pass,.matched{color:#1f7a1f}.inconclusive{color:#ad6800}
table{border-collapse:collapse;width:100%;margin:6px 0}th,td{border:1px solid #dde2ea;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f5f7fa}pre{margin:0;white-space:pre-wrap;word-break:break-word;font:12px/1.4 ui-monospace,Menlo,Consolas,monospace}
.muted{color:#5b6475}.warn{background:#fff7e6;border:1px solid #ffd591;padding:8px 12px;border-radius:6px}
"""


def verdict_line(evaluation: dict[str, Any], replay: dict[str, Any] | None) -> str:
    rules = f"business rules {evaluation['status'].upper()}"
    if replay is None:
        return rules
    return f"replay {replay['status'].upper().replace('_', ' ')}; {rules}"


def _call_status(replay: dict[str, Any] | None) -> dict[str, str]:
    if replay is None:
        return {}
    status = {s["call_id"]: "matched" for s in replay["steps"] if "call_id" in s}
    divergence = replay.get("divergence") or {}
    expected = divergence.get("expected") or {}
    if "call_id" in expected:
        status[expected["call_id"]] = "diverged"
    return status


def trace_lines(incident: dict[str, Any], replay: dict[str, Any] | None = None) -> bytes:
    """One JSON line per event (``seq`` first); after a replay, each says how the replay met it."""
    calls = _call_status(replay)
    lines = []
    for seq, event in enumerate(incident["events"], 1):
        line: dict[str, Any] = {"seq": seq, **event}
        if replay is not None:
            if "call_id" in event:
                line["replay"] = calls.get(event["call_id"], "not_reached")
            else:  # the terminal event: matched when the agent's terminal message matched it (then it may still have
                # exited non-zero, an agent error: replay.json's status says so)
                kind = (replay.get("divergence") or {}).get("kind")
                line["replay"] = ("matched" if any("terminal" in s for s in replay["steps"])
                                  else "diverged" if kind in ("changed_terminal", "changed_final_output") else "not_reached")
        lines.append(exactjson.dumps(line))
    return b"\n".join(lines) + b"\n"


# JUnit ------------------------------------------------------------------------------------------------
def quoteattr(value: str) -> str:
    """An XML attribute value, quoted, that XML can carry (a rule id may hold any character JSON does)."""
    return _quoteattr(xml_text(value))


def junit_xml(incident: dict[str, Any], evaluation: dict[str, Any], replay: dict[str, Any] | None = None) -> bytes:
    """The combined gate: a test case for the replay (when there was one) and one per rule; a rule that
    fails, or is inconclusive, is a failure even when the replay reproduced the incident faithfully. As JUnit has it,
    a divergence is a failure (the agent ran and did otherwise) and an agent that could not run to its end (it crashed,
    timed out, broke the protocol, exited badly: ``agent_error``) an error, counted in ``errors``."""
    cases: list[str] = []
    failures = errors = 0
    if replay is not None:
        name = "replay reproduces the recorded tool calls and terminal output"
        if replay["status"] == "matched":
            cases.append(f"    <testcase classname=\"incident.replay\" name={quoteattr(name)}/>")
        else:
            element = "error" if replay["status"] == AGENT_ERROR else "failure"
            if element == "error":
                errors += 1
            else:
                failures += 1
            why = (replay.get("divergence") or {}).get("message") or (replay.get("agent") or {}).get("error", {}).get("message", "")
            cases.append(f"    <testcase classname=\"incident.replay\" name={quoteattr(name)}>\n"
                         f"      <{element} type={quoteattr(replay['status'])} message={quoteattr(why)}/>\n    </testcase>")
    for rule in evaluation["rules"]:
        name = f"{rule['id']} ({rule['type']})"
        if rule["status"] == "pass":
            cases.append(f"    <testcase classname=\"incident.rules\" name={quoteattr(name)}/>")
        else:
            failures += 1
            cases.append(f"    <testcase classname=\"incident.rules\" name={quoteattr(name)}>\n"
                         f"      <failure type={quoteattr(rule['status'])} message={quoteattr(rule['message'])}/>\n    </testcase>")
    suite = quoteattr(f"incident {incident['incident_id']}")
    body = "\n".join(cases)
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<testsuites name="replay incident" tests="{len(cases)}" failures="{failures}" errors="{errors}">\n'
            f'  <testsuite name={suite} tests="{len(cases)}" failures="{failures}" errors="{errors}" skipped="0">\n'
            f"{body}\n  </testsuite>\n</testsuites>\n").encode()


# HTML -------------------------------------------------------------------------------------------------
def _e(value: Any) -> str:
    return html.escape(shown_text(str(value)), quote=True)


def _json(value: Any) -> str:
    return f"<pre>{_e(exactjson.dumps(value, option=orjson.OPT_INDENT_2).decode())}</pre>"


def _table(head: list[str], rows: list[list[str]]) -> str:
    out = ["<table><thead><tr>", *(f"<th>{_e(h)}</th>" for h in head), "</tr></thead><tbody>"]
    for row in rows:
        out.append("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _status(value: str) -> str:
    return f'<span class="{_e(value)}">{_e(value.upper().replace("_", " "))}</span>'


def _event_details(event: dict[str, Any]) -> str:
    kind = event["type"]
    if kind == "tool_call":
        return _json(event["args"])
    if kind == "tool_result":
        return _json({"ok": event["ok"], "result": event["result"], "error": event["error"]})
    if kind == "business_effect":
        return _json(event["effect"])
    if kind == "final_output":
        return _json(event["output"])
    return _json({"message": event["message"]})


def report_html(incident: dict[str, Any], evaluation: dict[str, Any], replay: dict[str, Any] | None = None) -> bytes:
    doc = bundle_document(incident)
    calls = _call_status(replay)
    names = {e["call_id"]: e["name"] for e in doc["events"] if e["type"] == "tool_call"}
    parts = [
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">",
        f"<title>Incident {_e(doc['incident_id'])}</title><style>{CSS}</style></head><body>",
        f"<h1>Incident {_e(doc['incident_id'])}</h1>",
        "<p class=\"muted\">Imported locally by <code>replay incident</code>; every value below is the redacted one.</p>",
        f"<div class=\"verdict\">{_e(verdict_line(evaluation, replay))}</div>",
    ]
    if replay is not None:
        agent = replay["agent"]
        parts.append("<h2>Replay</h2>")
        parts.append(f"<p>Status: {_status(replay['status'])}. {replay['consumed_calls']} of {replay['recorded_calls']} "
                     f"recorded calls answered; the agent sent {_e(agent['messages'])} message(s). Its logs "
                     f"({_e(agent['logs_withheld'])}) and stderr ({_e(agent['stderr_bytes_withheld'])} bytes) are withheld.</p>")
        if replay.get("divergence"):
            d = replay["divergence"]
            parts.append(f"<p class=\"warn\">Divergence <b>{_e(d['kind'])}</b> at step {_e(d['step'])}: {_e(d['message'])}</p>")
            parts.append(_table(["expected (recorded)", "received (candidate)"], [[_json(d["expected"]), _json(d["received"])]]))
        if agent.get("error"):
            parts.append(f"<p class=\"warn\">Agent error <b>{_e(agent['error']['code'])}</b>: {_e(agent['error']['message'])}</p>")
    parts.append("<h2>Business rules</h2>")
    parts.append(f"<p>Overall: {_status(evaluation['status'])}; effects_complete is "
                 f"<b>{_e(str(doc['effects_complete']).lower())}</b>.</p>")
    parts.append(_table(["rule", "type", "status", "why", "observed"],
                        [[_e(r["id"]), _e(r["type"]), _status(r["status"]), _e(r["message"]), _json(r["observed"])]
                         for r in evaluation["rules"]]))
    parts.append("<h2>Trace</h2>")
    rows = []
    for seq, event in enumerate(doc["events"], 1):
        cid = event.get("call_id", "")
        row = [_e(seq), _e(event["type"]), _e(cid), _e(names.get(cid, "")), _event_details(event)]
        if replay is not None:
            row.append(_status(calls.get(cid, "not_reached")) if cid else "")
        rows.append(row)
    parts.append(_table(["#", "event", "call", "tool", "details"] + (["replay"] if replay is not None else []), rows))
    parts.append("<h2>Input</h2>" + _json(doc["input"]))
    audit = doc["redaction"]
    parts.append("<h2>Redaction</h2>")
    counts = {**audit.get("detectors", {}), **audit.get("fields", {})}
    for key in ("numeric_to_string", "object_keys_aliased", "pointer_removed", "rule_values_redacted", "distinct_aliases"):
        if key in audit:
            counts[key] = audit[key]
    parts.append(_table(["what", "count"], [[_e(k), _e(v)] for k, v in counts.items()]))
    parts.extend(f"<p class=\"warn\">{_e(w)}</p>" for w in audit.get("warnings", []))
    parts.append("</body></html>\n")
    return "".join(parts).encode()


def folder_files(incident: dict[str, Any], evaluation: dict[str, Any], replay: dict[str, Any] | None = None) -> dict[str, bytes]:
    """Every file of an import, inspect or replay folder, by name."""
    doc = bundle_document(incident)
    files = {
        "incident.json": pretty(doc),
        "redaction.json": pretty(doc["redaction"]),
        "evaluation.json": pretty(evaluation),
        "report.html": report_html(incident, evaluation, replay),
        "trace.jsonl": trace_lines(incident, replay),
        "junit.xml": junit_xml(incident, evaluation, replay),
    }
    if replay is not None:
        files["replay.json"] = pretty(replay)
    return files

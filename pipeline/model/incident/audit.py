"""The value-free redaction audit: counts and warnings as an import writes them, and whether an audit read back is one."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from replay.pipeline.engine import exactjson
from replay.pipeline.model.incident.detectors import DETECTOR_KINDS
from replay.pipeline.model.incident.replacements import FIELD_KINDS
from replay.pipeline.model.incident.rules import FAIL, INCONCLUSIVE, PASS

_VERDICTS = ("{count} rule(s) judge the redacted incident otherwise than the export: ",
             ". A --redact pointer (or a redacted value) took what the rule reads: check the pointers against the rules' "
             "fields; the evaluation is of the redacted incident.")


def _verdict(rule_id: str, was: str, now: str) -> str:
    return f"{rule_id!r} {was} on the export, {now} redacted"


def verdicts_changed(judged_otherwise: Sequence[tuple[str, str, str]]) -> str:
    """What the audit and the import's warning say of rules that judge the redacted incident otherwise than the
    export (``rules.judged_otherwise``)."""
    changes = "; ".join(_verdict(rule_id, was, now) for rule_id, was, now in judged_otherwise)
    return _VERDICTS[0].format(count=len(judged_otherwise)) + changes + _VERDICTS[1]


def audit_of(counts: Counter[str], distinct_aliases: int, incident_id: str | None = None,
             judged_otherwise: Sequence[tuple[str, str, str]] = ()) -> dict[str, Any]:
    """The audit of a redaction that counted ``counts`` and wrote ``distinct_aliases`` aliases (``Redactor.audit``):
    counts and warnings only, no value, no field name, no alias mapping. ``judged_otherwise``: the rules that judge the
    redacted incident otherwise than the export (``rules.judged_otherwise``), each warned of by its id."""
    c = counts
    warnings = [("Automated redaction is not a guarantee of anonymity: review incident.json, trace.jsonl and "
                 "report.html before sharing them.")]
    if c["numeric_to_string"]:
        warnings.append(f"{c['numeric_to_string']} numeric value(s) became string aliases; behaviour that depends "
                        "on their type may change.")
    if c["freeform_text"]:
        warnings.append(f"{c['freeform_text']} freeform text value(s) were removed; an agent that reads them will "
                        "see \"[redacted]\".")
    if c["rule_values_redacted"]:
        warnings.append(f"{c['rule_values_redacted']} rule value(s) were redacted the same way as the output they "
                        "compare.")
    if judged_otherwise:
        warnings.append(verdicts_changed(judged_otherwise))
    return {
        "schema_version": 1,
        "incident_id": incident_id,
        "secret": "fresh per import, held in memory only, never written",
        "detectors": {kind: c[kind] for kind in DETECTOR_KINDS},
        "fields": {kind: c[kind] for kind in FIELD_KINDS},
        "numeric_to_string": c["numeric_to_string"],
        "object_keys_aliased": c["object_keys_aliased"],
        "pointer_removed": c["pointer_removed"],
        "rule_values_redacted": c["rule_values_redacted"],
        "distinct_aliases": distinct_aliases,
        "warnings": warnings,
    }


def audit_not_ours(audit: Any, incident_id: str | None, rule_ids: list[str]) -> list[str | int] | None:
    """Where a bundle's redaction audit (``redaction``) holds what ``audit_of`` does not write (a value, a name,
    a sentence edited in), as the steps of a path under it (a member's name as written: an error masks it); None when
    it is an audit as an import writes it: counts, the fixed texts, its incident's id, and the warnings its counts give
    (with the rules judged otherwise named by their ids)."""
    if not isinstance(audit, dict):
        return []
    counts: Counter[str] = Counter()
    for group in ("detectors", "fields"):
        if isinstance(audit.get(group), dict):
            counts.update({k: v for k, v in audit[group].items() if type(v) is int and v >= 0})
    counts.update({k: v for k, v in audit.items() if type(v) is int and v >= 0})  # (a count below 0 is none written)
    expected = audit_of(counts, 0, incident_id)
    distinct = audit.get("distinct_aliases")
    expected["distinct_aliases"] = distinct if type(distinct) is int else None
    for key in sorted(set(audit) | set(expected)):
        if (key != "warnings" and exactjson.dumps(audit.get(key)) != exactjson.dumps(expected.get(key))) or key not in audit:
            return [key]  # (as JSON: true is no count 1; an object's members as it has them)
    warnings = audit.get("warnings")
    if not isinstance(warnings, list):
        return ["warnings"]
    known = expected["warnings"]
    for k, warning in enumerate(warnings):
        if warning not in known and not (k == len(warnings) - 1 and _verdicts_line(warning, rule_ids)):
            return ["warnings", k]
    return None


def _verdicts_line(text: Any, rule_ids: list[str]) -> bool:
    """Is ``text`` the audit's warning of rules judged otherwise (``verdicts_changed``), naming rules of ``rule_ids``?"""
    if not isinstance(text, str):
        return False
    count = text.partition(" ")[0]
    if not count.isdigit() or not int(count):
        return False
    head, tail = _VERDICTS[0].format(count=int(count)), _VERDICTS[1]
    if not (text.startswith(head) and text.endswith(tail)) or len(text) <= len(head) + len(tail):
        return False
    middle, at, found = text[len(head):len(text) - len(tail)], 0, 0
    statuses = (PASS, FAIL, INCONCLUSIVE)
    entries = [_verdict(rid, was, now) for rid in rule_ids for was in statuses for now in statuses if was != now]
    while at < len(middle):
        step = next((e for e in entries if middle.startswith(e, at) and (
            at + len(e) == len(middle) or (middle.startswith("; ", at + len(e)) and at + len(e) + 2 < len(middle)))), None)
        if step is None:
            return False
        at, found = at + len(step) + 2, found + 1
    return found == int(count)

"""Business rules over an incident: effect_count, output_equals, required_output, max_tool_errors.

Rules are data: typed fields only, never code, regular expressions or templates. Each rule judges the
recorded incident and ends ``pass``, ``fail`` or ``inconclusive``; effect counts are inconclusive
unless the export declared ``effects_complete: true`` (a successful response does not prove an effect
committed, and a timeout does not prove it failed). A gate passes only when every rule passes.

    effect_count     effect_type, max, optional min and group_by (a top-level effect field)
    output_equals    path (JSON Pointer into the final output), value (compared exactly, with its type)
    required_output  fields (top-level keys the final output must have)
    max_tool_errors  max (failed tool results allowed)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

import orjson

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.model.incident import pointers
from replay.pipeline.model.incident.masking import masked
from replay.pipeline.model.validation import MISSING

PASS, FAIL, INCONCLUSIVE = "pass", "fail", "inconclusive"


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _text(value: Any) -> bool:
    return isinstance(value, str) and value != ""


def _pointer(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        tokens = pointers.parse(value)
    except pointers.PointerSyntaxError:
        return False
    return pointers.WILDCARD not in tokens


def _fields(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(_text(v) for v in value) and len(set(value)) == len(value)


def _anything(value: Any) -> bool:
    return True


Check = tuple[Callable[[Any], bool], str]
RULE_TABLE: dict[str, tuple[dict[str, Check], dict[str, Check]]] = {
    "effect_count": ({"effect_type": (_text, "a non-empty string"), "max": (_count, "an integer >= 0")},
                     {"min": (_count, "an integer >= 0"), "group_by": (_text, "a top-level effect field name")}),
    "output_equals": ({"path": (_pointer, "a JSON Pointer into the output, e.g. \"/status\" (no *)"),
                       "value": (_anything, "any JSON value")}, {}),
    "required_output": ({"fields": (_fields, "a non-empty array of distinct field names")}, {}),
    "max_tool_errors": ({"max": (_count, "an integer >= 0")}, {}),
}
RULE_EXAMPLE = '{"id": "one-refund-per-order", "type": "effect_count", "effect_type": "refund", "group_by": "order_id", "min": 1, "max": 1}'


def _refuse(code: str, message: str, where: dict[str, Any], path: str, **fields: Any) -> NoReturn:
    raise ReplayError(code, message, **{**where, "path": path}, **fields)


def check_rules(rules: list[Any], where: dict[str, Any], *, max_rules: int) -> None:
    """Refuse rule lists that are empty, too long, or hold a rule that is not exactly one of the four types. What a
    refusal quotes of a rule (its id, a field's name, a type) is ``masked`` where redaction would hide it."""
    base = where.get("path") or "$"
    if not rules:
        _refuse("E_INCIDENT_RULES_MISSING", "at least one explicit rule is required", where, base,
                expected="an array with at least one rule", received="no rules", example=RULE_EXAMPLE)
    if len(rules) > max_rules:
        _refuse("E_INCIDENT_TOO_MANY_ASSERTIONS", f"{len(rules)} rules; at most {max_rules} are imported", where, base,
                expected=f"at most {max_rules} rules", received=f"{len(rules)} rules",
                howToFix="Keep the rules that decide this incident, or raise the limit with --max-assertions.")
    seen: set[str] = set()
    for k, rule in enumerate(rules):
        at = f"{base}[{k}]"
        if not isinstance(rule, dict):
            _refuse("E_INCIDENT_RULE_INVALID", f"rule {k} is not an object", where, at, expected="object", example=RULE_EXAMPLE)
        kind = rule.get("type")
        if not isinstance(kind, str) or kind not in RULE_TABLE:  # (a list or an object is no key: TypeError)
            _refuse("E_INCIDENT_RULE_TYPE_UNKNOWN", f"rule {k} has a type no rule has", where, f"{at}.type",
                    expected="one of: " + ", ".join(RULE_TABLE), received=masked(rule.get("type", MISSING)),
                    howToFix="Rules are data of four types; no code, regular expressions or templates are loaded.")
        required, optional = RULE_TABLE[kind]
        if not _text(rule.get("id")):
            _refuse("E_INCIDENT_RULE_INVALID", f"rule {k} needs a non-empty string `id`", where, f"{at}.id",
                    expected="a non-empty string", example=RULE_EXAMPLE)
        name = masked(rule["id"])
        if rule["id"] in seen:
            _refuse("E_INCIDENT_RULE_ID_DUPLICATE", f"rule {k} reuses the id {name!r}", where, f"{at}.id",
                    expected="an id no other rule has", received=name)
        seen.add(rule["id"])
        known = {"id", "type", *required, *optional}
        for key in rule:
            if key not in known:
                _refuse("E_INCIDENT_RULE_INVALID", f"rule {name!r} ({kind}) has an unknown field {masked(key)!r}", where,
                        f"{at}.{masked(key)}", expected="one of: " + ", ".join(sorted(known)), received=masked(key))
        for key, (_ok, must) in required.items():
            if key not in rule:
                _refuse("E_INCIDENT_RULE_INVALID", f"rule {name!r} ({kind}) needs {key!r}", where, f"{at}.{key}",
                        expected=must, received="nothing")
        for key, (ok, must) in (required | optional).items():
            if key in rule and not ok(rule[key]):
                _refuse("E_INCIDENT_RULE_INVALID", f"rule {name!r} ({kind}): {key!r} must be {must}", where,
                        f"{at}.{key}", expected=must)
        if kind == "effect_count" and rule.get("min", 0) > rule["max"]:
            _refuse("E_INCIDENT_RULE_INVALID", f"rule {name!r}: min is larger than max", where, f"{at}.min",
                    expected=f"at most max ({rule['max']})", received=rule["min"])


# evaluation ---------------------------------------------------------------------------------------
def terminal_of(incident: dict[str, Any]) -> dict[str, Any]:
    return incident["events"][-1]


def _effect_count(rule: dict[str, Any], incident: dict[str, Any]) -> dict[str, Any]:
    effects = [e["effect"] for e in incident["events"] if e["type"] == "business_effect" and e["effect"].get("type") == rule["effect_type"]]
    low, high = rule.get("min", 0), rule["max"]
    expected = {"min": low, "max": high} | ({"group_by": rule["group_by"]} if "group_by" in rule else {})
    if "group_by" in rule:
        groups: dict[str, int] = {}
        for effect in effects:
            key = group_key(effect, rule["group_by"])
            groups[key] = groups.get(key, 0) + 1
        observed: dict[str, Any] = {"effects": len(effects), "groups": groups}
        outside = sorted(g for g, n in groups.items() if not low <= n <= high)
        ok = not outside and (bool(groups) or low == 0)
        if not groups and low > 0:
            why = f"no {rule['effect_type']!r} effect was captured; at least {low} per {rule['group_by']} expected"
        elif outside:
            why = (f"{len(outside)} {rule['group_by']} group(s) have a count outside {low}..{high}: "
                   + ", ".join(f"{g} x{groups[g]}" for g in outside))
        else:
            why = f"every {rule['group_by']} group has {low}..{high} {rule['effect_type']!r} effect(s)"
    else:
        observed = {"effects": len(effects)}
        ok = low <= len(effects) <= high
        why = f"{len(effects)} {rule['effect_type']!r} effect(s) captured; {low}..{high} allowed"
    if not incident["effects_complete"]:
        return {"status": INCONCLUSIVE, "expected": expected, "observed": observed,
                "message": "the export does not declare a complete effect ledger (effects_complete is false), "
                           f"so {len(effects)} captured effect(s) prove nothing either way"}
    ungrouped = sum(rule["group_by"] not in effect for effect in effects) if "group_by" in rule else 0
    if ungrouped:  # (a field no effect has, say a name misspelt, counted them all in one group of none)
        return {"status": INCONCLUSIVE, "expected": expected, "observed": observed | {"ungrouped": ungrouped},
                "message": f"{ungrouped} of {len(effects)} {rule['effect_type']!r} effect(s) have no "
                           f"{rule['group_by']!r} field to group them by, so the count per {rule['group_by']} is unknown"}
    return {"status": PASS if ok else FAIL, "expected": expected, "observed": observed, "message": why}


def group_key(effect: dict[str, Any], field: str) -> str:
    """The group an effect counts in under ``group_by: field``: its value there as JSON text (an object's keys sorted),
    which is how ``evaluation.json`` and the verdict's message name the group. Values group as ``output_equals``
    compares them (``exactjson.typed_equal``): exactly, type included, so ``7``, ``"7"`` and ``7.0`` are three groups,
    and ``true`` is not ``"true"``; the text of a string is quoted, so no two groups read alike. ``(missing)``, no JSON
    text, is the group of the effects without the field."""
    if field not in effect:
        return "(missing)"
    return exactjson.dumps(effect[field], option=orjson.OPT_SORT_KEYS).decode()


def _output(incident: dict[str, Any]) -> dict[str, Any] | None:
    terminal = terminal_of(incident)
    return terminal["output"] if terminal["type"] == "final_output" else None


def _output_equals(rule: dict[str, Any], incident: dict[str, Any]) -> dict[str, Any]:
    output = _output(incident)
    expected = {"path": rule["path"], "value": rule["value"]}
    if output is None:
        return {"status": FAIL, "expected": expected, "observed": {"terminal": "task_error"},
                "message": "the task ended with task_error: there is no output to compare"}
    found = pointers.resolve(output, pointers.parse(rule["path"]))
    if found is pointers.MISSING:
        return {"status": FAIL, "expected": expected, "observed": {"present": False},
                "message": f"the output has nothing at {rule['path']}"}
    same = exactjson.typed_equal(found, rule["value"])
    return {"status": PASS if same else FAIL, "expected": expected, "observed": {"present": True, "value": found},
            "message": f"the output at {rule['path']} " + ("equals the expected value" if same else "differs from the expected value")}


def _required_output(rule: dict[str, Any], incident: dict[str, Any]) -> dict[str, Any]:
    output = _output(incident)
    expected = {"fields": rule["fields"]}
    if output is None:
        return {"status": FAIL, "expected": expected, "observed": {"terminal": "task_error"},
                "message": "the task ended with task_error: there is no output"}
    missing = [f for f in rule["fields"] if f not in output]
    return {"status": FAIL if missing else PASS, "expected": expected, "observed": {"missing": missing},
            "message": ("missing from the output: " + ", ".join(missing)) if missing else "every required field is present"}


def _max_tool_errors(rule: dict[str, Any], incident: dict[str, Any]) -> dict[str, Any]:
    errors = sum(1 for e in incident["events"] if e["type"] == "tool_result" and not e["ok"])
    ok = errors <= rule["max"]
    return {"status": PASS if ok else FAIL, "expected": {"max": rule["max"]}, "observed": {"tool_errors": errors},
            "message": f"{errors} failed tool result(s); at most {rule['max']} allowed"}


JUDGES: dict[str, Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]] = {
    "effect_count": _effect_count, "output_equals": _output_equals,
    "required_output": _required_output, "max_tool_errors": _max_tool_errors,
}


def overall(statuses: list[str]) -> str:
    if FAIL in statuses:
        return FAIL
    if INCONCLUSIVE in statuses:
        return INCONCLUSIVE
    return PASS


def evaluate(incident: dict[str, Any]) -> dict[str, Any]:
    """The evaluation document (``schemas/incident-evaluation.schema.json``) of an incident's rules."""
    results = [{"id": rule["id"], "type": rule["type"], **JUDGES[rule["type"]](rule, incident)} for rule in incident["assertions"]]
    statuses = [r["status"] for r in results]
    return {
        "schema_version": 1,
        "incident_id": incident.get("incident_id"),
        "status": overall(statuses),
        "effects_complete": incident["effects_complete"],
        "counts": {s: statuses.count(s) for s in (PASS, FAIL, INCONCLUSIVE)},
        "rules": results,
    }


def judged_otherwise(export: dict[str, Any], redacted: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The rules that judge ``redacted`` (the incident after redaction) otherwise than ``export`` (the same incident
    before it): (its id, its status on the export, its status redacted), in the rules' order. Paired by id (unique,
    ``check_rules``); a rule that is not in ``redacted`` is not named (--redact refuses a pointer into the rules)."""
    was = {rule["id"]: rule["status"] for rule in evaluate(export)["rules"]}
    return [(now["id"], was[now["id"]], now["status"]) for now in evaluate(redacted)["rules"]
            if now["id"] in was and was[now["id"]] != now["status"]]

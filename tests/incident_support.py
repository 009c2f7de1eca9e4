"""Shared helpers for the incident tests: example exports, a scriptable agent, the labelled sensitive values,
generated folders of exports, and folders compared with their aliases mapped."""

from __future__ import annotations

import copy
import html
import json
import re
import sys
from pathlib import Path
from typing import Any

import orjson
from conftest import EXAMPLES, FIXTURES, ROOT

INCIDENTS = EXAMPLES / "incidents"
REFUND_EXPORT = INCIDENTS / "refund-export.json"
REFUND_AGENT = INCIDENTS / "replay_agent.py"
PLAN_AGENT = ROOT / "tests" / "e2e" / "incident_agent.py"
SENSITIVE = FIXTURES / "incidents" / "sensitive-values.json"

MINIMAL: dict[str, Any] = {
    "schema_version": 1,
    "input": {"request": "Check my order", "order_id": "order-1042"},
    "effects_complete": False,
    "events": [{"type": "final_output", "output": {"status": "pending"}}],
    "assertions": [{"id": "status-present", "type": "required_output", "fields": ["status"]}],
}


def refund_export() -> dict[str, Any]:
    return orjson.loads(REFUND_EXPORT.read_bytes())


def minimal_export() -> dict[str, Any]:
    return copy.deepcopy(MINIMAL)


def write_json(path: Path, document: Any) -> Path:
    path.write_bytes(orjson.dumps(document))
    return path


def sensitive_values() -> dict[str, list[str]]:
    return orjson.loads(SENSITIVE.read_bytes())


def agent_command(agent: Path, *args: str) -> str:
    return json.dumps([sys.executable, str(agent), *args])


def plan_agent(plan: list[dict[str, Any]], transcript: Path | None = None) -> str:
    """--agent-command for the scriptable test agent following ``plan`` (see tests/e2e/incident_agent.py)."""
    return agent_command(PLAN_AGENT, json.dumps(plan), *([str(transcript)] if transcript else []))


# The refund incident's recorded path, as plan steps ($input / $last are filled in by the agent at run time).
LOOKUP = {"call": "lookup_order", "args": {"order_id": "$input.order_id"}}
REFUND = {"call": "issue_refund", "args": {"order_id": "$input.order_id", "amount_cents": 4900, "currency": "USD"}}
FINAL = {"final": {"status": "refunded", "order_id": "$input.order_id", "refund_id": "$last.refund_id",
                   "amount_cents": 4900, "currency": "USD"}}
REPRODUCE = [LOOKUP, REFUND, REFUND, FINAL]


# nothing private leaves redaction ------------------------------------------------------------------------
def sensitive_export() -> tuple[dict[str, Any], list[str]]:
    """An export with every labelled sensitive value in it, in every kind of place a value can be."""
    values = [v for vs in sensitive_values().values() for v in vs]
    thirds = [values[i::3] for i in range(3)]
    card_number = 4242424242424242
    doc: dict[str, Any] = {
        "schema_version": 1,
        "title": values[0], "metadata": {"who": values[1]}, "incident_id": values[2], "source": values[3],
        "input": {"request": "Hello, here you go: " + " and ".join(values[:15]),
                  **{f"v{i}": v for i, v in enumerate(thirds[0])}, "card": card_number},
        "effects_complete": True,
        "events": [
            {"type": "tool_call", "call_id": values[5], "name": "lookup", "args": {f"q{i}": v for i, v in enumerate(thirds[1])}},
            {"type": "tool_result", "call_id": values[5], "ok": True,
             "result": {"items": [{"value": v, "text": f"saw {v} there"} for v in thirds[2]],
                        "by_key": {v: 1 for v in values if "@" in v and "://" not in v}}},
            {"type": "business_effect", "call_id": values[5], "effect": {"type": "refund", "note": values[7], "ref": values[8],
                                                                         "amount_cents": 100}},
            {"type": "tool_call", "call_id": "second", "name": "charge", "args": {"card_number": card_number, "token": values[9]}},
            {"type": "tool_result", "call_id": "second", "ok": False, "error": "declined for " + values[10]},
            {"type": "final_output", "output": {"status": "done", "answer": f"sent to {values[11]}", "contact": values[12]}},
        ],
        "assertions": [{"id": "contact", "type": "output_equals", "path": "/contact", "value": values[12]},
                       {"id": "no-errors", "type": "max_tool_errors", "max": 0}],
    }
    return doc, [*values, str(card_number)]


def value_forms(value: str) -> list[bytes]:
    """The ways a value can be written into an output file: as is, JSON-escaped, HTML-escaped."""
    return [value.encode(), orjson.dumps(value)[1:-1], html.escape(value).encode(), html.escape(value, quote=False).encode()]


# folders of exports ------------------------------------------------------------------------------------
def generated_export(k: int) -> dict[str, Any]:
    """The refund example with its own customer, order, amount and path: ``k`` picks which."""
    doc = refund_export()
    order, email, amount = f"order-{5000 + k}", f"customer{k}@example.org", 1000 + 7 * k
    doc["input"] = {"request": f"Where is my refund for order {5000 + k}? {email}", "order_id": order, "customer_email": email}
    for event in doc["events"]:
        for part in ("args", "result", "effect", "output"):
            body = event.get(part)
            if isinstance(body, dict):
                body.update({key: order for key in body if key == "order_id"})
                body.update({key: amount for key in body if key == "amount_cents"})
                if isinstance(body.get("customer"), dict):
                    body["customer"]["email"] = email
    if k % 2:  # the retry never happened: one refund, the rule passes
        doc["events"] = [e for e in doc["events"] if e.get("call_id") not in ("call-9c05",)]
        doc["events"][-1]["output"]["refund_id"] = "re_1042_a"
    if k % 3 == 2:
        doc["effects_complete"] = False  # effect counts become inconclusive
    return doc


def make_exports(folder: Path, count: int = 4, *, sensitive: bool = False) -> Path:
    """``folder`` with the example export, ``count`` generated ones (one in a sub-folder), the minimal export
    and, with ``sensitive``, the export holding every labelled sensitive value."""
    folder.mkdir(parents=True, exist_ok=True)
    write_json(folder / "refund-export.json", refund_export())
    write_json(folder / "minimal.json", minimal_export())
    for k in range(count):
        path = folder / ("more" if k == count - 1 else "") / f"generated-{k}.json"
        path.parent.mkdir(exist_ok=True)
        write_json(path, generated_export(k))
    if sensitive:
        write_json(folder / "sensitive.json", sensitive_export()[0])
    return folder


ALIAS = re.compile(rb"\b[a-z]+_[0-9a-f]{16}\b")  # every alias and incident id: <kind>_<16 hex>


def tree(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` by relative path."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def map_aliases(a: dict[str, bytes], b: dict[str, bytes]) -> dict[bytes, bytes]:
    """The one-to-one mapping of ``a``'s aliases onto ``b``'s, read off the two sets of files in the same order;
    fails when the files differ in anything but aliases, or when an alias would map onto two."""
    assert sorted(a) == sorted(b), (sorted(a), sorted(b))
    mapping: dict[bytes, bytes] = {}
    for name in sorted(a):
        ours, theirs = ALIAS.findall(a[name]), ALIAS.findall(b[name])
        assert len(ours) == len(theirs), name
        for mine, other in zip(ours, theirs, strict=True):
            assert mapping.setdefault(mine, other) == other, (name, mine)
    assert len(set(mapping.values())) == len(mapping)  # one to one
    return mapping


def same_after_mapping_aliases(a: dict[str, bytes], b: dict[str, bytes]) -> None:
    """Every file of ``a`` equals its namesake in ``b`` once ``a``'s aliases are written as ``b``'s."""
    mapping = map_aliases(a, b)
    for name in sorted(a):
        assert ALIAS.sub(lambda m: mapping[m.group(0)], a[name]) == b[name], name

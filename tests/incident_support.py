"""Shared helpers for the incident tests: example exports, a scriptable agent, the labelled sensitive values."""

from __future__ import annotations

import copy
import json
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

"""The records incident stages pass along a stream (``{"$record": ...}``), and converting an incident to and from one."""

from __future__ import annotations

from typing import Any

from replay.pipeline.model.records import RECORD_KEY, REDACTION_RECORD, record_kind

INCIDENT = "incident"  # a whole incident: the bundle's fields (``redaction`` is None until a redact stage ran)
EVALUATION = "evaluation"  # the rules' verdict on the incident before it (evaluation.json)
AGENT_MESSAGE = "agent_message"  # {"message": one protocol message the agent sent}: candidate data, never written
AGENT_EXIT = "agent_exit"  # how the agent process ended (counts, status, error): no candidate data
REPLAY = "replay"  # the replay verdict (replay.json)
REDACTION = REDACTION_RECORD  # the value-free audit a redact stage sends after the non-incident records it redacted

kind_of = record_kind


def as_record(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    return {RECORD_KEY: kind, **{k: v for k, v in body.items() if k != RECORD_KEY}}


def body_of(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k != RECORD_KEY}

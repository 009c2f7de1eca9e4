"""The fields that always differ between two runs of the same thing (times, ids, durations): one list for both readers.

``replay diff`` leaves them out and ``golden check`` normalises them (``replay.pipeline.testing.goldens``), so what
the one calls alike the other does too. ``golden check`` reads each key at any depth. ``replay diff`` reads the keys
of ``RECORD_KEYS`` only at a record's top, where they are the record's own time and ids (below it ``id`` or ``time``
is data, a tool's argument or output, which a diff compares), and every other key at any depth.
"""

from __future__ import annotations

TIME_KEYS = ("ts", "timestamp", "time", "createdAt", "updatedAt", "startedAt", "endedAt", "finishedAt")
ID_KEYS = (
    "id", "runId", "run_id", "artifactId", "event_id", "parentId", "sessionId", "requestId", "messageId",
    "responseId", "callId", "toolCallId", "call_id", "traceId", "spanId",
)
DURATION_KEYS = ("durationMs", "duration_ms", "elapsedMs", "latencyMs")
RECORD_KEYS = ("timestamp", "ts", "time", "runId", "run_id", "artifactId", "id", "event_id", "parentId")


def nested_keys() -> tuple[str, ...]:
    """The keys read at any depth by both (the others only at a record's top by ``replay diff``)."""
    return tuple(k for k in (*TIME_KEYS, *ID_KEYS, *DURATION_KEYS) if k not in RECORD_KEYS)

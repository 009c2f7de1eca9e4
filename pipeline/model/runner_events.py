"""What capture keeps of a runner event's own fields: one the event schema types (``OPTIONAL_EVENT_FIELDS``: ``step``, ``turn``,
``parentId``, ``synthetic``) that is of another type, and a ``$record`` key (replay's own records carry one, an event
never), is left out of the event, the rest of it kept, with a notice naming it and how to fix the runner
(E_RUNNER_FIELD_INVALID, rule check_runner_output), as a run fact of another type is (``runner_facts``). The healed
artifact and the journal then hold only what validate holds them to.

What heal repairs is left to heal, which logs it: ``seq``, ``timestamp``, ``runId`` and ``payload`` of any value
(renumber, fix_timestamp, fill_run_id, normalize_payload), a ``step``/``turn`` of null and a ``synthetic`` of false or
null (drop_empty_fields: ``SAYS_NOTHING``). An event whose ``type`` is no non-empty string is no event at all: it fails
the run (``runner_protocol.no_event``). The raw capture and ``<id>.artifact.json`` keep each event as the runner gave it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from replay.pipeline.engine import exactjson
from replay.pipeline.model.records import RECORD_KEY
from replay.pipeline.model.runner_facts import FIELD_INVALID, with_article
from replay.pipeline.model.validation import OPTIONAL_EVENT_FIELDS, json_type, named, says_nothing

_NO_RECORD_KEY = f"no `{RECORD_KEY}` key (replay's own records carry one, an event never)"
_EXAMPLE = '{"type": "tool_called", "step": 2, "turn": 1, "parentId": "evt_1", "payload": {}}'


@dataclass
class EventFieldNote:
    """A field of a runner's event that capture leaves out of it (``left_out``): which, and the value that came."""

    field: str
    original: Any

    @property
    def expected(self) -> str:
        if self.field == RECORD_KEY:
            return _NO_RECORD_KEY
        expected = OPTIONAL_EVENT_FIELDS[self.field][0]
        return expected if isinstance(expected, str) else exactjson.dumps(expected).decode()

    @property
    def received(self) -> str:
        kind, value = json_type(self.original), named(self.original)
        return kind if value == kind else f"{kind} {value}"

    @property
    def message(self) -> str:
        if self.field == RECORD_KEY:
            said = f"a runner event carries `{RECORD_KEY}` ({self.received}), which marks replay's own records"
        else:
            said = f"a runner event's `{self.field}` is {with_article(self.received)}; it {OPTIONAL_EVENT_FIELDS[self.field][2]}"
        return f"{said}: left out of the event, the rest of it kept (the raw capture has it)"

    def entry(self) -> dict[str, Any]:
        """The heal-log notice's fields (``log_repair``'s keywords, but rule, action and message; the event's place
        comes from its batch)."""
        fix = (f"Leave `{RECORD_KEY}` out of the runner's events" if self.field == RECORD_KEY else
               f"Write an event's `{self.field}` as the event schema has it ({self.expected}), or leave it out")
        return {"code": FIELD_INVALID, "field": self.field, "original": self.original, "expected": self.expected,
                "received": self.received, "howToFix": f"{fix}, e.g. {_EXAMPLE} (`replay schema event`)."}


def left_out(event: dict[str, Any]) -> tuple[dict[str, Any], list[EventFieldNote]]:
    """``event`` without the fields capture does not keep (see the module), and a note for each; ``event`` itself
    when it has none."""
    bad = [key for key, (_, ok, _) in OPTIONAL_EVENT_FIELDS.items()
           if key in event and not ok(event[key]) and not says_nothing(key, event[key])]
    if RECORD_KEY in event:
        bad.append(RECORD_KEY)
    if not bad:
        return event, []
    return {k: v for k, v in event.items() if k not in bad}, [EventFieldNote(key, event[key]) for key in bad]

"""The names redaction keeps as it is (tools', effects' types, rules' ids), refused when one holds a credential, email or card."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.model.incident.detectors import scan
from replay.pipeline.model.incident.replacements import ALIAS_PREFIX

# What a name the protocol keeps as it is must not hold: a credential, an email, a card number (a phone number's or an
# IP address's pattern matches too many plain names, ``order 1234567890``, ``v1.2.3.4``, to refuse them for it)
_NAMES_REFUSED = frozenset(kind for kind, prefix in ALIAS_PREFIX.items() if prefix in ("secret", "email", "card"))


def _names(work: dict[str, Any]) -> Iterator[tuple[str, int, str, str, Any]]:
    """Each name redaction keeps as it is (protocol structure: the replay matches on them, the rules name them): tools'
    names, effects' types, rules' ids and the effect types they count (call ids are the import's own, c1, c2, ...). As
    (``events`` or ``assertions``, the index there, the name's path in that item, what the name is, the name)."""
    for i, event in enumerate(work["events"]):
        if event["type"] == "tool_call":
            yield "events", i, ".name", f"the tool name of event {i}", event.get("name")
        elif event["type"] == "business_effect" and isinstance(event.get("effect"), dict):
            yield "events", i, ".effect.type", f"the effect type of event {i}", event["effect"].get("type")
    for i, rule in enumerate(work["assertions"]):
        yield "assertions", i, ".id", f"the id of rule {i}", rule.get("id")
        yield "assertions", i, ".effect_type", f"the effect_type of rule {i}", rule.get("effect_type")


def refuse_private_names(work: dict[str, Any], where_of: Callable[[str, int], dict[str, Any]] | None = None) -> None:
    """Refuse an incident (before anything is written) where a name redaction keeps as it is holds what a detector
    finds private: it would be written in every file of the import. The error names where, and what kind, never
    the value. ``where_of(part, index)``: where that event or rule is, as every import refusal names it (``source``,
    ``line``, its ``path``: ``$.events[0]``, a rules file's ``$[0]``); without it, its path in ``work``."""
    for part, index, field, what, name in _names(work):
        kinds = sorted({kind for kind, _, _ in scan(name) if kind in _NAMES_REFUSED}) if isinstance(name, str) else []
        if kinds:
            where = where_of(part, index) if where_of is not None else {"path": f"$.{part}[{index}]"}
            raise ReplayError(
                "E_INCIDENT_NAME_PRIVATE", f"{what} holds what looks like {' and '.join(k.replace('_', ' ') for k in kinds)}: "
                "a name redaction keeps as it is (the replay matches on it, the rules name it), so it would be written "
                "in every file of the import", **{**where, "path": (where.get("path") or "$") + field}, received=kinds,
                howToFix="Rename it in the export (and in the rules that name it) to a name that holds no credential or "
                         "personal data; values inside args, results, effects and output are redacted, names are not.")

"""The re-check of a bundle read back: where it holds a value or a member name redaction would change."""

from __future__ import annotations

from typing import Any

from replay.pipeline.engine import exactjson
from replay.pipeline.model.incident.detectors import DETECTOR_KINDS
from replay.pipeline.model.incident.redactor import Redactor
from replay.pipeline.model.incident.replacements import ALIAS, FIELD_KINDS, REMOVED


class _Again(Redactor):
    """Redaction over an incident redacted already: an alias, a removal and an aliased key stand as they are (a
    second pass would alias them again); anything else it changes, the first pass would have changed."""

    def _string(self, text: str, key: str | None, context: str, within: str | None = None) -> str:
        if text == REMOVED or ALIAS.fullmatch(text):
            return text
        return super()._string(text, key, context, within)

    def _key(self, key: str) -> str:
        return key if ALIAS.fullmatch(key) else super()._key(key)

    # Under an aliased key the value is judged under no name, as the import judged it (``Redactor._under``): the alias
    # says nothing of the name it stands for (``email_...`` is no email field), nor of what it was inside of.
    def _under(self, key: str, name: str, within: str | None) -> tuple[str | None, str | None]:
        return (None, within) if ALIAS.fullmatch(key) else super()._under(key, name, within)


NAME = "*"  # in a path ``unredacted`` gives: a member whose name (not its value) redaction would change


def unredacted(incident: dict[str, Any]) -> tuple[list[str | int], list[str]] | None:
    """Where a redacted incident (a bundle read back) holds a value redaction would change, one edited in by hand or
    written by something other than an import: its JSON Pointer and what redaction took it for (value-free); None
    when redaction would leave it all as it is. A tool's name, an effect's type or a rule's id that holds a credential,
    an email or a card number is refused as the import refuses it (E_INCIDENT_NAME_PRIVATE)."""
    again = _Again(secret=bytes(32))
    redone = again.incident(incident)
    for part in ("input", "events", "assertions"):
        where = _first_difference(incident[part], redone[part], [part])
        if where is not None:
            return where, sorted(k for k in again.counts if k in DETECTOR_KINDS or k in FIELD_KINDS)
    return None


def _first_difference(a: Any, b: Any, path: list[str | int]) -> list[str | int] | None:
    """The path to the first place ``a`` and ``b`` (JSON values) differ, in document order; None when they are equal.
    A loop, not recursion: a bundle holds JSON as deep as the import reads (``exactjson.MAX_DEPTH`` levels)."""
    todo: list[tuple[Any, Any, list[str | int]] | list[str | int]] = [(a, b, path)]  # (a bare path: a difference found)
    while todo:
        step = todo.pop()
        if isinstance(step, list):  # (reached once everything before it in document order was equal)
            return step
        a, b, path = step
        if isinstance(a, dict) and isinstance(b, dict):
            pairs: list[tuple[Any, Any, list[str | int]] | list[str | int]] = []
            for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=False):
                if ka != kb:
                    pairs.append([*path, NAME])  # (a member's name redaction would alias: never the name itself)
                    break
                pairs.append((va, vb, [*path, ka]))
            else:
                if len(a) != len(b):
                    pairs.append(path)
            todo.extend(reversed(pairs))  # (reversed: the first member is taken first)
        elif isinstance(a, list) and isinstance(b, list):
            items: list[tuple[Any, Any, list[str | int]] | list[str | int]] = [
                (va, vb, [*path, i]) for i, (va, vb) in enumerate(zip(a, b, strict=False))]
            if len(a) != len(b):
                items.append(path)
            todo.extend(reversed(items))
        elif not exactjson.typed_equal(a, b):
            return path
    return None

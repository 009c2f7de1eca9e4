"""``--redact`` pointers: which a command takes, what they may not remove, and their removal from an incident before redaction."""

from __future__ import annotations

from typing import Any, NoReturn

from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.model.incident import pointers
from replay.pipeline.model.incident.masking import masked

RULES_NOT_REDACTED = ("Leave the rules out of --redact: their values are redacted as the output they compare. To judge "
                      "the incident without a rule, take it out of the export's assertions (or the --rules file) and "
                      "import again.")


def _refuse(code: str, message: str, pointer: str, **fields: Any) -> NoReturn:
    raise ReplayError(code, message, **{"path": "--redact", "received": pointer, **fields})


def removal_pointer(text: str) -> list[str]:
    """The tokens of a ``--redact`` pointer; refused unless it is a JSON Pointer into input, events or assertions
    (what any incident would refuse: checked by the command before any import)."""
    if text == "":
        _refuse("E_INCIDENT_REDACT_POINTER_INVALID", "--redact needs a JSON Pointer; an empty one would name the whole "
                "incident", text, expected="/input/..., /events/<i or *>/...",
                example="--redact /events/*/args/internal_reference")
    try:
        tokens = pointers.parse(text)
    except pointers.PointerSyntaxError as exc:
        _refuse("E_INCIDENT_REDACT_POINTER_INVALID", str(exc), text, example="--redact /events/*/args/internal_reference")
    if not tokens or tokens[0] not in ("input", "events", "assertions"):  # (the seed's three: a rule is refused as
        _refuse("E_INCIDENT_REDACT_POINTER_INVALID",                      # protocol structure, ``protected``)
                f"--redact {text!r} must point into /input, /events or /assertions (where only /input and /events hold "
                "what redaction removes)", text, expected="/input/..., /events/<i or *>/...")
    return tokens


def _expanded(tokens: list[str], match: tuple[str, ...]) -> str:
    """The pointer ``match`` that ``--redact`` pointer ``tokens`` named, as a refusal shows it: what a ``*`` expanded to
    is the incident's (a member name holding an email), ``masked`` where redaction would hide it."""
    return pointers.format_pointer([str(masked(part)) if token == pointers.WILDCARD else part
                                    for token, part in zip(tokens, match, strict=True)])


def deletion_key(work: dict[str, Any], match: tuple[str, ...]) -> tuple[Any, ...]:
    key: list[Any] = []
    node: Any = work
    for token in match:
        if isinstance(node, list):
            key.append((0, int(token), ""))
            node = node[int(token)] if int(token) < len(node) else None
        else:
            key.append((1, 0, token))
            node = node.get(token) if isinstance(node, dict) else None
    return tuple(key)


def protected(work: dict[str, Any], match: tuple[str, ...]) -> str | None:
    """Why removing ``match`` would break the incident's protocol structure, or None when it is payload."""
    head = match[0]
    if head == "input":
        return "the whole input" if len(match) == 1 else None
    if head == "assertions":
        # A rule holds no private value redaction leaves (an output_equals value is redacted as the output it compares;
        # a private id or effect type is refused, E_INCIDENT_NAME_PRIVATE): taking one out would only change the
        # verdict, a failing incident turned passing with no word.
        return "a rule or a rule's field (rules are what the incident is judged by, not private data)"
    if len(match) <= 2:
        return "an event (the trace must stay whole)"
    field = match[2]
    if field in ("type", "call_id", "name", "ok", "message"):
        return f"the protocol field {field!r} of an event"
    if field in ("args", "effect", "output") and len(match) == 3:
        return f"an event's whole {field!r} (remove fields inside it)"
    if field == "effect" and match[3] == "type" and len(match) == 4:
        return "an effect's type"
    return None


def remove(work: dict[str, Any], texts: list[str] | tuple[str, ...]) -> int:
    """Delete from ``work`` (an incident's input, events and assertions) what the ``--redact`` pointers ``texts`` name
    (an event's whole ``result`` or ``error`` becomes null); how many it removed. Refused before anything is removed
    when a pointer names nothing or protocol structure (``protected``)."""
    found: dict[tuple[str, ...], str] = {}
    for text in texts:
        tokens = removal_pointer(text)
        matches = list(pointers.expand(work, tokens))
        if not matches:
            _refuse("E_INCIDENT_REDACT_PATH_MISSING", f"--redact {text!r} names nothing in this incident", text,
                    howToFix="Use only paths present in your export (call ids are c1, c2, ...; `*` matches one level).")
        for match in matches:
            why = protected(work, match)
            if why:
                _refuse("E_INCIDENT_REDACT_PATH_PROTECTED", f"--redact {text!r} would remove {why}", text,
                        received=_expanded(tokens, match),
                        **({"howToFix": RULES_NOT_REDACTED} if match[0] == "assertions" else {}))
            found.setdefault(match, text)
    removed = 0
    for match in sorted(found, key=lambda m: deletion_key(work, m), reverse=True):
        if pointers.resolve(work, match) is pointers.MISSING:
            continue  # inside something already removed
        if match[0] == "events" and len(match) == 3:  # result / error: optional fields become null
            work["events"][int(match[1])][match[2]] = None
        else:
            pointers.remove(work, match)
        removed += 1
    return removed

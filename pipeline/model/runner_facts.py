"""The run facts of a runner's output object (``response``, ``error``, ``framework``, ``sources``, ``usage``): kept as
they are when of the contract's type, put in normal form where one exists (a bare error message, one source name), else
left out, each change a note for the heal log (``run_facts``). How the reply itself is read: ``runner_protocol``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from replay.pipeline.engine import exactjson
from replay.pipeline.model.validation import MEMBERS, USAGE_NOT_COUNTED, json_type

RUNNER_ERROR_RULE = "normalize_runner_error"  # a bare message as `error` made {"message": it} (a repair)
RUNNER_SOURCES_RULE = "normalize_runner_sources"  # one source name as `sources` made [it] (a repair)
RUNNER_EVENTS_RULE = "drop_listed_again"  # the output object's events the streamed ones again: left out (a repair)
RUNNER_FIELD_RULE = "check_runner_output"  # a run fact of a type with no normal form: not kept, a notice
FIELD_INVALID = "E_RUNNER_FIELD_INVALID"  # a FactNote's code when the fact is not kept (a notice)
MISSING = "missing"  # a FactNote's ``received`` for a fact the contract requires and the output left out
CAPTURE_FAILURE_PREFIXES = ("E_RUNNER_", "E_CAPTURE_")  # the codes of the error capture gives a run whose runner failed


def capture_failure(error: Any) -> str | None:
    """The code of a run record's ``error`` when it is one capture gives a run whose runner failed (a non-zero exit, a
    timeout, output it could not read, an interrupt: ``spawn``), whatever the runner's own events say; else None."""
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, str) and code.startswith(CAPTURE_FAILURE_PREFIXES) else None


_TYPES = {"response": "string", "error": "object", "framework": "string", "sources": "array of strings", "usage": "object"}
_EXAMPLES = {"response": '"response": "AAPL is your largest holding."',
             "error": '"error": {"code": "RUNNER_TOOL_TIMEOUT", "message": "...", "retryable": true}',
             "framework": '"framework": "langchain"', "sources": '"sources": ["portfolio_db"]',
             "usage": '"usage": {"inputTokens": 100, "outputTokens": 40, "costUsd": 0.0021}'}


@dataclass
class FactNote:
    """A run fact the output gave in a type the contract does not have: ``value`` is its normal form, kept and
    logged as a repair by ``rule``; None when it has none, so it is not kept and is a notice (``check_runner_output``)
    naming the field, what came and how to fix the runner. The raw capture keeps the runner's stdout as it was."""

    field: str
    original: Any
    received: str
    value: Any = None
    rule: str = RUNNER_FIELD_RULE

    @property
    def kept(self) -> bool:
        return self.value is not None

    @property
    def message(self) -> str:
        if self.received == MISSING:
            return f"runner output has status \"error\" but no `{self.field}`: the run record cannot say why it failed"
        said = f"runner output's `{self.field}` is {with_article(self.received)}; the contract's is {with_article(_TYPES[self.field])}"
        if self.kept:
            return f"{said}: kept as {exactjson.dumps(self.value).decode()[:80]}"
        return f"{said}: not kept in the run record (the raw capture has it)"

    def entry(self) -> dict[str, Any]:
        """The heal-log entry's fields (``log_repair``'s keywords, but rule, action and message)."""
        if self.kept:
            return {"field": self.field, "original": self.original, "value": self.value}
        if self.received == MISSING:
            return {"code": FIELD_INVALID, "field": self.field, "path": f"$.{self.field}", "expected": _TYPES[self.field], "received": MISSING,
                    "howToFix": f"Say why the run failed: {_EXAMPLES[self.field]} (`replay schema runner-output`)."}
        return {"code": FIELD_INVALID, "field": self.field, "path": f"$.{self.field}", "original": self.original,
                "expected": _TYPES[self.field], "received": self.received,
                "howToFix": f"Write `{self.field}` as {with_article(_TYPES[self.field])} in the runner's output object, e.g. "
                            f"{_EXAMPLES[self.field]} (`replay schema runner-output`), or leave it out."}


@dataclass
class MemberNote(FactNote):
    """A member of an object-valued run fact (``error``, ``usage``) that is not of the type validation's ``MEMBERS``
    gives it (``"error": {"code": 5}``, ``"retryable": "yes"``; a usage count that is no number >= 0: ``"12"``, -3,
    true): left out of the run record's fact, the rest of the object kept, and a notice naming the member and how to
    fix the runner (E_RUNNER_FIELD_INVALID; a usage member's E_USAGE_NOT_COUNTED). The healed artifact and the journal
    then hold only what validate holds them to."""

    member: str = ""

    @property
    def expected(self) -> str:
        return MEMBERS[self.field][self.member][0]

    @property
    def message(self) -> str:
        rule = f"a count is a {self.expected}" if self.field == "usage" else f"the contract's is {with_article(self.expected)}"
        return (f"runner output's `{self.field}.{self.member}` is {with_article(self.received)}; {rule}: left out of the "
                f"run record's {self.field}, the rest of it kept (the raw capture has it)")

    def entry(self) -> dict[str, Any]:
        name = f"{self.field}.{self.member}"
        written = "a plain JSON number >= 0 (not a string)" if self.field == "usage" else with_article(self.expected)
        return {"code": _MEMBER_CODES.get(self.field, FIELD_INVALID), "field": name, "path": f"$.{name}",
                "original": self.original, "expected": self.expected, "received": self.received,
                "howToFix": f"Write `{name}` as {written} in the runner's output object, e.g. {_EXAMPLES[self.field]} "
                            "(`replay schema runner-output`), or leave it out."}


_MEMBER_CODES = {"usage": USAGE_NOT_COUNTED}  # a MemberNote's code, by fact (else FIELD_INVALID)


def _members(name: str, value: dict[str, Any]) -> tuple[dict[str, Any], list[FactNote]]:
    """``value`` (the object-valued fact ``name``) without its members that are not of their type (``MEMBERS``), and a
    note for each of those (a null one is taken for absent, as a null run fact is: left out without a note)."""
    bad = [member for member, (_, ok) in MEMBERS[name].items() if value.get(member) is not None and not ok(value[member])]
    notes: list[FactNote] = [MemberNote(name, value[member], _received(value[member]), member=member) for member in bad]
    left_out = {m for m in MEMBERS[name] if m in value and value[m] is None} | set(bad)
    if not left_out:
        return value, notes
    return {k: v for k, v in value.items() if k not in left_out}, notes


def with_article(kind: str) -> str:
    """``kind`` after its article: ``an object``, ``a string``."""
    return ("an " if kind[0] in "aeiou" else "a ") + kind


def _received(value: Any) -> str:
    """What came, as a diagnostic's ``received`` says it: its JSON type (for an array, its first item that is no string,
    if any: an array of strings is wrong for a fact that is no array)."""
    if isinstance(value, list):
        k = next((k for k, item in enumerate(value) if not isinstance(item, str)), None)
        if k is not None:
            return f"array (item [{k}] is {json_type(value[k])})"
    return json_type(value)


def _fact(name: str, value: Any) -> FactNote | None:
    """None when ``value`` has the contract's type, else what becomes of it."""
    if name == "error":
        if isinstance(value, dict):
            return None
        if isinstance(value, str):
            return FactNote(name, value, "string", {"message": value}, RUNNER_ERROR_RULE)
    elif name == "sources":
        if isinstance(value, list) and all(isinstance(s, str) for s in value):
            return None
        if isinstance(value, str):
            return FactNote(name, value, "string", [value], RUNNER_SOURCES_RULE)
    elif name == "usage":
        if isinstance(value, dict):
            return None
    elif isinstance(value, str):
        return None
    return FactNote(name, value, _received(value))


@dataclass
class RunFacts:
    """The run-level facts an output object carries (``facts``, for the run record), and a note for each one it gave
    in another type than the contract's (``notes``, for the heal log): none is dropped without a word."""

    facts: dict[str, Any] = field(default_factory=dict)
    notes: list[FactNote] = field(default_factory=list)


def run_facts(output: dict[str, Any] | None) -> RunFacts:
    """The run facts of an output object: those of the contract's type as they are, those with a normal form (a bare
    error message, one source name) in it, the others left out with a note; null is taken for absent. A status-"ok" output's `response` that is
    no string is not noted here: ``check_output`` fails the run for it (E_RUNNER_RESPONSE_MISSING). A status-"error"
    output without an ``error`` (the contract requires one then) is a note too: the run record cannot say why it failed."""
    result = RunFacts()
    for name in _TYPES:
        if not output or output.get(name) is None:  # absent, or null: nothing said, nothing to lose
            continue
        note = _fact(name, output[name])
        if note is None and name in MEMBERS:  # (an object: its members of another type left out, each with a note)
            kept, left_out = _members(name, output[name])
            result.notes.extend(left_out)
            if kept or not left_out:  # an object of nothing but members of another type says nothing
                result.facts[name] = kept
            continue
        if note is None:
            result.facts[name] = output[name]
            continue
        if note.kept:
            result.facts[name] = note.value
        if note.kept or not (name == "response" and output.get("status") == "ok"):
            result.notes.append(note)
    # the contract requires an error then: none given, or one whose every member was left out (``{"code": 5}``: the
    # run record can no more say why it failed; an error of another type has its own note)
    if output and output.get("status") == "error" and "error" not in result.facts and not any(
            note.field == "error" and not isinstance(note, MemberNote) for note in result.notes):
        result.notes.append(FactNote("error", None, MISSING))
    return result

"""Report model: one summary per run (status, counts, tool calls, errors, usage, repairs, timeline) and their aggregate.

A summary is built incrementally by ``RunTally`` (the ``summarize`` stage feeds it one event at a
time, so a run's events are never all held in memory: only its tool calls, as compact columns
(``toolcalls.CallPairing``: some 300 bytes a call, the summary lists them all), and a capped list of timeline marks). ``summarize_run`` does the same over a list. ``aggregate`` adds summaries
up, with the repairs of no run in the report (``unattributedRepairs``: heal records ``summarize`` found naming
no run there, such as a run heal dropped whole); ``report_document`` is the JSON form ``{"runs": [...], "aggregate": {...}}``. Key order is fixed
by construction and every ``by*`` map is sorted by key, so the same input gives the same bytes.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import math
import operator
import sys
from collections import Counter
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.errors import how_to_fix
from replay.pipeline.io.journals import is_url
from replay.pipeline.model.events import (
    EPOCH,
    ERROR,
    RUN_COMPLETED,
    RUN_FAILED,
    ends_unknown,
    format_timestamp,
    leap_rank,
    parse_timestamp,
    same_shape_utc,
    written_timestamp,
)
from replay.pipeline.model.healing import BUILTIN_ALIASES, healed_artifact, resolve_alias
from replay.pipeline.model.outcome import OUTCOME_FIELDS, failure_words, went_wrong_each
from replay.pipeline.model.records import RECORD_KEY, SUMMARY_RECORD
from replay.pipeline.model.repairs import counts_as_repair
from replay.pipeline.model.runs import names_run
from replay.pipeline.model.toolcalls import (
    CALL_FIELDS,
    CALL_STATUS,
    CALLED,
    COMPLETED,
    FAILED,
    TOOL_UNANSWERED,
    UNANSWERED_MESSAGE,
    CallPairing,
    PackedColumn,
    call_id,
    result_failed,
    tool_name,
)
from replay.pipeline.model.validation import USAGE_NOT_COUNTED, is_no_event

_COUNT = operator.itemgetter(1)
STAMPS_HELD = 4096  # timestamps a run holds before they are looked at (without a timeline)
_DICT, _INT, _NUMBERS = {dict}, {int}, {int, float}
MAX_MARKS = 2000  # timeline ticks kept per run, spread over the run (failures are kept on top of these)
MAX_MESSAGE = 2000  # characters of an error message kept in a summary
RUNS_NAMED = 5  # failed (or unknown) runs a --fail-on-error (--fail-on-unknown) warning names; the rest are counted
FIRST_PROBLEMS = 5  # input problems a report lists one by one (code, source, line, message); the rest are counted
PROBLEM_FIELDS = ("code", "source", "line", "message")
STATUSES = ("ok", "error", "unknown")  # a run's status in a report (``RunTally.status``), in the order reports count them

TOOL_TYPES = CALLED | COMPLETED | FAILED
_READ_TYPES = TOOL_TYPES | {RUN_FAILED, ERROR}  # the events whose payload a summary reads (besides its usage)
# Heal's built-in type aliases (``alias``: tool_start, tool_end, llm_message, ...), read as the types they stand for:
# a journal not healed yet is counted as heal would rename it, its stream unchanged. The hot path pays nothing for them:
# the events whose payload is read are found by one set (their aliases in it too), and a run's counts by type are
# folded into the canonical types once, when its summary is made (``RunTally.fold_aliases``).
CANONICAL_TYPES = {old: resolve_alias(BUILTIN_ALIASES, old)[0] for old in BUILTIN_ALIASES}
_READ_KINDS = _READ_TYPES | {old for old, new in CANONICAL_TYPES.items() if new in _READ_TYPES}
_COMPLETED_KINDS = COMPLETED | {old for old, new in CANONICAL_TYPES.items() if new in COMPLETED}
# The prompt cache's input tokens a usage object counts, by the names it gives them: read from the cache, and written to
# it. Anthropic counts them beside ``input_tokens``, which leaves them out (``CACHE_TOKENS``); Codex's
# ``cached_input_tokens`` is a part of its ``input_tokens``, as OpenAI counts cached tokens (``CACHED_IN_INPUT``: a part of
# no input count when the object gives none, and then counted as Anthropic's are). The cache's counts beside a
# ``prompt_tokens`` (LiteLLM's, as OpenHands writes them) are a part of it too, and are not read.
CACHE_TOKENS = {
    "cacheReadTokens": ("cache_read_input_tokens", "cacheReadInputTokens"),
    "cacheCreationTokens": ("cache_creation_input_tokens", "cacheCreationInputTokens"),
}
CACHED_IN_INPUT = {"cachedInputTokens": ("cached_input_tokens",)}  # read from the cache, a part of the input count
_PROMPT_NAMES = frozenset({"promptTokens", "prompt_tokens"})  # an input count that counts the cache's tokens in
# What ``usage_of`` reads of a usage object: its keys, each read under the first of its names the object gives; the sums
# of these over usage objects are what ``shown_usage`` makes a run's usage of (the one rule of what tokens went in).
USAGE_KEYS = {
    "inputTokens": ("inputTokens", "input_tokens", "promptTokens", "prompt_tokens"),
    "outputTokens": ("outputTokens", "output_tokens", "completionTokens", "completion_tokens"),
    "costUsd": ("costUsd", "cost_usd"),
    **CACHE_TOKENS,
    **CACHED_IN_INPUT,
}
ERROR_FIELDS = ("error", "message", "reason", "code")  # the payload fields error_of reads
# Every field of an event a summary reads (records are read whole): ``parse`` need decode no other (``fields``).
SUMMARY_FIELDS = ("seq", "timestamp", "type", "runId", "synthetic", "payload.usage", "payload.status",
                  *(f"payload.{key}" for key in (*CALL_FIELDS, *ERROR_FIELDS)), *OUTCOME_FIELDS)
# The types of the events whose payload a summary reads whole (``parse``'s ``whole_types``): a call, whose whole payload
# tells a new call of an id used again from that call written again (``toolcalls.call_print``, ``OpenCalls.written_again``),
# under its aliases too (read as a tool_called: ``CANONICAL_TYPES``).
SUMMARY_WHOLE_TYPES = tuple(sorted(CALLED | {old for old, new in CANONICAL_TYPES.items() if new in CALLED}))
HEAL_LOG_SUFFIX = ".heal-log.json"
_ARTIFACT_SUFFIXES = (".healed.json", ".artifact.json", ".json")


def values_of(events: list[dict[str, Any]], key: str) -> list[Any]:
    """``event.get(key)`` of each of ``events`` (dicts), by a C-level map: ``dict.get`` beside the key repeated (a
    third of the work of ``operator.methodcaller``, which looks the method up on every event)."""
    return list(map(dict.get, events, itertools.repeat(key)))


# numbers ---------------------------------------------------------------------------------------
def number(value: float) -> int | float:
    """A duration as JSON writes it (a count or cost: ``count_shown``): ints stay ints, floats keep 3 decimals (a sum
    ``_exact_sum`` made, which no double holds, as it is). A whole float is the int it writes (``1e40``: 10**40)."""
    if isinstance(value, int):
        return value
    if value.__class__ is exactjson.ExactNumber:
        return value
    if value.is_integer():  # (most durations: whole milliseconds)
        return written_int(value)
    rounded = round(value, 3)
    return int(rounded) if rounded.is_integer() else rounded


def numbers(values: Iterable[float]) -> list[int | float | None]:
    """``number`` of each of ``values`` (floats; NaN: unknown, None) in one comprehension (most are whole)."""
    return [int(value) if value.is_integer() else (None if value != value else number(value)) for value in values]


def maybe_number(value: float | None) -> int | float | None:
    """``number``, None (unknown) kept."""
    return None if value is None else number(value)


_EXACT_WHOLE = 2 ** 53  # below it a double holds every whole number, and a sum of doubles the whole part exactly


def exact_plus(total: int | float, value: int | float) -> int | float:
    """A sum of counts or amounts: exact while every one is an int, and where a double would round it (a sum of
    2**53 or more with a float in it, or floats adding up past the largest double) the numbers as written added up
    exactly (``_exact_sum``)."""
    try:
        result = total + value
    except OverflowError:
        return _exact_sum((total, value))
    if result.__class__ is float and not -_EXACT_WHOLE < result < _EXACT_WHOLE:
        return _exact_sum((total, value))
    return result


def _sum(values: list[int | float], start: int | float = 0) -> int | float:
    """``start`` plus each of ``values`` in turn, as ``exact_plus`` adds them: by C-level adds while the sum is an int or a
    float a double holds the whole part of (as it is but for sums of 2**53 or more), else ``_exact_sum`` of them all."""
    try:
        total = functools.reduce(operator.add, values, start)
    except OverflowError:
        total = math.inf
    if total.__class__ is float and not -_EXACT_WHOLE < total < _EXACT_WHOLE:
        return _exact_sum((start, *values))
    return total


def _exact_sum(values: Iterable[int | float]) -> int | float:
    """``values`` added up as they are written (a float as its shortest text, ``1e40`` as 10**40; an ``ExactNumber``
    as its text), not as their doubles add up: an int when the sum is a whole number, a float when a double holds it
    as written, else an ``ExactNumber`` of its digits."""
    from decimal import Decimal, localcontext  # here: only a sum a double would round gets this far

    with localcontext() as context:
        context.prec = COUNT_DIGITS + 40  # (every digit a count may have, and a fraction's beside it: the sum is exact)
        total = sum((Decimal(n) if n.__class__ is int else Decimal(getattr(n, "text", None) or repr(float(n)))
                     for n in values), Decimal(0))
        if total == total.to_integral_value():
            return int(total)
        return exactjson.exact_float(f"{total:f}")


def written_int(value: float) -> int:
    """The whole number a finite float writes (its shortest text, an ``ExactNumber``'s own: ``1e40`` is 10**40), not
    its double's binary value (10000000000000000303786028427003666890752); of a fraction, its whole part."""
    if -_EXACT_WHOLE < value < _EXACT_WHOLE:
        return int(value)
    from decimal import Decimal  # here: only a float of 2**53 or more gets this far

    return int(Decimal(getattr(value, "text", None) or repr(value)))


SHOWN_DIGITS = 15  # the significant digits a fraction of a count or cost is shown to: every digit a double holds for sure


def count_shown(value: int | float) -> int | float:
    """A token count or cost (or a sum of them) as ``report`` (every format) and ``export --otlp`` show it: as written,
    without the binary noise of a float sum (0.1 + 0.2 is 0.3, not 0.30000000000000004): an int as it is (however
    large); a sum no double holds (``_exact_sum``) as it is; a whole float as the int it writes; a fraction to
    ``SHOWN_DIGITS`` significant digits (``123.456789`` and ``4e-11`` as written; durations keep 3 decimals: ``number``)."""
    if isinstance(value, int) or value.__class__ is exactjson.ExactNumber:
        return value
    if value.is_integer():
        return written_int(value)
    shown = float(f"{value:.{SHOWN_DIGITS}g}")
    return int(shown) if shown.is_integer() else shown


def maybe_count(value: int | float | None) -> int | float | None:
    """``count_shown``, None (not given) kept."""
    return None if value is None else count_shown(value)


class UsageSum:
    """Sums of token counts and costs, one for each key (``inputTokens``, ``costUsd``, ...), by the one rule
    ``report`` and ``export --otlp`` add usage by: ``add`` one number, ``add_column`` a column of them (in stream
    order, by C-level adds), ``settled`` the sums. A sum is exact while every number added is an int, and where a
    double would round it (``exact_plus``, ``_sum``); what a double's rounding left out of a float sum is added up
    apart and added back by ``settled``: a sum of fractions off only by its numbers' doubles, which ``count_shown``
    drops, not by one rounding for each number added (0.1 added 1000 times is 100, not 99.9999999999986). ``start``:
    0, each sum begins at 0 (a lone ``ExactNumber`` fraction, ``3.14159265358979323846``, counts as its double: a run's
    events' usage); None, at its first number as it is (``1e400`` kept as read: export's; an exact sum as it is)."""

    __slots__ = ("_lost", "_start", "_sums")

    def __init__(self, start: int | None = None) -> None:
        self._start = start
        self._sums: dict[str, int | float] = {}
        self._lost: dict[str, float] = {}  # what the roundings of each float sum left out

    def add(self, key: str, value: int | float) -> None:
        """``value`` added to the sum of ``key`` (``exact_plus``), what a double's rounding left out noted (Knuth's
        two-sum: exact)."""
        sums = self._sums
        total = sums.get(key, self._start)
        if total is None:
            sums[key] = value
            return
        result = sums[key] = exact_plus(total, value)
        if result.__class__ is float and (total.__class__ is not int or value.__class__ is not int):
            a, b = float(total), float(value)
            back = result - a
            lost = self._lost
            lost[key] = lost.get(key, 0.0) + ((a - (result - back)) + (b - back))

    def add_column(self, key: str, values: list[int | float]) -> None:
        """``values`` (not none) added to the sum of ``key`` in turn (``_sum``: by C-level adds), what the rounding
        left out of a float sum noted (the rest, exactly summed)."""
        sums = self._sums
        total = sums.get(key, self._start)
        if total is None:
            total, values = values[0], values[1:]
        result = sums[key] = _sum(values, total)
        if result.__class__ is float:
            lost = self._lost
            lost[key] = lost.get(key, 0.0) + math.fsum([total, *values, -result])

    def settled(self) -> dict[str, Any]:
        """Each sum (in the order their keys came), with what its roundings left out added back."""
        held = self._lost.get
        return {key: total + off if (off := held(key)) and total.__class__ is float else total
                for key, total in self._sums.items()}


def _is_number(value: Any) -> bool:
    """An int (of any size) or a finite float; not a bool."""
    cls = value.__class__
    return cls is int or (cls is float and math.isfinite(value)) or (
        cls is not bool and isinstance(value, int | float) and math.isfinite(float(value)))


def _ms(later: datetime, earlier: datetime) -> float:
    return (later - earlier).total_seconds() * 1000.0


instant = parse_timestamp  # (kept as the model's name for it)


def is_failure(kind: str, payload: Any, synthetic: Any, event: dict[str, Any]) -> bool:
    """Does ``event``, of type ``kind``, report a failure: a failed tool (``result_failed``: a tool_failed, or a
    tool_completed with a non-zero exit code or a failing verdict, as ``replay walk`` shows it), an error the agent
    recorded (``ERROR``), or a failed run (not the run_failed heal ends a run with when nothing told how it ended,
    ``ends_unknown``)?"""
    return kind in FAILED or kind == ERROR or (kind == RUN_FAILED and not ends_unknown(kind, payload, synthetic)) or (
        kind in COMPLETED and result_failed(kind, event))


def own_error(facts: dict[str, Any]) -> dict[str, Any] | None:
    """The run's own error, the first ``report`` lists: its run record's ``error`` (an object, or a bare message), or
    that it reported status ``error``; None when the record says neither."""
    err = facts.get("error")
    if not (isinstance(err, dict) or (isinstance(err, str) and err) or facts.get("status") == "error"):
        return None
    code, message = error_of({"error": err})
    return {"kind": "run", "code": code, "message": message or "run reported status error", "seq": None}


def failure_entry(kind: str, payload: dict[str, Any], seq: Any, message: str | None = None) -> dict[str, Any]:
    """A failure event's entry in the errors ``report`` lists: its kind, code and message (``message`` when its payload
    names none, else its kind in words: ``run failed``), seq."""
    code, said = error_of(payload)
    return {"kind": kind, "code": code, "message": said or message or kind.replace("_", " "), "seq": seq}


def said_again(entry: dict[str, Any], own: dict[str, Any] | None) -> bool:
    """Is error ``entry`` a ``run_failed`` that says the run's own error (``own_error``) again, the same code and
    message: one error, listed once (as the run record's)."""
    return own is not None and entry["kind"] == RUN_FAILED and (entry["code"], entry["message"]) == (own["code"], own["message"])


def error_of(payload: Any) -> tuple[str | None, str | None]:
    """(code, message) an event payload reports: ``error`` as an object (its ``code`` as ``_code`` shows it) or a
    string, else ``message``/``reason``."""
    if not isinstance(payload, dict):
        return None, None
    code = message = None
    err = payload.get("error")
    if isinstance(err, dict):
        code = _code(err.get("code"))
        message = err.get("message") if isinstance(err.get("message"), str) else None
    elif isinstance(err, str):
        message = err
    if message is None:
        for key in ("message", "reason"):
            if isinstance(payload.get(key), str):
                message = payload[key]
                break
    if code is None:
        code = _code(payload.get("code"))
    return code, (message[:MAX_MESSAGE] if message is not None else None)


def _code(value: Any) -> str | None:
    """An error code as a report (and an export) shows it: a string as it is, anything else as its JSON (an HTTP status
    or an errno, ``500``; a list); None for none (null, or an empty string)."""
    if value is None or value == "":
        return None
    return as_text(value)


def as_text(value: Any) -> str:
    """A value as text: a string as it is, anything else (a number, a list, an object) as its JSON, not as Python
    writes it (``['list']``)."""
    return value if isinstance(value, str) else exactjson.dumps(value, default=str).decode()


def as_run_id(value: Any) -> str | None:
    """A runId as a summary names its run: a non-empty string, else None."""
    return value if isinstance(value, str) and value else None


NO_COUNT = object()  # (``count_of``) a value that is no count: a string, a negative number, true
UNHELD = object()  # (``count_of``) a number no count holds: a fraction beyond a double, one of thousands of digits


def count_of(held: Any) -> Any:
    """The token count or cost a usage field holds (``held``, not None), as ``report`` and ``export --otlp`` both read
    it: a number >= 0 as written, a fraction too (``1.5`` tokens are 1.5: counted exactly, not cut to 1); one written
    beyond a double (``1e400``) the whole number it writes. ``NO_COUNT`` when it is no number >= 0, ``UNHELD`` when it
    is a number no count holds (``usage_of``)."""
    if held.__class__ is exactjson.ExactNumber and not math.isfinite(held) and held > 0:
        whole = whole_written(held)
        return UNHELD if whole is None else whole
    if held.__class__ is int:
        return held if 0 <= held < _COUNT_LIMIT else UNHELD if held > 0 else NO_COUNT
    return held if _is_number(held) and held >= 0 else NO_COUNT


def usage_of(value: Any, unheld: list[str] | None = None, skipped: list[str] | None = None,
             as_read: bool = False) -> dict[str, float] | None:
    """The counts of ``USAGE_KEYS`` (those it gives) a usage object (camelCase or snake_case) gives, or None: its input
    count as written, the cache's counts beside it that it leaves out (``cacheReadTokens``, ``cacheCreationTokens``:
    Anthropic's) and the cache's count that is a part of it (``cachedInputTokens``: Codex's ``cached_input_tokens``; with
    no input count given, it is all that is known to have gone in: a ``cacheReadTokens``); none beside a
    ``prompt_tokens``, which counts them in. ``shown_usage`` makes these (or their sums) a run's usage. ``as_read``: a
    number written beyond a double (``1e400``) is kept as read (its text), not made the whole number it writes. A count or
    cost is a number >= 0 (as validate holds it); any other value (a string ``"45"``, a negative number, ``true``) is
    not one: that field is left out, named in ``skipped`` (``'inputTokens "45"'``) when no other name of its key gives
    a count, and the rest of the object still counts (null is a field not given).

    A number written beyond a double (``1e400``, read as infinity) counts as the whole number it writes (10**400), as
    one written out in full does. One that is no such whole number (a fraction with hundreds of digits), or a whole
    number of ``COUNT_DIGITS`` digits or more (its sums over runs could not be printed), holds no count: the usage
    object counts for nothing (None), and the field is named in ``unheld`` (``"inputTokens 1e5000"``), for a notice;
    so is a usage that is no object (``"1200 tokens"``, a list; null is none given), as ``usage "1200 tokens"``."""
    if not isinstance(value, dict):
        if value is not None and unheld is not None:  # (looked at only here: the usual usage is an object)
            unheld.append(_field_text(_NO_OBJECT, value))
        return None
    found: dict[str, float] = {}
    via = None  # the name the input count was read under
    for key, names in USAGE_KEYS.items():
        if via in _PROMPT_NAMES and key in CACHE_TOKENS:
            continue  # (counted in that input count already)
        bad = None  # the names of the key that held no count, while no other name gives one
        for name in names:
            held = value.get(name)
            if held is None:
                continue
            number_ = count_of(held)
            if number_ is UNHELD:
                if unheld is not None:
                    unheld.append(_field_text(name, held))
                return None
            if number_ is not NO_COUNT:
                found[key] = held if as_read and held.__class__ is not int and not math.isfinite(held) else number_
                if key == "inputTokens":
                    via = name
                break
            bad = [*(bad or ()), name]
        else:
            if bad and skipped is not None:
                skipped += [_field_text(name, value[name]) for name in bad]
    if via is None and "cachedInputTokens" in found:  # (a part of no input count given: what is known to have gone in)
        read = _plus_given(found.get("cacheReadTokens"), found.pop("cachedInputTokens"))
        assert read is not None  # (a count was given: the one popped)
        found["cacheReadTokens"] = read
    return found or None


def shown_usage(counts: dict[str, Any]) -> dict[str, Any]:
    """The one rule by which ``report`` (every format) and ``export --otlp`` show usage, from the counts ``usage_of``
    reads (of one usage object, or their sums): ``inputTokens``, every input token the model read (the input count
    and the cache's counts it leaves out, those given added up exactly; None when none is, as the GenAI conventions'
    ``gen_ai.usage.input_tokens``, which includes the cache's); ``cacheReadTokens`` and ``cacheCreationTokens``, the
    parts of them read from the prompt cache and written to it (only when some usage object gave them); and
    ``outputTokens`` and ``costUsd`` as given (None when not)."""
    shown = {"inputTokens": _plus_given(_plus_given(counts.get("inputTokens"), counts.get("cacheReadTokens")),
                                        counts.get("cacheCreationTokens")),
             "outputTokens": counts.get("outputTokens"), "costUsd": counts.get("costUsd")}
    read = _plus_given(counts.get("cacheReadTokens"), counts.get("cachedInputTokens"))
    if read is not None:
        shown["cacheReadTokens"] = read
    if counts.get("cacheCreationTokens") is not None:
        shown["cacheCreationTokens"] = counts["cacheCreationTokens"]
    return shown


def usage_notice(fields: list[str], only_fields: bool, where: dict[str, Any], run_id: str | None,
                 stage: str) -> dict[str, Any]:
    """The notice (``E_USAGE_NOT_COUNTED``, a warning) of a usage object ``usage_of`` left a value of out, at ``where``
    (a record's source, line, offset): ``fields`` as it names them (``unheld``, the whole object left out, else
    ``skipped``, only those fields: ``only_fields``; a usage that is no object, ``usage "1200 tokens"``, left out
    whole). ``report`` and ``export --otlp`` count usage by ``usage_of`` and say what it leaves out by this notice."""
    line = f"line {where['line']}" if "line" in where else "a record"
    named = ", ".join(fields)
    advice = how_to_fix(USAGE_NOT_COUNTED)
    if not only_fields and fields[0].startswith(f"{_NO_OBJECT} "):  # (the usage itself: ``usage_of``)
        said = f"{named} is no usage object (an object of counts); left out of the run's usage"
        advice = 'Write usage as an object of counts (e.g. {"inputTokens": 1200, "outputTokens": 80, "costUsd": 0.0034}).'
    elif only_fields:
        said = (f"usage {named} {'is not a count' if len(fields) == 1 else 'are not counts'} (a number >= 0); left "
                "out of the run's usage, the rest of this usage object counted")
    else:
        said = (f"usage {named} is a number no count holds (not a whole number, or one of thousands of digits); "
                "this usage object is left out of the run's usage")
    return {"code": USAGE_NOT_COUNTED, "action": "reported", **where, "runId": run_id, "stage": stage,
            "received": named, "message": f"{line}: {said}", "howToFix": advice}


_INPUT_GROUP = ("inputTokens", *CACHE_TOKENS, *CACHED_IN_INPUT)  # an input count and the cache's counts: taken together


def combined_usage(declared: dict[str, Any] | None, summed: dict[str, Any] | None,
                   together: tuple[str, ...] = _INPUT_GROUP) -> dict[str, Any] | None:
    """A run's usage from what its run record says (``declared``) and what its events add up to (``summed``): the run
    record's value of each count it gives, the events' of the others (a mini-swe-agent trajectory records the run's
    cost, its messages the tokens). The counts of ``together`` (the input count and the cache's counts beside it, which
    say together how many tokens went in) all come from the run record when it gives one of them. ``export --otlp``
    combines the run's totals by this rule too. None when neither gives any."""
    if declared is None or summed is None:
        return declared if summed is None else summed
    if not together or set(together).isdisjoint(declared):
        return {**summed, **declared}
    return {**{k: v for k, v in summed.items() if k not in together}, **declared}


_NO_OBJECT = "usage"  # (``usage_of``) the name a usage that is no object is noted under: no usage field is named so


def _field_text(name: str, value: Any) -> str:
    """A usage field as a notice names it: its name and its value as written (JSON), cut short past 40 characters."""
    text = exactjson.dumps(value, default=str).decode()
    return f"{name} {text if len(text) <= 40 else text[:24] + '...' + text[-12:]}"


# The most digits a count may have: Python prints no int of more than ``sys.get_int_max_str_digits`` digits (4300), and
# the sums of counts (a run's, all runs') must still print; a sum of up to 10**19 counts has at most 20 digits more.
COUNT_DIGITS = (sys.get_int_max_str_digits() or 4300) - 20
_COUNT_LIMIT = 10 ** COUNT_DIGITS


def usage_columns(objects: list[Any]) -> dict[str, list[Any]] | None:
    """What ``usage_of`` reads from each of ``objects``, a key at a time (each column in the objects' order), when each
    key is read the usual way in all of them: under its first name, a count (an int, or a finite float, >= 0) in
    every object, or under none of its names in any; and some key is read. Else None: read them one by one."""
    if set(map(type, objects)) != _DICT:
        return None
    columns = {}
    given = set().union(*objects)  # (the names some object gives: a key of none of them is read in none)
    for key, names in USAGE_KEYS.items():
        if given.isdisjoint(names):
            continue
        column = values_of(objects, names[0])
        if _all_counts(column):
            columns[key] = column
        elif column.count(None) != len(column) or any(values_of(objects, name).count(None) != len(column)
                                                      for name in names[1:]):
            return None
    if "cachedInputTokens" in columns and "inputTokens" not in columns:  # (then a cacheReadTokens: ``usage_of``)
        return None
    return columns or None


def _all_counts(values: list[Any]) -> bool:
    """Is each of ``values`` (some) a count or cost as ``usage_of`` reads one: an int or a finite float, >= 0, of fewer
    than ``COUNT_DIGITS`` digits?"""
    kinds = set(map(type, values))
    if kinds != _INT and (not kinds <= _NUMBERS or not all(map(math.isfinite, values))):
        return False
    return min(values) >= 0 and max(values) < _COUNT_LIMIT  # type: ignore[no-any-return]


def whole_written(number_: exactjson.ExactNumber) -> int | None:
    """The whole number a number beyond a double writes (``1e400``: 10**400), if it is one of fewer than
    ``COUNT_DIGITS`` digits; else None."""
    from decimal import Decimal  # here: only such a number gets this far

    value = Decimal(number_.text)
    if value != value.to_integral_value() or value.adjusted() >= COUNT_DIGITS:
        return None
    return int(value)


def count_repairs(document: Any) -> tuple[int, dict[str, int]] | None:
    """(total, byRule) of a heal record or a heal-log document, or None when it shows no repairs."""
    if not isinstance(document, dict):
        return None
    summary: dict[str, Any] = document["summary"] if isinstance(document.get("summary"), dict) else document
    by_rule = summary.get("byRule")
    counts: dict[str, int]
    if isinstance(by_rule, dict):
        counts = {str(k): int(v) for k, v in by_rule.items() if _is_number(v) and v > 0}
    elif isinstance(document.get("repairs"), list):
        tally: Counter[str] = Counter()
        for entry in document["repairs"]:
            if isinstance(entry, dict):
                tally[str(entry.get("rule"))] += counts_as_repair(entry)
        counts = {rule: n for rule, n in tally.items() if n}
    else:
        counts = {}
    given = summary.get("total", summary.get("repairs"))
    total = int(given) if _is_number(given) and given >= 0 else sum(counts.values())  # type: ignore[operator,arg-type]
    if not total and not counts:
        return None
    return total, counts


def heal_log_path(source: str | None, artifact_id: Any = None) -> Path | str | None:
    """The heal log capture writes beside an artifact (``<id>.healed.json`` -> ``<id>.heal-log.json``), if any
    (a URL beside an artifact read from a URL)."""
    if not source or source.startswith("<") or not source.endswith(".json"):
        return None
    if is_url(source):
        return _heal_log_url(source, artifact_id)
    path = Path(source)
    candidates = []
    for suffix in _ARTIFACT_SUFFIXES:
        if path.name.endswith(suffix):
            candidates.append(path.with_name(path.name[: -len(suffix)] + HEAL_LOG_SUFFIX))
            break
    if isinstance(artifact_id, str) and artifact_id and "/" not in artifact_id and artifact_id not in (".", ".."):
        candidates.append(path.with_name(artifact_id + HEAL_LOG_SUFFIX))
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    return None


def _heal_log_url(source: str, artifact_id: Any) -> str | None:
    from replay.pipeline.io import remote

    folder, name = remote.parent(source), remote.name(source)
    candidates = []
    for suffix in _ARTIFACT_SUFFIXES:
        if name.endswith(suffix):
            candidates.append(remote.join(folder, name[: -len(suffix)] + HEAL_LOG_SUFFIX))
            break
    if isinstance(artifact_id, str) and artifact_id and "/" not in artifact_id and artifact_id not in (".", ".."):
        candidates.append(remote.join(folder, artifact_id + HEAL_LOG_SUFFIX))
    return next((c for c in candidates if remote.is_file(c)), None)


def read_heal_log(path: Path | str) -> dict[str, Any]:
    """A heal-log document; raises ValueError when it is not a JSON object."""
    if isinstance(path, str):
        from replay.pipeline.io.remote import read_bytes

        document = exactjson.loads(read_bytes(path))
    else:
        document = exactjson.loads(path.read_bytes())
    if not isinstance(document, dict):
        raise ValueError("a heal log is a JSON object")
    return document


# one run ---------------------------------------------------------------------------------------
class EventColumns:
    """What ``RunTally.add_events`` reads of every event of a batch of plain events, a column each, read once for the
    batch (the pieces of it of each run take slices): types (``types``, when read already), timestamps, payloads, the
    outcomes of its tool results (``went_wrong``, by their place in the batch), read at once (``went_wrong_each``),
    and its usage objects: where they are, and their counts a key at a time when all are the usual ones
    (``usage_columns`` of them all; None: each run's piece reads its own, as ``add_events`` does alone)."""

    __slots__ = ("outcomes", "payloads", "stamps", "types", "usage", "usage_at")

    def __init__(self, events: list[dict[str, Any]], types: list[str] | None = None) -> None:
        if types is None:
            types = values_of(events, "type")
        self.types: list[str] = types
        self.stamps = values_of(events, "timestamp")
        self.payloads = values_of(events, "payload")
        results = list(itertools.compress(range(len(types)), map(_COMPLETED_KINDS.__contains__, types)))
        self.outcomes: dict[int, bool] = dict(zip(results, went_wrong_each([events[i] for i in results]), strict=True)) \
            if results else {}
        payloads = self.payloads
        if set(map(type, payloads)) == _DICT:
            self.usage_at = list(itertools.compress(range(len(payloads)), map(dict.__contains__, payloads,
                                                                              itertools.repeat("usage"))))
        else:
            self.usage_at = [i for i, payload in enumerate(payloads) if type(payload) is dict and "usage" in payload]
        self.usage = usage_columns([payloads[i]["usage"] for i in self.usage_at]) if self.usage_at else None


def _no_counts() -> Counter[str]:
    """An empty Counter, made without ``Counter.__init__`` (which only counts what it is given: nothing here, yet it
    costs a run's tally a few Python-level calls each time)."""
    return Counter.__new__(Counter)


class RunTally:
    """Everything a run summary needs, gathered one event at a time."""

    def __init__(self, record: dict[str, Any] | None = None, source: str | None = None,
                 run_id: str | None = None, timeline: bool = True) -> None:
        self.record = record
        self.timeline = timeline  # False: no marks gathered, no ``timeline`` in the summary (only html draws it)
        self.source = source
        self.run_id = as_run_id(record.get("runId") if record else run_id)
        self.count = 0
        self.by_type: Counter[str] = _no_counts()
        self.first: datetime | None = None  # earliest timestamp
        self.last: datetime | None = None  # latest timestamp
        self.first_stamp: Any = None  # their text (a leap second, which counts as 23:59:59.999999, is told by it)
        self.last_stamp: Any = None
        self.stamps: list[Any] = []  # timestamps not yet looked at (without a timeline): see _fold_stamps
        self.calls = CallPairing(stamps=False)  # the run's tool calls, paired as their events come (compact columns)
        self.call_index = PackedColumn()  # with a timeline: the place in the run of each call's first event
        self.marks: list[tuple[int, str, Any, datetime | None, bool]] = []
        self.plain_seen = self.plain_marks = self.failed_marks = 0
        self.stride = 1  # every stride-th ordinary event gets a tick
        self.errors: list[dict[str, Any] | None] = []  # (None: an error listed again later, ``_read_payload``)
        # the results written before their call (``CallPairing.early``), by call id: the place in the run of each
        # (with a timeline), and in ``errors`` of each that failed, listed where its call comes (it names their tool)
        self.early_at: dict[str, int] = {}
        self.early_failures: dict[str, int] = {}
        self.failed_event = False
        self.event_usage = UsageSum(0)  # the sums of the events' usage objects: token counts stay ints, costs floats
        self.usage_seen = 0  # the events' usage objects counted
        # usage objects that held a number no count holds, or a value that is no count (``usage_of``): (the event's
        # index in the run, or None for the run record; the fields; True: only those fields were left out, False: the
        # whole object), for the summarize stage to report as notices
        self.unheld: list[tuple[int | None, list[str], bool]] = []
        if record is not None:
            self._noted_usage(None, record.get("usage"))
        self.repairs_total = 0
        self.repairs_by_rule: Counter[str] = _no_counts()
        self.healed_in_stream = False

    # feeding ---------------------------------------------------------------------------------
    def add_event(self, event: dict[str, Any]) -> None:
        """Count ``event`` into the run: an event, with a type (a record that is no event, ``validation.is_no_event``,
        is left out before: ``summarize`` reports it)."""
        index = self.count
        self.count += 1
        kind = event["type"]
        self.by_type[kind] += 1  # (an alias heal renames is counted as the type it stands for by ``fold_aliases``)
        kind = CANONICAL_TYPES.get(kind, kind)  # (and read as that type)
        if self.run_id is None and names_run(event.get("runId")):
            self.run_id = event["runId"]
        stamp = event.get("timestamp")
        moment = None
        if self.timeline:
            moment = instant(stamp) if stamp != EPOCH else None  # (heal's stand-in for no time: no moment)
            self._see_moment(moment, stamp)
        else:  # looked at a few thousand at a time (only the earliest and the latest matter)
            self.stamps.append(stamp)
            if len(self.stamps) >= STAMPS_HELD:
                self._fold_stamps()
        payload = event.get("payload")
        if type(payload) is not dict:
            payload = {}
        failure = self._read_payload(kind, payload, stamp, index, event) if kind in _READ_TYPES else False
        if "usage" in payload:
            self._add_usage(payload["usage"], index)
        if not self.timeline:
            return
        if failure:  # (``is_failure``, as _read_payload read it)
            if self.failed_marks < MAX_MARKS:
                self.failed_marks += 1
                self.marks.append((index, kind, event.get("seq"), moment, True))
        else:
            self._add_plain_mark((index, kind, event.get("seq"), moment, False))

    def add_events(self, events: list[dict[str, Any]], columns: EventColumns | None = None, at: int = 0) -> None:
        """``add_event`` for each of ``events`` (plain events, in stream order), a column at a time: what every
        event needs (its type counted, its timestamp held) by C-level maps; only tool events, failures and usage
        are looked at one by one. With a timeline, event by event (each one may become a mark). ``columns``: those of
        a batch ``events`` are of, from its ``at``-th on (read once for the batch), else read here."""
        if self.timeline:
            for event in events:
                self.add_event(event)
            return
        base, n = self.count, len(events)
        self.count += n
        if columns is None:
            columns, at = EventColumns(events), 0
        types, payloads, outcomes = columns.types[at:at + n], columns.payloads[at:at + n], columns.outcomes
        self.by_type.update(types)
        if self.run_id is None:
            self.run_id = next((r for r in values_of(events, "runId") if isinstance(r, str) and r), None)
        self.stamps += columns.stamps[at:at + n]
        if len(self.stamps) >= STAMPS_HELD:
            self._fold_stamps()
        for i in itertools.compress(range(n), map(_READ_KINDS.__contains__, types)):  # tool events and failures
            payload, event, kind = payloads[i], events[i], types[i]
            self._read_payload(CANONICAL_TYPES.get(kind, kind), payload if type(payload) is dict else {},
                               event.get("timestamp"), base + i, event, outcomes.get(at + i))
        lo, hi = bisect.bisect_left(columns.usage_at, at), bisect.bisect_left(columns.usage_at, at + n)
        if lo == hi:
            return
        if columns.usage is not None:  # (the batch's usage objects are the usual ones: this piece's, a column at a time)
            self._add_columns({key: values[lo:hi] for key, values in columns.usage.items()}, hi - lo)
        else:
            objects = [payload["usage"] for payload in payloads if type(payload) is dict and "usage" in payload]
            counts = usage_columns(objects)
            if counts is not None:  # (the usual usage objects: a column at a time)
                self._add_columns(counts, len(objects))
            else:
                self.add_usage_objects(payloads, base)

    def add_usage_objects(self, payloads: list[Any], base: int) -> None:
        """Add up the usage of the events of ``payloads`` (the first at ``base`` in the run), one object at a time."""
        usages = [self._noted_usage(base + i, payload["usage"]) for i, payload in enumerate(payloads)
                  if type(payload) is dict and "usage" in payload]
        self._add_usages([usage for usage in usages if usage])

    def _read_payload(self, kind: str, payload: dict[str, Any], stamp: Any, index: int, event: dict[str, Any],
                      went_wrong: bool | None = None) -> bool:
        """A tool event (``index``: its place in the run) paired with its call, a failure recorded (not the run_failed
        heal ends a run with when nothing told how it ended: ``ends_unknown``). ``went_wrong``: a tool_completed's
        outcome (``outcome.went_wrong``) when read already. Returns whether the event is a failure (``is_failure``)."""
        seq, call = event.get("seq"), None
        if kind in TOOL_TYPES:
            if stamp == EPOCH:  # (heal's stand-in for no time: a call it stamps tells no length)
                stamp = None
            failed, calls = False, len(self.calls) if self.timeline else 0
            if kind in CALLED:
                early = self.calls.called(payload, stamp, seq)
                if early is not None:  # (the call of a result written before it: answered here, where heal moves it)
                    self._early_answered(call_id(payload) or "", early)
            else:  # (the outcome judged once: is_failure would ask it again)
                failed = result_failed(kind, event) if went_wrong is None else kind in FAILED or went_wrong
                again = self.calls.result_again(payload)  # (the result of an answered call written again: no failure)
                call = self.calls.result(not failed, payload, stamp, seq)
                failed = failed and not again
                cid = call_id(payload) if call is None and not again else None
                waits = cid if cid is not None and cid in self.calls.early else None  # (its call may come later)
                if waits is not None and self.timeline:
                    self.early_at[waits] = index
                if failed:
                    self._add_failure(kind, payload, seq, call, event)
                    if waits is not None:
                        self.early_failures[waits] = len(self.errors) - 1
            if self.timeline and len(self.calls) > calls:  # (a call began with this event)
                self.call_index.append(index)
            return failed
        if is_failure(kind, payload, event.get("synthetic"), event):
            self._add_failure(kind, payload, seq, call, event)
            return True
        return False

    def _early_answered(self, cid: str, row: int) -> None:
        """The call of ``row`` answers the result of its id ``cid`` written before it: a failed one's error is listed
        here, naming the call's tool, as it is when heal has moved the result right after the call."""
        self.early_at.pop(cid, None)
        at = self.early_failures.pop(cid, None)
        if at is None:
            return
        entry = self.errors[at]
        assert entry is not None
        if entry["toolName"] is None:
            entry["toolName"] = self.calls.name(row)
        if at != len(self.errors) - 1:
            self.errors[at] = None
            self.errors.append(entry)

    def _add_usage(self, value: Any, index: int) -> None:
        """Add up one event's usage (``add_event``, event by event); ``_add_usages`` for a batch of events."""
        usage = self._noted_usage(index, value)
        if usage:
            add = self.event_usage.add
            for key, number_ in usage.items():
                add(key, number_)
            self.usage_seen += 1

    def _noted_usage(self, index: int | None, value: Any) -> dict[str, float] | None:
        """The usage (``usage_of``) of usage object ``value`` (of the event at ``index``, None: the run record), its
        fields that hold a number no count holds noted, if any."""
        unheld: list[str] = []
        skipped: list[str] = []
        usage = usage_of(value, unheld, skipped)
        if unheld or skipped:
            self.unheld.append((index, unheld or skipped, not unheld))
        return usage

    def _add_usages(self, usages: list[dict[str, float]]) -> None:
        """Add up the usage (``usage_of``) of events, in stream order, a key at a time."""
        if usages:
            self._add_columns({key: [usage[key] for usage in usages if key in usage] for key in USAGE_KEYS}, len(usages))

    def _add_columns(self, columns: dict[str, list[Any]], seen: int) -> None:
        """Add up the counts of ``seen`` usage objects, given a key at a time (each column in stream order)."""
        add_column = self.event_usage.add_column
        for key, values in columns.items():
            if values:
                add_column(key, values)
        self.usage_seen += seen

    def _see_moment(self, moment: datetime | None, stamp: Any) -> None:
        """``moment``, read from ``stamp``, into first and last (of one instant, a leap second's fraction decides)."""
        if moment is not None:
            first, last = self.first, self.last
            if first is None or moment < first or (moment == first and leap_rank(stamp) < leap_rank(self.first_stamp)):
                self.first, self.first_stamp = moment, stamp
            if last is None or moment > last or (moment == last and leap_rank(stamp) > leap_rank(self.last_stamp)):
                self.last, self.last_stamp = moment, stamp

    def _fold_stamps(self) -> None:
        """Take the held timestamps into first and last. When all are of one shape in UTC (``same_shape_utc``),
        text order is time order: only the earliest and the latest are parsed; if either is no date (month 13),
        every one is looked at in turn."""
        stamps, self.stamps = self.stamps, []
        if EPOCH in stamps:  # heal's stand-in for a run that tells no time (fix_timestamp): no time, not 1970
            stamps = [stamp for stamp in stamps if stamp != EPOCH]
        if not stamps:
            return
        if same_shape_utc(stamps):  # (a leap second, 23:59:60.x, too: after 23:59:59.x, before the next day)
            earliest, latest = min(stamps), max(stamps)
            lo, hi = instant(earliest), instant(latest)
            if lo is not None and hi is not None:
                self._see_moment(lo, earliest)
                self._see_moment(hi, latest)
                return
        for stamp in stamps:
            self._see_moment(instant(stamp), stamp)

    def _add_plain_mark(self, mark: tuple[int, str, Any, datetime | None, bool]) -> None:
        """Keep every ``stride``-th ordinary event; when that makes too many, halve them and double the stride,
        so the ticks kept are spread over the whole run however long it is."""
        self.plain_seen += 1
        if (self.plain_seen - 1) % self.stride:
            return
        self.marks.append(mark)
        self.plain_marks += 1
        if self.plain_marks > MAX_MARKS:
            self.stride *= 2
            kept, n = [], 0
            for m in self.marks:
                if m[4]:
                    kept.append(m)
                else:
                    if n % 2 == 0:
                        kept.append(m)
                    n += 1
            self.marks = kept
            self.plain_marks = sum(1 for m in kept if not m[4])

    def _add_failure(self, kind: str, payload: dict[str, Any], seq: Any, call: int | None,
                     event: dict[str, Any]) -> None:
        """A failure; ``call``: the call a failed tool result answers (most results name no tool: the call does)."""
        if kind == RUN_FAILED:
            self.failed_event = True
        # (a tool_completed that failed and says nothing: its exit code or verdict tells)
        entry = failure_entry(kind, payload, seq, failure_words(event) if kind in COMPLETED else None)
        if kind in FAILED or kind in COMPLETED:
            entry["toolName"] = tool_name(payload) or (self.calls.name(call) if call is not None else None)
        self.errors.append(entry)

    def add_heal_record(self, record: dict[str, Any]) -> None:
        counted = count_repairs(record)
        if counted:
            self.healed_in_stream = True
            self.add_repairs(*counted)

    def add_repairs(self, total: int, by_rule: dict[str, int]) -> None:
        self.repairs_total += total
        self.repairs_by_rule.update(by_rule)

    # result ----------------------------------------------------------------------------------
    def status(self) -> str:
        """``error`` when the run failed (its run record says so, or a ``run_failed`` event); else ``ok`` when it ended
        well (its run record, or a ``run_completed`` event); else ``unknown``: nothing tells how it ended (a journal
        that just stops, or heal's end of one, ``ends_unknown``)."""
        declared = self.record.get("status") if self.record else None  # (by_type folded: ``summary`` did it)
        if declared == "error" or self.failed_event:
            return "error"
        return "ok" if declared == "ok" or self.by_type[RUN_COMPLETED] else "unknown"

    def fold_aliases(self) -> None:
        """The counts of aliased types (``CANONICAL_TYPES``) moved to the types they stand for."""
        by_type = self.by_type
        for alias in [kind for kind in by_type if kind in CANONICAL_TYPES]:
            by_type[CANONICAL_TYPES[alias]] += by_type.pop(alias)

    def summary(self) -> dict[str, Any]:
        self._fold_stamps()
        self.fold_aliases()
        facts = self.record or {}
        start, end = self.first, self.last
        duration = number(_ms(end, start)) if start is not None and end is not None else None
        tool_calls, indexes, unfinished = self._tool_calls(start)
        summary = {
            RECORD_KEY: SUMMARY_RECORD,
            "runId": self.run_id,
            "artifactId": facts.get("artifactId") if isinstance(facts.get("artifactId"), str) else None,
            "source": self.source,
            "status": self.status(),
            "framework": facts.get("framework") if isinstance(facts.get("framework"), str) else None,
            "prompt": facts.get("prompt") if isinstance(facts.get("prompt"), str) else None,
            "startedAt": written_timestamp(start, self.first_stamp) if start is not None else None,
            "endedAt": written_timestamp(end, self.last_stamp) if end is not None else None,
            "durationMs": duration,
            "events": {"total": self.count, "byType": dict(sorted(self.by_type.items()))},
            "toolCalls": tool_calls,
            "errors": self._errors(unfinished),
            "usage": self._usage(),
            "repairs": {"total": self.repairs_total, "byRule": dict(sorted(self.repairs_by_rule.items()))},
        }
        if self.timeline:
            summary["timeline"] = self._timeline(start, duration, indexes)
        return summary

    def _tool_calls(self, start: datetime | None) -> tuple[dict[str, Any], list[Any], list[int]]:
        """The run's calls as the summary lists them, with their counts (``_tool_stats``), where each began in the
        run (for the timeline), and the rows of those never answered. Each call's entry is made whole in one
        comprehension, then those without an id lose ``callId`` and those still open gain ``unfinished`` (the keys keep
        their order)."""
        pairing = self.calls
        if self.timeline:  # (the results that waited for a call none made: counted on their own, after the calls)
            for cid in pairing.early:
                self.call_index.append(self.early_at.pop(cid))
        unfinished = pairing.end_open(self.last)  # open calls end at the run's latest instant
        names = list(map(pairing.names.__getitem__, pairing.tool))
        statuses = list(map(CALL_STATUS.__getitem__, pairing.state))
        began = pairing.started
        if start is not None:
            starts = numbers([math.nan if moment is None else _ms(moment, start) for moment in began])
        else:
            starts = [None] * len(began)
        lengths, cids = numbers(pairing.duration), pairing.cids
        out: list[dict[str, Any]] = [
            {"toolName": name, "status": status, "durationMs": duration, "seq": seq, "startMs": start_ms, "callId": cid}
            for name, status, duration, seq, start_ms, cid in zip(
                names, statuses, lengths, pairing.seq.tolist(), starts, cids, strict=True)]
        if not all(cids):
            for row in [row for row, cid in enumerate(cids) if not cid]:
                del out[row]["callId"]
        for row in unfinished:
            out[row]["unfinished"] = True
        return ({**_tool_stats(pairing.tool, pairing.names, statuses, lengths), "calls": out}, self.call_index.tolist(),
                unfinished)

    def _errors(self, unfinished: list[int]) -> list[dict[str, Any]]:
        """The run's errors: its own (its run record's), each failure in stream order (``_add_failure``), then each of
        its calls never answered (rows ``unfinished``, in the order they began): kind ``tool_unanswered``, as heal
        marks such a call, at the call's seq, so the errors count every failed call, raw or healed alike."""
        own = own_error(self.record or {})
        errors: list[dict[str, Any]] = [own] if own is not None else []
        errors.extend(entry for entry in self.errors  # (the run record says it already; None: listed again later)
                      if entry is not None and not said_again(entry, own))
        calls = self.calls
        errors.extend({"kind": TOOL_UNANSWERED, "code": None, "message": UNANSWERED_MESSAGE, "seq": seq,
                       "toolName": calls.name(row)} for row, seq in zip(unfinished, map(calls.seq.__getitem__, unfinished), strict=True))
        return errors

    def combined_usage(self) -> dict[str, Any] | None:
        """The counts the run's usage objects give (``combined_usage`` of its run record's and its events' sums)."""
        summed: dict[str, float] | None = self.event_usage.settled() if self.usage_seen else None
        return combined_usage(usage_of((self.record or {}).get("usage")), summed)

    def _usage(self) -> dict[str, Any] | None:
        """The run's usage: each of its counts as its run record's usage object gives it, else the sum of its events'
        (``combined_usage``), shown by ``shown_usage``. A count none of them gave is null (``-`` in text), not 0: ``inputTokens``,
        ``outputTokens`` and ``costUsd`` alike (a mini-swe-agent trajectory may record a cost and no tokens): none is
        claimed that nobody recorded. None when no usage object gave a count."""
        declared = self.combined_usage()
        if declared is None:
            return None
        shown = shown_usage(declared)  # (the cache's counts only when a usage object gave them)
        cost = shown["costUsd"]
        return {"inputTokens": maybe_count(shown["inputTokens"]), "outputTokens": maybe_count(shown["outputTokens"]),
                "costUsd": maybe_count(cost), **{key: count_shown(shown[key]) for key in CACHE_TOKENS if key in shown}}

    def _timeline(self, start: datetime | None, duration: Any, indexes: list[Any]) -> dict[str, Any]:
        """The run's timeline: its marks, and ``calls``, the place in the run of each tool call's first event (an
        index a call: a call's start in time is its ``startMs`` in ``toolCalls.calls``, not held twice)."""
        by_time = bool(duration)
        marks = []
        for index, kind, seq, moment, failed in self.marks:
            mark: dict[str, Any] = {"index": index, "seq": seq, "type": kind,
                                    "atMs": number(_ms(moment, start)) if by_time and moment and start else None}
            if failed:
                mark["failed"] = True
            marks.append(mark)
        return {"axis": "time" if by_time else "order", "spanMs": duration if by_time else None,
                "events": self.count, "marks": marks, "omittedMarks": self.count - len(marks),
                "calls": indexes}


def _tool_stats(tools: Iterable[int], names: list[str], statuses: list[str], lengths: list[Any]) -> dict[str, Any]:
    """A run's tool calls counted, in all and by tool (``tools``: the place of each call's tool in ``names``;
    ``statuses`` and ``lengths``: each call's, in the order the summary lists them): the time of the calls whose length is known (a call no time tells
    the length of has ``durationMs`` None), None for a tool none of whose calls' lengths is known."""
    if len(names) == 1:
        groups = [lengths]
    else:
        groups = [[] for _ in names]
        adds = [group.append for group in groups]
        for tool, length in zip(tools, lengths, strict=True):
            adds[tool](length)
    oks = Counter(itertools.compress(tools, map("ok".__eq__, statuses))) if "error" in statuses else None
    by_tool: dict[str, dict[str, Any]] = {}
    for tool in sorted(range(len(names)), key=names.__getitem__):
        group = groups[tool]
        durations = [duration for duration in group if duration is not None] if None in group else group
        made = len(group)
        ok = made if oks is None else oks[tool]  # (a Counter, not a list counted per tool: linear in the calls)
        by_tool[names[tool]] = _finished(made, ok, made - ok, _sum(durations, 0.0) if durations else None,
                                         max(0.0, *durations) if durations else None)
    total = len(statuses)
    ok = total if oks is None else sum(oks.values())
    return {"total": total, "ok": ok, "error": total - ok, "byTool": by_tool}


def _no_calls() -> dict[str, Any]:
    """A tool's stats before its first call (no length known yet)."""
    return {"calls": 0, "ok": 0, "error": 0, "durationMs": None, "maxMs": None}


def _add_call(stats: dict[str, Any], calls: int, ok: int, error: int, duration: float | None,
              longest: float | None) -> None:
    """Another run's calls of a tool added to ``stats``: its time and longest call (None: no length of them known)."""
    stats["calls"] += calls
    stats["ok"] += ok
    stats["error"] += error
    if duration is not None:
        stats["durationMs"] = duration if stats["durationMs"] is None else exact_plus(stats["durationMs"], duration)
    if longest is not None:
        stats["maxMs"] = longest if stats["maxMs"] is None else max(stats["maxMs"], longest)


def _finish_stats(stats: dict[str, Any]) -> dict[str, Any]:
    return _finished(stats["calls"], stats["ok"], stats["error"], stats["durationMs"], stats["maxMs"])


def _finished(calls: int, ok: int, error: int, duration: int | float | None, longest: int | float | None) -> dict[str, Any]:
    """A tool's stats as a report writes them: its total and longest duration as ``number`` writes them (None:
    unknown)."""
    return {"calls": calls, "ok": ok, "error": error, "durationMs": maybe_number(duration),
            "maxMs": maybe_number(longest)}


# a run's cache counts as a usage object names them (``run_usage``): names ``usage_of`` reads them by, as the same counts
_CACHE_NAMES = {key: names[-1] for key, names in {**CACHE_TOKENS, **CACHED_IN_INPUT}.items()}


def run_usage(record: dict[str, Any] | None, events: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The usage object of a run as its summary counts it (``RunTally._usage``: its run record's, and its events'
    for the counts the run record does not give), for a healed artifact: the run record's usage object as written,
    with the counts it does not write added (the cache's under names ``usage_of`` reads, no null cost; a count it
    writes that is no count stays, for validate to report). None when no usage object gave a count."""
    tally = RunTally(record, timeline=False)
    tally.add_usage_objects(values_of(events, "payload"), 0)
    usage = tally.combined_usage()
    if usage is None:
        return None
    declared = (record or {}).get("usage")
    if not isinstance(declared, dict):
        declared = {}
    added = {_CACHE_NAMES.get(k, k): count_shown(v) for k, v in usage.items()
             if all(declared.get(name) is None for name in USAGE_KEYS[k])}
    return {**declared, **added}


def healed_run_artifact(record: dict[str, Any] | None, events: list[dict[str, Any]],
                        heal: dict[str, Any] | None) -> dict[str, Any]:
    """The artifact of a healed run (``healing.healed_artifact``) with its usage as a report counts it (``run_usage``):
    what the stages that write healed artifacts write."""
    return healed_artifact(record, events, heal, run_usage(record, events))


def summarize_run(record: dict[str, Any] | None, events: Iterable[dict[str, Any]],
                  repairs: Iterable[dict[str, Any]] = (), source: str | None = None) -> dict[str, Any]:
    """The summary of one run from its run record (or None), its events, and heal records / heal logs. Records among
    the events, and those that are no events (``validation.is_no_event``: no ``type``), are left out, as ``summarize``
    leaves them out."""
    tally = RunTally(record, source)
    for event in events:
        if isinstance(event, dict) and RECORD_KEY not in event and not is_no_event(event):
            tally.add_event(event)
    for document in repairs:
        counted = count_repairs(document)
        if counted:
            tally.add_repairs(*counted)
    return tally.summary()


# all runs --------------------------------------------------------------------------------------
def aggregate(summaries: Iterable[dict[str, Any]], diagnostics: dict[str, Any] | None = None,
              unattributed: Iterable[dict[str, Any]] = ()) -> dict[str, Any]:
    """Totals over run summaries, plus the input problems (``diagnostics``) the stream had and the heal records
    of no run in the report (``unattributed``, as ``summarize`` passes them on)."""
    totals = Aggregate()
    for s in summaries:
        totals.add(s)
    for record in unattributed:
        totals.add_unattributed(record)
    return totals.result(diagnostics)


_SUMMED_USAGE = ("inputTokens", "outputTokens", "costUsd", *CACHE_TOKENS)  # the counts of runs' usage ``Aggregate`` adds up


class Aggregate:
    """The totals over run summaries, gathered one summary at a time (a report need not read its runs twice)."""

    def __init__(self) -> None:
        self.by_type: Counter[str] = Counter()
        self.by_rule: Counter[str] = Counter()
        self.by_code: Counter[str] = Counter()
        self.by_tool: dict[str, dict[str, Any]] = {}
        # the tokens and costs of the runs that counted them (none: no run did), the cache's (``CACHE_TOKENS``) too;
        # ints stay exact, however large; each sum begins at the first run's count as that run shows it
        self.usage = UsageSum()
        self.with_usage = 0
        self.durations: list[float] = []
        self.start: datetime | None = None
        self.end: datetime | None = None
        self.start_stamp: Any = None  # the runs' startedAt and endedAt they came from (a leap second is told by it)
        self.end_stamp: Any = None
        self.calls = self.calls_ok = 0
        self.runs = self.events = self.repairs = 0
        self.statuses: Counter[str] = Counter()  # runs by status: ok, error, unknown
        self.named: dict[str, list[str]] = {"error": [], "unknown": []}  # the first RUNS_NAMED runs of each (run_label)
        self.unattributed: list[dict[str, Any]] = []  # the repairs of no run in the report, one entry a heal record
        self.unattributed_by_rule: Counter[str] = Counter()

    def add(self, s: dict[str, Any]) -> None:
        _count_into(self.by_type, s["events"]["byType"])
        _count_into(self.by_rule, s["repairs"]["byRule"])
        tc = s["toolCalls"]
        self.calls += tc["total"]
        self.calls_ok += tc["ok"]
        by_tool = self.by_tool
        for name, st in tc["byTool"].items():
            stats = by_tool.get(name)
            if stats is None:
                stats = by_tool[name] = _no_calls()
            _add_call(stats, st["calls"], st["ok"], st["error"], st["durationMs"], st["maxMs"])
        by_code = self.by_code
        held = by_code.get  # (not ``+= 1``: a Counter's missing key is looked up twice, the second time by __missing__)
        for err in s["errors"]:
            code = err.get("code") or err["kind"]
            by_code[code] = held(code, 0) + 1
        usage = s["usage"]
        if usage is not None:
            self.with_usage += 1
            add = self.usage.add
            for key in _SUMMED_USAGE:  # (a cache's count is in a run's usage when some usage object of it counted them)
                if usage.get(key) is not None:
                    add(key, usage[key])
        if s["durationMs"] is not None:
            self.durations.append(s["durationMs"])
        starts, ends = s.get("startedAt"), s.get("endedAt")
        began, ended = parse_timestamp(starts), parse_timestamp(ends)
        if began is not None and (self.start is None or began < self.start or (
                began == self.start and leap_rank(starts) < leap_rank(self.start_stamp))):
            self.start, self.start_stamp = began, starts
        if ended is not None and (self.end is None or ended > self.end or (
                ended == self.end and leap_rank(ends) > leap_rank(self.end_stamp))):
            self.end, self.end_stamp = ended, ends
        self.runs += 1
        status = status_of(s)
        self.statuses[status] += 1
        if status != "ok" and len(self.named[status]) < RUNS_NAMED:
            self.named[status].append(run_label(s, self.runs))
        self.events += s["events"]["total"]
        self.repairs += s["repairs"]["total"]

    def add_unattributed(self, record: dict[str, Any]) -> None:
        """A heal record that names no run in the report (``summarize`` passes those on, with their source): its
        repairs count in the totals, and are listed apart, under the run id it names."""
        counted = count_repairs(record)
        if not counted:
            return
        total, by_rule = counted
        source = record.get("source")
        self.unattributed.append({"runId": as_run_id(record.get("runId")),
                                  "source": source if isinstance(source, str) else None,
                                  "total": total, "byRule": dict(sorted(by_rule.items()))})
        self.unattributed_by_rule.update(by_rule)
        self.by_rule.update(by_rule)
        self.repairs += total

    def result(self, diagnostics: dict[str, Any] | None = None) -> dict[str, Any]:
        """The totals; ``diagnostics``: the input problems (``total``, ``byCode``, and the ``first`` few)."""
        diag = diagnostics or {}
        sums = self.usage.settled()
        return {
            "runs": {"total": self.runs, **{status: self.statuses[status] for status in STATUSES}},
            "events": {"total": self.events, "byType": dict(sorted(self.by_type.items()))},
            "toolCalls": {"total": self.calls, "ok": self.calls_ok, "error": self.calls - self.calls_ok,
                          "byTool": {name: _finish_stats(self.by_tool[name]) for name in sorted(self.by_tool)}},
            "errors": {"total": sum(self.by_code.values()), "byCode": dict(sorted(self.by_code.items()))},
            "usage": {"inputTokens": maybe_count(sums.get("inputTokens")),
                      "outputTokens": maybe_count(sums.get("outputTokens")),
                      "costUsd": maybe_count(sums.get("costUsd")),
                      **{key: count_shown(sums[key]) for key in CACHE_TOKENS if key in sums},
                      "runsWithUsage": self.with_usage},
            "repairs": {"total": self.repairs, "byRule": dict(sorted(self.by_rule.items()))},
            "unattributedRepairs": {"total": sum(u["total"] for u in self.unattributed),
                                    "byRule": dict(sorted(self.unattributed_by_rule.items())), "runs": self.unattributed},
            "durationMs": number(math.fsum(self.durations)) if self.durations else None,
            "startedAt": format_timestamp(self.start, leap_rank(self.start_stamp)) if self.start is not None else None,
            "endedAt": format_timestamp(self.end, leap_rank(self.end_stamp)) if self.end is not None else None,
            "diagnostics": {"total": int(diag.get("total", 0)), "byCode": dict(sorted((diag.get("byCode") or {}).items())),
                            "first": list(diag.get("first") or [])[:FIRST_PROBLEMS]},
        }


def _count_into(counter: Counter[str], counts: Any) -> None:
    """``counter.update(counts)``: for a dict, its counts added as ``Counter.update`` adds them (copied into an empty
    counter; else each count plus the one held), without its checks of what ``counts`` is."""
    if counts.__class__ is not dict:
        counter.update(counts)
    elif not counter:
        dict.update(counter, counts)
    else:
        held = counter.get
        for key, count in counts.items():
            counter[key] = count + held(key, 0)


def first_problems(first: list[dict[str, Any]], records: Iterable[Any]) -> None:
    """Add to ``first`` the input problems of ``records`` (error bodies, or the ``first`` of a diagnostics record),
    as a report lists them, until it holds FIRST_PROBLEMS."""
    for record in records:
        if len(first) >= FIRST_PROBLEMS:
            return
        if isinstance(record, dict):
            first.append({k: record[k] for k in PROBLEM_FIELDS if record.get(k) is not None})


def public_run(summary: dict[str, Any]) -> dict[str, Any]:
    """A summary as reports show it: without the record marker and the drawing-only timeline."""
    run = summary.copy()  # (its keys in their order; a copy and two removals cost less than a dict built key by key)
    run.pop(RECORD_KEY, None)
    run.pop("timeline", None)
    return run


def report_document(summaries: list[dict[str, Any]], diagnostics: dict[str, Any] | None = None,
                    unattributed: Iterable[dict[str, Any]] = ()) -> dict[str, Any]:
    return {"runs": [public_run(s) for s in summaries], "aggregate": aggregate(summaries, diagnostics, unattributed)}


# shared by the renderers -------------------------------------------------------------------------
def run_label(summary: dict[str, Any], position: int) -> str:
    """What to call a run: its runId, else its artifact id, else its file's name, else its place in the report."""
    named = summary.get("runId") or summary.get("artifactId")
    if named:
        return named  # type: ignore[no-any-return]
    source = summary.get("source")
    if isinstance(source, str) and source and not source.startswith("<") and Path(source).name:
        return Path(source).name
    return f"run #{position}"


class Texts(dict[Any, str]):
    """The texts ``make`` gives of whole numbers (and None), kept by value (at most TEXTS_KEPT: then forgotten all at
    once): a column of them is read by one C-level map of ``__getitem__``. Only ints and None may be looked up (a float
    or a bool equal to an int would find the int's text: -0.0 and 0 are written differently)."""

    def __init__(self, make: Callable[[Any], str]) -> None:
        super().__init__()
        self.make = make

    def __missing__(self, key: Any) -> str:
        if len(self) >= TEXTS_KEPT:
            self.clear()
        text = self[key] = self.make(key)
        return text


TEXTS_KEPT = 65_536


def format_ms(value: Any) -> str:
    """A duration for people: 850ms, 1.25s, 2m 05s, 1h 02m."""
    return MS_TEXTS[value] if value.__class__ is int else _format_ms(value)


def _format_ms(value: Any) -> str:
    if value is None:
        return "-"
    try:
        ms = float(value)
    except OverflowError:  # (an int past a double: durations added up exactly) in whole hours, by integer arithmetic
        hours, seconds = divmod((value + 500) // 1000, 3600)
        return f"{hours}h {seconds // 60:02d}m"
    if ms < 1000:
        return f"{ms:.0f}ms" if ms >= 10 or ms == int(ms) else f"{ms:.1f}ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.2f}s".replace(".00s", "s")
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


MS_TEXTS = Texts(_format_ms)  # whole milliseconds (most durations in a report; None too) -> their text
_COUNT_TEXTS = Texts("{:,}".format)  # counts (ints) -> their text


def format_cost(value: Any) -> str:
    if value is None:
        return "-"
    if value.__class__ is int:  # (whole dollars, however many: a double may not hold them)
        return f"${value}.00"
    text = f"{_as_written(value):.6f}".rstrip("0")
    if len(text.split(".")[1]) < 2:
        text = f"{_as_written(value):.2f}"
    return "$" + text


def _plus_given(total: int | float | None, value: int | float | None) -> int | float | None:
    """A sum of the counts given (``exact_plus``): None (not given) adds nothing; None while none is given."""
    if value is None:
        return total
    return value if total is None else exact_plus(total, value)


def all_tokens(usage: dict[str, Any]) -> int | float | None:
    """A run's (or all runs') tokens in (the cache's too: ``shown_usage``) and out, those given added up exactly; None
    when none is."""
    return _plus_given(usage["inputTokens"], usage["outputTokens"])


def format_tokens_in(usage: dict[str, Any], count: Callable[[Any], str] | None = None) -> str:
    """``51,020 tokens in`` and the parts of them the prompt cache gave or took, those there are: ``51,020 tokens in
    (50,000 cache read, 1,000 cache write)`` (``shown_usage``); each number as ``count`` writes it (``format_count``)."""
    count = count or format_count
    if not any(map(usage.get, CACHE_TOKENS)):  # (most runs: no cache's tokens)
        return f"{count(usage['inputTokens'])} tokens in"
    cached = [f"{count(usage[key])} {label}" for key, label in zip(CACHE_TOKENS, _CACHE_LABELS, strict=True)
              if usage.get(key)]
    return f"{count(usage['inputTokens'])} tokens in ({', '.join(cached)})"


_CACHE_LABELS = ("cache read", "cache write")


def format_count(value: Any) -> str:
    if value.__class__ is int:
        return _COUNT_TEXTS[value]
    if value is None:
        return "-"
    return f"{value:,}" if isinstance(value, int) else f"{_as_written(value):,.3f}".rstrip("0").rstrip(".")


def _as_written(value: Any) -> Any:
    """A number to format: a float as it is, a sum no double holds (``_exact_sum``'s ``ExactNumber``) as the decimal it
    writes (formatting its double would show another number)."""
    if value.__class__ is exactjson.ExactNumber:
        from decimal import Decimal  # here: only such a sum gets this far

        return Decimal(value.text)
    return float(value)


def status_of(summary: dict[str, Any]) -> str:
    """A summary's status as the counts take it: ``ok`` or ``unknown`` as written, anything else (a summary record
    read from a file may say anything) a failure, ``error``."""
    status = summary.get("status")
    return status if status in ("ok", "unknown") else "error"  # type: ignore[return-value]


def run_statuses(runs: dict[str, int], separator: str = ", ", error: str = "error") -> str:
    """``49 ok, 25 error`` (and ``, 2 unknown`` when some runs tell no end): a report's runs by status. ``error``: the
    word for the failed ones."""
    said = f"{format_count(runs['ok'])} ok{separator}{format_count(runs['error'])} {error}"  # (3,000 as the total is)
    return said + (f"{separator}{format_count(runs['unknown'])} unknown" if runs["unknown"] else "")


def counted(n: int, one: str, many: str) -> str:
    """``1 run reports usage`` / ``2 runs report usage``: the count and the words that agree with it."""
    return f"{format_count(n)} {one if n == 1 else many}"


def format_counts(counts: dict[str, int], limit: int = 0) -> str:
    """``a 3, b 1`` (largest first), or ``-``."""
    if not counts:
        return "-"
    items = sorted(counts.items())
    items.sort(key=_COUNT, reverse=True)  # largest first, and (the sort is stable) by key among equals
    shown = items[:limit] if limit else items
    text = ", ".join([f"{key} {count}" for key, count in shown])
    return text + (f", … {len(items) - len(shown)} more" if len(shown) < len(items) else "")

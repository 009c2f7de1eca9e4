"""OTLP/JSON traces of runs, by the OpenTelemetry GenAI semantic conventions (plain dicts, no protobuf).

One run becomes one ``ExportTraceServiceRequest`` (the JSON form the OTLP/HTTP endpoint and the
collector's file exporter use): a resource (``service.name`` = the run's framework), and the spans below. A run of
more spans than ``SPANS_PER_REQUEST`` is sent in several requests of one trace, of at most that many spans each, so
that memory stays flat however long a run is: as it goes, the spans finished so far (a tool call answered, a model
call followed by another); at its end the rest (calls never answered among them), the last request with the run's own
span (its totals known only at its end).

| span | from | kind | ``gen_ai.operation.name`` |
| --- | --- | --- | --- |
| ``invoke_agent {framework}`` (root) | the run: its first to its last event | INTERNAL | ``invoke_agent`` |
| ``chat {model}`` | each model call, by the rule a mapped log's steps are numbered by (``modelcalls.ModelCalls``: step N is the Nth of these of the run's own; a sub-agent's calls, Claude Code's sidechain, are spans too but number no step, and a sidechain record written between two parts of one response parts its span, not its step): an ``assistant_message`` (later ones with the same ``messageId`` / ``responseId`` join it, and it joins the ``reasoning`` before it when no input or tool call came between: Codex names no response), or model output with no ``assistant_message`` (a ``tool_called`` or ``reasoning`` right after input), or an ``error`` (a failed call); from when the model was asked (the latest event it saw, ``_SEEN``: an input, or its own output; not a token count or an echo) to its last output | CLIENT | ``chat`` |
| ``execute_tool {tool}`` | each ``tool_called``, to its ``tool_completed`` / ``tool_failed`` (``toolcalls.OpenCalls``: by call id, else by tool name, else the latest open call; a call of an id still open, or answered with the same payload, and a result of an answered id, are that record written again, not another: ``OpenCalls.written_again``); a result without its call (none open to answer: heal drops these) is a call of its own, as ``report`` counts one: of no length, at the result's time, its tool ``unknown`` when it names none (one of a call id waits for a call of that id later in the run, whose span it ends: a result written before its call, ``CallPairing.early``; when none comes, its span is made at the run's end) | INTERNAL | ``execute_tool`` |

Event types are read as ``report`` reads them: heal's built-in aliases (``tool_end``, ``llm_message``, ...) as the
types they stand for (``report.model.CANONICAL_TYPES``), so a journal not healed yet exports as its healed form would.
Model and tool spans are children of the run's span. Attributes: ``gen_ai.provider.name``,
``gen_ai.conversation.id`` (the run id), ``gen_ai.request.model`` / ``gen_ai.response.model``,
``gen_ai.response.id``, ``gen_ai.response.finish_reasons``, ``gen_ai.usage.input_tokens`` /
``output_tokens`` / ``cache_read.input_tokens`` / ``cache_creation.input_tokens`` (a call's own: the sum of its usage
objects, added up as ``report`` adds usage up, ``UsageSum``; and the run's totals on the root, as ``report`` counts the
run's usage: each count the run record's usage gives, else the calls' sum; shown by ``report``'s rule, ``shown_usage``: ``input_tokens`` every input token, the cache's
too, which the two cache counts are parts of, as the conventions have it), ``gen_ai.agent.name``, ``gen_ai.tool.name`` / ``call.id`` / ``type``.
Errors set the span status to ERROR with ``error.type``: an ``error`` event (an API error, a rate limit:
``_failed_call``) fails the model call it ended, one span for each as ``report`` lists each (the call that gave only
reasoning so far, or the response it names; else a call of its own, each retry's; its code, else ``error``), a failed tool (``toolcalls.result_failed``: a tool_failed, or a
tool_completed with a non-zero exit code or a failing verdict; its error code, else ``tool_failed``), a call that
never got a result (``tool_unanswered``), a failed run (its error code, else ``run_failed``; not the ``run_failed``
heal ends a run with when nothing told how it ended: the run's span stays UNSET, as for the raw journal). The run's span
has one status (its last ``run_failed``'s, else its run record's error), and each of the run's own errors ``report``
lists (the record's, each ``run_failed`` that does not say it again) is an ``exception`` event of that span
(``exception.type``, ``exception.message``): the trace holds every error the report lists. Message
contents are not exported (the conventions make them opt-in). Trace and span ids are derived from the
run's source and id (and how many runs of that id the input had before it), so the same input gives the
same bytes; ids are hex, as OTLP/JSON writes them. The source, for this, is ``trace_source``'s: a local file's
resolved absolute path, however the command named it (``run.jsonl``, ``./run.jsonl``, from another folder, through a
link), so exporting it again does not make its traces twice; stdin, a descriptor (``<(...)``) and a URL as given.

Every line parses as OTLP/JSON. A number OTLP cannot hold as an ``intValue`` (beyond int64) or a
``doubleValue`` (not finite: ``1e400`` reads as infinity) is written as a ``stringValue``: its digits,
or its text as the journal wrote it; a token count is an ``intValue`` or that text, never a ``doubleValue``
(``1e20``, beyond int64, is its digits; a fraction, ``1.5``, its text, as ``report`` counts it: ``count_of``,
``count_shown``). A usage object is counted or left out as ``report`` counts it
(``usage_of``: ``TraceBuilder.counted``), what it leaves out noted for the stage's notice (``left_out``). A timestamp outside what a ``fixed64`` of unix nanoseconds holds
(before 1970, after 2554-07-21) is left out, as a missing one is, and the root span counts such
events in ``replay.timestamps_out_of_range``.

A run that tells no time (no event with a timestamp, or only ``EPOCH``: heal's stand-in for that, which ``report``
reads as no time too; or only ones out of range, ``out_of_range``, or naming no time, ``unreadable``) cannot be placed in time, and OTLP has no "unknown" for a span's times (they are semantically
required): its spans are still written (their tokens, tools and errors are the trace), with times 0, the unset value of
a proto3 ``fixed64``, never a time made up; the run's span says so (``replay.time_unknown``), and ``time_unknown`` tells
the stage to warn (``E_OTLP_TIME_UNKNOWN``).
"""

from __future__ import annotations

import hashlib
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from replay.pipeline.engine.errors import printable
from replay.pipeline.engine.exactjson import INT64_MAX, INT64_MIN, UINT64_MAX
from replay.pipeline.engine.text import utf8
from replay.pipeline.io.journals import is_url, names_own_descriptor
from replay.pipeline.model.events import (
    ASSISTANT_MESSAGE,
    EPOCH,
    ERROR,
    RUN_FAILED,
    ends_unknown,
    event_type,
    parse_timestamp,
)
from replay.pipeline.model.modelcalls import ANSWER, NEW, SAME, ModelCalls
from replay.pipeline.model.outcome import failure_words
from replay.pipeline.model.toolcalls import (
    CALLED,
    COMPLETED,
    FAILED,
    TOOL_UNANSWERED,
    UNANSWERED_MESSAGE,
    OpenCalls,
    call_id,
    response_id,
    result_failed,
    tool_name,
)
from replay.pipeline.report.model import (
    CANONICAL_TYPES,
    UsageSum,
    as_text,
    combined_usage,
    count_shown,
    error_of,
    failure_entry,
    own_error,
    said_again,
    shown_usage,
    usage_of,
)

SPANS_PER_REQUEST = 2000  # spans held before those finished go out in a request of their own
SPAN_KIND_INTERNAL, SPAN_KIND_CLIENT = 1, 3
STATUS_UNSET, STATUS_ERROR = 0, 2
SCOPE = {"name": "agent-replay", "version": "0.1.0"}
# the GenAI token attributes of a run's usage as ``report`` shows it (``shown_usage``): input_tokens includes the cache's
_TOKENS = {
    "inputTokens": "gen_ai.usage.input_tokens",
    "outputTokens": "gen_ai.usage.output_tokens",
    "cacheReadTokens": "gen_ai.usage.cache_read.input_tokens",
    "cacheCreationTokens": "gen_ai.usage.cache_creation.input_tokens",
}
_PROVIDERS = {"claude-code": "anthropic", "codex": "openai"}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# the events the model saw (its input, and its own output): a model call begins at the latest of them before its output,
# the time it was asked (not at an event it did not see: Codex's token counts and echoes, event_msg.*, a turn_context);
# before the first of them, at the event before its output
_SEEN = frozenset({"user_message", "system_message", ASSISTANT_MESSAGE, "reasoning", ERROR,
                   *CALLED, *COMPLETED, *FAILED})


def attribute(key: str, value: Any) -> dict[str, Any]:
    """One OTLP ``KeyValue`` (int64 as a string, as proto3 JSON writes it; a number OTLP cannot hold, as a string)."""
    if isinstance(value, bool):
        typed: dict[str, Any] = {"boolValue": value}
    elif isinstance(value, int):
        typed = {"intValue": str(value)} if INT64_MIN <= value <= INT64_MAX else {"stringValue": str(value)}
    elif isinstance(value, float):
        typed = {"doubleValue": value} if math.isfinite(value) else {"stringValue": getattr(value, "text", repr(value))}
    elif isinstance(value, list | tuple):
        typed = {"arrayValue": {"values": [attribute("", v)["value"] for v in value]}}
    else:
        typed = {"stringValue": as_text(value)}
    return {"key": key, "value": typed}


def tokens(counts: dict[str, Any]) -> dict[str, int | float]:
    """The GenAI token attributes of the counts ``usage_of`` reads (of a usage object, or their sums), by the rule
    ``report`` shows them by (``shown_usage``): ``gen_ai.usage.input_tokens`` every input token, the prompt cache's
    too, which ``cache_read.input_tokens`` and ``cache_creation.input_tokens`` are parts of; a count none gave, none."""
    shown = shown_usage(counts)
    return {name: shown[key] for key, name in _TOKENS.items() if shown.get(key) is not None}


def token_count(value: int | float) -> int | str:
    """A token count as its attribute holds it: an int64 (``gen_ai.usage.*`` are ints), else the text of the number:
    its digits (``1e20`` or ``9223372036854775808.0``, whole floats beyond int64, were ``doubleValue``s), its text as
    read (``1e400``), or a fraction's as ``report`` writes it (``count_shown``: ``1.5``, not cut to 1)."""
    if value.__class__ is not int:
        if not math.isfinite(value):
            return getattr(value, "text", repr(value))
        text = getattr(value, "text", None)  # (an ``ExactNumber``: a number a double does not hold, as written)
        if text is not None:
            from decimal import Decimal  # here: only such a number gets this far

            exact = Decimal(text)
            if exact != exact.to_integral_value():
                return text
            value = int(exact)
        else:  # (a whole float as the int it writes; a fraction as report shows it, a sum's binary noise dropped)
            value = count_shown(value)
            if value.__class__ is not int:
                return repr(value)
    return value if INT64_MIN <= value <= INT64_MAX else str(value)


def provider_of(model: Any, framework: Any) -> str:
    """``gen_ai.provider.name``: from the model's name, else the framework's maker, else ``_OTHER``."""
    name = model.lower() if isinstance(model, str) else ""
    if "claude" in name or "anthropic" in name:
        return "anthropic"
    if name.startswith(("gpt", "o1", "o3", "o4", "codex", "openai")):
        return "openai"
    if "gemini" in name:
        return "gcp.gemini"
    return _PROVIDERS.get(framework, "_OTHER") if isinstance(framework, str) else "_OTHER"


def trace_source(source: str) -> str:
    """What a run's ids are derived from for its ``source``: a local regular file's resolved absolute path (links
    followed), one name for the file however it is spelled; stdin, a descriptor (``/dev/fd/63``: another each time)
    and a URL (and any other name) as given."""
    if not source or source.startswith("<") or is_url(source) or names_own_descriptor(source):
        return source
    path = Path(source)
    try:
        return str(path.resolve()) if path.is_file() else source
    except (OSError, RuntimeError):  # (a link loop, a folder that cannot be searched: as given)
        return source


def _hex(*parts: Any, size: int) -> str:
    return hashlib.blake2b(utf8("\x00".join(map(str, parts))), digest_size=size).hexdigest()


def _nanos(moment: datetime | None) -> int | None:
    """Unix nanoseconds of ``moment`` (floored, exact), or None when a fixed64 cannot hold them (or no moment)."""
    if moment is None:
        return None
    delta = moment - _EPOCH
    nanos = (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000
    return nanos if 0 <= nanos <= UINT64_MAX else None  # (the last unix nanosecond a fixed64 holds)


class Span:
    __slots__ = ("attributes", "end", "events", "kind", "message", "name", "span_id", "start", "status", "usage")

    def __init__(self, span_id: str, name: str, kind: int, start: int | None) -> None:
        self.span_id = span_id
        self.name = name
        self.kind = kind
        self.start = start
        self.end = start
        self.attributes: dict[str, Any] = {}
        self.usage: UsageSum | None = None  # a model call's token counts: the sums of its usage objects' (none yet)
        self.status = STATUS_UNSET
        self.message: str | None = None
        self.events: list[dict[str, Any]] = []  # span events (the run's errors on its span: ``_run_errors``)

    def fail(self, error_type: str, message: Any) -> None:
        self.status = STATUS_ERROR
        self.attributes["error.type"] = error_type
        if isinstance(message, str) and message:
            self.message = message[:2000]


class TraceBuilder:
    """The spans of one run, fed its events in order; ``request()`` is its ExportTraceServiceRequest."""

    def __init__(self, record: dict[str, Any] | None, source: str, run_id: Any = None,
                 seen: dict[tuple[str, str], int] | None = None, identity: str | None = None) -> None:
        """``seen``: how many runs of each (source, run id) the stream had before this one: a second run of the same
        id in one input (a retry journaled under its id, runs with none) gets trace and span ids of its own.
        ``identity``: ``trace_source(source)``, when the caller knows it already (the ids' source)."""
        self.record = record or {}
        self.source = source
        identity = trace_source(source) if identity is None else identity
        self.run_id = self.record.get("runId") or run_id
        self.framework = self.record.get("framework") if isinstance(self.record.get("framework"), str) else None
        self.model = self.record.get("model") if isinstance(self.record.get("model"), str) else None
        earlier = 0
        if seen is not None:
            key = (identity, str(self.run_id))
            earlier = seen[key] = seen.get(key, -1) + 1
        self.trace_id = _hex("trace", identity, self.run_id, *((earlier,) if earlier else ()), size=16)
        self.root = Span(_hex(self.trace_id, "run", size=8), f"invoke_agent {self.framework or 'agent'}", SPAN_KIND_INTERNAL, None)
        self.spans: list[Span] = []  # the spans not sent yet (``finished``), in the order they began
        self.made = 0  # spans begun so far (a span's id counts them)
        self.check_at = SPANS_PER_REQUEST  # how many spans held make ``finished`` look for some to send
        self.open_calls: OpenCalls[Span] = OpenCalls()  # the tool calls not answered yet (``toolcalls``' pairing)
        # the results written before their call, by id (``CallPairing.early``): how each ended (the tool it names, its
        # time, its failure: error type and message, or None), for the span of the call that comes later; of those none
        # is of by the run's end, spans of their own then
        self.early: dict[str, tuple[str | None, int | None, tuple[Any, Any] | None]] = {}
        self.chat: Span | None = None  # the last model call (later parts of the same response join it)
        self.calls = ModelCalls()  # which model call each event is of (``modelcalls``: the rule the steps are numbered by)
        self.chat_model: str | None = None  # the model the last call asked (a failed call's, which names none, too)
        self.asked: int | None = None  # the time of the latest event the model saw (``_SEEN``): a call begins there
        self.last_nanos: int | None = None
        self.totals = UsageSum()  # the sums of the run's usage objects
        self.count = 0
        self.out_of_range = 0  # events whose timestamp a fixed64 of unix nanoseconds cannot hold
        self.unreadable = 0  # events whose timestamp is there but names no time (not RFC 3339): no time, as none
        self.failed: list[tuple[dict[str, Any], int | None]] = []  # each run_failed's error (as report lists it), time
        self.repairs: int | None = None
        # the usage values left out since the caller last looked, for its notices (``usage_notice``): (the fields,
        # whether only they are left out); the run record's first
        self.left_out: list[tuple[list[str], bool]] = []
        self.declared = self.counted(self.record.get("usage"))  # the run record's counts

    def add(self, event: dict[str, Any]) -> None:
        if self.run_id is None and isinstance(event.get("runId"), str):
            self.run_id = event["runId"]
        etype = event_type(event)
        if etype in CANONICAL_TYPES:  # (an alias heal renames, read as the type it stands for, as report reads it)
            etype = CANONICAL_TYPES[etype]
        raw = event.get("payload")
        payload: dict[str, Any] = raw if isinstance(raw, dict) else {}
        stamp = event.get("timestamp")
        moment = parse_timestamp(stamp) if stamp != EPOCH else None  # (heal's stand-in for no time: no moment)
        now = _nanos(moment)
        if now is None and moment is not None:
            self.out_of_range += 1
        elif moment is None and stamp is not None and stamp != EPOCH:
            self.unreadable += 1
        asked = self.asked if self.asked is not None else self.last_nanos  # (none seen yet: the event before)
        if now is not None:
            self._stretch(self.root, now)
            self.last_nanos = now
        self.count += 1
        again = etype in CALLED and self.open_calls.written_again(call_id(payload), payload)
        if now is not None and etype in _SEEN and not again:
            self.asked = now
        went = None if again else self.calls.of(etype, payload)  # (again: the call of that id, written again, one call)
        if etype == ASSISTANT_MESSAGE:
            self._answer(went, payload, asked, now)
        elif etype == ERROR:  # an error the agent met (an API error, a rate limit): a model call that failed
            self._failed_call(went, payload, asked, now)
        elif went == NEW:  # model output with no assistant_message: still a model call (Codex's tool-only responses)
            self._model_call({}, asked, now)
        elif went is not None and self.chat is not None:  # more output of the same call (reasoning, then its tool calls)
            self._stretch(self.chat, now)
        if again:
            pass
        elif etype in CALLED:
            self._tool_called(payload, now)
        elif etype in COMPLETED or etype in FAILED or etype == TOOL_UNANSWERED:
            self._tool_ended(etype, payload, now, event)
        elif etype == RUN_FAILED and not ends_unknown(etype, payload, event.get("synthetic")):
            self.failed.append((failure_entry(RUN_FAILED, payload, event.get("seq")), now))
        if etype != ASSISTANT_MESSAGE and "usage" in payload:
            self._usage(self.chat, payload["usage"])  # e.g. Codex's token counts, after the call they count

    def add_heal(self, record: dict[str, Any]) -> None:
        if isinstance(record.get("repairs"), int):
            self.repairs = record["repairs"]

    # spans ------------------------------------------------------------------------------------------
    def _answer(self, went: str | None, payload: dict[str, Any], asked: int | None, now: int | None) -> None:
        """An assistant_message (``went``: which call it is of, ``ModelCalls``): more of the last call's response (the
        same ``messageId`` / ``responseId``), the answer of a call that gave only reasoning so far, else a model call of
        its own."""
        chat = self.chat
        if went == NEW or chat is None:
            self._model_call(payload, asked, now)
            return
        self._stretch(chat, now)
        if went == ANSWER:
            self._describe(chat, payload)
        elif went == SAME:
            self._usage(chat, payload.get("usage"))

    def _model_call(self, payload: dict[str, Any], asked: int | None, now: int | None, answered: bool = True) -> Span:
        """A new ``chat`` span, of the model call asked at ``asked`` (else begun ``now``) whose output (or error,
        not ``answered``) came ``now``."""
        span = Span(_hex(self.trace_id, "chat", self.made, size=8), "chat", SPAN_KIND_CLIENT,
                    asked if asked is not None else now)
        self._stretch(span, now)
        span.attributes["gen_ai.operation.name"] = "chat"
        if self.run_id:
            span.attributes["gen_ai.conversation.id"] = as_text(self.run_id)
        self.spans.append(span)
        self.made += 1
        self.chat = span
        self._describe(span, payload, answered)
        return span

    def _describe(self, span: Span, payload: dict[str, Any], answered: bool = True) -> None:
        """What model output ``payload`` tells of its call ``span``: its model (else the run's; a failed call's, not
        ``answered``, the model the last call asked, no response's), response id, finish reason and usage."""
        named = payload.get("model") if isinstance(payload.get("model"), str) else None
        attrs = span.attributes
        if named or "gen_ai.provider.name" not in attrs:  # (named at its start; again by the answer that names it)
            model = named or (self.model if answered else self.chat_model or self.model)
            span.name = f"chat {model}" if model else "chat"
            attrs["gen_ai.provider.name"] = provider_of(model, self.framework)
            if model:
                self.chat_model = attrs["gen_ai.request.model"] = model
                if answered:
                    attrs["gen_ai.response.model"] = model
        key = response_id(payload)
        if isinstance(key, str):
            attrs["gen_ai.response.id"] = key
        reason = payload.get("stopReason")
        if isinstance(reason, str) and reason:
            attrs["gen_ai.response.finish_reasons"] = [reason]
        self._usage(span, payload.get("usage"))

    def _failed_call(self, went: str | None, payload: dict[str, Any], asked: int | None, now: int | None) -> None:
        """An ``error`` event: the model call it ended failed (status ERROR, ``error.type`` its code, else ``error``;
        ``report`` lists the event among the run's errors): the last call, when it gave only reasoning so far (Codex's
        stream cut off) or the error names its response (``went``: ``SAME``); else a call of its own, asked at
        ``asked``, that got the error for an answer (Claude Code's API error, each retry's). One failed span for each
        error event."""
        chat = self.chat
        if went != SAME or chat is None:
            chat = self._model_call({}, asked, now, answered=False)
        self._stretch(chat, now)
        code, message = error_of(payload)
        chat.fail(code or ERROR, message)

    def counted(self, usage: Any) -> dict[str, int | float]:
        """The counts of usage object ``usage``, read once, counted or left out as ``report`` counts it (``usage_of``,
        a number beyond a double kept as read: ``1e400`` its text): none when it holds a number no count holds
        (``1e5000``), a value that is no count (``"45"``) left out; what it leaves out noted in ``left_out``."""
        unheld: list[str] = []
        skipped: list[str] = []
        found = usage_of(usage, unheld, skipped, as_read=True)
        if unheld or skipped:
            self.left_out.append((unheld or skipped, not unheld))
        return found or {}

    def _usage(self, span: Span | None, usage: Any) -> None:
        found = self.counted(usage)
        add = self.totals.add
        for key, value in found.items():
            add(key, value)
        if found and span is not None and span.kind == SPAN_KIND_CLIENT:  # (summed as the run's totals are)
            sums = span.usage
            if sums is None:
                sums = span.usage = UsageSum()
            for key, value in found.items():
                sums.add(key, value)
            span.attributes.update({name: token_count(value) for name, value in tokens(sums.settled()).items()})

    def _tool_called(self, payload: dict[str, Any], now: int | None) -> None:
        name, cid = tool_name(payload) or "unknown", call_id(payload)
        span = self._tool_span(name, cid, now)
        self.open_calls.open(cid, name, span, payload)
        early = self.early.pop(cid, None) if cid else None
        if cid is not None and early is not None:  # (its result came before it: answered here, ``CallPairing.called``)
            self.open_calls.close_id(cid)
            _, ended, failure = early
            self._end_span(span, ended, failure)

    def _tool_span(self, name: str, cid: str | None, now: int | None) -> Span:
        """A new ``execute_tool`` span of tool ``name`` and call id ``cid``, begun at ``now`` (else the latest time)."""
        span = Span(_hex(self.trace_id, "tool", cid or "", self.made, size=8), f"execute_tool {name}",
                    SPAN_KIND_INTERNAL, now if now is not None else self.last_nanos)
        span.attributes.update({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                                "gen_ai.tool.type": "function"})
        if cid:
            span.attributes["gen_ai.tool.call.id"] = cid
        if self.run_id:
            span.attributes["gen_ai.conversation.id"] = as_text(self.run_id)
        self.spans.append(span)
        self.made += 1
        return span

    def _tool_ended(self, etype: Any, payload: dict[str, Any], now: int | None, event: dict[str, Any]) -> None:
        cid, name = call_id(payload), tool_name(payload)
        if cid and cid in self.early and etype != TOOL_UNANSWERED:
            return  # (a result written before its call, written again: the first counts)
        span = self.open_calls.close(cid, name)
        if span is None and (etype == TOOL_UNANSWERED or (cid and cid in self.open_calls.answered)):
            return  # the result of a call answered already, written again (or heal's mark of none): no other call
        if etype == TOOL_UNANSWERED:
            failure: tuple[Any, Any] | None = (TOOL_UNANSWERED, payload.get("reason") or UNANSWERED_MESSAGE)
        elif result_failed(etype, event):  # (error.type: the tool's error code, as a run's is its code; else what happened)
            code, message = error_of(payload)
            failure = (code or "tool_failed", message or failure_words(event))
        else:
            failure = None
        if span is None and cid:  # its call may come later in the run: the result waits for it
            self.early[cid] = (name, now, failure)
            return
        if span is None:
            # a result without its call: a call of its own, as report counts it (``unknown`` when it names no tool),
            # of no length, at the result's time
            span = self._tool_span(name or "unknown", cid, now)
        self._end_span(span, now, failure)

    def _end_span(self, span: Span, now: int | None, failure: tuple[Any, Any] | None) -> None:
        """Tool span ``span`` ended ``now``, failed with ``failure`` (error type and message) unless None."""
        self._stretch(span, now)
        if failure is not None:
            span.fail(*failure)

    @staticmethod
    def _stretch(span: Span, now: int | None) -> None:
        if now is None:
            return
        if span.start is None or now < span.start:
            span.start = now
        if span.end is None or now > span.end:
            span.end = now

    # the requests -----------------------------------------------------------------------------------
    def finished(self) -> list[dict[str, Any]]:
        """Requests of the spans that are finished (no tool result or later part of a response can change them), of
        at most ``SPANS_PER_REQUEST`` spans each, when ``SPANS_PER_REQUEST`` or more are held; they are let go. None
        (an empty list): too few held, or none finished yet."""
        if len(self.spans) < self.check_at:
            return []
        still = {id(span) for span in self.open_calls}
        still.add(id(self.chat))
        done = [span for span in self.spans if id(span) not in still]
        self.spans = [span for span in self.spans if id(span) in still]
        self.check_at = len(self.spans) + SPANS_PER_REQUEST  # (many open: looked at again only once as many more came)
        start = self.root.start or 0
        return [self._request([self._span(s, self.root.span_id, start) for s in done[i:i + SPANS_PER_REQUEST]])
                for i in range(0, len(done), SPANS_PER_REQUEST)]

    @property
    def time_unknown(self) -> bool:
        """Does the run tell no time at all (its spans written at 0, OTLP's unset value)?"""
        return self.root.start is None

    def requests(self) -> list[dict[str, Any]]:
        """The run's last requests, at its end: the spans still held (calls still open among them), at most
        ``SPANS_PER_REQUEST`` to a request, the last one with the run's own span first (its totals known now)."""
        root = self.root
        attrs = root.attributes
        attrs["gen_ai.operation.name"] = "invoke_agent"
        attrs["gen_ai.provider.name"] = provider_of(self.model, self.framework)
        if self.framework:
            attrs["gen_ai.agent.name"] = self.framework
        if self.run_id:
            attrs["gen_ai.conversation.id"] = as_text(self.run_id)
        if self.model:
            attrs["gen_ai.request.model"] = self.model
        # the run's totals as report counts the run's usage: each count its run record's usage gives (a captured run's
        # only count), the sum of its model calls' for the others
        totals = combined_usage(self.declared, self.totals.settled()) or {}
        attrs.update({name: token_count(value) for name, value in tokens(totals).items()})
        attrs["replay.events"] = self.count
        if self.repairs is not None:
            attrs["replay.repairs"] = self.repairs
        if self.out_of_range:
            attrs["replay.timestamps_out_of_range"] = self.out_of_range
        if self.time_unknown:
            attrs["replay.time_unknown"] = True
        self._run_errors(root)
        for cid, (name, now, failure) in self.early.items():  # results whose call never came: calls of their own
            self._end_span(self._tool_span(name or "unknown", cid, now), now, failure)
        self.early = {}
        for span in self.open_calls:  # never closed, not even marked unanswered: the run ended first
            self._stretch(span, self.last_nanos)
            span.fail(TOOL_UNANSWERED, UNANSWERED_MESSAGE)
        start = root.start if root.start is not None else 0
        held, self.spans = self.spans, []
        in_last = (len(held) + 1) % SPANS_PER_REQUEST or SPANS_PER_REQUEST  # (the run's own span among them)
        last = len(held) - (in_last - 1)
        out = [self._request([self._span(s, root.span_id, start) for s in held[i:i + SPANS_PER_REQUEST]])
               for i in range(0, last, SPANS_PER_REQUEST)]
        out.append(self._request([self._span(root, None, start)] + [self._span(s, root.span_id, start) for s in held[last:]]))
        return out

    def _run_errors(self, root: Span) -> None:
        """The run's own errors as ``report`` lists them (``own_error``: its run record's first; then each
        ``run_failed``, but one that says the record's error again, ``said_again``): each an ``exception`` event of the
        run's span (``exception.type`` its code, else ``run_failed``; ``exception.message``; at its event's time, the
        record's at the run's end), so the trace holds as many as the report. The span's one status is the run's last
        word on how it failed: its last ``run_failed`` (what the run met at its end), else its run record's error when
        the record says the run failed (``"status": "error"``): a run ``report`` calls ok (a record with an error and
        ``"status": "ok"``, a cancelled run that ended well) keeps an unset status, its error an event only."""
        own = own_error(self.record)
        errors = [(own, self.root.end)] if own is not None else []
        errors += [(entry, now) for entry, now in self.failed if not said_again(entry, own)]
        for entry, now in errors:
            kind = entry["code"] or RUN_FAILED
            root.events.append({"timeUnixNano": str(now if now is not None else root.end or 0), "name": "exception",
                                "attributes": [attribute("exception.type", kind),
                                               attribute("exception.message", entry["message"])]})
        declared = self.record.get("status") if isinstance(self.record, dict) else None
        last = self.failed[-1][0] if self.failed else own if declared == "error" else None
        if last is not None:  # (a run ``report`` says failed; one whose record holds an error but says ok is not)
            root.fail(last["code"] or RUN_FAILED, last["message"])

    def _request(self, out: list[dict[str, Any]]) -> dict[str, Any]:
        """An ExportTraceServiceRequest of the spans ``out``, under the run's resource."""
        resource = [attribute("service.name", self.framework or "agent")]
        if self.source:
            resource.append(attribute("replay.source", self.source))
        # every string valid UTF-8, as OTLP's are (protobuf refuses half a surrogate pair: "\ud83d", which a JavaScript
        # writer leaves where it cut a string in an emoji, is written as those six characters, as reports show it)
        return printable({"resourceSpans": [{"resource": {"attributes": resource},
                                             "scopeSpans": [{"scope": dict(SCOPE), "spans": out}]}]})

    def _span(self, span: Span, parent: str | None, default: int) -> dict[str, Any]:
        start = span.start if span.start is not None else default
        end = span.end if span.end is not None and span.end >= start else start
        out: dict[str, Any] = {"traceId": self.trace_id, "spanId": span.span_id}
        if parent is not None:
            out["parentSpanId"] = parent
        out.update(name=span.name, kind=span.kind, startTimeUnixNano=str(start), endTimeUnixNano=str(end),
                   attributes=[attribute(k, v) for k, v in span.attributes.items()])
        if span.events:
            out["events"] = span.events
        status: dict[str, Any] = {"code": span.status}
        if span.message:
            status["message"] = span.message
        out["status"] = status
        return out

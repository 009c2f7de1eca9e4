"""BuildReplayScript: groups a session journal's model chunks by (turn, step) into the replay-script document.

Input: a parsed session journal (``replay schema session``). Output: the lines of one JSON document
(``replay schema replay-script``), as raw lines for ``write``::

    {"version":1,"session":"session.jsonl","groups":[
    {"turn":1,"step":0,"chunks":[...]},
    {"turn":1,"step":1,"chunks":[...],"action":"throw","error":{"name":"APIError","message":"overloaded"}}
    ]}

Streaming: only the group being read and the last finished one (as bytes) are held. A group that
does not end with ``finish`` and has no override is left out and reported
(``E_SESSION_GROUP_UNFINISHED``, naming its turn and step); so are broken chunk lines, split groups
and, at the end, overrides naming a step the session does not have. An input none of whose records is a session
line, or with no line at all (an empty file), is said to be no session (``E_SESSION_LINE_INVALID``). The command routes
``read.errors`` and ``parse.errors`` in, to tell an input with no line from one whose every line was refused (those are
passed on as this stage's errors, as they were).
"""

from __future__ import annotations

from typing import Any

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.errors import diagnostic
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import Option, Transform
from replay.pipeline.io.journals import source_name
from replay.pipeline.model.records import is_record
from replay.pipeline.model.session import (
    CHUNK_TYPE,
    SCRIPT_VERSION,
    ChunkGrouper,
    Group,
    Key,
    Override,
    group_problem,
    load_overrides,
    unused_override_problem,
)
from replay.pipeline.model.validation import shown

PLACING_KEYS = ("$.type", "$.turn", "$.step")  # what makes a line a chunk of one (turn, step) group


@register("script")
class BuildReplayScript(Transform):
    summary = ("Group a session journal's assistant/chunk lines by (turn, step) into the replay-script document "
               "(its lines go to `write`); a group without a finish chunk needs an override.")
    options = {
        "override": Option(str, "", "override sidecar (replay.override.json): throw / hang for named (turn, step); "
                                    "empty: none"),
    }
    emits_raw = True
    ports = ("errors", "notices")  # notices: a chunk that writes a key twice (E_JSON_DUPLICATE_KEY, a warning)

    def __init__(self, overrides: dict[Key, Override] | None = None, /, **options: Any) -> None:
        """``overrides``: the sidecar as read already (``built_again``); else it is read here."""
        super().__init__(**options)
        path = self.config["override"]
        self.overrides = overrides if overrides is not None else load_overrides(path) if path else {}
        self._grouper = ChunkGrouper(self.overrides)
        self._pending: bytes | None = None  # the last replayable group, until we know whether another follows
        self._started = False
        self._source: str | None = None
        self._session: str | None = None  # the one file the graph reads (besides the override), from preflight
        self._lines_read = 0  # the input's records of a type (replay's own marks aside)
        self._first: tuple[Any, dict[str, Any]] | None = None  # the first one's type and where it was
        self._session_lines = 0  # those of a session's form (a `kind/what` type: assistant/chunk, turn/start, ...)
        self._records = 0  # every record that reached the stage (replay's own marks too)
        self._unread = 0  # lines read or parse refused, routed in on a side input (and passed on as this stage's errors)

    def built_again(self, given: dict[str, Any]) -> BuildReplayScript:
        """The copy for a run takes the sidecar as this stage read it (read once: it may be a pipe)."""
        same = given.get("override", "") == self.config["override"]
        return type(self)(self.overrides if same else None, **given)

    def preflight(self, inputs: list[str]) -> None:
        """The session's name for the document's head when no line of it reaches this stage (an empty session,
        or one whose every line was refused): the one file the graph reads besides the override."""
        sessions = [path for path in inputs if path not in self.input_files()]
        if len(sessions) == 1:
            self._session = source_name(sessions[0])

    def whole_stream(self) -> bool:
        return True  # one document

    def input_files(self) -> list[str]:
        return [self.config["override"]] if self.config["override"] else []

    def __call__(self, batch: Batch) -> Batch | None:
        if batch.port is not None:  # diagnostics routed in (`read.errors`, `parse.errors`): lines the input had
            for problem in batch.events or ():
                if type(problem) is dict:
                    self._unread += 1
                    self.emit("errors", problem)  # (reported as they were: they reach stderr as before)
            return None
        lines: list[bytes] = []
        if not self._started:
            lines.append(self._header(batch.source))
        self._source = batch.source
        self._records += len(batch.events or ())
        grouper = self._grouper
        for i, record in enumerate(batch.events or ()):
            if type(record) is dict and record.get("type") == CHUNK_TYPE and batch.raws[i] is not None:
                self._duplicates(batch, i)
            self._count(record, batch, i)
            done = grouper.feed(record, batch.position(i))
            if grouper.problems:
                self._report(grouper.problems)
            if done is not None:
                self._complete(done, lines)
        return self._lines(lines, batch.source)

    def flush(self) -> Batch | None:
        lines: list[bytes] = []
        if not self._started:
            lines.append(self._header(self._session))
        last = self._grouper.finish()
        if last is not None:
            self._complete(last, lines)
        if self._pending is not None:
            lines.append(self._pending)
            self._pending = None
        lines.append(b"]}")
        self._report([unused_override_problem(o, self.config["override"]) for o in self._grouper.unused_overrides()])
        self._no_session()
        return self._lines(lines, self._source or "<script>")

    def _count(self, record: Any, batch: Batch, i: int) -> None:
        """One more record of the input: of a session's form or not (its first one kept, to name it)."""
        kind = record.get("type") if type(record) is dict and not is_record(record) else None
        if not isinstance(kind, str) or not kind:
            return  # (no record of a type: reported as no session line already)
        self._lines_read += 1
        if self._first is None:
            self._first = (kind, batch.where(i))
        self._session_lines += "/" in kind.strip("/")

    def _no_session(self) -> None:
        """An input of records none of which is a session line (another agent's log, a canonical journal) is no
        session: said once, at the end, rather than an empty script passed off as one with no model call. So is an
        input with no line at all (an empty file, blank lines: a harness that stopped before writing one); one whose
        every line was refused upstream has been reported already."""
        if not self._records and not self._unread:
            self._report([{
                "code": "E_SESSION_LINE_INVALID", **({"source": self._session} if self._session else {}),
                "expected": "session lines: assistant/chunk, turn/start, tool/call, ...", "received": "no line",
                "message": "the input has no line: this is no session journal (a harness that stopped before writing "
                           "one?), and its script has no model call",
                "howToFix": "Give `replay script` the session JSONL a harness persists (`replay schema session`); a "
                            "session with no model call still has its harness lines (session/start, turn/start, ...).",
            }])
            return
        if not self._lines_read or self._session_lines or self._first is None:
            return
        kind, where = self._first
        self._report([{
            "code": "E_SESSION_LINE_INVALID", **where, "path": "$.type", "expected": "assistant/chunk, turn/start, tool/call, ...",
            "received": shown(kind),
            "message": f"no line of the input is a session line ({self._lines_read} records, the first of type "
                       f"{shown(kind)!r}): this is not a session journal, and its script has no model call",
            "howToFix": "Give `replay script` the session JSONL a harness persists (`replay schema session`); an "
                        "agent's run journal or another agent's log is read by `replay read`, `heal` and `report`.",
        }])

    # ------------------------------------------------------------------------------------------
    def _header(self, source: str | None) -> bytes:
        self._started = True
        head: dict[str, Any] = {"version": SCRIPT_VERSION}
        if source is not None and not source.startswith("<"):
            head["session"] = source
        if self.config["override"]:
            head["override"] = self.config["override"]
        return exactjson.dumps(head)[:-1] + b',"groups":['

    def _complete(self, group: Group, lines: list[bytes]) -> None:
        problem = group_problem(group)
        if problem is not None:
            self._report([problem])
            return
        if self._pending is not None:
            lines.append(self._pending + b",")
        self._pending = exactjson.dumps(group.to_json())

    def _duplicates(self, batch: Batch, i: int) -> None:
        """A chunk is written anew in the script, where only the last value of a key written twice in it survives;
        so are its line's ``turn`` and ``step`` (and ``type``), whose last values alone say which group it is in."""
        keys = [k for k in exactjson.duplicate_keys(batch.raws[i], batch.events[i])  # type: ignore[arg-type,index]
                if k in PLACING_KEYS or k == "$.chunk" or k.startswith(("$.chunk.", "$.chunk["))]
        if keys:
            where = batch.where(i)
            placing = [k for k in keys if k in PLACING_KEYS]
            what = ("in its chunk" if not placing else "where it says which model call it is part of" if placing == keys
                    else "in its chunk and where it says which model call it is part of")
            self.emit("notices", {"code": "E_JSON_DUPLICATE_KEY", "action": "reported", "keys": keys, **where,
                                  "message": f"line {where.get('line')} has a key written twice {what} ({', '.join(keys)}); "
                                             f"the script holds the last value of each" + (" (and groups it by them)" if placing else "")})

    def _report(self, problems: list[dict[str, Any]]) -> None:
        for problem in problems:
            body = dict(problem)
            code, message = body.pop("code"), body.pop("message")
            body.setdefault("stage", self.id)
            self.emit("errors", diagnostic(code, message, **body))
        problems.clear()

    @staticmethod
    def _lines(lines: list[bytes], source: str) -> Batch | None:
        if not lines:
            return None
        n = len(lines)
        return Batch(source, None, list(lines), [None] * n, [None] * n)

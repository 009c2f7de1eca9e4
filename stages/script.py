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
line, with no line at all (an empty file), or whose every line was refused, is said to be no session
(``E_SESSION_LINE_INVALID``, ``SessionShape``: the Python API's check too). The command routes ``read.errors`` and
``parse.errors`` in, to tell an input with no line from one whose every line was refused (those are passed on as this
stage's errors, as they were).

The stage makes the script of one session: a graph that reads more than one (two files, a folder of sessions) is
refused before it runs (E_USAGE_INVALID), as ``replay script`` refuses them. With no ``override``, the sidecar is
``replay.override.json`` beside the session file when there is one (``sidecar = false``: none; something at that name
that is no file, a folder or a link to nothing, is refused as ``--override`` of it is), so the graph
``replay stages --graph script`` prints does what ``replay script`` does.
"""

from __future__ import annotations

from typing import Any

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.errors import ReplayError, diagnostic
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import Option, Transform
from replay.pipeline.io.journals import STDIN, is_url, source_name
from replay.pipeline.model.session import (
    CHUNK_TYPE,
    TORN_FIX,
    ChunkGrouper,
    Group,
    Key,
    Override,
    SessionShape,
    group_problem,
    load_overrides,
    script_version,
    session_folder,
    sidecar_beside,
    unused_override_problem,
)

PLACING_KEYS = ("$.type", "$.turn", "$.step")  # what makes a line a chunk of one (turn, step) group


@register("script")
class BuildReplayScript(Transform):
    summary = ("Group a session journal's assistant/chunk lines by (turn, step) into the replay-script document "
               "(its lines go to `write`); a group without a finish chunk needs an override.")
    options = {
        "override": Option(str, "", "override sidecar (replay.override.json): throw / hang for named (turn, step); "
                                    "empty: replay.override.json beside the session file when there is one"),
        "sidecar": Option(bool, True, "with no `override`, read replay.override.json beside the session file when there "
                                      "is one (false: no override; a session on stdin has none beside it)"),
    }
    emits_raw = True
    one_document = True  # a sink writes the script whole, or (an error reported: a step left out) not at all
    takes_one_file = True  # the session: a folder is refused (``folder_refused``), one session in it or many
    ports = ("errors", "notices")  # notices: a session line that writes a key twice (E_JSON_DUPLICATE_KEY, a warning)

    def __init__(self, overrides: dict[Key, Override] | None = None, /, **options: Any) -> None:
        """``overrides``: the sidecar as read already (``built_again``); else it is read here."""
        super().__init__(**options)
        path = self.config["override"]
        self.overrides = overrides if overrides is not None else load_overrides(path) if path else {}
        self._override: str = path  # the sidecar read: the option's, or the one found beside the session (preflight)
        self._grouper = ChunkGrouper(self.overrides)
        self._pending: bytes | None = None  # the last replayable group, until we know whether another follows
        self._started = False
        self._source: str | None = None
        self._session: str | None = None  # the one file the graph reads (besides the override), from preflight
        self._stdin = False  # ... when that is stdin (no sidecar beside it: a fix names --override)
        self._shape = SessionShape()  # is the input a session at all (lines refused upstream: its ``refused``)

    def built_again(self, given: dict[str, Any]) -> BuildReplayScript:
        """The copy for a run takes the sidecar as this stage read it (read once: it may be a pipe)."""
        same = given.get("override", "") == self.config["override"]
        return type(self)(self.overrides if same else None, **given)

    def preflight(self, inputs: list[str]) -> None:
        """The session: the one file the graph reads besides the override (two, or a folder's many, are refused: one
        script of them all would be none of theirs). Its name heads the document when no line of it reaches this stage
        (an empty session, or one whose every line was refused); with no ``override``, its sidecar is read here."""
        sessions = [path for path in inputs if path not in self.input_files()]
        if len(sessions) > 1:
            shown = ", ".join(repr(source_name(p)) for p in sessions[:2]) + (" ..." if len(sessions) > 2 else "")
            raise ReplayError(
                "E_USAGE_INVALID", f"stage {self.id!r} makes the script of one session, and the graph reads "
                f"{len(sessions)}: {shown}", path=f"stages.{self.id}", expected="one session journal (a file, or stdin)",
                received=[source_name(p) for p in sessions[:3]],
                howToFix="Give one session file, and run the graph once per session (`replay script SESSION` for each): "
                         "each session has its own script.")
        if len(sessions) != 1:
            return
        session = sessions[0]
        self._session = source_name(session)
        self._stdin = session == STDIN
        if self.config["override"] or not self.config["sidecar"] or self._stdin or is_url(session):
            return
        beside = sidecar_beside(session)  # (something at its name that is no file: refused, as --override of it is)
        if beside is not None:
            self._override = str(beside)
            self.overrides = load_overrides(beside)
            self._grouper = ChunkGrouper(self.overrides)

    def folder_refused(self, folder: str) -> ReplayError:
        return session_folder(folder)

    def whole_stream(self) -> bool:
        return True  # one document

    def input_files(self) -> list[str]:
        return [self._override] if self._override else []

    def __call__(self, batch: Batch) -> Batch | None:
        if batch.port is not None:  # diagnostics routed in (`read.errors`, `parse.errors`): lines the input had
            for problem in batch.events or ():
                if type(problem) is dict:
                    self._shape.refused += 1
                    if problem.get("code") == "E_JSONL_LINE_TORN":  # (a session's cut-off last line: its own advice)
                        problem = {**problem, "howToFix": TORN_FIX}
                    self.emit("errors", problem)  # (reported as they were: they reach stderr as before)
            return None
        lines: list[bytes] = []
        if not self._started:
            lines.append(self._header(batch.source))
        self._source = batch.source
        grouper = self._grouper
        for i, record in enumerate(batch.events or ()):
            if type(record) is dict and batch.raws[i] is not None:
                self._duplicates(batch, i)
            self._shape.count(record, batch.where(i) if self._shape.first is None else {})  # (kept of the first only)
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
        not_a_session = self._no_session()
        if not not_a_session:  # (no session: no override names a step of it; that is no news)
            self._report([unused_override_problem(o, self._override) for o in self._grouper.unused_overrides()])
        return self._lines(lines, self._source or "<script>")

    def _no_session(self) -> bool:
        """Is the input no session (``SessionShape``: said once, at the end)? A problem with every line refused upstream
        (each one reported already) is said too: no session lines were read."""
        problem = self._shape.problem(self._session)
        if problem is None:
            return False
        self._report([problem])
        return True

    # ------------------------------------------------------------------------------------------
    def _header(self, source: str | None) -> bytes:
        self._started = True
        head: dict[str, Any] = {"version": script_version()}
        if source is not None and not source.startswith("<"):
            head["session"] = source
        if self._override:
            head["override"] = self._override
        return exactjson.dumps(head)[:-1] + b',"groups":['

    def _complete(self, group: Group, lines: list[bytes]) -> None:
        problem = group_problem(group, on_stdin=self._stdin)
        if problem is not None:
            self._report([problem])
            return
        if self._pending is not None:
            lines.append(self._pending + b",")
        self._pending = exactjson.dumps(group.to_json())

    def _duplicates(self, batch: Batch, i: int) -> None:
        """A key written twice on a session line keeps only its last value: in a chunk, which the script writes anew;
        in its ``type``, ``turn`` and ``step`` (``PLACING_KEYS``), whose last values alone say whether it is a chunk at
        all and which group it is in (a chunk line whose last ``type`` is another is no chunk: its model call left out
        of the script); anywhere else on the line too. Each such line is a warning naming its keys."""
        keys = exactjson.duplicate_keys(batch.raws[i], batch.events[i])  # type: ignore[arg-type,index]
        if not keys:
            return
        where = batch.where(i)
        placing = [k for k in keys if k in PLACING_KEYS]
        kind = batch.events[i].get("type")  # type: ignore[index,union-attr]
        said = (f" (it is read as a line of type {kind!r}" + (", and its chunk grouped by its last turn and step)"
                                                              if kind == CHUNK_TYPE else ")") if placing else "")
        self.emit("notices", {"code": "E_JSON_DUPLICATE_KEY", "action": "reported", "keys": keys, **where,
                              "message": f"line {where.get('line')} has a key written twice ({', '.join(keys)}); the "
                                         f"script reads the last value of each{said}"})

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

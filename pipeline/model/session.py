"""Session journals: an agent's persisted JSONL, grouped into one replay group per model stream call.

A session journal has one JSON object per line, each with a string ``type``. ``assistant/chunk``
lines carry ``turn``, ``step`` and ``chunk`` (one streamed model chunk with its own ``type``:
``text-delta``, ``reasoning-delta``, ``tool-call``, ``finish`` ...). Every other line (``turn/start``,
``tool/call``, ``usage``, ``session/*``, or a type nobody knows) belongs to the harness and is not part
of the replay script. ``replay schema session`` has the format.

The agent loop makes one model stream call per step and tags each chunk with the current
``(turn, step)``, so the chunks of one call are contiguous in the journal: grouping them in journal
order gives the calls back exactly. A group is complete only when its last chunk is ``finish``;
a group without one is what a stream that threw leaves behind, and is refused unless the override
sidecar (``replay.override.json``, ``replay schema replay-override``) says what happened there:
``throw`` (raise a recorded error) or ``hang`` (never finish until the caller cancels).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.errors import (
    ReplayError,
    diagnostic,
    excerpt,
    folder_for_a_file,
    input_unreadable,
    line_refusal,
)
from replay.pipeline.io.journals import (
    BLANK,
    OVERRIDE_NAME,
    Gunzipping,
    GzipUnreadable,
    not_file_or_dir,
    path_kind,
    without_mark,
)
from replay.pipeline.io.json_file import read_json_file
from replay.pipeline.model.dropped import NOT_OBJECT, not_object_message
from replay.pipeline.model.records import RECORD_KEY, is_record
from replay.pipeline.model.schema_facts import const
from replay.pipeline.model.session_rules import (
    DEEP_CHUNK_FIX,
    FINISH,
    chunk_problem,
    finish_problem,
    group_keys,
    script_keys,
)
from replay.pipeline.model.validation import MISSING, json_type, shown

CHUNK_TYPE = "assistant/chunk"
OVERRIDE_FILE = OVERRIDE_NAME
ACTIONS = ("throw", "hang")

Key = tuple[int, int]


def step_name(turn: Any, step: Any) -> str:
    """How messages name a model call: ``(turn 1, step 0)``."""
    return f"(turn {turn}, step {step})"


def _is_count(value: Any) -> bool:
    return type(value) is int and value >= 0


# overrides ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Override:
    """What the sidecar says happened at one model call that the journal cannot express."""

    turn: int
    step: int
    action: str  # "throw" | "hang"
    error: dict[str, Any] | None = None  # for "throw": {"name", "message", ...}

    @property
    def key(self) -> Key:
        return (self.turn, self.step)


def override_beside(session: str | Path) -> Path:
    """Where the sidecar of a session journal is looked for by default."""
    return Path(session).parent / OVERRIDE_FILE


# How to do without the sidecar beside a session, in each way in: `replay script`, the script stage, the Python API.
WITHOUT_SIDECAR = ("give --no-override to script the session without one (the script stage's `sidecar = false`, "
                   "the Python API's `use_sidecar=False`)")


def refuse_unusable_override(path: str | Path, *, beside: bool = False) -> None:
    """Refuse a sidecar path that names nothing (a link to nothing too) or a folder, before anything runs (exit 2): the
    one check for ``--override FILE`` and for the sidecar found ``beside`` a session (something at its name that is no
    file it could read: it is refused as ``--override`` of it would be, not passed over). A pipe is read."""
    name = str(path)
    if not os.path.exists(name):
        link = " (a link to nothing)" if os.path.islink(name) else ""
        raise ReplayError("E_INPUT_PATH_NOT_FOUND", f"override sidecar {name!r} does not exist{link}", path=name,
                          howToFix=(f"Restore what the link {name} points to or remove the link, name a sidecar with "
                                    f"--override FILE, or {WITHOUT_SIDECAR}." if beside else
                                    "Check the path given to --override, or leave it out."))
    if os.path.isdir(name):
        raise folder_for_a_file(name, what="override sidecar", **(
            {"howToFix": f"{name} is a folder where the session's override sidecar is looked for: remove or rename it, "
                         f"name a sidecar file with --override FILE, or {WITHOUT_SIDECAR}."} if beside else
            {"path": "--override", "howToFix": f"Name the sidecar file, e.g. --override {os.path.join(name, OVERRIDE_FILE)}, "
                                               "or leave --override out."}))


def sidecar_beside(session: str | Path) -> Path | None:
    """The sidecar beside a session journal, or None when nothing is at its name; something there that cannot be read
    as one (a folder, a link to nothing) is refused (``refuse_unusable_override``), and so is one that is no regular
    file (a FIFO, a socket, a device): found, not named, it is more likely left there by mistake, and reading a FIFO no
    one writes would wait forever (``--override`` of it reads it: named, it is meant)."""
    beside = override_beside(session)
    if not os.path.lexists(beside):
        return None
    refuse_unusable_override(beside, beside=True)
    if not os.path.isfile(beside):
        name = str(beside)
        raise not_file_or_dir(name, "override sidecar", f"{name} is where the session's override sidecar is looked for, "
                              f"and what is no regular file there is read only when named: give --override {name} to read it, remove "
                              f"or rename it, or {WITHOUT_SIDECAR}.", expected="a regular file",
                              also=" (found beside the session, it is not opened)")
    return beside


OVERRIDE_EXAMPLE = '{"overrides": [{"turn": 1, "step": 0, "action": "throw", "error": {"name": "APIError", "message": "overloaded"}}]}'


def _override_error(message: str, source: str, path: str, **fields: Any) -> ReplayError:
    return ReplayError("E_OVERRIDE_INVALID", message, source=source, path=path, example=OVERRIDE_EXAMPLE, **fields)


def parse_overrides(document: Any, source: str = "<memory>") -> dict[Key, Override]:
    """Check a sidecar document (see ``replay schema replay-override``); its overrides by (turn, step)."""
    if not isinstance(document, dict):
        raise _override_error("an override sidecar is a JSON object", source, "$", expected="object",
                              received=json_type(document))
    for key in document:
        if key not in ("overrides", "$schema", "description"):
            raise _override_error(f"unknown key {key!r} in the override sidecar", source, f"$.{key}",
                                  expected="overrides, $schema or description", received=key)
    items = document.get("overrides")
    if not isinstance(items, list):
        raise _override_error("`overrides` must be a list", source, "$.overrides", expected="array",
                              received=shown(document.get("overrides", MISSING)))
    found: dict[Key, Override] = {}
    for n, item in enumerate(items):
        where = f"$.overrides[{n}]"
        if not isinstance(item, dict):
            raise _override_error("an override is an object", source, where, expected="object", received=json_type(item))
        for key in item:
            if key not in ("turn", "step", "action", "error", "description"):
                raise _override_error(f"unknown key {key!r} in an override", source, f"{where}.{key}",
                                      expected="turn, step, action, error or description", received=key)
        for key in ("turn", "step"):
            if not _is_count(item.get(key)):
                raise _override_error(f"`{key}` must be an integer >= 0", source, f"{where}.{key}",
                                      expected="integer >= 0", received=shown(item.get(key, MISSING)))
        action = item.get("action")
        if action not in ACTIONS:
            raise _override_error(f"`action` must be one of {', '.join(ACTIONS)}", source, f"{where}.action",
                                  expected=" | ".join(ACTIONS), received=shown(item.get("action", MISSING)))
        error = item.get("error")
        if action == "throw":
            if not isinstance(error, dict):
                raise _override_error("a `throw` override needs `error`: {\"name\", \"message\"}", source, f"{where}.error",
                                      expected="object", received=shown(item.get("error", MISSING)))
            for key in ("name", "message"):
                if not isinstance(error.get(key), str) or (key == "name" and not error[key]):
                    raise _override_error(f"`error.{key}` must be a {'non-empty ' if key == 'name' else ''}string",
                                          source, f"{where}.error.{key}", expected="string", received=shown(error.get(key, MISSING)))
        elif error is not None:
            raise _override_error("only a `throw` override takes `error`", source, f"{where}.error",
                                  expected="no error for hang", received=excerpt(exactjson.dumps(error)))
        override = Override(item["turn"], item["step"], action, error)
        if override.key in found:
            raise _override_error(f"two overrides name {step_name(*override.key)}", source, where,
                                  received=[item["turn"], item["step"]], howToFix="Keep one override per (turn, step).")
        found[override.key] = override
    return found


def load_overrides(path: str | Path) -> dict[Key, Override]:
    """Read and check an override sidecar file."""
    document = read_json_file(path, "override sidecar", "E_OVERRIDE_INVALID", path="$", example=OVERRIDE_EXAMPLE,
                              missing_fix="Check the path of the override sidecar (--override, or the script stage's "
                                          "`override`), or leave it out.")
    return parse_overrides(document, str(path))


# groups ---------------------------------------------------------------------------------------
@dataclass
class Group:
    """The chunks of one model stream call, in journal order, and its override if any."""

    turn: int
    step: int
    chunks: list[dict[str, Any]] = field(default_factory=list)
    override: Override | None = None
    where: dict[str, Any] = field(default_factory=dict)  # position of its last chunk (for diagnostics)

    @property
    def key(self) -> Key:
        return (self.turn, self.step)

    @property
    def finished(self) -> bool:
        return bool(self.chunks) and self.chunks[-1].get("type") == FINISH

    @property
    def served(self) -> list[dict[str, Any]]:
        """The chunks a replay yields: all of them, except that an override replaces a recorded finish."""
        if self.override is not None and self.finished:
            return self.chunks[:-1]
        return self.chunks

    def to_json(self) -> dict[str, Any]:
        """The group as it appears in a replay-script document."""
        out: dict[str, Any] = {"turn": self.turn, "step": self.step, "chunks": self.served}
        if self.override is not None:
            out["action"] = self.override.action
            if self.override.error is not None:
                out["error"] = self.override.error
        return out


def group_problem(group: Group, *, on_stdin: bool = False) -> dict[str, Any] | None:
    """The diagnostic for a group that cannot be replayed as recorded, or None. ``on_stdin``: the session was read from
    stdin, which has no folder for a sidecar beside it: the fix names --override."""
    if group.finished or group.override is not None:
        return None
    name = step_name(group.turn, group.step)
    last = group.chunks[-1].get("type") if group.chunks else None
    return diagnostic(
        "E_SESSION_GROUP_UNFINISHED",
        f"the model call {name} ends without a `finish` chunk: the stream threw (or was cut off) there",
        expected="a last chunk of type finish", received=f"last chunk of type {last!r}", turn=group.turn, step=group.step,
        howToFix=("Say what happened in an override sidecar given with --override FILE (the script stage's `override`; "
                  f"a session read from stdin has no {OVERRIDE_FILE} beside it): " if on_stdin else
                  f"Say what happened in {OVERRIDE_FILE} beside the session: ") +
                 f"{{\"overrides\": [{{\"turn\": {group.turn}, \"step\": {group.step}, \"action\": \"throw\", "
                 f"\"error\": {{\"name\": \"Error\", \"message\": \"...\"}}}}]}} (or \"action\": \"hang\").",
        **group.where,
    )


class SessionShape:
    """Is an input a session journal at all? Counts its records as they pass, for ``problem`` at the end: an input none
    of whose records is a session line (another agent's log, a canonical run journal: no ``kind/what`` type), one with
    no line at all (an empty file, blank lines: a harness that stopped before writing one) and one whose every line was
    refused (too long, not JSON) are no session, said once, rather than an empty script passed off as a session with no
    model call. One definition for the ``script`` stage and the Python API (``load_session_groups``)."""

    def __init__(self) -> None:
        self.records = 0  # every record counted (replay's own marks too)
        self.typed = 0  # those of a type (replay's own marks aside)
        self.session_lines = 0  # those of a session's form (a `kind/what` type: assistant/chunk, turn/start, ...)
        self.first: tuple[str, dict[str, Any]] | None = None  # the first typed one's type and where it was
        self.own: tuple[Any, dict[str, Any]] | None = None  # the first of replay's own records (`$record`) and where
        self.owned = 0  # how many of those
        self.refused = 0  # lines the input had that were refused before they became records (reported already)

    def count(self, record: Any, where: dict[str, Any]) -> None:
        """One more record of the input: of a session's form or not (its first one kept, to name it)."""
        self.records += 1
        if type(record) is dict and is_record(record):
            self.owned += 1
            if self.own is None:
                self.own = (record.get(RECORD_KEY), where)
            return
        kind = record.get("type") if type(record) is dict else None
        if not isinstance(kind, str) or not kind:
            return  # (no record of a type: reported as no session line already)
        self.typed += 1
        if self.first is None:
            self.first = (kind, where)
        self.session_lines += "/" in kind.strip("/")

    def problem(self, source: str | None = None, *, command: str = "`replay script`",
                listed: str = "above") -> dict[str, Any] | None:
        """E_SESSION_LINE_INVALID when the input counted is no session journal, else None. ``listed``: where the lines
        refused are said (the errors printed "above"; the Python API: "in `problems`", its error's); ``command``: what
        read the input, as the advice names it (in backquotes: "`replay script`", ``PYTHON_API``)."""
        named = {"source": source} if source else {}
        if not self.records:
            if self.refused:
                return diagnostic(
                    "E_SESSION_LINE_INVALID",
                    f"no session lines read: each of the input's {self.refused} line{'s' if self.refused > 1 else ''} "
                    f"was refused ({listed}), and its script has no model call",
                    **named, expected="session lines: assistant/chunk, turn/start, tool/call, ...",
                    received=f"{self.refused} line{'s' if self.refused > 1 else ''} refused",
                    howToFix=f"Fix what the errors {listed} say (a line longer than --max-line-bytes: raise it), then "
                             f"run {command} again.")
            return diagnostic(
                "E_SESSION_LINE_INVALID",
                "the input has no line: this is no session journal (a harness that stopped before writing one?), and its "
                "script has no model call", **named,
                expected="session lines: assistant/chunk, turn/start, tool/call, ...", received="no line",
                howToFix=f"Give {command} the session JSONL a harness persists (`replay schema session`); a session "
                         "with no model call still has its harness lines (session/start, turn/start, ...).")
        if self.own is not None and self.owned == self.records:  # (replay's own records alone: a run journal's run record)
            return self._only_own(command)
        if not self.typed or self.session_lines or self.first is None:
            return None  # (records of no type: each reported as no session line already)
        kind, where = self.first
        return diagnostic(
            "E_SESSION_LINE_INVALID",
            f"no line of the input is a session line ({self.typed} records, the first of type {shown(kind)!r}): this is "
            "not a session journal, and its script has no model call",
            **{**where, "path": "$.type"}, expected="assistant/chunk, turn/start, tool/call, ...", received=shown(kind),
            howToFix=f"Give {command} the session JSONL a harness persists (`replay schema session`); an agent's run "
                     "journal or another agent's log is read by `replay read`, `heal` and `report`.")


    def _only_own(self, command: str) -> dict[str, Any]:
        """E_SESSION_LINE_INVALID for an input whose every record is one of replay's own (``$record``): a run journal
        holding its run record alone, say (what `replay read` prints for a run with no events)."""
        assert self.own is not None
        kind, where = self.own
        n = f"{self.records} record{'s' if self.records > 1 else ''}"
        return diagnostic(
            "E_SESSION_LINE_INVALID",
            f"no line of the input is a session line ({n}, all replay's own, the first a {shown(kind)!r} record): this "
            "is not a session journal, and its script has no model call", **{**where, "path": f"$.{RECORD_KEY}"},
            expected="assistant/chunk, turn/start, tool/call, ...", received=f"a {shown(kind)!r} record",
            howToFix=f"Give {command} the session JSONL a harness persists (`replay schema session`); a run journal "
                     "(`replay read` of a run) is read by `replay read`, `heal` and `report`.")


def unused_override_problem(override: Override, source: str | None = None) -> dict[str, Any]:
    return diagnostic(
        "E_OVERRIDE_STEP_UNKNOWN",
        f"the override for {step_name(*override.key)} names a model call the session does not have",
        source=source, turn=override.turn, step=override.step, received=[override.turn, override.step],
        howToFix="Overrides name the (turn, step) of an `assistant/chunk` group in the session; run "
                 "`replay script SESSION` without the sidecar to list them.",
    )


class ChunkGrouper:
    """Groups ``assistant/chunk`` records by (turn, step) in journal order, one group in hand at a time.

    ``feed`` returns the group the record completed (the previous one, when a new step begins) and
    ``finish`` the last one. Problems (bad lines, split groups) collect in ``problems``; whether a
    completed group is replayable is ``group_problem``'s call.
    """

    def __init__(self, overrides: dict[Key, Override] | None = None) -> None:
        self.overrides = dict(overrides or {})
        self.current: Group | None = None
        self.seen: set[Key] = set()
        self.used: set[Key] = set()
        self.problems: list[dict[str, Any]] = []

    def feed(self, record: Any, where: dict[str, Any] | None = None) -> Group | None:
        where = where or {}
        if type(record) is not dict:
            self._problem("a session line is a JSON object", where, "$", "object", json_type(record))
            return None
        kind = record.get("type")
        if is_record(record):
            return None  # replay's own reserved records (source marks) are not session lines
        if not isinstance(kind, str) or not kind:
            self._problem("a session line needs a non-empty string `type`", where, "$.type", "string",
                          shown(record.get("type", MISSING)))
            return None
        if kind != CHUNK_TYPE:
            return None  # harness lines (and types nobody knows) are not part of the script
        turn, step, chunk = record.get("turn"), record.get("step"), record.get("chunk")
        for name, value in (("turn", turn), ("step", step)):
            if not _is_count(value):
                self._problem(f"an {CHUNK_TYPE} line needs an integer `{name}` >= 0", where, f"$.{name}",
                              "integer >= 0", shown(record.get(name, MISSING)))
                return None
        if not isinstance(chunk, dict) or not isinstance(chunk.get("type"), str) or not chunk["type"]:
            received = excerpt(exactjson.dumps(chunk)) if "chunk" in record else json_type(MISSING)  # (not "null")
            self._problem(f"an {CHUNK_TYPE} line needs `chunk`: an object with a string `type`", where, "$.chunk",
                          '{"type": "text-delta", ...}', received)
            return None
        wrong = chunk_problem(chunk)  # (its fields as `replay schema session` types them; a script's depth)
        if wrong is not None:
            message, path, expected, received = wrong
            self._problem(message, where, "$.chunk" + path, expected, received,
                          **({"howToFix": DEEP_CHUNK_FIX} if not path else {}))
            return None
        key: Key = (record["turn"], record["step"])  # both checked above: integers >= 0
        done: Group | None = None
        current = self.current
        if current is not None and current.key == key:
            if current.finished:
                self.problems.append(diagnostic(
                    "E_SESSION_GROUP_SPLIT", f"a chunk of {step_name(*key)} follows its `finish` chunk",
                    path="$.chunk.type", expected="no chunk after finish", received=chunk["type"], turn=turn, step=step,
                    howToFix="One model call ends with one finish; check how the agent tags (turn, step).", **where))
                return None
            current.chunks.append(chunk)
            current.where = where
            return None
        if key in self.seen:
            self.problems.append(diagnostic(
                "E_SESSION_GROUP_SPLIT",
                f"chunks of {step_name(*key)} appear again after "
                f"{step_name(*current.key) if current else 'another model call'} began",
                path="$.step", expected="the chunks of one model call together", received=[turn, step],
                turn=turn, step=step,
                howToFix="Each model call's chunks are contiguous; check how the agent tags (turn, step).", **where))
            return None
        if current is not None:
            done = current
        self.seen.add(key)
        override = self.overrides.get(key)
        if override is not None:
            self.used.add(key)
        self.current = Group(key[0], key[1], [chunk], override, where)
        return done

    def finish(self) -> Group | None:
        done, self.current = self.current, None
        return done

    def unused_overrides(self) -> list[Override]:
        return [o for k, o in self.overrides.items() if k not in self.used]

    def _problem(self, message: str, where: dict[str, Any], path: str, expected: str, received: Any,
                 **fields: Any) -> None:
        """``path`` is in the line's record; where the record is in a JSON document (``where["path"]``, ``$[3]``),
        the problem is at that path in it (``$[3].type``)."""
        at = dict(where)
        record = at.pop("path", None)
        self.problems.append(diagnostic("E_SESSION_LINE_INVALID", message, expected=expected, received=received,
                                        path=path if record is None else record + path[1:], **at, **fields))


def session_folder(path: str) -> ReplayError:
    """A folder given where one session journal is read (``replay script DIR``, ``ReplayModel.from_session(DIR)``)."""
    return ReplayError("E_USAGE_INVALID", f"{path!r} is a directory, not a session journal", path=path,
                       expected="one session journal (a file)", received="a directory",
                       howToFix=f"Name the session file, e.g. {os.path.join(path, 'session.jsonl')!r}; each session of "
                                "a folder is read on its own.")


# whole sessions in memory (the Python API; the `script` stage streams instead) -----------------
# A session's last line cut off (E_JSONL_LINE_TORN): the advice `replay script` and ReplayModel give (not heal's: a
# session is no run journal).
TORN_FIX = ("The harness stopped mid-write: delete the cut-off last line, or rerun the scenario (a session is no run "
            "journal: `replay heal` would turn it into one).")


def session_lines(path: str | Path, problems: list[dict[str, Any]]) -> Iterator[tuple[Any, dict[str, Any]]]:
    """Each line of a session file, parsed, with its position; lines that are not JSON, or JSON but no object (an
    array: a session is JSON lines, never one document), go to ``problems``, as ``replay script`` reports them (a last
    line cut off: E_JSONL_LINE_TORN, with ``TORN_FIX``)."""
    source = str(path)
    offset = 0
    for n, raw in enumerate(_file_lines(path, source), 1):
        body, skipped = without_mark(raw.rstrip(b"\n"))  # at any line's start, as read leaves one out (columns after it)
        start = offset + skipped
        where = {"source": source, "line": n, "offset": start}
        offset += len(raw)
        if not body.strip(BLANK):
            continue
        try:
            record = exactjson.loads(body)
        except orjson.JSONDecodeError as exc:
            code, fields = line_refusal(body, exc, n, start, last=not raw.endswith(b"\n"))
            if code == "E_JSONL_LINE_TORN":
                fields["howToFix"] = TORN_FIX
            problems.append(diagnostic(code, fields.pop("message"), **where | fields))
            continue
        if type(record) is not dict:  # (a session is JSON lines of objects: refused as `replay script`'s parse does)
            problems.append(diagnostic(NOT_OBJECT, not_object_message(n), **where, expected="object",
                                       received=json_type(record)))
            continue
        yield record, where


def _file_lines(path: str | Path, source: str) -> Iterator[bytes]:
    """The lines of a session file (gunzipped: a .gz session reads as `replay script` reads it); one that cannot be
    opened or read (a device error, a gzip stream corrupt or cut off) is an error naming the line where reading
    stopped."""
    reading: Gunzipping | None = None
    try:
        with open(path, "rb") as handle:
            reading = Gunzipping(handle, lambda stream: stream.readline())
            yield from reading
    except GzipUnreadable as exc:
        raise ReplayError("E_GZIP_INVALID", f"{source}: {exc}", source=source, line=exc.line, offset=exc.offset,
                          exit_code=1) from exc
    except OSError as exc:
        line, offset = (reading.line, reading.offset) if reading is not None else (1, 0)
        raise input_unreadable(source, exc, what="session journal", line=line, offset=offset) from exc


def derive_groups(records: Iterable[tuple[Any, dict[str, Any]]], overrides: dict[Key, Override] | None = None, *,
                  refused: list[dict[str, Any]] | None = None, session: str | None = None,
                  command: str = "`replay script`", listed: str = "above",
                  shape: SessionShape | None = None) -> tuple[list[Group], list[dict[str, Any]]]:
    """All groups of a session in journal order, and every problem found (none when it replays as recorded). An input
    that is no session journal is a problem too, the last one (``shape``'s, counted here; ``listed`` as its);
    ``refused``: the lines refused before they became records (filled while ``records`` is read: ``session_lines``),
    ``session``: its name, for when no record says it."""
    grouper = ChunkGrouper(overrides)
    shape = shape or SessionShape()
    groups: list[Group] = []
    source: str | None = session
    for record, where in records:
        source = where.get("source", source)
        shape.count(record, where)
        done = grouper.feed(record, where)
        if done is not None:
            groups.append(done)
    last = grouper.finish()
    if last is not None:
        groups.append(last)
    shape.refused = len(refused or ())
    problems = list(grouper.problems)
    problems.extend(p for p in map(group_problem, groups) if p is not None)
    not_a_session = shape.problem(source, command=command, listed=listed)
    if not_a_session is not None:  # (then no override names a step it has: that is no news)
        problems.append(not_a_session)
    else:
        problems.extend(unused_override_problem(o, source) for o in grouper.unused_overrides())
    return groups, problems


def load_session_groups(path: str | Path, override: str | Path | None = None, *,
                        use_sidecar: bool = True) -> list[Group]:
    """The replay groups of a session file; raises on a problem (exit 1 from the CLI): the one ``replay script`` ends
    with when the file is no session (``SessionShape``: every line refused, say), else the first; the others are in
    the error's ``problems`` (its body's), each an error's body.

    ``override`` names a sidecar; without one, ``replay.override.json`` beside the session is used
    when it exists (unless ``use_sidecar`` is false).
    """
    kind = path_kind(Path(path))
    if kind is None:
        raise ReplayError("E_INPUT_PATH_NOT_FOUND", f"session journal {str(path)!r} does not exist", path=str(path),
                          howToFix="Check the path of the session journal.")
    if kind == "directory":
        raise session_folder(str(path))
    overrides: dict[Key, Override] = {}
    sidecar = override if override is not None else sidecar_beside(path) if use_sidecar else None
    if sidecar is not None:
        overrides = load_overrides(sidecar)
    unreadable: list[dict[str, Any]] = []
    shape = SessionShape()
    groups, problems = derive_groups(session_lines(path, unreadable), overrides, refused=unreadable, session=str(path),
                                     command=PYTHON_API, listed=PROBLEMS_LISTED, shape=shape)
    problems = unreadable + problems
    if problems:
        no_session = shape.problem() is not None  # (then it is the last problem, which `replay script` ends with)
        said = problems[-1] if no_session else problems[0]
        others = [p for p in problems if p is not said]
        first = dict(said)
        code, message = first.pop("code"), first.pop("message")
        more = f" (and {len(others)} more problem{'s' if len(others) > 1 else ''})" if others and said is problems[0] else ""
        raise ReplayError(code, message + more, exit_code=1, **first, problems=others or None)
    return groups


# How the Python API's refusals name what read the session: any of the three ways in (all end in load_session_groups).
PYTHON_API = "`ReplayModel.load` (or `ReplayModel.from_session`, or the `replay_session` fixture)"
PROBLEMS_LISTED = "in `problems`"  # (the error's body's, where the Python API lists the lines refused)


def script_version() -> Any:
    """The one replay-script format there is: the `version` its schema fixes (``replay schema replay-script``)."""
    return const("replay-script", "properties", "version")


def script_document(groups: Iterable[Group], session: str | None = None) -> dict[str, Any]:
    """A whole replay-script document (``replay schema replay-script``)."""
    doc: dict[str, Any] = {"version": script_version()}
    if session is not None:
        doc["session"] = session
    doc["groups"] = [g.to_json() for g in groups]
    return doc


def groups_from_script(document: Any, source: str = "<memory>") -> list[Group]:
    """The groups of a replay-script document, checked against ``replay schema replay-script`` (its keys, its groups'
    and their chunks, as ``session_rules`` has them; a finish chunk only last, in a group with no action)."""

    def bad(message: str, path: str, **fields: Any) -> ReplayError:
        return ReplayError("E_SCRIPT_INVALID", message, source=source, path=path, **fields)

    if not isinstance(document, dict):
        raise bad(f"a replay script is an object with \"version\": {script_version()} (what `replay script` prints)", "$",
                  expected="object", received=json_type(document))
    for key in document:
        if key not in script_keys():
            raise bad(f"unknown key {key!r} in a replay script", f"$.{key}", expected=", ".join(script_keys()), received=key)
    version = document.get("version", MISSING)
    if type(version) is not type(script_version()) or version != script_version():
        raise bad(f"a replay script is an object with \"version\": {script_version()} (what `replay script` prints)",
                  "$.version", expected=script_version(), received=shown(version))
    for key in ("session", "override"):
        if key in document and not isinstance(document[key], str):
            raise bad(f"`{key}` must be a string", f"$.{key}", expected="string", received=shown(document[key]))
    items = document.get("groups")
    if not isinstance(items, list):
        raise bad("`groups` must be a list", "$.groups", expected="array", received=shown(document.get("groups", MISSING)))
    groups: list[Group] = []
    seen: set[Key] = set()
    for n, item in enumerate(items):
        where = f"$.groups[{n}]"
        if not isinstance(item, dict) or not _is_count(item.get("turn")) or not _is_count(item.get("step")):
            raise bad("a group has integer `turn` and `step` >= 0", where, received=excerpt(exactjson.dumps(item)))
        for key in item:
            if key not in group_keys():
                raise bad(f"unknown key {key!r} in a group", f"{where}.{key}", expected=", ".join(group_keys()), received=key)
        chunks = item.get("chunks")
        if not isinstance(chunks, list):
            raise bad("`chunks` must be a list of chunks", f"{where}.chunks", expected="array",
                      received=shown(item.get("chunks", MISSING)))
        for i, chunk in enumerate(chunks):
            wrong = chunk_problem(chunk)
            if wrong is not None:
                message, path, expected, received = wrong
                raise bad(message, f"{where}.chunks[{i}]{path}", expected=expected, received=received)
        key = (item["turn"], item["step"])
        if key in seen:
            raise bad(f"two groups are {step_name(*key)}", where, received=list(key))
        seen.add(key)
        override: Override | None = None
        if "action" in item:
            try:
                override = next(iter(parse_overrides({"overrides": [{k: item[k] for k in ("turn", "step", "action", "error")
                                                                     if k in item}]}, source).values()))
            except ReplayError as exc:
                inner = str(exc.body.get("path", "")).removeprefix("$.overrides[0]")  # (where in the one override)
                raise bad(f"group {n}: {exc.message}", where + (inner or ".action"), expected=exc.body.get("expected"),
                          received=exc.body.get("received")) from exc
        elif "error" in item:
            raise bad(f"the group {step_name(*key)} has `error` but no `action`: the error is what a `throw` raises",
                      f"{where}.error", expected="no error without \"action\": \"throw\"", received="error")
        elif not chunks or chunks[-1]["type"] != FINISH:
            raise bad(f"the group {step_name(*key)} ends without a `finish` chunk and has no action", where,
                      expected="a last chunk of type finish, or action throw / hang")
        finish = finish_problem(chunks, override is not None)
        if finish is not None:
            message, i, expected, received = finish
            raise bad(message, f"{where}.chunks[{i}]", expected=expected, received=received)
        groups.append(Group(key[0], key[1], list(chunks), override))
    return groups


def load_script(path: str | Path) -> list[Group]:
    """The groups of a replay-script file (the JSON document `replay script` prints)."""
    document = read_json_file(path, "replay script", "E_SCRIPT_INVALID")
    return groups_from_script(document, str(path))

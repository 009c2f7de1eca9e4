"""The stage protocol: sources and sinks are async tasks, transforms are plain callables on batches.

- ``Transform``: ``__call__(batch) -> batch | None`` and ``flush() -> batch | None`` at end of stream
  (either may return a list of batches when its output spans input sources; an iterator in that list is taken
  lazily, a batch at a time, when the stage is the last of its segment: what a stage held in a spool).
  Synchronous, so it is tested on ``Batch.of([...])`` (plain dicts) and fused with its neighbours into one task.
- ``Source``: ``async produce(out)`` sends batches with ``await out.send(batch)``.
- ``Sink``: ``async consume(batches)`` iterates the incoming batches.
- ``AsyncTransform``: ``async process(batches, out)`` for transforms that do I/O (e.g. spawn).

- ``Composite``: ``expand(registry) -> SubGraph``: a stage type that stands for a sub-graph of other
  stages (Beam's composite transforms), e.g. ``heal`` for every heal rule in order.

Every stage has an ``errors`` side port; a stage may declare more (heal rules add ``repairs``).
Side records are plain dicts collected with ``self.error(...)`` / ``self.emit(port, record)`` and
drained by the executor after each call, so a transform needs no event loop to report anything.
``self.error`` takes a code of the catalogue (ERROR_CODES.md), a third-party stage's too: another stops the run.

A stage object built from a config is its *configuration*: the executor runs a ``fresh()`` copy of
it each time the graph runs, so per-run state lives in the copy and a configured graph can run
twice. What a run found out for the command that ran it (failed runs, files written) leaves through
``publish(key, value)`` into the run result, never through attributes read after the run.
"""

from __future__ import annotations

import math
import types
import typing
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.batch import Batch, keys_twice_note
from replay.pipeline.engine.errors import CATALOGUE, EXIT_FAILED, ReplayError, as_received, diagnostic, empty_value
from replay.pipeline.engine.quota import DEFAULT_LIMIT

# The fact a sink publishes with the files it wrote (a list of paths): a run over many inputs records
# them in its manifest, with their sizes and content hashes.
OUTPUTS_WRITTEN = "outputs_written"


@dataclass(frozen=True)
class Option:
    """One configurable option of a stage: its type, default and a one-line help."""

    type: Any  # a type, or a tuple of types
    default: Any
    help: str
    required: bool = False
    choices: tuple[Any, ...] | None = None
    choices_named: str | None = None  # the choices in words, where they are too many to list (error codes)
    items: type | None = None  # what a list's elements / a table's values must be (lists: str unless said)
    # "args": when the config leaves the option unset, it takes the positional arguments of the
    # command that runs the graph (``replay run SPEC ARGS...``): the paths to read, the prompt to send.
    bind: str | None = None
    words: bool = False  # a str option bound to the arguments: they are words joined (a prompt), else exactly one (a path)
    minimum: int | float | None = None  # the least a number may be (what the command's flag for it allows)

    def __post_init__(self) -> None:
        if isinstance(self.type, types.UnionType):  # Option(int | None, ...): the types of the union
            object.__setattr__(self, "type", typing.get_args(self.type))

    def problem(self) -> str | None:
        """What is wrong with the option's own declaration (a plugin's): its type must be a type or a tuple of types,
        and its default (unless it is required) a value of it."""
        kinds = self.type if isinstance(self.type, tuple) else (self.type,)
        if not kinds or not all(isinstance(t, type) for t in kinds):
            return f"its type {self.type!r} is not a type or a tuple of types"
        wrong = None if self.required else self.check(self.default)
        if wrong is not None:
            return f"its default {self.default!r} is not {wrong}"
        return None

    def from_args(self, args: list[str]) -> Any:
        """The value an option bound to the command's arguments takes from them: the list, or the words joined, or
        the one argument (None when there are several: the caller refuses them)."""
        if self.type is list:
            return list(args)
        return " ".join(args) if self.words or len(args) == 1 else None

    def type_name(self) -> str:
        kinds = self.type if isinstance(self.type, tuple) else (self.type,)
        return "|".join("None" if t is type(None) else t.__name__ for t in kinds)

    def check(self, value: Any) -> str | None:
        """None when ``value`` fits, else a description of what was expected."""
        kinds = self.type if isinstance(self.type, tuple) else (self.type,)
        ok = isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)
        if float in kinds and isinstance(value, int) and not isinstance(value, bool):
            ok = True
        # A list option holds strings (globs, paths); a table option says what its values must be.
        items = self.items if self.items is not None else (str if list in kinds else None)
        if ok and items is not None and isinstance(value, list | dict):
            values = value.values() if isinstance(value, dict) else value
            ok = all(isinstance(v, items) and not (items is str and not v) for v in values)
        if not ok:  # (the rule in full: a list's strings are globs, paths, words, none of which may be empty)
            return self.type_name() + ("" if items is None else " of non-empty str" if items is str else f" of {items.__name__}")
        if self.choices is not None and value not in self.choices:
            return self.choices_named or "one of " + ", ".join(map(str, self.choices))
        if self.minimum is not None and isinstance(value, int | float) and not value >= self.minimum:  # (nan too)
            return f"{self.type_name()} >= {self.minimum}"
        if isinstance(value, float) and not math.isfinite(value):  # (inf: a pause, a wait that never ends)
            return f"a finite {self.type_name()}"
        return None


class Stage:
    """Base of every stage. Subclasses set ``kind``, ``name``, ``summary`` and ``options``."""

    kind: ClassVar[str] = "transform"  # "source" | "transform" | "sink"
    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    options: ClassVar[dict[str, Option]] = {}
    ports: ClassVar[tuple[str, ...]] = ("errors",)
    # Raw line batches (events not parsed yet) come out of ``read``; only stages that say they
    # accept them (``parse``, ``write``) may take its output directly.
    emits_raw: ClassVar[bool] = False
    accepts_raw: ClassVar[bool] = False
    # Run summaries (``summarize``'s records) are what ``report`` renders: a stage that takes only them takes
    # only the main output of stages that say they give them (checked with the config, before anything runs).
    emits_summaries: ClassVar[bool] = False
    takes_summaries: ClassVar[bool] = False
    # A stage whose main output is something for a reader, not events (walk lines, a diff, OTLP trace requests), says
    # what (``gives``): only a stage that writes whatever reaches it (``takes_anything``: write, publish_nats, log) may
    # take that output (checked with the config; a `select` after a walk would pass on nothing, without a word).
    gives: ClassVar[str] = ""
    takes_anything: ClassVar[bool] = False
    # The screen's fast lane: whole runs passed on as their lines, unparsed (``Batch.clean``). A stage the lane reaches
    # (a screen's main output, or that of a stage passing it on) must know it: "passes" it on, or "ends" it (it sends
    # batches of its own). Any other would lose those runs or fail on them: the config is refused (``Graph.validate``).
    screened_lane: str | None = None
    # Private records (an incident export as read: emails, card numbers, names) may go to no stage but one that
    # redacts them (``redacts``): the first stage after ``private_output`` on every way out of it (``Graph.validate``).
    redacts: ClassVar[bool] = False
    # A stage that makes one thing of one input file (the script of one session) refuses a folder among the graph's
    # inputs (``folder_refused``), before anything runs: a folder's walk may find one file, but a folder is none.
    takes_one_file: ClassVar[bool] = False
    # A stage whose main output is the lines of one document (the replay script of a session): that output is whole or
    # it is no document, so a sink it reaches (directly or through other stages) writes it only when no error reached
    # the graph's error port (``Sink.whole_document``, set by the executor: ``write`` then holds as with ``hold``).
    one_document: ClassVar[bool] = False
    # A stage that follows the run in progress from batch to batch (heal's rules, summarize, validate, ...) takes one
    # stream of events: the batches of two inputs come interleaved, and it would take each change of ``batch.source``
    # for a run cut there (inventing events, losing some). A graph giving it more (two inputs that are main outputs, or
    # the output of a stage that passes several on) is refused (``Graph.validate``). Only a stage that takes each batch
    # on its own (``select``, ``write``, and of heal's rules ``alias`` and ``normalize_payload``) says False: it may take several, and then passes on (or writes) them mixed.
    keeps_run_state: ClassVar[bool] = True
    # The options whose output (a file or a folder: ``outputs``, ``output_folders``) may be an fsspec URL, written through
    # ``io.remote`` (``report``'s path, heal's folder); any other output that is a URL is refused before anything runs,
    # not written as a local path that begins with ``s3:`` (``preflight``).
    url_outputs: ClassVar[frozenset[str]] = frozenset()
    # A stage that logs, on its ``repairs`` port, the joins ``join_split_records`` hands on with their lines
    # (``Batch.rejoined``) as they pass it (``parse``): a join whose lines reach one leaves its logging to it.
    logs_joins: ClassVar[bool] = False

    @classmethod
    def chain_spec(cls, source: Callable[[], Stage | None]) -> str | None:
        """The graph of the command this stage is (a spec, ``pipeline/specs/<name>.toml``) whose stages between its
        source and this stage go in front of it in a chain, wired as that graph wires them (``chain_lines``), for the
        chain's inputs: ``source()`` is the chain's source, built with the command's arguments (None when it cannot
        be). None: the chain's own rule (``parse`` + ``dialect`` in front of a stage that takes events)."""
        return None

    def private_output(self) -> bool:
        """Are this stage's records private until a stage that ``redacts`` has seen them?"""
        return False

    def opens_lane(self) -> bool:
        """Does this stage send runs on in the screen's fast lane?"""
        return False

    def lane_needs(self) -> frozenset[str]:
        """The stage types its fast lane must reach (a stage that repairs runs itself: the rules that log those
        repairs as the runs pass), or the config is refused."""
        return frozenset()

    def __init__(self, **options: Any) -> None:
        for key, value in options.items():
            if key not in self.options:
                raise TypeError(f"{type(self).__name__} has no option {key!r}; its options: "
                                + (", ".join(self.options) or "(none)"))
            opt = self.options[key]
            # (the rule a config's options are checked by, ``Option.check``; but not the command's arguments, which a
            # config's check never sees: the stage itself says what is wrong with them, e.g. an empty path)
            wrong = None if opt.bind == "args" else opt.check(value)
            if wrong is not None:
                raise TypeError(f"option {key!r} of {type(self).__name__} must be {wrong}, not {value!r}")
        self.given = dict(options)  # the options as configured, to build fresh copies from
        self.args_keys: tuple[str, ...] = ()  # the options the command's arguments filled (``fresh`` may fill them anew)
        self.flags: dict[str, str] = {}  # option -> the command-line flag that set it (``spec.Flag``), to name it by
        self.config = {k: options.get(k, opt.default) for k, opt in self.options.items()}
        self.id = self.name
        self._side: dict[str, list[dict[str, Any]]] = {}
        self.facts: dict[str, Any] = {}
        self.log: Any = None  # the run's logger, set by the executor (structlog-style calls)
        self.diagnostics_limit = DEFAULT_LIMIT  # diagnostics printed per input and code (--max-errors), set likewise
        # What the stages of one graph run tell each other beside the stream (one dict for all of them, set likewise;
        # a stage run alone has its own): e.g. the lines read or parse left out (``model.dropped``)
        self.shared: dict[str, Any] = {}

    def fresh(self, args: list[str] | None = None) -> Stage:
        """A copy with the same configuration and no per-run state: what one run of a graph executes; ``args``:
        other command arguments for the options the first ones filled (one graph run once per input)."""
        given = self.given
        if args is not None and self.args_keys:
            given = {**given, **{key: self.options[key].from_args(args) for key in self.args_keys}}
        copy = self.built_again(given)
        copy.args_keys = self.args_keys
        copy.flags = self.flags
        copy.id = self.id
        return copy

    def named(self, option: str | None) -> tuple[str, str]:
        """How a refusal names ``option``: ``(subject, path)``: the flag that set it, twice (``--log``), when a command
        bound it from one; else the stage and its option as a config writes them (``stage 'log'``,
        ``stages.log.path``); None (what no option names): the stage (``stages.log``)."""
        if option is None:
            return f"stage {self.id!r}", f"stages.{self.id}"
        flag = self.flags.get(option)
        return (flag, flag) if flag else (f"stage {self.id!r}", f"stages.{self.id}.{option}")

    def as_named(self, exc: ReplayError, where: str | None = None, *, of_a_command: bool = False) -> ReplayError:
        """``exc``, raised about one of this stage's options, named as the user gave it (``option_named``); ``where``:
        the stage as the config wrote it (default ``stages.<id>``, which ``Graph.as_written`` names as written)."""
        return option_named(exc, self.options, self.given, self.flags, where or f"stages.{self.id}",
                            values=not of_a_command)

    def refuse_empty(self, option: str | None, *, names: str, expected: str, example: str) -> ReplayError:
        """The refusal of ``option`` left empty (``errors.empty_value``), named as it was given: the flag that set it,
        else this stage's option as a config writes it."""
        subject, path = self.named(option)
        return empty_value(subject, path, by_flag=option in self.flags, option=option, names=names, expected=expected,
                           example=example)

    def built_again(self, given: dict[str, Any]) -> Stage:
        """This stage's class built with the options ``given`` (for ``fresh``). A stage that reads a file when it is
        built hands what it read on to the copy instead, when the copy's options name the same file: a pipe
        (``--override <(...)``) can be read once only."""
        return type(self)(**given)

    # before a run ----------------------------------------------------------------------------
    def wired(self, feeds: list[Stage]) -> None:
        """Called when the graph is checked (``Graph.validate``), with the stages whose main output this one takes:
        a stage may take a setting that is theirs from them (one fact in one place; set it in ``given`` so that
        ``fresh`` copies have it), or refuse the wiring (raise ReplayError)."""

    def reaches(self, after: list[Stage]) -> None:
        """Called when the graph is checked, with every stage this one's outputs reach (directly or not): a stage
        whose work another must finish after it refuses a graph without that one (raise ReplayError)."""

    def streams_into(self, after: list[Stage]) -> None:
        """Called when the graph is checked, with every stage this one's main output reaches by main outputs (directly
        or not: the stages its batches pass through), not past one that ``logs_joins`` (it takes them off the batches): a stage may leave work to one of them (``join_split_records``
        leaves the logging of its joins to the one ``parse`` its lines reach). Set what it decides so that ``fresh``
        copies have it."""

    def preflight(self, inputs: list[str]) -> None:
        """Refuse (raise ReplayError, exit 2) what would fail before anything runs: a runner that
        cannot be found, outputs that would collide. Called on the stages of a run before any of them
        starts, with every file the graph reads (``input_files`` of all its stages)."""

    def preflight_input(self, inputs: list[str]) -> None:
        """Refuse what the input itself would fail on, when telling takes reading input that can be read once (a
        prompt on stdin). Called after every stage's ``preflight`` and after every output was tried: a run refused
        for anything else has consumed nothing."""

    def input_files(self) -> list[str]:
        """The files this stage reads (``-`` for stdin): no stage of the graph may write over them."""
        return []

    def input_folders(self) -> list[str]:
        """The folders among the inputs this stage was given, as given (``input_files``: the files their walk found)."""
        return []

    def folder_refused(self, folder: str) -> ReplayError:
        """The refusal of ``folder`` among the graph's inputs when this stage ``takes_one_file``."""
        return ReplayError("E_USAGE_INVALID", f"{folder!r} is a directory; stage {self.id!r} takes one file", path=folder,
                           expected="a file", received="a directory", howToFix="Name one file of the folder.")

    def outputs(self) -> list[tuple[str | None, str]]:
        """The files this stage writes (``-`` for stdout), each with the option that names it: what a refusal of it
        names (``named``). By default its ``output_files``, which no option names."""
        return [(None, target) for target in self.output_files()]

    def output_files(self) -> list[str]:
        """The files this stage writes that no option of its names (the stdout it writes whatever it is given);
        ``outputs`` gives those an option names, with the option."""
        return []

    def output_folders(self) -> list[tuple[str | None, str]]:
        """The folders this stage writes files into (made when missing), each with the option that names it (as
        ``outputs``: what a refusal of it names). Like its ``outputs``, each is tried before anything runs
        (``pipeline/engine/outputs.py``); what is in one is the stage's: no other stage of the graph may write there."""
        return []

    def whole_stream(self) -> bool:
        """Does what this stage gives depend on all the inputs together (one report of them all, a diff of two)?
        Then the graph cannot run once per input (``replay run --workers``) and give what one run gives."""
        return False

    # results ---------------------------------------------------------------------------------
    def publish(self, key: str, value: Any) -> None:
        """Hand a result to the command that runs the graph (``RunResult.facts[key]``)."""
        self.facts[key] = value

    # side ports -----------------------------------------------------------------------------
    def error(self, code: str, message: str, batch: Batch | None = None, i: int | None = None, **fields: Any) -> None:
        """Report a diagnostic on the errors port, at column ``i`` of ``batch`` when given. ``code`` is one of the
        catalogue's (``errors.CATALOGUE``, ERROR_CODES.md), a third-party stage's too: every code replay prints is one
        a reader can look up; what is the stage's own goes in the message and ``fields``. Another code stops the run
        (E_STAGE_FAILED, saying so)."""
        self._refuse_unknown_code(code)  # (before ``diagnostic`` looks the code's advice up)
        if batch is not None and i is not None:
            for key, value in batch.position(i).items():
                fields.setdefault(key, value)
        fields.setdefault("stage", self.id)
        self.emit("errors", diagnostic(code, message, **fields))

    def note_keys_twice(self, batch: Batch, i: int, value: Any, outcome: str) -> None:
        """A notice (E_JSON_DUPLICATE_KEY, a warning) when line ``i`` of ``batch`` (``value`` read from it) writes a key
        twice in one object, saying ``outcome``; its position is made only then (most lines write each key once)."""
        raw = batch.raws[i]
        keys = exactjson.duplicate_keys(raw, value) if raw is not None else None
        if keys:
            self.emit("notices", {**keys_twice_note(keys, batch.position(i), outcome), "stage": self.id})

    def emit(self, port: str, record: dict[str, Any]) -> None:
        """Send ``record`` on side port ``port``. A record on ``errors`` has a catalogue code, as ``error`` makes one
        (a stage that builds its own is refused the same way)."""
        if port == "errors" and type(record) is dict:  # (what is no record is named where it is sent: record_invalid)
            self._refuse_unknown_code(record.get("code"))
        self._side.setdefault(port, []).append(record)

    def _refuse_unknown_code(self, code: Any) -> None:
        """Stop the run (E_STAGE_FAILED, saying why) when ``code`` is not one of the catalogue's."""
        if code.__class__ is not str or code not in CATALOGUE:
            raise ReplayError(
                "E_STAGE_FAILED", f"stage {self.id!r} reported error code {code!r}, which is not in replay's catalogue "
                "(ERROR_CODES.md): a stage, a third-party one too, reports with a catalogue code",
                stage=self.id, expected="a code of ERROR_CODES.md", received=as_received(code), exit_code=EXIT_FAILED,
                howToFix="Report with the catalogue code that fits (E_EVENT_INVALID for an event that is wrong, "
                         "E_STAGE_FAILED for a failure) and say what is the stage's own in the message and fields "
                         "(self.error(code, message, rule=\"my_rule\")): they are printed with the error.")

    def drain(self) -> dict[str, list[dict[str, Any]]]:
        """Take the side records collected since the last drain."""
        side = self._side
        if side:
            self._side = {}
        return side

    def take(self, port: str) -> list[dict[str, Any]]:
        """Take the side records of one port (handy in tests)."""
        return self._side.pop(port, [])

    @classmethod
    def describe(cls) -> dict[str, Any]:
        return {
            "type": cls.name,
            "kind": cls.kind,
            "summary": cls.summary,
            "ports": list(cls.ports),
            "options": {
                k: {"type": o.type_name(), "default": o.default, "help": o.help, "required": o.required}
                | ({"choices": list(o.choices)} if o.choices else {})
                | ({"bind": o.bind} if o.bind else {})
                | ({"minimum": o.minimum} if o.minimum is not None else {})
                for k, o in cls.options.items()
            },
        }


class Transform(Stage):
    """A synchronous transform: ``__call__`` takes each batch of its input and returns what it passes on (a ``Batch``,
    a list of them, or None to drop it); ``flush`` gives what it held back when the input ends. Run in the task of
    its neighbours (fused), so it must not block; test one on ``Batch.of([...])``."""

    kind = "transform"

    def __call__(self, batch: Batch) -> Batch | Sequence[Batch | Iterator[Batch]] | None:  # pragma: no cover - interface
        raise NotImplementedError

    def flush(self) -> Batch | Sequence[Batch | Iterator[Batch]] | None:
        """What the stage still holds when its input has ended (a run kept whole, a count), as ``__call__`` returns
        it; None (the default): nothing."""
        return None


class HandsOnJoins(Transform):
    """A transform that hands the joins of ``join_split_records`` on with their lines (``Batch.rejoined``) when exactly
    one stage its lines reach logs them (``logs_joins``: it logs them with their run); with none (or two, on two ways,
    each of which would log them) it logs them itself. ``hands_on`` says which (``streams_into``)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.hands_on = False

    def streams_into(self, after: list[Stage]) -> None:
        self.hands_on = sum(stage.logs_joins for stage in after) == 1

    def built_again(self, given: dict[str, Any]) -> Stage:
        copy = super().built_again(given)
        assert isinstance(copy, HandsOnJoins)
        copy.hands_on = self.hands_on
        return copy


class AsyncTransform(Stage):
    """A transform that does I/O (spawning a process, calling a service): it runs as its own task,
    reading batches and sending results through ``out`` at its own pace."""

    kind = "transform"

    async def process(self, batches: AsyncIterator[Batch], out: Output) -> None:  # pragma: no cover - interface
        raise NotImplementedError


class Source(Stage):
    """A stage with no input (``read``, ``read_nats``): ``produce`` sends its batches with ``await out.send(batch)``
    and returns when it has no more."""

    kind = "source"

    async def produce(self, out: Output) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def reads_stdin_unnamed(self) -> bool:
        """Does this source read stdin without being told to: given no path (``read``)? A terminal there is refused
        before the run (``cli.app.execute``); a `-` given as a path reads it, terminal or not."""
        return False

    def reads_stdin(self) -> str | None:
        """Where the config tells this source to read stdin, as a refusal names it (``named``: ``stages.r2.paths`` for
        a `-` among its paths, the stage for none given, ``reads_stdin_unnamed``); None when it does not. Stdin can be
        read once: a graph with two sources reading it is refused (``Graph.validate``)."""
        return self.named(None)[1] if self.reads_stdin_unnamed() else None


class Sink(Stage):
    """A stage at the end of a graph (``write``, ``report``, ``log``): ``consume`` takes every batch of its input
    (``async for batch in batches``) and writes it somewhere; it returns only when its input has ended."""

    kind = "sink"
    ports: ClassVar[tuple[str, ...]] = ()
    # It takes (part of) a stage's ``one_document``: set by the executor for the run (``Graph.documents``).
    whole_document = False

    async def report(self) -> None:
        """Hand the side records collected so far to the graph now (they otherwise go when ``consume``
        returns): a sink about to commit an output reports its problems first, so ``--strict`` can stop it."""
        if self._report is not None:
            await self._report()

    _report: Callable[[], Awaitable[None]] | None = None

    def run_failed(self) -> bool:
        """Has an error reached the graph's error port so far? Once this sink's input has ended, every stage before it
        has reported its errors (``write``'s ``hold`` then writes stdout, or nothing). False outside a graph run."""
        return self._errors is not None and self._errors() > 0

    _errors: Callable[[], int] | None = None
    # What it takes is an output of the run (a file, stdout, a subject): a run that failed before any sink of it took a
    # record writes no empty outputs (``commit_empty``). A sink of warnings on stderr (``log``) says False.
    takes_output = True

    def commit_empty(self, commit: Callable[[], None]) -> None:
        """This sink's output has nothing in it: ``commit`` (which writes it so) is called when the run ends, but not
        when the run failed (an error reached the graph's error port: exit 1) before anything was written at all (no
        sink of the run took a record). An output appears whole or not at all: ``replay write --dialect X --out F`` of
        a stream with nothing to write back leaves no empty F (an F there before stays as it was), while an empty input
        gives an empty F, and ``replay heal --log F`` an empty log beside the journal it wrote. Outside a graph run
        (a stage called on its own), ``commit`` is called now."""
        if self._commit_empty is None:
            commit()
        else:
            self._commit_empty(commit)

    _commit_empty: Callable[[Callable[[], None]], None] | None = None

    async def consume(self, batches: AsyncIterator[Batch]) -> None:  # pragma: no cover - interface
        raise NotImplementedError


@dataclass
class SubGraph:
    """What a composite stage stands for: stage tables in the config format, and its ports.

    ``stages`` maps inner ids to tables (``type``, ``inputs``, options). An inner input ``"$in"`` is
    the composite's own main inputs, ``"$in.<port>"`` those of its inputs that name a side port
    (``"parse.repairs"``); any other input names an inner stage. ``exports`` maps each port of the
    composite (``""`` for its main output) to the inner outputs it stands for; ``*.<port>`` there
    means that port of every inner stage that has it.
    """

    stages: dict[str, dict[str, Any]]
    exports: dict[str, list[str]]


def option_named(exc: ReplayError, options: dict[str, Option], given: dict[str, Any], flags: dict[str, str],
                 where: str, *, values: bool = True) -> ReplayError:
    """The one naming of a refusal raised about a stage's option (by its constructor, its preflight, its expansion):
    ``exc`` whose ``path`` is the option (``aliases``, or a key in it: ``aliases.run_completed``) or the value it was
    ``given`` (a file it names: ``rules.json``, then kept as ``received``) gets the path the user wrote it at: the flag
    that set it (``flags``: ``--rules``), else the config's key (``where`` + ``.rules``). The options that take the
    command's arguments are not looked at (the user typed those as they are). Any other path is left as it is.
    ``values``: False for a command's graph (one a flag set an option of), which names a value no flag gave as it is:
    the user typed no key for it (a folder the command made of --out, a URL)."""
    path = exc.body.get("path")
    if not isinstance(path, str) or not path:
        return exc
    if any(value == path for key, value in given.items() if key in options and options[key].bind == "args"):
        return exc  # (a value the user typed as a command's argument: ``case.json`` is a file, not the option ``case``)
    valued = [key for key, value in given.items()
              if value == path and key in options and options[key].bind != "args" and (values or key in flags)]
    if valued:
        exc.body["path"] = flags.get(valued[0]) or f"{where}.{valued[0]}"
        exc.body.setdefault("received", path)
        return exc
    head = path.split(".", 1)[0].split("[", 1)[0]
    if head in options and options[head].bind != "args" and (path == head or isinstance(given.get(head), dict | list)):
        exc.body["path"] = flags.get(head) or f"{where}.{path}"  # (``aliases.run_completed``: a key in the option;
        # ``format.jsonl`` past ``format``, a file some walk found, is no key of a string option)
    return exc


class Composite(Stage):
    kind = "composite"

    def expand(self, registry: Any) -> SubGraph:  # pragma: no cover - interface
        raise NotImplementedError


def result_invalid(stage_id: str, value: Any) -> ReplayError:
    """The error for a stage that gave ``value`` where a Batch, a list of Batches or None belongs."""
    return ReplayError(
        "E_STAGE_RESULT_INVALID",
        f"stage {stage_id!r} gave {type(value).__name__}: a stage must return (or send) a Batch, a list of Batches or None",
        exit_code=EXIT_FAILED, stage=stage_id, received=type(value).__name__, expected="Batch, list of Batches or None",
    )


def port_undeclared(stage_id: str, port: str, ports: tuple[str, ...]) -> ReplayError:
    """The error for a stage that sent records on a port it does not declare: no config can wire them anywhere."""
    return ReplayError(
        "E_STAGE_RESULT_INVALID",
        f"stage {stage_id!r} sent records on port {port!r}, which it does not declare: they could reach no one",
        exit_code=EXIT_FAILED, stage=stage_id, received=port, expected="one of its ports: " + ", ".join(ports),
        howToFix="Add the port to the stage class's `ports`, or emit on one of those it declares.",
    )


def record_invalid(stage_id: str, port: str, value: Any) -> ReplayError:
    """The error for a stage that sent ``value``, no record (a dict: a JSON object), on its side port ``port``."""
    return ReplayError(
        "E_STAGE_RESULT_INVALID",
        f"stage {stage_id!r} sent a {type(value).__name__} on port {port!r}, where records (JSON objects: dicts) go",
        exit_code=EXIT_FAILED, stage=stage_id, received=type(value).__name__, expected="a dict", path=port,
        howToFix="Emit one dict per record (`self.emit(port, {...})`).",
    )


class Output:
    """What a source sends through: the executor decides where batches and side records go."""

    def __init__(self, send: Callable[[Batch], Awaitable[None]], drain: Callable[[], Awaitable[None]],
                 stage_id: str = "?") -> None:
        self._send = send
        self._drain = drain
        self.stage_id = stage_id  # named when something other than a Batch is sent

    async def send(self, batch: Batch) -> None:
        if type(batch) is not Batch:
            raise result_invalid(self.stage_id, batch)
        await self._drain()
        if batch.goes_on():  # (an empty one marked ``pause``, say: read's, when its lines came to nothing but errors)
            await self._send(batch)

    async def drain(self) -> None:
        """Forward pending side records now (a source waiting for input calls this)."""
        await self._drain()

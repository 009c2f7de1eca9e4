"""DiffRuns: compares two runs record by record and writes where they part and what differs (text or one JSON object).

The two runs are the stream's two inputs: a new side begins at each ``{"$record": "source"}`` (what
``read`` writes before each of several files), or, in a stream without source records, at each new
run (a run record, a new ``runId``, or a flows journal's ``run_id``: ``runs.run_id_named``). Records are held until the end of the stream, then aligned
(``pipeline/model/diff.py``). Runs that differ are also reported as ``E_RUNS_DIFFER`` on the errors
port (so the graph exits 1); anything but two runs is ``E_DIFF_INPUT_INVALID``, and so is a side (an input, when
the stream has source records) holding no run or several: each side must be one run. Diagnostics routed
in on a side input (``inputs = ["parse", "read.errors", "parse.errors"]``) make the input unusable:
the stage then refuses with ``E_JOURNAL_READ_FAILED`` before writing anything. In a chain it gets them so, as diff.toml
wires them (``chain_spec``): ``chain = [{ type = "diff" }]`` compares as `replay diff` does.

A line with a key written twice in one object is compared by the last value of each, as every reader keeps it: said
on the notices port (``E_JSON_DUPLICATE_KEY``, a warning, as heal and ``golden check`` say it), with its position. A
JSON document's are said by ``read``, which reads it whole; a mapped log's lines by ``dialect``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from replay.pipeline.engine import exactjson, interrupts
from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.errors import ReplayError, refused
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import Option, Stage, Transform
from replay.pipeline.engine.text import utf8
from replay.pipeline.io.journals import SKIPPED
from replay.pipeline.model.align import Aligner
from replay.pipeline.model.diff import Entry, Ignore, IgnorePathError, as_document, as_text, compared, diff_runs, entry
from replay.pipeline.model.records import RECORD_KEY, SOURCE_RECORD
from replay.pipeline.model.runs import Run, name_run, run_id_named, starts_run
from replay.pipeline.model.walk_journal import read_failure_advice

TEXT, JSON = "text", "json"
DIFF_SPEC = "diff"  # the graph `replay diff` runs: pipeline/specs/diff.toml
COMPARED = "only the last value of each is compared"  # (what comes of a key written twice: note_keys_twice)


@register("diff")
class DiffRuns(Transform):
    summary = "Align two runs record by record; write the first divergence and every difference (ignoring fields that always differ)."
    gives = "a diff of two runs"
    ports = ("errors", "notices")  # notices: a line with a key written twice (E_JSON_DUPLICATE_KEY, a warning)
    options = {
        "format": Option(str, TEXT, "'text': one line per difference and a verdict; 'json': one object with "
                         "same, firstDivergence, summary and differences", choices=(TEXT, JSON)),
        "ignore": Option(list, [], "more field paths to leave out (dot-separated keys, `*` any key, `**` any depth)"),
        "default_ignore": Option(bool, True, "leave out the fields that always differ: timestamps, run ids, ids, "
                                 "call ids, durations, seq"),
    }

    @classmethod
    def chain_spec(cls, source: Callable[[], Stage | None]) -> str | None:
        """In a chain, what `replay diff` puts in front of it (parse, dialect), with the diagnostics of the read, the
        parse and the mapping routed in: an input one of them cannot read whole is refused, as the command refuses it."""
        return DIFF_SPEC

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        try:
            self.ignore = Ignore.of(self.config["ignore"], default=self.config["default_ignore"])
        except IgnorePathError as exc:
            raise ReplayError("E_CONFIG_OPTION_INVALID", str(exc), path="ignore", received=self.config["ignore"]) from exc
        self.entries: list[Entry] = []
        self.sides: list[tuple[int, int]] = []  # per entry: (source side, run side)
        self.source_names: list[str] = []  # per source record that begins a side
        self.side_begun = False  # has a record followed the last source record?
        self.run_names: list[str] = []  # per run
        self.run: Run | None = None
        self.unreadable: dict[str, Any] | None = None

    def whole_stream(self) -> bool:
        return True  # two runs, compared

    def __call__(self, batch: Batch) -> None:
        if batch.port is not None:  # diagnostics routed in: an input could not be read whole
            if self.unreadable is None and batch.events:
                self.unreadable = batch.events[0]
            return
        with exactjson.deep():  # (leaving out ignored fields recurses twice a level: as deep as parse reads)
            self._take(batch)

    def _take(self, batch: Batch) -> None:
        for i, record in enumerate(batch.events or ()):
            if type(record) is not dict:
                continue
            if batch.pointers[i] is None:  # (a line as it was read: a document's are read's)
                self.note_keys_twice(batch, i, record, COMPARED)
            if record.get(RECORD_KEY) == SOURCE_RECORD:
                name = record.get("source")
                name = name if isinstance(name, str) else batch.source
                if self.source_names and not self.side_begun and batch.raws[i] is not None:
                    # a saved one (a line of the input: `replay read a b > x`; read's own mark is no line) before any
                    # record of the input read's mark began: where that input's records came from, no side of its own
                    self.source_names[-1] = name
                else:
                    self.source_names.append(name)
                self.side_begun = False
                self.run = None
                continue
            self.side_begun = True
            # (runs told apart by a canonical runId, else a flows journal's run_id: walk's runs)
            if self.run is None or starts_run(record, self.run, batch.source, run_id_named):
                self.run = Run(run_id_named(record), None, batch.source)
                self.run_names.append(batch.source)
            elif RECORD_KEY not in record:
                name_run(self.run, record, run_id_named)  # (a run record naming no runId takes its first event's)
            if compared(record):
                self.entries.append(entry(record, 0, self.ignore, batch.lines[i], batch.offsets[i], batch.pointers[i]))
                self.sides.append((len(self.source_names) - 1, len(self.run_names) - 1))

    def _split(self) -> list[tuple[str, list[Entry]]]:
        """The runs to compare: one per source record, else one per run."""
        by_source = bool(self.source_names)
        names = self.source_names if by_source else self.run_names
        groups: list[list[Entry]] = [[] for _ in names]
        for item, (source_side, run_side) in zip(self.entries, self.sides, strict=True):
            side = source_side if by_source else run_side
            if side >= 0:
                group = groups[side]
                item.index = len(group) + 1
                group.append(item)
        return list(zip(names, groups, strict=True))

    def _side_runs(self) -> list[int]:
        """How many runs each side holds when the sides are the inputs (source records): runs with a record compared
        (a reserved record of another kind opening an input, e.g. heal's, is no run of its own)."""
        runs: list[set[int]] = [set() for _ in self.source_names]
        for source_side, run_side in self.sides:
            if source_side >= 0:
                runs[source_side].add(run_side)
        return [len(r) for r in runs]

    def flush(self) -> Batch | None:
        if self.unreadable is not None:
            problem = self.unreadable
            where = {k: problem[k] for k in ("path", "source", "line", "column", "offset") if problem.get(k) is not None}
            where |= read_failure_advice(problem.get("code"))
            if "offset" not in where and "path" in where and problem.get("code") == "E_EVENT_NOT_OBJECT":
                # a record of a JSON document: no byte offset to cut at, the record's path says which
                where["howToFix"] = f"Each record of the document must be a JSON object: fix or remove {where['path']}."
            elif "path" in where and "howToFix" not in where and problem.get("howToFix"):
                where["howToFix"] = problem["howToFix"]  # a JSON document refused (read's words: no line to cut)
            said = str(problem.get("message", "an input is unreadable"))
            if problem.get("code") == "E_JSONL_LINE_TOO_LONG":  # (read skips the line; the diff does not go on past it)
                said = said.removesuffix(SKIPPED)
            raise refused("E_JOURNAL_READ_FAILED", f"cannot compare: {said}",
                          cause=problem.get("code"), **where)
        sides = self._split()
        if len(sides) != 2:
            named = [name for name, _ in sides]
            raise ReplayError(
                "E_DIFF_INPUT_INVALID", f"diff compares two runs; the inputs hold {len(sides)}"
                + (f", of {', '.join(map(repr, named))}" if self.source_names else ""),
                expected="two runs (two files, or one stream with two runs)", received=len(sides),
                howToFix="Give two journals, artifacts or run ids, one run each (or a stream holding two runs); a "
                         "stream saved from `replay read a b` holds the records of each file it read: give diff the "
                         "files themselves.")
        if self.source_names:
            for label, (name, _), count in zip("ab", sides, self._side_runs(), strict=True):
                if count != 1:
                    held = "no run" if count == 0 else f"{count} runs"
                    raise ReplayError(
                        "E_DIFF_INPUT_INVALID", f"diff compares one run with another; {label} ({name!r}) holds {held}",
                        source=name, expected="one run on each side: a run record and the events of one runId, or an "
                        "artifact", received=count,
                        howToFix="Give a journal or artifact of one run on each side; to take one run of a journal "
                        "holding several, keep its records: `jq -c 'select(.runId == \"RUN_ID\")' FILE > one.jsonl` (`.run_id` in a flows journal)."
                        if count else "Give a journal or artifact holding a run on each side (this one holds no event "
                        "and no run record).")
        (a_name, a), (b_name, b) = sides
        with exactjson.deep():  # (the fields of a changed pair are compared level by level)
            result = diff_runs(a, b, Aligner(check=interrupts.check))  # (a long alignment lets Ctrl-C in)
        if not result.same:
            first = result.first or {}
            self.error("E_RUNS_DIFFER", f"the runs differ: {len(result.differences)} difference(s), the first at "
                       f"record {_index(first.get('a'))} of {a_name!r} / record {_index(first.get('b'))} of {b_name!r}",
                       received=first)
        if self.config["format"] == JSON:
            document = as_document(result, a_name, b_name, self.ignore)
            rendered = exactjson.dumps(document, default=str)
        else:
            document = {"same": result.same}
            rendered = utf8("\n".join(as_text(result, a_name, b_name, self.ignore)))
        return Batch(a_name, [document], [rendered], [None], [None])


def _index(position: dict[str, Any] | None) -> str:
    return str(position["index"]) if position else "(end)"

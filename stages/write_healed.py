"""WriteHealed: the sink of `heal --in`: per input file, its healed copy and heal log, mirrored under a folder.

For each input (in the order read gives them): ``<id>.healed.json`` (artifacts) or ``<id>.healed.jsonl``
(journals) and ``<id>.heal-log.json``, at the input's path relative to ``root``, under ``out_dir``;
one JSON line per input on stdout naming what was written. What a healed copy still gets wrong is reported
(``E_HEALED_ARTIFACT_INVALID``, exit 1) as filter mode reports it: a journal's stream checked as heal's ``check``
checks it, an artifact whole. Outputs are planned before anything runs:
two inputs healing into one file, or an output landing on an input, is refused. A new ``out_dir``
appears whole or not at all (not at all when every input was refused: nothing healed). ``out_dir``
(and the inputs) may be fsspec URLs: a folder at a URL is written in place, each file atomically
(``io.remote``).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import Any, ClassVar

import anyio
import anyio.lowlevel

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.batch import Batch, Column
from replay.pipeline.engine.errors import printable
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import OUTPUTS_WRITTEN, Option, Sink
from replay.pipeline.io.fdio import write_stdout
from replay.pipeline.io.journals import is_url
from replay.pipeline.io.run_files import (
    HEALED_JOURNAL,
    Place,
    common_root,
    document_bytes,
    plan_healed,
    refuse_non_folder,
    under,
    write_file,
)
from replay.pipeline.io.staging import staged_folder
from replay.pipeline.model.artifacts import FILL_STAGE, fill_repairs, lacking
from replay.pipeline.model.healing import healed_problems
from replay.pipeline.model.records import HEAL_RECORD, RUN_RECORD, is_record, record_kind
from replay.pipeline.model.repairs import count_in, heal_log_document
from replay.pipeline.report.model import healed_run_artifact
from replay.stages.validate import ValidateEvents


@dataclass
class _Healed:
    """What one input turned into."""

    run: dict[str, Any] | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    columns: list[Column] = field(default_factory=list)  # the whole stream (run and heal records too), with bytes
    heal: dict[str, Any] | None = None
    repairs: list[dict[str, Any]] = field(default_factory=list)
    notices: list[dict[str, Any]] = field(default_factory=list)  # the stages' notices, as their ports gave them
    notes: list[dict[str, Any]] = field(default_factory=list)  # what the rules saw while changing events (``Batch.notes``)
    run_id: Any = None  # the first event's runId (of an event parsed, or a line as it came), when it names one
    named: bool = False  # the first event was seen

    def take(self, record: dict[str, Any], column: Column) -> None:
        """A record of the stream: kept with its bytes, and noted when it is the input's run record, heal record or
        first event."""
        kind = record_kind(record)
        self.columns.append(column)
        if kind == RUN_RECORD and self.run is None:
            self.run = record
        elif kind == HEAL_RECORD:
            self.heal = record
        elif not is_record(record):  # (``"$record": null`` is a record too: no event)
            self.events.append(record)
            if not self.named:
                self.named, self.run_id = True, record.get("runId")

    def take_lines(self, batch: Batch) -> None:
        """Lines of a journal as they came (the screen's fast lane: whole runs that need nothing, or that it
        repaired): kept as bytes; decoded only while the run record or the first event is still to be found, or
        where a line may hold a record (its bytes name ``$record``, or escape a character: ``"\u0024record"``)."""
        for column in zip([None] * len(batch.raws), batch.raws, batch.lines, batch.offsets, batch.pointers, strict=True):
            raw = column[1]
            if raw is not None and (not self.named or b"$record" in raw or b"\\u" in raw):
                self.take(exactjson.loads(raw), column)
            else:
                self.columns.append(column)


@register(FILL_STAGE)
class WriteHealed(Sink):
    summary = "Write each input's healed copy (.healed.json / .healed.jsonl) and heal log under a folder, mirroring the inputs' folders."
    options = {
        "out_dir": Option(str, "", "the folder to write into", required=True),
        "root": Option(str, "", "the folder whose layout is mirrored; empty: the inputs' common folder"),
        "write_dir": Option(str, "", "write the files into this existing folder instead (a run that renames it to out_dir "
                                     "when every input is done: `heal --in` with --workers); stdout still names out_dir"),
    }
    ports: ClassVar[tuple[str, ...]] = ("errors",)
    screened_lane = "ends"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.plan: dict[str, tuple[Path, Path]] = {}
        # a healed journal is checked as `replay heal` checks its stream (a healed artifact, whole, in _render)
        self.check = ValidateEvents(report_as="E_HEALED_ARTIFACT_INVALID")

    def output_files(self) -> list[str]:
        return ["-"]  # one line per input written; the files are planned in preflight

    url_outputs = frozenset({"out_dir", "write_dir"})

    def output_folders(self) -> list[tuple[str | None, str]]:
        option = "write_dir" if self.config["write_dir"] else "out_dir"
        return [(option, self.config[option])]

    def preflight(self, inputs: list[str]) -> None:
        files = [f for f in inputs if f != "-"]
        out_dir = self.config["out_dir"]
        refuse_non_folder(out_dir, "Give --out a folder: `replay heal --in PATH --out DIR`; to heal one file to stdout, "
                                   "run `replay heal FILE > healed.jsonl`.",
                          example="replay heal --in .replay/artifacts --out .replay/healed",
                          flag=self.flags.get("out_dir"))
        # a refusal of the plan names what gave the inputs (--in; in a config, this stage) or the folder (--out, out_dir)
        named = {"inputs_path": self.flags.get("root") or self.named(None)[1], "target_path": self.named("out_dir")[1]}
        if is_url(out_dir):
            self.plan = plan_healed(files, self._root(files), out_dir, **named)
            return
        root = self._root(files)
        if isinstance(root, Path) and root.is_file():
            root = root.parent
        self.plan = plan_healed(files, root, Path(out_dir), **named)

    def _root(self, files: list[str]) -> Place:
        given = self.config["root"]
        if given:
            return given if is_url(given) else Path(given)
        return common_root(files)

    async def consume(self, batches: AsyncIterator[Batch]) -> None:
        healed: dict[str, _Healed] = {}
        names = {printable(path): path for path in self.plan}
        journals = {source for source, path in names.items() if self.plan[path][0].name.endswith(HEALED_JOURNAL)}
        last: str | None = None
        refused: set[str] = set()  # inputs read reported it could not read (a .json cut off mid-write, too long, ...)
        async for batch in batches:
            if batch.port == "errors":  # read's, passed on: an input it refused is not refused again as empty
                for entry in batch.events or ():
                    refused.add(str(entry.get("source")))
                    self.emit("errors", entry)
                continue
            if batch.port in ("repairs", "notices"):
                for entry in batch.events or ():
                    target = healed.setdefault(str(entry.get("source") or last), _Healed())
                    (target.repairs if batch.port == "repairs" else target.notices).append(entry)
                continue
            if batch.port is not None:
                continue
            last = batch.source
            target = healed.setdefault(batch.source, _Healed())
            if batch.notes:  # what the rules saw while changing events (a key written twice, written anew): its heal log
                target.notes.extend(batch.notes)
                batch.notes = None
            if batch.source in journals:
                self.check(batch)
                for entry in self.check.drain().get("errors", ()):
                    self.emit("errors", {**entry, "stage": self.id})
            if batch.events is None:
                target.take_lines(batch)
                continue
            for i, record in enumerate(batch.events):
                target.take(record, batch.column(i))
        outputs = []
        for source, path in names.items():
            done = healed.get(source)
            journal = self.plan[path][0].name.endswith(HEALED_JOURNAL)
            if done is None and journal:
                done = _Healed()  # an empty journal (blank lines only): healed, as filter mode heals it, into an empty one
            if done is None or not (done.columns or journal):
                if source not in refused:  # no artifact is made up from nothing
                    self.error("E_ARTIFACT_EVENTS_INVALID", f"{source!r} holds no records to heal", source=source,
                               expected="an artifact or a journal with events", received="no records")
                continue
            outputs.append(self._render(source, path, done))
        await self.report()  # problems first: under --strict they stop the run before the folder appears
        await anyio.lowlevel.checkpoint()  # a run cancelled meanwhile must not write the folder
        out_dir: Place = self.config["out_dir"] if is_url(self.config["out_dir"]) else Path(self.config["out_dir"])
        written: list[bytes] = []
        files: list[str] = []
        # nothing healed (every input refused): no folder appears
        with _folder(out_dir, self.config["write_dir"]) if outputs else nullcontext(out_dir) as base:
            for (healed_rel, data), (log_rel, log), source in outputs:
                files.append(write_file(under(base, healed_rel), data))
                files.append(write_file(under(base, log_rel), document_bytes(log)))
                written.append(exactjson.dumps({"source": source, "healed": printable(str(under(out_dir, healed_rel))),
                                             "log": printable(str(under(out_dir, log_rel))),
                                             "repairs": log["summary"]["total"]}) + b"\n")
        self.publish(OUTPUTS_WRITTEN, files)
        write_stdout(b"".join(written))

    def _render(self, source: str, path: str, done: _Healed) -> tuple[tuple[Path, bytes], tuple[Path, dict[str, Any]], str]:
        """One input's healed copy and heal log (problems of the healed copy go to the errors port)."""
        healed_rel, log_rel = self.plan[path]
        if healed_rel.name.endswith(HEALED_JOURNAL):
            data = Batch.from_columns(done.columns).to_jsonl()  # untouched records keep their bytes
            artifact_id = (done.run or {}).get("artifactId") or printable(Path(path).name)  # (a name not UTF-8 too)
        else:
            artifact = healed_run_artifact(done.run, done.events, done.heal)
            run_id = (done.run or {}).get("runId") or done.run_id
            filled = fill_repairs(artifact, lacking(self.shared, source), source=source, run_id=run_id)
            if filled:  # (what the input lacked or held that is written anew: repairs, counted with the run's others)
                done.repairs = [*done.repairs, *filled]
                artifact["heal"] = {k: v for k, v in (count_in(done.heal, filled) or {}).items() if k in ("repairs", "byRule")}
            for problem in healed_problems(artifact, source, stage=self.id):
                self.emit("errors", problem)
            data = document_bytes(artifact)
            artifact_id = artifact["id"]
        run_id = (done.run or {}).get("runId") or done.run_id
        log = heal_log_document(done.repairs, in_line_order(done.notices, done.notes), artifact_id=artifact_id, run_id=run_id,
                                source=source)
        return (healed_rel, data), (log_rel, log), source


def in_line_order(notices: list[dict[str, Any]], notes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An input's notices for its heal log, in one order whatever the stages ran as: the notices of the stages' ports as
    they came, each of the notes the batches carried (in their order) before the first of those of a later input line.
    (The notes travel with the stream, the notices on side ports: which came first depended on how the graph's stages
    were split into tasks, which the fast lane changes.)

    A merge of the two by line (``heapq.merge`` takes the smaller head, a notice before a note of its line): a notice
    that names no line comes as it is (it holds no note back), a note that names none after every notice."""
    merged = heapq.merge(((_line_of(notice, -math.inf), notice) for notice in notices),
                         ((_line_of(note, math.inf), note) for note in notes), key=itemgetter(0))
    return [entry for _, entry in merged]


def _line_of(entry: dict[str, Any], otherwise: float) -> int | float:
    line = entry.get("line")
    return line if line.__class__ is int else otherwise


@contextmanager
def _folder(out_dir: Place, write_dir: str) -> Iterator[Place]:
    """Where the files go: ``write_dir`` when given; a folder URL itself (written in place: an object
    store cannot rename a folder); else a local folder staged beside ``out_dir``."""
    if write_dir:
        yield write_dir if is_url(write_dir) else Path(write_dir)
    elif isinstance(out_dir, str):
        yield out_dir
    else:
        with staged_folder(out_dir) as base:
            yield base

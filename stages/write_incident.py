"""WriteIncident: writes an incident's folder (bundle, audit, evaluation, report, trace, JUnit, replay verdict) whole, and sends a summary line.

``out`` names the folder. ``into`` instead names a parent folder, and the incident gets its own folder
in it, named after the file it was read from (``bundle.folder_name``): how ``incident import DIR``
runs this graph once per export. With ``write_dir`` (a folder of many that the command owns: staged
beside ``into``, or resumed) the folder is written there, replacing one an earlier, unfinished run left.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

import anyio.lowlevel

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.engine.preflight import code_for, refuse_overlap
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import OUTPUTS_WRITTEN, AsyncTransform, Option, Output
from replay.pipeline.model.incident import bundle, export, records
from replay.pipeline.model.incident.render import folder_files, verdict_line
from replay.pipeline.model.incident.rules import evaluate

# what an empty --out is refused as (``errors.empty_value``), for one export here and for a folder of them
# (``cli.commands.incident_many``, which binds the folder as ``into``)
EMPTY_OUT: dict[str, str] = {"names": "folder", "expected": "a folder (new or empty)", "example": "imported"}


@register("write_incident")
class WriteIncident(AsyncTransform):
    summary = ("Write the incident folder `out` (new or empty; it appears whole or not at all), or one named after the "
               "input file inside `into`: incident.json, redaction.json, evaluation.json, report.html, trace.jsonl, "
               "junit.xml and, after a replay, replay.json. Refuses an incident no redact stage has seen. Sends one "
               "summary record.")
    options = {
        "out": Option(str, "", "the folder to create (or give `into`)"),
        "into": Option(str, "", "instead of `out`: a parent folder; the incident's folder in it is named after the file "
                                "it was read from (path relative to `root`, suffix dropped; `sub/a.json` -> `sub%2Fa`)"),
        "root": Option(str, "", "with `into`: the folder the names are relative to (empty: the file's own folder)"),
        "write_dir": Option(str, "", "with `into`: write into this folder instead, replacing a folder an unfinished run "
                                     "left there (a command that renames it to `into` at the end); the summary names `into`"),
        "max_bytes": Option(int, export.Limits.max_bytes, "the max_bytes the bundle is to be read with: one larger than "
                            f"{export.BUNDLE_GROWTH} times it is refused, not written", minimum=1),
    }

    def output_folders(self) -> list[tuple[str | None, str]]:
        c = self.config
        option = next((key for key in ("out", "write_dir", "into") if c[key]), None)
        return [] if option is None else [(option, c[option])]

    def preflight(self, inputs: list[str]) -> None:
        c = self.config
        if bool(c["out"]) == bool(c["into"]):  # (an empty --out is neither)
            if "out" in self.flags:  # (a command sets one of them, from the flag the user typed)
                raise self.refuse_empty("out", **EMPTY_OUT)
            subject, path = self.named("out")
            said = "not both" if c["out"] else "and has neither (an empty `out` names no folder)"
            raise ReplayError("E_CONFIG_OPTION_INVALID", f"{subject} needs either `out` or `into`, {said}",
                              path=path, expected="one of out, into",
                              received="both" if c["out"] else "neither", example='out = "imported"')
        if c["out"]:
            # an input folder (a bundle's), or one holding an input: the next run would read the outputs as inputs
            flag = "out" in self.flags
            refuse_overlap(c["out"], inputs, self.named("out")[1], what="an input", code=code_for(self, "out"),
                           how_to_fix="Write the incident folder beside its inputs, not inside one, e.g. "
                                      + ("--out reviewed." if flag else 'out = "reviewed".'))
            bundle.check_output_folder(c["out"], self.flags.get("out"))  # a used folder is refused before anything runs

    def _folder(self, source: str) -> tuple[str, str]:
        """(where the folder is written, what the summary line names)."""
        c = self.config
        if c["out"]:
            return c["out"], c["out"]
        name = bundle.folder_name(source, c["root"])
        written = os.path.join(c["write_dir"], name) if c["write_dir"] else os.path.join(c["into"], name)
        if not c["write_dir"]:
            bundle.check_output_folder(written)
        return written, os.path.join(c["into"], name)

    async def process(self, batches: AsyncIterator[Batch], out: Output) -> None:
        incident: dict[str, Any] | None = None
        evaluation: dict[str, Any] | None = None
        replay: dict[str, Any] | None = None
        source = ""
        async for batch in batches:
            for i, record in enumerate(batch.events or ()):
                kind = records.kind_of(record)
                if kind == records.INCIDENT:
                    if incident is not None:
                        self.error("E_INCIDENT_BUNDLE_INVALID", "a second incident reached write_incident; one folder holds one incident",
                                   batch, i)
                        continue
                    incident = records.body_of(record)
                    source = batch.source
                elif kind == records.EVALUATION and evaluation is None:
                    evaluation = records.body_of(record)
                elif kind == records.REPLAY and replay is None:
                    replay = records.body_of(record)
        await anyio.lowlevel.checkpoint()  # a run cancelled upstream (a refused input) must write nothing
        if incident is None:
            self.error("E_INCIDENT_BUNDLE_INVALID", "no incident record reached write_incident; nothing was written")
            return
        if not isinstance(incident.get("redaction"), dict):
            raise ReplayError("E_INCIDENT_NOT_REDACTED", "the incident has not been redacted; it is not written",
                              howToFix="Put a `redact` stage between load_incident and write_incident.")
        evaluation = evaluation or evaluate(incident)
        summary = verdict_line(evaluation, replay)
        if replay is not None:
            replay = {**replay, "rules": evaluation["status"], "summary": summary}
        files = folder_files(incident, evaluation, replay)
        export.refuse_too_large("bundle", source, len(files[bundle.BUNDLE_FILE]), export.Limits(self.config["max_bytes"]),
                                written=True)  # (what inspect, replay, promote could not read at the same --max-bytes)
        written, named = self._folder(source)
        bundle.write_folder(written, files, replace=bool(self.config["write_dir"]))
        self.publish(OUTPUTS_WRITTEN, [os.path.join(written, name) for name in sorted(files)])
        line: dict[str, Any] = {"source": source} if self.config["into"] else {}
        line |= {"incident_id": incident["incident_id"], "out": named, "summary": summary,
                 "rules": evaluation["status"], "counts": evaluation["counts"]}
        if replay is not None:
            line["replay"] = replay["status"]
            if replay.get("divergence"):
                line["divergence"] = replay["divergence"]["kind"]
        line["files"] = sorted(files)
        await out.send(Batch.of([line], source=f"<{self.id}>"))

"""The stage registry: built-in stage types plus third-party ones from the ``replay.stages`` entry points."""

from __future__ import annotations

import importlib
import importlib.util

from replay.pipeline.engine.errors import ReplayError, diagnostic
from replay.pipeline.engine.stage import Stage

ENTRY_POINT_GROUP = "replay.stages"

# type name -> "module:Class"; imported on first use so the CLI starts fast.
BUILTIN: dict[str, str] = {
    # core
    "read": "replay.stages.read:ReadJournal",
    "parse": "replay.stages.parse:ParseLines",
    "check_lines": "replay.stages.check_lines:CheckLines",
    "select": "replay.stages.select:SelectEvents",
    "write": "replay.stages.write:WriteJsonl",
    "log": "replay.stages.log_records:LogRecords",
    # heal rules, in the order the heal graph chains them
    "fill_run_id": "replay.stages.fill_run_id:FillRunId",
    "alias": "replay.stages.alias:AliasEventTypes",
    "normalize_payload": "replay.stages.normalize_payload:NormalizePayload",
    "fix_timestamp": "replay.stages.fix_timestamp:FixTimestamps",
    "dedupe": "replay.stages.dedupe:DropAdjacentDuplicates",
    "ensure_run_started": "replay.stages.ensure_run_started:InsertRunStarted",
    "synthesize_assistant_message": "replay.stages.synthesize_assistant_message:SynthesizeAssistantMessage",
    "ensure_terminal": "replay.stages.ensure_terminal:InsertTerminalEvent",
    "renumber": "replay.stages.renumber:RenumberSeq",
    "check_order": "replay.stages.check_order:ReportTimestampOrder",
    "heal_summary": "replay.stages.heal_summary:SummarizeRepairs",
    # capture
    "discover": "replay.stages.discover:DiscoverRunner",
    "spawn": "replay.stages.spawn:SpawnRunner",
    "emit": "replay.stages.emit:EmitArtifacts",
    # validate and report
    "validate": "replay.stages.validate:ValidateEvents",
    "summarize": "replay.stages.summarize:SummarizeRuns",
    "report": "replay.stages.report:RenderReport",
}


def _present(target: str) -> bool:
    """Is the module of a built-in stage part of this build? (Some land later than the registry.)"""
    try:
        return importlib.util.find_spec(target.partition(":")[0]) is not None
    except ModuleNotFoundError:
        return False


def _load(target: str) -> type[Stage]:
    module, _, attr = target.partition(":")
    cls = getattr(importlib.import_module(module), attr)
    if not (isinstance(cls, type) and issubclass(cls, Stage)):
        raise TypeError(f"{target} is not a replay Stage class")
    return cls


class Registry:
    """Stage types by name. Third-party entry points never shadow a built-in."""

    def __init__(self, *, plugins: bool = True) -> None:
        self._targets = {name: target for name, target in BUILTIN.items() if _present(target)}
        self._classes: dict[str, type[Stage]] = {}
        self.problems: list[dict] = []  # diagnostics for plugins that could not be loaded
        if plugins:
            from importlib.metadata import entry_points  # slow to import: only when a registry is built

            for ep in entry_points(group=ENTRY_POINT_GROUP):
                if ep.name in BUILTIN:
                    self.problems.append(diagnostic(
                        "E_STAGE_LOAD_FAILED", f"entry point {ep.name!r} ({ep.value}) would shadow a built-in stage; ignored",
                        received=ep.value,
                    ))
                    continue
                self._targets[ep.name] = ep.value

    def names(self) -> list[str]:
        return sorted(self._targets)

    def get(self, name: str, *, path: str | None = None) -> type[Stage]:
        if name not in self._targets:
            raise ReplayError(
                "E_CONFIG_STAGE_TYPE_UNKNOWN", f"unknown stage type {name!r}", path=path, received=name,
                expected="one of: " + ", ".join(self.names()),
            )
        if name not in self._classes:
            try:
                cls = _load(self._targets[name])
            except Exception as exc:
                raise ReplayError(
                    "E_STAGE_LOAD_FAILED", f"stage type {name!r} ({self._targets[name]}) failed to load: {exc}",
                    path=path, received=self._targets[name],
                ) from exc
            cls.name = cls.name or name
            self._classes[name] = cls
        return self._classes[name]

    def describe_all(self) -> list[dict]:
        out = []
        for name in self.names():
            try:
                info = self.get(name).describe()
                info["type"] = name
            except ReplayError as exc:
                self.problems.append(exc.body)
                continue
            out.append(info)
        return out

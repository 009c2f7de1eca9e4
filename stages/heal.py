"""Heal: a composite stage that stands for every heal rule in order (after ``cut_runs``), then the per-run heal record.

The rule order is ``pipeline/specs/heal-rules.toml`` (``replay stages --graph heal-rules``). Its
ports: the healed stream, ``repairs`` (every rule's repairs, plus what its inputs bring on a
``repairs`` port, e.g. parse's dropped torn lines), ``notices`` (observations that changed nothing, its
inputs' ``notices`` too, e.g. capture's runner fields not kept) and ``errors``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.engine.registry import Registry, register
from replay.pipeline.engine.spec import load_spec
from replay.pipeline.engine.stage import Composite, Option, SubGraph
from replay.pipeline.model.healing import load_rules, rules_read

RULES_SPEC = "heal-rules"
SUMMARY = "heal_summary"
CUT = "cut_runs"  # before the rules: a batch of several runs (a stream the screen left alone) cut where each begins


@register("heal")
class Heal(Composite):
    summary = "Every heal rule in order (see `replay stages --graph heal-rules`), then a heal record after each repaired run."
    options = {
        "rules_file": Option(str, "", "heal rules file with `eventAliases`; empty: .replay/heal.rules.json when it exists"),
        "aliases": Option(dict, {}, "extra type aliases {old: new}, over the rules file's", items=str),
        "summary": Option(bool, True, "add a {\"$record\": \"heal\"} line after each repaired run (counts by rule)"),
        "skip": Option(list, [], "rules to leave out, by type name"),
    }
    ports = ("errors", "repairs", "notices")

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        rules = [item if isinstance(item, str) else item["type"] for item in load_spec(RULES_SPEC)["chain"]]
        unknown = [rule for rule in self.config["skip"] if rule not in rules]
        if unknown:  # (a rule misspelled was left in, in silence)
            raise ReplayError("E_CONFIG_OPTION_INVALID", f"heal has no rule {unknown[0]!r} to skip", path="skip",
                              received=unknown[0], expected="one of: " + ", ".join(rules),
                              howToFix="Name the rules as `replay stages --graph heal-rules` lists them.")

    def expand(self, registry: Registry) -> SubGraph:
        rules = self._rules()  # a bad rules file is refused before anything runs
        aliases = {**rules.get("eventAliases", {}), **self.config["aliases"]}
        stages: dict[str, dict[str, Any]] = {CUT: {"type": CUT, "inputs": ["$in"]}}
        previous = CUT
        repairs = [f"{CUT}.repairs"]  # (the joins of join_split_records, each logged with its run: ``cut_runs``)
        for item in load_spec(RULES_SPEC)["chain"]:
            table: dict[str, Any] = {"type": item} if isinstance(item, str) else dict(item)
            rule = table["type"]
            if rule in self.config["skip"]:
                continue
            if rule == "alias" and aliases:
                table["aliases"] = {**table.get("aliases", {}), **aliases}
            stages[rule] = {**table, "inputs": [previous]}
            if "repairs" in registry.get(rule).ports:
                repairs.append(f"{rule}.repairs")
            previous = rule
        if self.config["summary"]:
            stages[SUMMARY] = {"type": SUMMARY, "inputs": [previous, "$in.repairs", *repairs]}
            previous = SUMMARY
        return SubGraph(stages, {"": [previous], "repairs": ["$in.repairs", "*.repairs"], "notices": ["$in.notices", "*.notices"]})

    def input_files(self) -> list[str]:
        """The rules file heal reads (``--rules``, else the default when it is there): no output may write over it."""
        return rules_read(self.config["rules_file"])

    def _rules(self) -> dict[str, Any]:
        """The rules file's document; a file that is not there, or cannot be read, refused at ``rules_file`` (the file
        as ``received``), which the config names as the user gave it (``option_named``: ``--rules``, ``stages.heal.rules_file``)."""
        given = self.config["rules_file"]
        try:
            return load_rules(given or None)
        except ReplayError as exc:
            if given and exc.body.get("path") == str(Path(given)):
                exc.body["path"] = "rules_file"
                exc.body.setdefault("received", given)
            raise


def rule_stages(rules: dict[str, Any] | None = None, registry: Registry | None = None) -> list[Any]:
    """The heal rules in order as fresh stage objects (after ``cut_runs``, as ``heal`` expands), for running heal
    in-process (``engine.inline``); ``rules`` is what ``load_rules`` returns."""
    registry = registry or Registry(plugins=False)
    aliases = (rules or {}).get("eventAliases", {})
    stages = [registry.get(CUT)()]
    for item in load_spec(RULES_SPEC)["chain"]:
        table: dict[str, Any] = {"type": item} if isinstance(item, str) else dict(item)
        rule = table.pop("type")
        if rule == "alias" and aliases:
            table["aliases"] = {**table.get("aliases", {}), **aliases}
        stages.append(registry.get(rule)(**table))
    return stages

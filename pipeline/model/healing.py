"""What heal knows besides its rules: the built-in type aliases, the heal rules file, and healed artifacts.

Each rule is its own stage (``stages/<rule>.py``); their order is the spec ``heal-rules`` and the
``heal`` composite stage chains them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.errors import ReplayError, diagnostic, excerpt
from replay.pipeline.io.journals import HEAL_RULES_NAME
from replay.pipeline.io.json_file import read_json_file
from replay.pipeline.model.artifacts import artifact_from_run
from replay.pipeline.model.events import CANONICAL_TYPES
from replay.pipeline.model.schema_facts import const, property_names
from replay.pipeline.model.validation import json_type, validate_artifact

RULES_FILE = Path(".replay") / HEAL_RULES_NAME

# The built-in aliases: names frameworks use for the canonical event types.
BUILTIN_ALIASES: dict[str, str] = {
    "start": "run_started", "run_start": "run_started", "run_begin": "run_started", "session_start": "run_started",
    "end": "run_completed", "run_end": "run_completed", "run_complete": "run_completed",
    "run_finished": "run_completed", "run_success": "run_completed", "session_end": "run_completed",
    "run_error": "run_failed", "run_failure": "run_failed", "run_crashed": "run_failed",
    "tool_start": "tool_called", "tool_begin": "tool_called", "tool_call": "tool_called", "tool_use": "tool_called",
    "tool_invoked": "tool_called",
    "tool_end": "tool_completed", "tool_result": "tool_completed", "tool_finish": "tool_completed",
    "tool_done": "tool_completed", "tool_success": "tool_completed",
    "tool_error": "tool_failed", "tool_failure": "tool_failed",
    "llm_message": "assistant_message", "ai_message": "assistant_message", "assistant": "assistant_message",
    "model_response": "assistant_message", "llm_response": "assistant_message",
    "user": "user_message", "human_message": "user_message", "user_input": "user_message",
}


def rules_read(path: str | None) -> list[str]:
    """The rules file heal reads (``path``, else the default when it is there), as a list: an input no output
    may write over."""
    return [path] if path else [str(RULES_FILE)] if os.path.lexists(RULES_FILE) else []


def load_rules(path: str | Path | None = None, *, cwd: str | Path = ".") -> dict[str, Any]:
    """The heal rules file (``--rules FILE``, else ``.replay/heal.rules.json`` when something is at that name: a folder
    or a link to nothing there is refused as ``--rules`` of it is, not passed over), or {}."""
    explicit = path is not None
    target = Path(path) if path is not None else Path(cwd) / RULES_FILE
    if not explicit and not os.path.lexists(target):
        return {}
    if str(target) in _READ_ONCE:
        return _READ_ONCE[str(target)]
    try:
        rules = read_json_file(target, "heal rules file", "E_HEAL_RULES_INVALID_JSON", not_json="")  # (a folder: unreadable)
    except ReplayError as exc:
        if not explicit and exc.code in ("E_INPUT_PATH_NOT_FOUND", "E_INPUT_UNREADABLE"):  # (a link to nothing, a folder)
            exc.body["howToFix"] = (f"{RULES_FILE} is where heal looks for its rules file: make it a JSON file, remove "
                                    "what is there, or name another file with --rules FILE.")
        raise
    if not isinstance(rules, dict):
        raise ReplayError("E_HEAL_RULES_SHAPE_INVALID", f"{target} must hold a JSON object", source=str(target),
                          path="$", expected="object", received=json_type(rules),
                          example='{"version": "v1", "eventAliases": {"tool_end": "tool_completed"}}')
    allowed = property_names("heal-rules")  # (`replay schema heal-rules`'s properties: no other key)
    for key in rules:
        if key not in allowed:  # a misspelt key applied nothing and said nothing (`eventAlias`)
            import difflib  # (only to refuse: heal's start-up loads no more than it uses)

            near = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
            raise ReplayError("E_HEAL_RULES_SHAPE_INVALID", f"unknown key {key!r} in the heal rules"
                              + (f"; did you mean {near[0]!r}?" if near else ""), source=str(target),
                              path=f"$.{key}", expected="one of: " + ", ".join(allowed), received=excerpt(key),
                              howToFix=(f"Rename {key!r} to {near[0]!r}" if near else f"Remove {key!r}")
                              + "; the heal rules have no other keys (`replay schema heal-rules`).",
                              example='{"version": "v1", "eventAliases": {"tool_end": "tool_completed"}}')
    version = const("heal-rules", "properties", "version")  # the one rules format there is (`replay schema heal-rules`)
    if "version" in rules and rules["version"] != version:
        raise ReplayError("E_HEAL_RULES_SHAPE_INVALID", f'`version` must be "{version}", the one rules format there is',
                          source=str(target), path="$.version", expected=version,
                          received=excerpt(exactjson.dumps(rules["version"])),
                          example=exactjson.dumps({"version": version}).decode())
    for key in property_names("heal-rules", kind="string"):  # (said for people and editors, unused by heal: still the schema's string)
        if key in rules and not isinstance(rules[key], str):
            raise ReplayError("E_HEAL_RULES_SHAPE_INVALID", f"`{key}` must be a string", source=str(target),
                              path=f"$.{key}", expected="string", received=excerpt(exactjson.dumps(rules[key])),
                              howToFix=f"Write `{key}` as a string, or remove it (`replay schema heal-rules`).",
                              example='{"$schema": "heal-rules.schema.json", "description": "our aliases"}')
    aliases = rules.get("eventAliases", {})
    if not isinstance(aliases, dict) or not all(isinstance(k, str) and isinstance(v, str) and v for k, v in aliases.items()):
        raise ReplayError("E_HEAL_RULES_SHAPE_INVALID", "`eventAliases` must map type names to type names",
                          source=str(target), path="$.eventAliases", expected="object of strings",
                          received=excerpt(exactjson.dumps(aliases)), example='{"eventAliases": {"tool_end": "tool_completed"}}')
    cycle = alias_cycle({**BUILTIN_ALIASES, **aliases})
    if cycle:
        at = next(k for k, name in enumerate(cycle) if name in aliases)  # (told from the file's own alias in it)
        cycle = [*cycle[at:-1], *cycle[:at + 1]]
        raise ReplayError("E_HEAL_RULES_SHAPE_INVALID", f"`eventAliases` rename types in a circle ({' -> '.join(cycle)}, "
                          "with the built-in aliases): heal would rename them back at every heal", source=str(target),
                          path=f"$.eventAliases.{cycle[0]}",
                          expected="aliases that end at a type no alias renames", received=cycle,
                          howToFix="Map each name to the type it stands for (a canonical type such as tool_called), "
                                   "not a canonical type to another name.",
                          example='{"eventAliases": {"tool_end": "tool_completed"}}')
    refuse_renamed_canonical(aliases, "E_HEAL_RULES_SHAPE_INVALID", "$.eventAliases", source=str(target),
                             example='{"eventAliases": {"tool_end": "tool_completed"}}')
    if not target.is_file():  # a pipe (`--rules <(...)`): what heal's rules and its fast lane both read, read once
        _READ_ONCE[str(target)] = rules
    return rules


_READ_ONCE: dict[str, dict[str, Any]] = {}  # rules files that can be read once only (pipes), as they were read


def resolve_alias(table: dict[str, str], name: str) -> tuple[str, list[str] | None]:
    """Where the chain of aliases from ``name`` ends (an alias of a name to itself ends it), and the circle it runs
    into instead (``a -> b -> a``: its names, the first again last), or None."""
    seen = [name]
    while name in table and table[name] != name:
        name = table[name]
        if name in seen:
            return name, [*seen[seen.index(name):], name]
        seen.append(name)
    return name, None


def renamed_canonical(aliases: dict[str, str]) -> str | None:
    """The first of a user's ``aliases`` that renames a canonical type (``events.CANONICAL_TYPES``: ``tool_completed``
    -> ``tool_failed``, or ``tool_unanswered`` -> ``done``: every event of that type would be misnamed, silently), or
    None."""
    return next((old for old, new in aliases.items() if old in CANONICAL_TYPES and new != old), None)


def refuse_renamed_canonical(aliases: dict[str, str], code: str, path: str, **where: Any) -> None:
    """Refuse (``code``) a user's ``aliases`` (given at ``path``: a rules file's ``$.eventAliases``, a stage's
    ``aliases`` option) that rename a canonical type away (``renamed_canonical``); ``where`` adds to the error."""
    renamed = renamed_canonical(aliases)
    if renamed is None:
        return
    new = aliases[renamed]
    raise ReplayError(code, f"`{path}` rename the canonical type {renamed!r} to {new!r}: every {renamed} event would be "
                      "misnamed", path=f"{path}.{renamed}", expected="an alias of a name that is no canonical type",
                      received=excerpt(new),
                      howToFix=f"Remove {renamed!r} from `{path}`: an alias maps another name onto a canonical type "
                               "(tool_end -> tool_completed), not a canonical type away.", **where)


def alias_cycle(table: dict[str, str]) -> list[str] | None:
    """A circle of aliases in ``table`` (heal would rename its types around it at every heal, never done), or None."""
    for old in table:
        cycle = resolve_alias(table, old)[1]
        if cycle:
            return cycle
    return None




def healed_artifact(record: dict[str, Any] | None, events: list[dict[str, Any]],
                    heal: dict[str, Any] | None, usage: dict[str, Any] | None = None) -> dict[str, Any]:
    """The artifact of a healed run; its heal record's counts go under ``heal``; ``usage``: the run's usage as a report
    counts it (``report.model.healed_run_artifact`` gives ``run_usage``), else its run record's."""
    extra = {"heal": {k: v for k, v in heal.items() if k in ("repairs", "byRule")}} if heal else None
    if usage is not None:
        record = {**(record or {}), "usage": usage}
    return artifact_from_run(record, events, extra)


def healed_problems(artifact: dict[str, Any], source: str, **fields: Any) -> list[dict[str, Any]]:
    """What still fails validation after healing, each as E_HEALED_ARTIFACT_INVALID (the specific
    code kept in ``cause``, and its ``howToFix``, as filter mode's ``check`` keeps it): heal cannot invent what it does
    not know, e.g. an event's type."""
    return [
        diagnostic("E_HEALED_ARTIFACT_INVALID", f"still invalid after healing: {p['message']}", source=source,
                   path=p.get("path"), expected=p.get("expected"), received=p.get("received"), cause=p["code"],
                   **({"howToFix": p["howToFix"]} if p.get("howToFix") else {}), **fields)
        for p in validate_artifact(artifact)
    ]

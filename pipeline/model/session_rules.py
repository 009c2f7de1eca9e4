"""What a session's chunk and a replay-script document must be: the bundled schemas' rules, checked in code.

One check for every way a chunk is read (``replay script``, the ``script`` stage, ``ReplayModel`` of a session or of a
script): the typed fields of a chunk are read from ``replay schema session`` (``$defs.chunk``), so the schema stays the
one definition of them; a script's keys are those ``replay schema replay-script`` allows (read from it: ``schema_facts``). jsonschema is a test
dependency only: these few rules are checked here.
"""

from __future__ import annotations

from collections.abc import Sized
from typing import Any, cast

from replay.pipeline.engine.exactjson import MAX_DEPTH
from replay.pipeline.model.schema_facts import property_names, schema
from replay.pipeline.model.validation import json_type, shown

# How many levels a replay script nests a chunk below its top (the document, `groups`, a group, its `chunks`): a chunk
# deeper than MAX_DEPTH less these would make a script no JSON reader of replay's reads back.
SCRIPT_LEVELS = 4
CHUNK_MAX_DEPTH = MAX_DEPTH - SCRIPT_LEVELS

_TYPES: dict[str, type] = {"string": str, "object": dict, "array": list}
FINISH = "finish"  # the chunk type that ends a model call


def script_keys() -> tuple[str, ...]:
    """The keys a replay script may have: ``replay schema replay-script``'s properties, in its order."""
    return property_names("replay-script")


def group_keys() -> tuple[str, ...]:
    """The keys a replay script's group may have: ``replay schema replay-script``'s ``$defs.group`` properties."""
    return property_names("replay-script", "$defs", "group")


def chunk_rules() -> tuple[list[str], dict[str, dict[str, Any]]]:
    """The required keys of a chunk and its typed fields, as ``replay schema session`` says them (``$defs.chunk``)."""
    chunk = schema("session")["$defs"]["chunk"]
    return list(chunk.get("required", ())), chunk["properties"]


def nesting(value: Any) -> int:
    """How many levels ``value`` nests (a scalar 0, ``{}`` 1, ``{"a": []}`` 2); a loop, not recursion: a chunk may
    nest as deep as JSON is read."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children)
    return deepest


def chunk_problem(chunk: Any) -> tuple[str, str, str, Any] | None:
    """Where ``chunk`` breaks ``replay schema session``'s ``$defs.chunk`` (or nests too deep for a script to hold it):
    (message, path under the chunk, expected, received), else None."""
    if type(chunk) is not dict:
        return "a chunk is an object with a string `type`", "", "object", json_type(chunk)
    required, fields = chunk_rules()
    for name in required:
        if name not in chunk:
            return f"a chunk needs `{name}`", f".{name}", fields[name].get("type", "a value"), "missing"
    for name, rule in fields.items():
        if name not in chunk or "type" not in rule:
            continue
        value: Any = chunk[name]
        kind, least = rule["type"], rule.get("minLength", 0)
        if not isinstance(value, _TYPES[kind]) or (least and len(cast(Sized, value)) < least):
            wanted = f"a non-empty {kind}" if least else f"a {kind}"
            return f"a chunk's `{name}` must be {wanted}", f".{name}", kind, shown(value)
    depth = nesting(chunk)
    if depth > CHUNK_MAX_DEPTH:
        return (f"the chunk nests {depth} levels deep: a replay script holds it {SCRIPT_LEVELS} levels deeper, past the "
                f"{MAX_DEPTH} levels JSON is read to"), "", f"at most {CHUNK_MAX_DEPTH} levels", f"{depth} levels"
    return None


DEEP_CHUNK_FIX = (f"Record the chunk nesting at most {CHUNK_MAX_DEPTH} levels (a value nested deeper, such as a tool "
                  "call's input, as a JSON string): no script could hold it.")


def finish_problem(chunks: list[dict[str, Any]], action: bool) -> tuple[str, int, str, str] | None:
    """Where a replay script's group (its ``chunks``, each a chunk ``chunk_problem`` passed; ``action``: it has one)
    breaks the finish rule: a ``finish`` chunk only last, and only in a group with no action (an overridden group's
    chunks are the recorded ones before any finish: ``replay schema replay-script``). (message, index of the chunk at
    fault, expected, received), else None."""
    for i, chunk in enumerate(chunks):
        if chunk["type"] != FINISH:
            continue
        if i != len(chunks) - 1:
            after = chunks[i + 1]["type"]
            return "a `finish` chunk ends its model call: no chunk follows it", i + 1, "no chunk after finish", after
        if action:
            return ("a group with an `action` (throw / hang) holds no `finish` chunk: its chunks are the recorded ones "
                    "before any finish, and the action is how the call ends"), i, "no finish chunk in a group with an action", FINISH
    return None

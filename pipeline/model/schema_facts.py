"""The bundled JSON schemas (``replay schema NAME``) as code reads them: the keys a document may have, read from its
schema on first use, so each schema stays the one definition of them.

Read lazily: the commands that never check such a document (``replay heal`` with no rules file) load no schema.
"""

from __future__ import annotations

import functools
from typing import Any

import orjson


def _source() -> Any:
    """Where the schemas are: the ``replay.schemas`` package (a Traversable)."""
    from importlib.resources import files  # (on first use: heal's start-up loads no more than it uses)

    return files("replay.schemas")


@functools.cache
def schema(name: str) -> dict[str, Any]:
    """The bundled schema ``name`` (``replay schema NAME``), parsed."""
    document: dict[str, Any] = orjson.loads(_source().joinpath(f"{name}.schema.json").read_bytes())
    return document


@functools.cache
def property_names(name: str, *where: str, kind: str | None = None) -> tuple[str, ...]:
    """The properties schema ``name`` allows (under ``where``, such as ``"$defs", "group"``), in the schema's order;
    with ``kind``, only those of that JSON type."""
    node = schema(name)
    for step in where:
        node = node[step]
    return tuple(key for key, rule in node["properties"].items() if kind is None or rule.get("type") == kind)


@functools.cache
def const(name: str, *where: str) -> Any:
    """The value schema ``name`` fixes (``const``) at ``where`` (such as ``"properties", "version"``): a document
    format's version, written once, in its schema."""
    node = schema(name)
    for step in where:
        node = node[step]
    return node["const"]


def forget() -> None:
    """Read the schemas again on next use (for a test that points ``_source`` elsewhere)."""
    schema.cache_clear()
    property_names.cache_clear()
    const.cache_clear()

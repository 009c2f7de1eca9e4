"""Pipeline configs: a TOML (or JSON) file that declares a stage graph, validated before it runs.

Two shapes::

    [stages.read]                     chain = ["parse", {type = "select", types = ["tool_*"]}]
    type = "read"
    [stages.only_tools]
    type = "select"
    inputs = ["read"]
    types = ["tool_*"]
    [stages.out]
    type = "write"
    inputs = ["only_tools"]

In a chain, a leading ``read`` (+ ``parse``) and a trailing ``write`` (stdout) are added when missing. A ``read``
stage without ``paths`` reads the PATHs given on the command line (or stdin).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import orjson

from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.engine.graph import Graph
from replay.pipeline.engine.registry import Registry
from replay.pipeline.engine.stage import Stage

RESERVED_KEYS = ("type", "inputs", "route_errors")
TOP_LEVEL_KEYS = ("stages", "chain", "description")


def _shape(message: str, path: str, **fields: Any) -> ReplayError:
    return ReplayError("E_CONFIG_SHAPE_INVALID", message, path=path, **fields)


def read_config_file(path: str) -> dict[str, Any]:
    """The config document; E_CONFIG_NOT_FOUND / E_CONFIG_PARSE (with line and column) otherwise."""
    p = Path(path)
    if not p.is_file():
        raise ReplayError("E_CONFIG_NOT_FOUND", f"pipeline config {path!r} does not exist", path=path)
    data = p.read_bytes()
    if p.suffix == ".json":
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise ReplayError("E_CONFIG_PARSE", f"{path}: {exc.msg}", source=path, line=exc.lineno, column=exc.colno) from exc
    else:
        try:
            doc = tomllib.loads(data.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            where = re.search(r"line (\d+), column (\d+)", str(exc))
            raise ReplayError(
                "E_CONFIG_PARSE", f"{path}: {exc}", source=path,
                line=int(where.group(1)) if where else None, column=int(where.group(2)) if where else None,
            ) from exc
    if not isinstance(doc, dict):
        raise _shape("a pipeline config is a table (TOML) or an object (JSON)", "$", received=type(doc).__name__)
    return doc


def build_stage(registry: Registry, spec: dict[str, Any], where: str, extra_reserved: tuple[str, ...] = ()) -> Stage:
    """One stage from its table: check the type and every option, then construct it."""
    kind = spec.get("type")
    if not isinstance(kind, str):
        raise _shape("every stage needs a string `type`", f"{where}.type", received=repr(kind), example='type = "parse"')
    cls = registry.get(kind, path=f"{where}.type")
    options = {k: v for k, v in spec.items() if k not in RESERVED_KEYS + extra_reserved}
    for key, value in options.items():
        if key not in cls.options:
            raise ReplayError(
                "E_CONFIG_OPTION_UNKNOWN", f"stage type {kind!r} has no option {key!r}", path=f"{where}.{key}",
                received=key, expected="one of: " + (", ".join(cls.options) or "(no options)"),
            )
        problem = cls.options[key].check(value)
        if problem:
            raise ReplayError(
                "E_CONFIG_OPTION_INVALID", f"option {key!r} of {kind!r} must be {problem}", path=f"{where}.{key}",
                expected=problem, received=repr(value),
            )
    for key, opt in cls.options.items():
        if opt.required and key not in options:
            raise ReplayError("E_CONFIG_OPTION_INVALID", f"stage type {kind!r} needs option {key!r}", path=f"{where}.{key}",
                              expected=opt.type_name(), received="nothing")
    return cls(**options)


def graph_from_config(doc: dict[str, Any], *, registry: Registry | None = None, paths: list[str] | None = None) -> Graph:
    """Build and validate the graph a config document declares."""
    registry = registry or Registry()
    for key in doc:
        if key not in TOP_LEVEL_KEYS:
            raise _shape(f"unknown top-level key {key!r}", key, expected="stages, chain or description")
    if ("stages" in doc) == ("chain" in doc):
        raise _shape("declare either [stages.<id>] tables or a `chain` list (one of them)", "$",
                     example='chain = ["parse", "write"]')
    graph = _from_stages(doc["stages"], registry) if "stages" in doc else _from_chain(doc["chain"], registry)
    for node in graph.nodes.values():
        if node.stage.name == "read" and not node.stage.config.get("paths"):
            node.stage.config["paths"] = list(paths or [])
    graph.validate()
    return graph


def _from_stages(stages: Any, registry: Registry) -> Graph:
    if not isinstance(stages, dict) or not stages:
        raise _shape("`stages` must be a table of stage tables", "stages", example='[stages.read]\ntype = "read"')
    graph = Graph()
    for node_id, spec in stages.items():
        where = f"stages.{node_id}"
        if not isinstance(spec, dict):
            raise _shape(f"stage {node_id!r} must be a table", where, received=type(spec).__name__)
        inputs = spec.get("inputs", [])
        if not isinstance(inputs, list) or not all(isinstance(i, str) for i in inputs):
            raise ReplayError("E_CONFIG_INPUT_UNKNOWN", "`inputs` must be a list of stage names", path=f"{where}.inputs",
                              received=repr(inputs), example='inputs = ["read"]')
        route = spec.get("route_errors", False)
        if not isinstance(route, bool):
            raise ReplayError("E_CONFIG_OPTION_INVALID", "`route_errors` must be true or false", path=f"{where}.route_errors",
                              received=repr(route))
        graph.add(build_stage(registry, spec, where), id=str(node_id), inputs=inputs, route_errors=route)
    return graph


def _from_chain(chain: Any, registry: Registry) -> Graph:
    if not isinstance(chain, list) or not chain:
        raise _shape("`chain` must be a non-empty list of stage types or tables", "chain", example='chain = ["parse"]')
    stages: list[Stage] = []
    ids: list[str | None] = []
    for k, item in enumerate(chain):
        spec = {"type": item} if isinstance(item, str) else item
        if not isinstance(spec, dict):
            raise _shape("a chain item is a stage type or a table with `type`", f"chain[{k}]", received=type(item).__name__)
        for key in ("inputs", "route_errors"):
            if key in spec:
                raise _shape(f"`{key}` has no meaning in a chain; use [stages.<id>] tables", f"chain[{k}].{key}")
        node_id = spec.get("id")
        if node_id is not None and (not isinstance(node_id, str) or node_id in ids):
            raise _shape(f"a chain item's id must be a string no other item uses; got {node_id!r}", f"chain[{k}].id",
                         received=repr(node_id), howToFix="Give each stage of the chain its own id (or none).")
        stages.append(build_stage(registry, spec, f"chain[{k}]", extra_reserved=("id",)))
        ids.append(node_id)
    if stages[0].kind != "source":
        stages.insert(0, registry.get("read")())
        ids.insert(0, None)
    if stages[0].emits_raw and len(stages) > 1 and not stages[1].accepts_raw:
        stages.insert(1, registry.get("parse")())
        ids.insert(1, None)
    if stages[-1].kind != "sink":
        stages.append(registry.get("write")())
        ids.append(None)
    named = [i for i in ids if i is not None]
    graph = Graph()
    previous: str | None = None
    for stage, node_id in zip(stages, ids, strict=True):
        # Stages added for you (read, parse, write) take names the chain's own ids leave free.
        node_id = node_id or graph._fresh_id(stage.name or "stage", taken=named)
        previous = graph.add(stage, id=node_id, inputs=[previous] if previous else [])
    return graph


def load_pipeline(path: str, *, registry: Registry | None = None, paths: list[str] | None = None) -> Graph:
    return graph_from_config(read_config_file(path), registry=registry, paths=paths)

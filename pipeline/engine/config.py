"""Pipeline configs: a TOML (or JSON) document that declares a stage graph, checked before it runs.

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

In a chain, a leading source (``read`` + ``parse`` + ``dialect``: another agent's log mapped onto canonical events, as
``replay heal`` and ``replay report`` map it; replay's own records pass through) and a trailing sink (``write`` to
stdout) are added when missing; a chain that declares its own ``parse``, ``dialect`` or ``undialect`` gets no
``dialect`` added; a stage that is a command (``walk`` over another agent's log) gets what that command's graph puts in
front of it instead; a chain whose lines reach its end unparsed (``chain = ["write"]``) is ``replay read``'s graph
(``chain_lines``). An option a stage declares with ``bind = "args"`` (``read``'s ``paths``) takes
the positional arguments of the command running the graph when the config leaves it unset; arguments
that no stage takes (the config set every such option itself) are refused rather than ignored.

A composite stage type (``heal``) expands here into its sub-graph: its inner stages get ids
``<id>/<inner>``, and every input that names the composite (``"heal"``, ``"heal.repairs"``) is
rewired to the inner outputs that port stands for.
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from pathlib import Path
from typing import Any

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.chain_lines import ADDED, Wiring, add_line_stages
from replay.pipeline.engine.errors import (
    EXIT_REFUSED,
    ReplayError,
    as_received,
    empty_value,
    input_unreadable,
    json_document,
    utf8_text,
)
from replay.pipeline.engine.graph import ID_PATTERN, ID_RULE, Graph, id_refused, take_once
from replay.pipeline.engine.registry import Registry
from replay.pipeline.engine.stage import Composite, Option, Stage, option_named

# The keys every stage of a config takes besides its own options (``replay stages`` lists them once, after the stages)
RESERVED_HELP = {
    "type": "str: the stage type (one of those listed above)",
    "inputs": "list: the stages (and `<id>.<port>` side ports) whose records it takes; a source takes none",
    "route_errors": "bool (default false): its errors go to its `errors` port, for a stage that takes them "
                    "(`inputs = [\"<id>.errors\"]`), not to stderr",
}
RESERVED_KEYS = tuple(RESERVED_HELP)
TOP_LEVEL_KEYS = ("stages", "chain", "description")
# In a command's document (``spec.bind``), never in a file: which flag set which option, ``{"<stage>.<option>": "--log"}``.
FLAGS_KEY = "$flags"
IN = "$in"  # inside a composite's sub-graph: the composite's own inputs
_PATTERN = re.compile(r"[*?\[]")  # an input naming its producers by a pattern (``*.repairs``)


def _shape(message: str, path: str, **fields: Any) -> ReplayError:
    return ReplayError("E_CONFIG_SHAPE_INVALID", message, path=path, **fields)


def _end_of(text: str) -> tuple[int, int]:
    """The (line, character column) just after the last character of ``text`` but its final line breaks: where
    tomllib's "at end of document" is, on the last line the user wrote (``chain = [``: line 1, column 10)."""
    body = text.rstrip("\r\n")
    return body.count("\n") + 1, len(body) - (body.rfind("\n") + 1) + 1


def parse_config(data: bytes, name: str, *, json: bool) -> dict[str, Any]:
    """A config document from its bytes; E_CONFIG_PARSE (with line and column) when it does not parse. A byte order
    mark before it (Windows editors write one) is skipped, as ``read`` skips one before a journal."""
    if json:
        doc = json_document(data, name, "E_CONFIG_PARSE")
    else:
        data, skipped = exactjson.skip_bom(data)  # (positions stay positions in the file: exactjson.position)
        text = utf8_text(data, "E_CONFIG_PARSE", name, skipped, source=name)
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            where = re.search(r"line (\d+), column (\d+)", str(exc))
            line, column = (int(where.group(1)), int(where.group(2))) if where else _end_of(text)
            raise ReplayError("E_CONFIG_PARSE", f"{name}: {exc}", source=name,
                              **exactjson.position(data, line, column, skipped)) from exc
        except RecursionError:  # (tomllib parses a nested array or table by recursion: E_UNHANDLED it was)
            raise ReplayError("E_CONFIG_PARSE", f"{name}: arrays or tables nested too deeply to read", source=name,
                              howToFix="Nest the config's arrays and tables less deeply; a pipeline config needs a "
                                       "few levels.") from None
    if not isinstance(doc, dict):
        raise _shape("a pipeline config is a table (TOML) or an object (JSON)", "$", received=type(doc).__name__)
    return doc


def read_config_file(path: str) -> dict[str, Any]:
    """The config document (a file, or a pipe such as ``<(...)``); E_CONFIG_NOT_FOUND when there is none,
    E_USAGE_INVALID for ``-`` and folders, E_INPUT_UNREADABLE when it cannot be read, E_CONFIG_PARSE."""
    if path == "-":
        raise ReplayError("E_USAGE_INVALID", "the pipeline config cannot be stdin: stdin carries the events the graph reads",
                          path=path, howToFix="Save the config to a file and name it (or pass it as `<(...)`); "
                                              "the events then come from PATHs or stdin.",
                          example="replay run pipeline.toml run.jsonl")
    p = Path(path)
    try:
        data = p.read_bytes()
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise ReplayError("E_CONFIG_NOT_FOUND", f"pipeline config {path!r} does not exist", path=path) from exc
    except IsADirectoryError as exc:
        raise ReplayError("E_USAGE_INVALID", f"pipeline config {path!r} is a directory; a config is one TOML or JSON file",
                          path=path, howToFix="Name the config file itself, e.g. a .toml file in that folder.",
                          example="replay run examples/pipelines/tools-only.toml run.jsonl") from exc
    except OSError as exc:
        raise input_unreadable(path, exc, what="pipeline config", exit_code=EXIT_REFUSED) from exc
    suffix = p.suffix.lower()
    # a name that says neither (a pipe: `replay run <(replay stages --graph heal --json)`) is JSON when it starts as
    # an object does: no TOML document starts with `{`
    json = suffix == ".json" or (suffix != ".toml" and exactjson.skip_bom(data)[0].lstrip().startswith(b"{"))
    doc = parse_config(data, path, json=json)
    if FLAGS_KEY in doc:  # (a command's own key: a file's flags are none)
        raise _shape(f"unknown top-level key {FLAGS_KEY!r}", FLAGS_KEY, expected="stages, chain or description")
    return doc


def check_options(cls: type[Stage], options: dict[str, Any], where: str) -> None:
    kind = cls.name
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
                expected=problem, received=as_received(value), **_close_choices(cls.options[key], value),
            )


def _close_choices(option: Option, value: Any) -> dict[str, Any]:
    """A howToFix naming the choices of ``option`` closest to the string ``value`` it refused (a typo), if any."""
    if not option.choices or not isinstance(value, str):
        return {}
    import difflib  # (here: a config refused for its value only; commands start without it)

    close = difflib.get_close_matches(value, [c for c in option.choices if isinstance(c, str) and c], n=3, cutoff=0.6)
    if not close:
        return {}
    return {"howToFix": "Did you mean " + " or ".join(repr(c) for c in close) + "? (`replay stages --json` lists "
                        "every value the option takes.)"}


def build_stage(registry: Registry, spec: dict[str, Any], where: str, args: list[str] | None = None,
                extra_reserved: tuple[str, ...] = (), stage_id: str | None = None,
                flags: dict[str, str] | None = None, of_a_command: bool = False) -> Stage:
    """One stage from its table: check the type and every option, bind the command's arguments, construct it
    (a constructor that raises something other than a ReplayError: E_STAGE_LOAD_FAILED naming ``stage_id`` and ``where``).
    ``flags``: option -> the command-line flag that set it, which a refusal of that option names; ``of_a_command``: the
    stage is of a command's graph (``option_named``)."""
    kind = spec.get("type")
    if not isinstance(kind, str):
        raise _shape("every stage needs a string `type`", f"{where}.type", received=as_received(kind), example='type = "parse"')
    cls = registry.get(kind, path=f"{where}.type")
    options = {k: v for k, v in spec.items() if k not in RESERVED_KEYS + extra_reserved}
    check_options(cls, options, where)
    bound = tuple(key for key, opt in cls.options.items() if opt.bind == "args" and args and not options.get(key))
    for key in bound:
        assert args  # (only bound when there are arguments)
        options[key] = cls.options[key].from_args(args)
        if options[key] is None:  # several arguments for one path (joined, they named a file 'a.json b.json')
            raise ReplayError("E_USAGE_INVALID", f"{where}.{key} takes one argument, not {len(args)}: {_shown(args)}",
                              path=f"{where}.{key}", expected="one argument", received=list(args),
                              howToFix="Give the command one argument (run it once per file).")
    for key, opt in cls.options.items():
        if opt.required and not options.get(key):
            if opt.bind == "args":
                continue  # the stage says what is missing when it runs (e.g. a prompt may come on stdin)
            flag = (flags or {}).get(key)
            if flag is not None:  # (a flag left empty: `heal --in DIR --out ""`)
                raise empty_value(flag, flag, by_flag=True)
            raise ReplayError("E_CONFIG_OPTION_INVALID", f"stage type {kind!r} needs option {key!r}", path=f"{where}.{key}",
                              expected=opt.type_name(), received="nothing")
    try:
        stage = cls(**options)
    except ReplayError as exc:  # a constructor refusing one of its options: named as the user gave it
        raise option_named(exc, cls.options, options, flags or {}, where, values=not of_a_command) from None
    except (Exception, SystemExit) as exc:  # (a constructor calling sys.exit() ended replay, silent)
        raise ReplayError(
            "E_STAGE_LOAD_FAILED", f"stage {stage_id or kind!r} (type {kind!r}) could not be built: {type(exc).__name__}: {exc}",
            path=where, stage=stage_id, received=f"{cls.__module__}:{cls.__qualname__}",
            howToFix="Fix the stage's constructor (__init__), or the options given to it, or uninstall the package that provides it.",
        ) from exc
    stage.args_keys = bound
    return stage


Tables = dict[str, tuple[dict[str, Any], str]]  # id -> (stage table, where it was written: "stages.x", "chain[2]")


def normalize(doc: dict[str, Any], registry: Registry, paths: list[str] | None = None) -> Tables:
    """The config as ``id -> (stage table, where)`` (a chain becomes tables wired one after the other); ``paths``: the
    command's arguments (what a chain's source reads, when it takes them)."""
    for key in doc:
        if key not in TOP_LEVEL_KEYS:
            raise _shape(f"unknown top-level key {key!r}", key, expected="stages, chain or description")
    if not isinstance(doc.get("description", ""), str):
        raise _shape("`description` must be a string", "description", expected="a string",
                     received=as_received(doc["description"]), example='description = "Tool events only"',
                     howToFix="Write the description as a quoted string, or leave it out.")
    if ("stages" in doc) == ("chain" in doc):
        raise _shape("declare either [stages.<id>] tables or a `chain` list (one of them)", "$",
                     example='chain = ["parse", "write"]')
    return _stage_tables(doc["stages"]) if "stages" in doc else _chain_tables(doc["chain"], registry, paths)


def _stage_tables(stages: Any) -> Tables:
    if not isinstance(stages, dict) or not stages:
        raise _shape("`stages` must be a table of stage tables", "stages", example='[stages.read]\ntype = "read"')
    for node_id, spec in stages.items():
        where = f"stages.{node_id}"
        if not ID_PATTERN.match(str(node_id)):
            raise id_refused(node_id, where)
        if not isinstance(spec, dict):
            raise _shape(f"stage {node_id!r} must be a table", where, received=type(spec).__name__)
    return {str(k): (dict(v), f"stages.{k}") for k, v in stages.items()}


def _chain_tables(chain: Any, registry: Registry, paths: list[str] | None = None) -> Tables:
    if not isinstance(chain, list) or not chain:
        raise _shape("`chain` must be a non-empty list of stage types or tables", "chain", example='chain = ["parse"]')
    items: list[tuple[str | None, dict[str, Any], str]] = []
    for k, item in enumerate(chain):
        spec = {"type": item} if isinstance(item, str) else item
        if not isinstance(spec, dict):
            raise _shape("a chain item is a stage type or a table with `type`", f"chain[{k}]", received=type(item).__name__)
        for key in ("inputs", "route_errors"):
            if key in spec:
                raise _shape(f"`{key}` has no meaning in a chain; use [stages.<id>] tables", f"chain[{k}].{key}")
        spec = dict(spec)
        node_id = spec.pop("id", None)
        if node_id is not None and (not isinstance(node_id, str) or not ID_PATTERN.match(node_id)
                                    or node_id in [i for i, _, _ in items]):
            raise _shape(f"a chain item's id must be a string of {ID_RULE} that no other item uses; got {node_id!r}",
                         f"chain[{k}].id",
                         received=as_received(node_id), howToFix="Give each stage of the chain its own id (or none).")
        items.append((node_id, spec, f"chain[{k}]"))

    def cls_of(spec: dict[str, Any], where: str) -> type[Stage]:
        kind = spec.get("type")
        if not isinstance(kind, str):
            raise _shape("every stage needs a string `type`", f"{where}.type", received=as_received(kind), example='type = "parse"')
        return registry.get(kind, path=f"{where}.type")

    first = cls_of(items[0][1], items[0][2])
    if first.kind != "source":
        items.insert(0, (None, {"type": "read"}, ADDED))
        first = registry.get("read")

    def source() -> Stage | None:
        """The chain's source as it will read (its paths the command's arguments, unless it names its own)."""
        try:
            return build_stage(registry, items[0][1], items[0][2], paths)
        except ReplayError:  # (refused again, where it is built for the graph)
            return None

    wiring = add_line_stages(items, cls_of, source) if first.emits_raw else Wiring()
    if cls_of(items[-1][1], items[-1][2]).kind != "sink":
        items.append((None, {"type": "write"}, ADDED))
    named = {i for i, _, where in items if i is not None and where != ADDED}
    tables: Tables = {}

    def free_id(suggested: str | None, kind: Any) -> str:
        """Stages added for you (and items without an id) take names the chain's own ids leave free: the one suggested
        (read.toml's `parse`), else made of the type's letters an id may use (a plugin's entry point: `acme.filter`)."""
        base, n = suggested or re.sub(r"[^A-Za-z0-9_-]", "_", str(kind)), 1
        node_id = base
        while node_id in tables or node_id in named:
            n += 1
            node_id = f"{base}_{n}"
        return node_id

    ids: list[str] = []
    for node_id, spec, where in items:
        if node_id is None or where == ADDED:
            node_id = free_id(node_id, spec["type"])
        tables[node_id] = ({**spec, "inputs": ids[-1:]}, where)
        ids.append(node_id)

    def outputs(refs: list[tuple[int, str]]) -> list[str]:
        return [f"{ids[i]}.{port}" if port else ids[i] for i, port in refs]

    for i, refs in wiring.side.items():  # (side ports a command's graph gives the stage: `read.errors` into a walk)
        tables[ids[i]][0]["inputs"] += outputs(refs)
    for suggested, table, refs in wiring.extra:  # (the source's notices, logged as `replay read` logs them, ...)
        tables[free_id(suggested, None)] = ({**table, "inputs": outputs(refs)}, ADDED)
    return tables


class _Builder:
    """Adds stage tables to a graph, expanding composites and rewiring inputs that name them."""

    def __init__(self, registry: Registry, args: list[str] | None, of_a_command: bool = False) -> None:
        self.registry = registry
        self.args = args
        self.of_a_command = of_a_command  # (a command's graph: flags set some of its options)
        self.graph = Graph()
        self.where: dict[str, str] = {}  # stage id -> where the config declared it ("stages.x", "chain[2]")
        self.exports: dict[str, dict[str, list[str]]] = {}  # composite id -> port -> inner refs
        self.routed: list[str] = []  # composites whose errors are routed (route_errors = true)

    def add(self, node_id: str, table: dict[str, Any], where: str, inputs: list[str],
            flags: dict[str, str] | None = None) -> None:
        if not isinstance(inputs, list) or not all(isinstance(i, str) for i in inputs):
            raise ReplayError("E_CONFIG_INPUT_UNKNOWN", "`inputs` must be a list of stage names", path=f"{where}.inputs",
                              received=as_received(inputs), example='inputs = ["read"]')
        for k, ref in enumerate(inputs):
            if ref.endswith("."):  # (`parse.` was taken as parse's main output: a port's name left out is no port)
                raise ReplayError("E_CONFIG_INPUT_UNKNOWN", f"input {ref!r} names no port after its dot",
                                  path=f"{where}.inputs[{k}]", received=ref,
                                  howToFix=f"Name the stage alone for its output ({ref[:-1]!r}), or one of its ports "
                                           f"after the dot ('{ref}errors'); `replay stages` lists each stage's ports.")
            if ref in inputs[:k]:  # the same stream taken twice: every record of it would come out twice
                raise ReplayError("E_CONFIG_INPUTS_INVALID", f"stage {node_id!r} names input {ref!r} twice",
                                  path=f"{where}.inputs[{k}]", received=inputs,
                                  howToFix="Name each input once; its records reach the stage once each.")
        route = table.get("route_errors", False)
        if not isinstance(route, bool):
            raise ReplayError("E_CONFIG_OPTION_INVALID", "`route_errors` must be true or false", path=f"{where}.route_errors",
                              received=as_received(route))
        stage = build_stage(self.registry, table, where, self.args, stage_id=node_id, flags=flags,
                            of_a_command=self.of_a_command)
        stage.flags = flags or {}
        if route and "errors" not in stage.ports:
            raise ReplayError("E_CONFIG_OPTION_INVALID", f"stage {node_id!r} ({stage.kind} {table['type']!r}) has no errors "
                              "port to route", path=f"{where}.route_errors", received=True,
                              howToFix="Drop route_errors from this stage: only a stage with an errors port (`replay stages` "
                                       "lists each stage's ports) has errors to route.")
        self.where[node_id] = where
        if isinstance(stage, Composite):
            if route:
                self.routed.append(node_id)
            self._expand(node_id, stage, where, inputs, route)
        else:
            self.graph.add(stage, id=node_id, inputs=inputs, route_errors=route)

    def _expand(self, node_id: str, stage: Composite, where: str, inputs: list[str], route: bool) -> None:
        try:
            sub = stage.expand(self.registry)
        except ReplayError as exc:  # (its rules file: named as the option that gave it)
            raise stage.as_named(exc, where, of_a_command=self.of_a_command) from None
        self.graph.read_files += stage.input_files()  # (heal's rules file: the composite is no stage of the graph)
        main_in = [r for r in inputs if not r.partition(".")[2]]

        def outer(ref: str) -> list[str]:
            if ref == IN:
                return main_in
            if ref.startswith(IN + "."):
                port = ref[len(IN) + 1:]
                return [r for r in inputs if r.partition(".")[2] == port]
            return [f"{node_id}/{ref}"]

        inner_ids = [f"{node_id}/{inner}" for inner in sub.stages]
        for inner, table in sub.stages.items():
            inner_inputs = [r for ref in table.get("inputs", []) for r in outer(ref)]
            body = {k: v for k, v in table.items() if k != "inputs"}
            if route:
                body["route_errors"] = True
            try:
                self.add(f"{node_id}/{inner}", body, f"{where}({inner})", inner_inputs)
            except ReplayError as exc:  # an inner stage's option: the composite's that gave it, else the composite
                raise _as_composite(exc, f"{where}({inner})", where, stage) from None
            built = self.graph.nodes.get(f"{node_id}/{inner}")  # (None: an inner composite, expanded in turn)
            if built is not None:  # what it takes of the composite's inputs: named as the composite's entries
                built.written = {ref: f"stages.{node_id}.inputs[{inputs.index(ref)}]" for ref in inner_inputs if ref in inputs}
        exports: dict[str, list[str]] = {}
        for port, refs in sub.exports.items():
            resolved: list[str] = []
            for ref in refs:
                producer, _, inner_port = ref.partition(".")
                if producer == "*":  # that port of every inner stage (and inner composite) that has it
                    resolved += [f"{i}.{inner_port}" for i in inner_ids if self._has_port(i, inner_port)]
                else:
                    resolved += outer(ref)
            exports[port] = resolved
        exports.setdefault("errors", [f"{i}.errors" for i in inner_ids if self._has_port(i, "errors")])
        self.exports[node_id] = exports

    def _has_port(self, node_id: str, port: str) -> bool:
        if node_id in self.exports:
            return port in self.exports[node_id]
        node = self.graph.nodes.get(node_id)
        return node is not None and port in node.stage.ports

    def resolve(self, ref: str, where: str, taker: str, via: tuple[str, ...] = ()) -> list[str]:
        """An input of the stage ``taker`` as the real outputs it stands for (a pattern, the outputs it names; a
        composite's port, its inner outputs); ``via``: the composite ports being resolved, one of which ``ref`` may
        not stand for again (``heal`` taking ``heal.repairs``)."""
        producer, _, port = ref.partition(".")
        if _PATTERN.search(producer):
            named = self.matches(ref, taker)
            return [ref] if named == [ref] else [r for one in named for r in self.resolve(one, where, taker, via)]
        if producer not in self.exports:
            return [ref]
        ports = self.exports[producer]
        if port not in ports:
            raise ReplayError(
                "E_CONFIG_INPUT_UNKNOWN", f"stage {producer!r} has no port {port!r}", path=where, received=ref,
                expected="ports: " + ", ".join(p for p in ports if p),
            )
        if ref in via:  # the port stands for what the composite takes in, and it takes in that port
            cycle = [*via[via.index(ref):], ref]
            raise ReplayError(
                "E_CONFIG_CYCLE", f"stage inputs form a cycle: {producer!r} takes its own output {ref!r}", path=where,
                received=cycle, howToFix=f"Take {ref!r} out of the inputs of {producer!r}.",
            )
        # (a pattern among them came in on the composite's inputs: it names what the composite takes, not itself)
        return [r for inner in ports[port] for r in self.resolve(inner, where, producer, (*via, ref))]

    def matches(self, ref: str, node_id: str) -> list[str]:
        """A pattern (``*.repairs``) as the outputs it names: of the stages the config declares, a composite's port
        among them, never the stages a composite expands into (reached through its ports only), nor the stage taking it
        (or the composite it is inside of). Any other input as it is; one that matches nothing too (refused as such)."""
        producer, dot, port = ref.partition(".")
        if not _PATTERN.search(producer):
            return [ref]
        own = node_id.split("/", 1)[0]
        found = [n for n in (*self.exports, *self.graph.nodes)
                 if "/" not in n and n != own and fnmatch.fnmatchcase(n, producer) and self._gives(n, port)]
        return [n + dot + port for n in found] or [ref]

    def _gives(self, node_id: str, port: str) -> bool:
        if node_id in self.exports or port:
            return self._has_port(node_id, port)
        return self.graph.nodes[node_id].stage.kind != "sink"

    def refuse_inner_refs(self, inputs: list[str], where: str) -> None:
        """A config's ``inputs`` name its stages and their ports; the stages a composite expands into
        (``heal/fill_run_id``: a name no config can give) are its own, reached through its ports only."""
        for k, ref in enumerate(inputs):
            producer = ref.partition(".")[0]
            if "/" not in producer:
                continue
            composite = producer.split("/", 1)[0]
            ports = self.exports.get(composite)
            if ports is None:
                continue  # no composite of the config: the input names no stage (refused with the wiring)
            raise ReplayError(
                "E_CONFIG_INPUT_UNKNOWN", f"input {ref!r} names a stage inside the composite {composite!r}; a config "
                "takes what a composite gives through its ports", path=f"{where}.inputs[{k}]", received=ref,
                expected="its ports: " + ", ".join(composite + (f".{p}" if p else "") for p in ports),
                howToFix=f"Take the composite's output or one of its ports (e.g. {composite!r}), or declare the stages "
                         "you need yourself (`replay stages --graph NAME` prints a composite's stages to copy).",
            )

    def finish(self) -> Graph:
        if not self.exports:
            return self.graph
        for node in self.graph.nodes.values():
            if not any(r.partition(".")[0] in self.exports or _PATTERN.search(r.partition(".")[0]) for r in node.inputs):
                continue
            resolved: list[str] = []
            written: dict[str, str] = {}
            named: dict[str, int] = {}  # a resolved input -> the input of the config that stands for it
            for k, ref in enumerate(node.inputs):
                where = f"stages.{node.id}.inputs[{k}]"
                for inner in self.resolve(ref, where, node.id):
                    if named.get(inner) == k:  # a pattern names it twice: `*.repairs` as parse.repairs, in heal.repairs
                        continue
                    # (a composite's port stands for what it takes in too: `heal.repairs`, `parse.repairs`)
                    take_once(named, node, inner, k, where)
                    resolved.append(inner)
                    written[inner] = node.written.get(ref, where)
            node.inputs, node.written = resolved, written
            node.declared_inputs = True  # an empty composite port still counts as wired
        taken = {ref for node in self.graph.nodes.values() for ref in node.inputs}
        for node_id in self.routed:  # named as the config has it, not by the first inner stage whose errors go nowhere
            # (taken by its name, `heal.errors`, or by a pattern, `*.errors`, `h*.errors`: resolved above)
            if not taken & set(self.resolve(f"{node_id}.errors", f"{self.where[node_id]}.route_errors", node_id)):
                raise ReplayError(
                    "E_CONFIG_ERRORS_UNCONSUMED", f"stage {node_id!r} routes its errors but nothing consumes {node_id}.errors",
                    path=f"{self.where[node_id]}.route_errors",
                    example=f'[stages.dead_letter]\ntype = "write"\npath = "errors.jsonl"\ninputs = ["{node_id}.errors"]',
                )
        return self.graph


def _as_composite(exc: ReplayError, inner: str, where: str, composite: Composite) -> ReplayError:
    """``exc`` raised at ``inner`` (``stages.heal(alias).aliases``: a stage a composite expands into, which no config
    writes) named at the composite the config declared: its option of that name (``stages.heal.aliases``), else
    the composite itself (``stages.heal``)."""
    path = exc.body.get("path")
    if isinstance(path, str) and (path == inner or path.startswith((inner + ".", inner + "["))):
        rest = path[len(inner):]
        option = rest.lstrip(".").split(".", 1)[0].split("[", 1)[0]
        exc.body["path"] = where + (rest if option in composite.options else "")
    return exc


def graph_from_config(doc: dict[str, Any], *, registry: Registry | None = None, paths: list[str] | None = None) -> Graph:
    """Build and validate the graph a config document declares; ``paths`` are the command's arguments."""
    registry = registry or Registry()
    flags: dict[str, str] = doc.get(FLAGS_KEY) or {}
    tables = normalize({k: v for k, v in doc.items() if k != FLAGS_KEY}, registry, paths)
    builder = _Builder(registry, paths, of_a_command=bool(flags))
    by_node: dict[str, dict[str, str]] = {}  # the flags each stage's options came from
    for key, flag in flags.items():
        node_id, _, option = key.partition(".")
        by_node.setdefault(node_id, {})[option] = flag
    for node_id, (table, where) in tables.items():
        builder.add(node_id, {k: v for k, v in table.items() if k != "inputs"}, where, table.get("inputs", []),
                    by_node.get(node_id))
    for table, where in tables.values():
        builder.refuse_inner_refs(table.get("inputs", []), where)
    graph = builder.graph
    # (a stage the chain added for you, `write` at its end, is named as the `chain` itself: no item declares it)
    graph.chained = {node_id: where for node_id, where in builder.where.items() if where.startswith("chain")}
    try:
        builder.finish()
        graph.validate()
    except ReplayError as exc:
        raise graph.as_written(exc) from None
    if paths:
        _refuse_unused_args(builder, paths)
    return graph


def _refuse_unused_args(builder: _Builder, args: list[str]) -> None:
    """Arguments no stage takes (the config set every option that would take them) would be ignored: refused."""
    nodes = builder.graph.nodes.values()
    if any(node.stage.args_keys for node in nodes):
        return
    taken = [f"{builder.where.get(node.id, 'stages.' + node.id)}.{key}" for node in nodes
             for key, opt in node.stage.options.items() if opt.bind == "args" and node.stage.given.get(key)]
    where = f"the config sets {', '.join(taken)}" if taken else "no stage of the config takes arguments"
    raise ReplayError(
        "E_USAGE_INVALID", f"the arguments {_shown(args)} would be ignored: {where}", path=taken[0] if taken else None,
        received=list(args), howToFix="Leave that option out of the config so the arguments fill it, or run the "
                                      "config without arguments." if taken else "Run the config without arguments.",
    )


def load_pipeline(path: str, *, registry: Registry | None = None, paths: list[str] | None = None) -> Graph:
    graph = graph_from_config(read_config_file(path), registry=registry, paths=paths)
    graph.read_files.insert(0, path)  # a stage writing over its own config is refused as one writing over an input
    return graph


def _shown(args: list[str]) -> str:
    """The first three arguments, quoted, for a message."""
    return ", ".join(repr(a) for a in args[:3]) + (f" and {len(args) - 3} more" if len(args) > 3 else "")

"""Graph: stages with ids and named inputs, validated as a whole before anything runs.

Inputs name another stage's main output (``"parse"``) or one of its side ports
(``"parse.errors"``, ``"*.repairs"`` for every stage that has that port). A stage's errors go to the
graph's error port unless something names ``<id>.errors``; with ``route_errors`` the stage insists
that something does. Its notices (what it saw but did not change) are warnings on stderr (``"event": "notice"``)
unless something names ``<id>.notices``: no graph loses them by leaving them out.
"""

from __future__ import annotations

import fnmatch
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from replay.pipeline.engine.errors import ReplayError, as_received
from replay.pipeline.engine.stage import Source, Stage

ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]+$")  # what a config may call a stage (ASCII: ids make keys, paths, log fields)
ID_RULE = "ASCII letters, digits, _ and -"  # the same, in words
# Stages a composite expands into are named <composite>/<inner> (a name no config can take).
NODE_ID = re.compile(r"^[A-Za-z0-9_-]+(?:/[A-Za-z0-9_-]+)*$")
MAIN = ""  # the port name of a stage's main output


@dataclass
class Node:
    id: str
    stage: Stage
    inputs: list[str] = field(default_factory=list)
    route_errors: bool = False
    # True when the inputs were declared but stand for nothing yet (a composite's port with no
    # inner outputs): the stage still runs, and its input is empty.
    declared_inputs: bool = False
    # An input -> the config's ``inputs`` entry it stands for, where that is not its own (``stages.heal.inputs[1]``
    # for the stages a composite expands into, a composite's port or a pattern resolved): what a refusal names.
    written: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Edge:
    producer: str
    port: str  # MAIN or a side port name
    consumer: str
    at: int = field(default=0, compare=False)  # the index of the consumer's input that names it


# a stage's config path: its id (a composite's inner stage: ``heal/fill_run_id``), then what follows it
_STAGE_PATH = re.compile(r"stages\.([A-Za-z0-9_-]+)((?:/[A-Za-z0-9_-]+)*)((?:\..*)?)", re.DOTALL)


def _shown(node_id: str) -> str:
    """A stage as the config names it: a stage a composite expands into (``heal/cut_runs``) as the composite."""
    return node_id.split("/", 1)[0]


def _config_error(code: str, message: str, path: str, **fields) -> ReplayError:
    return ReplayError(code, message, path=path, **fields)


def id_refused(node_id: Any, where: str) -> ReplayError:
    """The refusal of a stage id ``ID_PATTERN`` does not take, at ``where``, with an id it would take to rename it to."""
    spelled = unicodedata.normalize("NFKD", str(node_id)).encode("ascii", "ignore").decode()  # (é: e)
    suggested = re.sub(r"[^A-Za-z0-9_-]+", "_", spelled).strip("_") or "stage_1"
    return _config_error("E_CONFIG_SHAPE_INVALID", f"stage id {node_id!r} may use {ID_RULE} only", where,
                         received=as_received(node_id), expected=ID_RULE,
                         howToFix=f"Rename the stage (e.g. to {suggested!r}): its `[stages.<id>]` table (a chain item: its "
                                  "`id`) and every `inputs` entry that names it.")


def _taken_twice(node_id: str, output: str, first: str, again: str, where: str, inputs: list[str]) -> ReplayError:
    """The error for a stage whose inputs name one output twice (``p.errors`` and ``*.errors``): each record of it would
    reach the stage twice."""
    through = f"input {again!r}" if first == again else f"inputs {first!r} and {again!r}"
    return _config_error(
        "E_CONFIG_INPUTS_INVALID", f"stage {node_id!r} takes {output!r} twice: {through} both name it", where,
        received=inputs, howToFix="Name each output once (a pattern such as `*.repairs` names every stage's); its "
                                  "records reach the stage once each.",
    )


def take_once(taken: dict[str, int], node: Node, output: str, k: int, where: str) -> None:
    """Input ``k`` of ``node`` names ``output`` (``producer`` or ``producer.port``): refused when an input before it
    named it too. ``taken`` maps each output named so far to the input that named it."""
    first = taken.setdefault(output, k)
    if first != k:
        raise _taken_twice(node.id, output, node.inputs[first], node.inputs[k], where, list(node.inputs))


class Graph:
    """A value describing stages and their wiring; ``executor.run_graph`` executes it."""

    def __init__(self) -> None:
        self.nodes: dict[str, Node] = {}
        self.laid_out: Any = None  # what ``executor.layout`` worked out, with the wiring it was worked out for
        self.read_files: list[str] = []  # files read to build it (its config): no stage may write over them either
        self.chained: dict[str, str] = {}  # stage id -> the chain item that declared it ("chain[2]"), if one did

    def files_read(self) -> list[str]:
        """Every file the graph reads (``-``: stdin), as named: those read to build it (``read_files``: its config, heal's
        rules file), then each stage's ``input_files``."""
        return [*self.read_files, *(path for node in self.nodes.values() for path in node.stage.input_files())]

    def as_written(self, exc: ReplayError) -> ReplayError:
        """``exc`` with its ``stages.<id>...`` path named as the config wrote that stage: a chain's item (``chain[2]``;
        the item itself for its inputs, which a chain does not write), not a table the config does not have.
        A stage a composite expands into (``heal/cut_runs``) is named as the composite the config declared: its inputs
        are the composite's (``stages.heal.inputs``), anything else of it is the composite's table (``stages.heal``).
        A message (or advice) that quotes the path (``stages.write.path 'runs/x.jsonl' and ...``) quotes it so too."""
        path = exc.body.get("path")
        found = _STAGE_PATH.fullmatch(path) if isinstance(path, str) else None
        if found is None:
            return exc
        top, inner, rest = found.groups()
        if inner:  # (the index of an inner stage's input is none of the config's)
            rest = ".inputs" if rest.startswith(".inputs") else ""
        if top in self.chained:
            exc.body["path"] = self.chained[top] + ("" if rest.startswith(".inputs") else rest)
        elif inner:
            exc.body["path"] = f"stages.{top}{rest}"
        if exc.body["path"] != path:  # (not where it is the start of another id's: `stages.write_2`)
            quoted = re.compile(re.escape(found[0]) + r"(?![A-Za-z0-9_/-])")
            for key in ("message", "howToFix"):
                said = exc.body.get(key)
                if isinstance(said, str):
                    exc.body[key] = quoted.sub(lambda _: exc.body["path"], said)
        return exc

    def declared_at(self, stage_id: str) -> str | None:
        """Where a chain declared the stage ``stage_id`` (``chain[2]``; ``chain`` for a stage it added, ``read`` before
        its first item or ``write`` after its last; a composite's inner stage, where the composite was), or None: a
        [stages.*] table, whose id is the one the config wrote."""
        return self.chained.get(stage_id.split("/", 1)[0])

    def add(self, stage: Stage, id: str | None = None, inputs: Iterable[str] = (), *, route_errors: bool = False) -> str:
        node_id = id or self._fresh_id(stage.name or type(stage).__name__.lower())
        if not isinstance(node_id, str) or not NODE_ID.match(node_id):
            raise id_refused(node_id, f"stages.{node_id}")
        if node_id in self.nodes:
            raise _config_error("E_CONFIG_SHAPE_INVALID", f"two stages are called {node_id!r}", f"stages.{node_id}",
                                received=node_id, howToFix="Give each stage its own id.")
        stage.id = node_id
        self.nodes[node_id] = Node(node_id, stage, list(inputs), route_errors)
        return node_id

    @classmethod
    def chain(cls, *stages: Stage) -> Graph:
        """Stages wired one after the other: each takes the previous one's main output."""
        graph = cls()
        previous: str | None = None
        for stage in stages:
            previous = graph.add(stage, inputs=[previous] if previous else [])
        return graph

    def _fresh_id(self, base: str, taken: Iterable[str] = ()) -> str:
        reserved = set(taken)
        candidate, n = base, 1
        while candidate in self.nodes or candidate in reserved:
            n += 1
            candidate = f"{base}_{n}"
        return candidate

    # validation ------------------------------------------------------------------------------
    def edges(self) -> list[Edge]:
        """Resolve every input name to edges; raises on names that match nothing."""
        result: list[Edge] = []
        for node in self.nodes.values():
            taken: dict[str, int] = {}  # an output ("producer" or "producer.port") -> the input that names it
            for k, ref in enumerate(node.inputs):
                where = f"stages.{node.id}.inputs[{k}]"
                if not isinstance(ref, str) or not ref:
                    raise _config_error("E_CONFIG_INPUT_UNKNOWN", "an input must be a non-empty string", where, received=as_received(ref))
                producer, _, port = ref.partition(".")
                dot_port = f".{port}" if port else ""  # what follows a producer's id in the name of its output
                if any(ch in producer for ch in "*?["):
                    matches = [
                        n.id for n in self.nodes.values()
                        if fnmatch.fnmatchcase(n.id, producer) and n.id != node.id and (port in n.stage.ports if port else n.stage.kind != "sink")
                    ]
                    if not matches:
                        raise _config_error("E_CONFIG_INPUT_UNKNOWN", f"input {ref!r} matches no stage", where, received=ref)
                    for m in matches:
                        take_once(taken, node, m + dot_port, k, where)
                    result.extend(Edge(m, port, node.id, k) for m in matches)
                    continue
                if producer not in self.nodes:
                    raise _config_error(
                        "E_CONFIG_INPUT_UNKNOWN", f"input {ref!r} names no stage", where,
                        received=ref, expected="one of: " + ", ".join(sorted(self.nodes)),
                    )
                target = self.nodes[producer].stage
                if port and port not in target.ports:
                    raise _config_error(
                        "E_CONFIG_INPUT_UNKNOWN", f"stage {producer!r} has no port {port!r}", where,
                        received=ref, expected="ports: " + ", ".join(target.ports or ("none",)),
                    )
                if not port and target.kind == "sink":
                    raise _config_error("E_CONFIG_INPUT_UNKNOWN", f"stage {producer!r} is a sink and has no output", where, received=ref)
                take_once(taken, node, producer + dot_port, k, where)
                result.append(Edge(producer, port, node.id, k))
        return result

    def validate(self) -> list[Edge]:
        for node in self.nodes.values():
            if not NODE_ID.match(node.id):
                raise id_refused(node.id, f"stages.{node.id}")
            if node.stage.kind == "source" and node.inputs:
                raise _config_error("E_CONFIG_INPUTS_INVALID", f"source stage {node.id!r} takes no inputs", f"stages.{node.id}.inputs")
            if node.stage.kind != "source" and not node.inputs and not node.declared_inputs:
                raise _config_error(
                    "E_CONFIG_INPUTS_INVALID", f"{node.stage.kind} stage {node.id!r} needs at least one input",
                    f"stages.{node.id}.inputs", example='inputs = ["read"]',
                )
        edges = self.edges()
        for e in edges:
            producer, consumer = self.nodes[e.producer].stage, self.nodes[e.consumer].stage
            if e.port == MAIN and producer.emits_raw and not consumer.accepts_raw:
                raise _config_error(
                    "E_CONFIG_INPUTS_INVALID",
                    f"stage {e.consumer!r} needs parsed events but {e.producer!r} gives raw lines; put a `parse` stage between them",
                    f"stages.{e.consumer}.inputs", example=f'[stages.parse]\ntype = "parse"\ninputs = ["{e.producer}"]',
                    howToFix=f"Add a `parse` stage that takes {e.producer!r} (the example), and give {e.consumer!r} "
                             "inputs = [\"parse\"].",
                )
            made = producer.gives or ("run summaries" if producer.emits_summaries else "")
            if e.port == MAIN and made and not (consumer.takes_anything or (consumer.takes_summaries and producer.emits_summaries)):
                raise _config_error(
                    "E_CONFIG_INPUTS_INVALID",
                    f"stage {e.consumer!r} takes events, but {e.producer!r} gives {made}: it would find none in them",
                    f"stages.{e.consumer}.inputs", received=e.producer, expected="a stage that gives events",
                    howToFix=f"Give {e.consumer!r} the stream {e.producer!r} takes, or end with {e.producer!r}: "
                             f"a `write` stage after it writes what it gives (in a chain: make it the last).",
                    example=f'[stages.out]\ntype = "write"\ninputs = ["{e.producer}"]',
                )
            if consumer.takes_summaries and (e.port != MAIN or not producer.emits_summaries):
                given = f"{e.producer}.{e.port}" if e.port != MAIN else e.producer
                raise _config_error(
                    "E_CONFIG_INPUTS_INVALID",
                    f"stage {e.consumer!r} takes the run summaries of a `summarize` stage, which {given!r} does not give; "
                    "put a `summarize` stage between them", f"stages.{e.consumer}.inputs", received=given,
                    expected="the main output of a `summarize` stage",
                    howToFix=f"Put a `summarize` stage before {e.consumer!r} and give {e.consumer!r} its output: "
                             'inputs = ["summarize"] (in a chain: "summarize" just before it).',
                    example=f'[stages.summarize]\ntype = "summarize"\ninputs = ["{given}"]',
                )
        self._check_one_stdin_reader()
        self._check_acyclic(edges)
        self._check_one_stream(edges)
        self._check_screened(edges)
        self._check_redacted(edges)
        for node in self.nodes.values():
            node.stage.wired([self.nodes[e.producer].stage for e in edges if e.consumer == node.id and e.port == MAIN])
        after = self._successors(edges)
        for node in self.nodes.values():
            node.stage.reaches([self.nodes[n].stage for n in self._reached(node.id, after)])
        streams = self._successors(edges, main_only=True)

        def logs_joins(n: str) -> bool:  # (it takes the joins off the batches: none goes on past it)
            return self.nodes[n].stage.logs_joins

        for node in self.nodes.values():
            node.stage.streams_into([self.nodes[n].stage for n in self._reached(node.id, streams, logs_joins)])
        consumed = {(e.producer, e.port) for e in edges}
        for node in self.nodes.values():
            if node.stage.kind != "sink" and (node.id, MAIN) not in consumed:
                raise _config_error(
                    "E_CONFIG_OUTPUT_UNCONSUMED", f"nothing takes the output of stage {node.id!r}", f"stages.{node.id}",
                    example=f'[stages.out]\ntype = "write"\ninputs = ["{node.id}"]',
                )
            if node.route_errors and (node.id, "errors") not in consumed:
                raise _config_error(
                    "E_CONFIG_ERRORS_UNCONSUMED", f"stage {node.id!r} routes its errors but nothing consumes {node.id}.errors",
                    f"stages.{node.id}.route_errors",
                    example=f'[stages.dead_letter]\ntype = "write"\npath = "errors.jsonl"\ninputs = ["{node.id}.errors"]',
                )
        return edges

    def _check_one_stdin_reader(self) -> None:
        """Stdin can be read once: two sources reading it (``Source.reads_stdin``: two `read` stages given no paths)
        would fight over it (one fails, or each gets pieces of it cut anywhere). The second is refused."""
        first: str | None = None
        for node in self.nodes.values():
            where = node.stage.reads_stdin() if isinstance(node.stage, Source) else None
            if where is None:
                continue
            if first is None:
                first = node.id
                continue
            raise _config_error(
                "E_CONFIG_OPTION_INVALID", f"stages {first!r} and {node.id!r} would both read stdin, which can be "
                "read once", where, received="stdin", expected="one source reading stdin",
                howToFix=f"Give {node.id!r} `paths` of its own, or read stdin once and give both ways its output: "
                         f'inputs = ["{first}"] (a stage\'s output goes to every stage that names it).',
                example=f'[stages.{node.id}]\ntype = "{node.stage.name}"\npaths = ["other.jsonl"]',
            )

    def _check_one_stream(self, edges: list[Edge]) -> None:
        """A stage that follows the run in progress (``Stage.keeps_run_state``) takes one stream of events: the batches
        of several come interleaved, and it would cut each run wherever another stream's batch came between. Refused:
        a second main output among its inputs, or the output of a stage that passes several on mixed (side ports,
        ``x.repairs``, are no stream of events: every stage skips their batches)."""
        streams: dict[str, list[Edge]] = {n: [] for n in self.nodes}
        for e in edges:
            if e.port == MAIN:
                streams[e.consumer].append(e)
        mixed: dict[str, str] = {}  # a stage passing several streams on mixed -> the stage where they met
        for n in self.topological(edges):
            node, ins = self.nodes[n], streams[n]
            met = n if len(ins) > 1 else mixed.get(ins[0].producer) if ins else None
            if met is None:
                continue
            if not node.stage.keeps_run_state:
                mixed[n] = met
                continue
            edge = ins[1] if met == n else ins[0]
            where = node.written.get(node.inputs[edge.at], f"stages.{n}.inputs[{edge.at}]")
            stage, given = _shown(n), ", ".join(repr(_shown(e.producer)) for e in streams[met])
            through = "" if met == n else f"the output of {_shown(edge.producer)!r}, where {_shown(met)!r} mixes "
            raise _config_error(
                "E_CONFIG_INPUTS_INVALID",
                f"stage {stage!r} follows each run from batch to batch, but takes {through}more than one stream of events "
                f"({given}): their batches come interleaved, and it would cut a run wherever another stream's batch "
                "came between (inventing events, losing some)", where, received=[_shown(e.producer) for e in streams[met]],
                expected="one stream of events",
                howToFix=f"Read the files in one `read` stage (`paths = [\"a.jsonl\", \"b.jsonl\"]`: each input is read "
                         f"whole, one after the other, and judged alone), or give each stream a {stage!r} of its own (and "
                         "one of every stage after it that follows runs). "
                         "Stages that take each batch on its own (`write`, `select`, `log`) may take several streams.",
                example='[stages.read]\ntype = "read"\npaths = ["a.jsonl", "b.jsonl"]',
            )

    def _check_screened(self, edges: list[Edge]) -> None:
        """Every stage a screen's fast lane reaches knows it (``Stage.screened_lane``)."""
        after = self._successors(edges, main_only=True)
        for screen in [n for n, node in self.nodes.items() if node.stage.opens_lane()]:
            reached, todo = {screen}, [screen]
            while todo:
                for n in after[todo.pop()]:
                    lane = self.nodes[n].stage.screened_lane
                    if lane is None:
                        raise _config_error(
                            "E_CONFIG_INPUTS_INVALID",
                            f"stage {n!r} cannot take the fast lane of screen {screen!r} (whole runs passed on as their "
                            "lines, unparsed): it would lose those runs or fail on them", f"stages.{n}.inputs",
                            howToFix=f"Set `fast = false` on {screen!r} (every run goes the slow way), or take {n!r} "
                                     f"off the screen's way.",
                            example=f'[stages.{screen}]\ntype = "screen"\nfast = false',
                        )
                    if lane == "passes" and n not in reached:
                        reached.add(n)
                        todo.append(n)
            missing = self.nodes[screen].stage.lane_needs() - {self.nodes[n].stage.name for n in reached}
            if missing:
                raise _config_error(
                    "E_CONFIG_INPUTS_INVALID",
                    f"screen {screen!r} repairs runs itself, as the {', '.join(sorted(missing))} rules do, but its fast "
                    "lane reaches no such stage: those runs would come out changed, with no repair logged or counted",
                    f"stages.{screen}.mode",
                    howToFix=f'Set `mode = "validate"` on {screen!r} (it then passes on only runs that need nothing), '
                             f"or `fast = false`, or put the heal stage (all its rules) after it.",
                    example=f'[stages.{screen}]\ntype = "screen"\nmode = "validate"',
                )

    def _check_redacted(self, edges: list[Edge]) -> None:
        """A stage with private records (``Stage.private_output``: an incident export as read) hands them, on every
        port, to stages that redact them and to nothing else. Checked here, on the wiring, not further down: a stage
        before the redaction would pass on what it derives from the records (an evaluation names the raw order ids),
        which a redact stage after it leaves as it is, and a sink would write."""
        for e in edges:
            producer, consumer = self.nodes[e.producer].stage, self.nodes[e.consumer].stage
            if producer.private_output() and not consumer.redacts:
                given = f"{e.producer}.{e.port}" if e.port != MAIN else e.producer
                raise _config_error(
                    "E_INCIDENT_NOT_REDACTED",
                    f"stage {e.consumer!r} takes {given!r}, whose records are not redacted yet (emails, card numbers, "
                    f"names as the export holds them): {e.consumer!r} would pass them on or write them",
                    f"stages.{e.consumer}.inputs", received=given, expected="a `redact` stage",
                    howToFix=f"Put a `redact` stage right after {e.producer!r} and give {e.consumer!r} its output: "
                             f'inputs = ["redact"] (in a chain: "redact" just after it).',
                    example=f'[stages.redact]\ntype = "redact"\ninputs = ["{given}"]',
                )

    def _successors(self, edges: list[Edge], *, main_only: bool = False) -> dict[str, list[str]]:
        """The stages each stage feeds (by its main output only, with ``main_only``)."""
        after: dict[str, list[str]] = {n: [] for n in self.nodes}
        for e in edges:
            if not main_only or e.port == MAIN:
                after[e.producer].append(e.consumer)
        return after

    @staticmethod
    def _reached(start: str, after: dict[str, list[str]], stop: Callable[[str], bool] | None = None) -> list[str]:
        """The stages ``start`` feeds, directly or not (``after``: ``_successors``), in the order first met; with
        ``stop``, not past a stage it says True of (that one is among them)."""
        reached: dict[str, None] = {}
        todo = list(after[start])
        while todo:
            n = todo.pop(0)
            if n not in reached:
                reached[n] = None
                if stop is None or not stop(n):
                    todo += after[n]
        return list(reached)

    def _check_acyclic(self, edges: list[Edge]) -> None:
        """A cycle among the inputs is refused, named stage by stage. A walk with its own stack, not recursion: a chain
        of thousands of stages is as deep as it is long."""
        after = self._successors(edges)
        state: dict[str, int] = {}  # 1: on the path walked now; 2: done (no cycle through it)
        for start in self.nodes:
            if start in state:
                continue
            state[start] = 1
            path, todo = [start], [iter(after[start])]  # the path walked, and the successors left at each of its stages
            while todo:
                m = next(todo[-1], None)
                if m is None:
                    state[path.pop()] = 2
                    todo.pop()
                elif state.get(m) == 1:
                    cycle = [*path[path.index(m):], m]
                    raise _config_error(
                        "E_CONFIG_CYCLE", "stage inputs form a cycle: " + " -> ".join(cycle),
                        f"stages.{m}.inputs", received=cycle,
                    )
                elif m not in state:
                    state[m] = 1
                    path.append(m)
                    todo.append(iter(after[m]))

    def topological(self, edges: list[Edge]) -> list[str]:
        indegree = {n: 0 for n in self.nodes}
        after = self._successors(edges)
        for e in edges:
            indegree[e.consumer] += 1
        ready = [n for n in self.nodes if indegree[n] == 0]
        order: list[str] = []
        while ready:
            n = ready.pop(0)
            order.append(n)
            for m in after[n]:
                indegree[m] -= 1
                if indegree[m] == 0:
                    ready.append(m)
        return order

    def documents(self) -> set[str]:
        """The stages whose main output is (part of) a ``one_document`` stage's: that stage's, and every stage's that
        takes it on a main input, however far down; the sinks among them write it whole or not at all."""
        starts = [n for n, node in self.nodes.items() if node.stage.one_document]
        if not starts:
            return set()
        streams = self._successors(self.edges(), main_only=True)
        return {*starts, *(n for start in starts for n in self._reached(start, streams))}

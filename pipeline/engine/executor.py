"""Runs a Graph: fuses chains of transforms into segments and joins tasks with bounded channels.

One task per source, per sink and per segment (a maximal chain of transforms where each link has a
single producer and a single consumer). Channels are anyio memory object streams of batches with a
small buffer, so a slow sink holds back the sources (backpressure) instead of filling memory. Every
stream ends by closing its send side; a consumer with several producers ends when all have closed.

Each run executes fresh copies of the graph's stages (``Stage.fresh``), so a graph is a value that
can run twice; what the stages ``publish`` comes back in ``RunResult.facts``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.lowlevel import checkpoint_if_cancelled
from anyio.streams.memory import MemoryObjectReceiveStream as ObjectReceiveStream
from anyio.streams.memory import MemoryObjectSendStream as ObjectSendStream

from replay.pipeline.engine import interrupts
from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.errors import PipeClosed, ReplayError, StrictAbort, error_line
from replay.pipeline.engine.graph import MAIN, Edge, Graph
from replay.pipeline.engine.log import log_record, make_logger, write_stderr
from replay.pipeline.engine.preflight import preflight
from replay.pipeline.engine.quota import DEFAULT_LIMIT, Quota
from replay.pipeline.engine.registry import is_built_in
from replay.pipeline.engine.segment import Item, Segment
from replay.pipeline.engine.stage import (
    AsyncTransform,
    Output,
    Sink,
    Source,
    Stage,
    Transform,
    port_undeclared,
    record_invalid,
)

DEFAULT_BUFFER = 4  # batches per channel: enough to overlap I/O with work, small enough to bound memory


class StageFailed(Exception):
    """A stage raised something that is not a ReplayError: a bug or an unexpected environment."""

    def __init__(self, stage_id: str, exc: BaseException, message: str | None = None) -> None:
        """``message``: the one a run elsewhere gave (an input's run in a worker), when ``exc`` only carries it over."""
        if message is None:
            try:
                said = str(exc)
            except Exception:  # (an exception whose str() raises: its type says what there is to say)
                said = ""
            message = f"stage {stage_id!r} failed: {type(exc).__name__}" + (f": {said}" if said else "")
        super().__init__(message)
        self.stage_id = stage_id
        self.exc = exc
        self.traceback: str | None = None  # the traceback's text, when the stage ran elsewhere (a worker process)
        self.path: str | None = None  # where the config declared the stage, when its id is none the config wrote

    def declared(self, path: str | None) -> StageFailed:
        """Say where the config declared the stage (a chain's item, ``chain[2]``: its id, ``select_2``, is one the
        chain made up), in the message and as the error's ``path``."""
        if path is not None and self.path is None:
            self.path = path
            named = f"stage {self.stage_id!r}"
            said = "added by the chain" if path == "chain" else f"{path} of the config"
            self.args = (str(self).replace(named, f"{named} ({said})", 1),)
        return self




class ErrorPort:
    """The graph's default error consumer: counts diagnostics and writes them as JSON on stderr, up to ``limit`` of
    one code in one input (``Quota``); ``finish()`` (at the end of the run) writes one ``E_ERRORS_SUPPRESSED`` line
    per (source, code) with errors left out. ``count`` is every error, shown or not (exit codes and summaries do not
    change). ``limit`` 0 shows them all; ``--strict`` stops at the first.
    """

    def __init__(self, strict: bool = False, write: Callable[[bytes], Any] | None = None,
                 limit: int = DEFAULT_LIMIT) -> None:
        self.strict = strict
        self.limit = limit
        self.count = 0
        self.first: dict[str, Any] | None = None
        self._write = write if write is not None else write_stderr
        self._quota = Quota(limit)

    def put(self, records: list[dict[str, Any]]) -> None:
        for record in records:
            self.count += 1
            if self.first is None:
                self.first = record
            if not self.strict and not self._quota.admit(record):
                continue
            self._write(error_line(record))
            if self.strict:
                raise StrictAbort(record)

    def finish(self) -> None:
        """Write one summary line per (source, code) whose errors were left out; call once, at the end."""
        for summary in self._quota.left_out("error"):
            self._write(error_line(summary))


@dataclass
class RunResult:
    errors: int = 0
    first_error: dict[str, Any] | None = None
    dropped: dict[str, int] = field(default_factory=dict)  # side records nobody consumed, per port
    facts: dict[str, Any] = field(default_factory=dict)  # what the stages published for the command
    records: int = 0  # what the sources sent (lines, events): a progress count for runs over many inputs
    sunk: int = 0  # what the sinks took (records of their inputs): nothing, and a failed run wrote nothing at all


@dataclass
class _Task:
    nodes: list[_Live]
    receive: ObjectReceiveStream[Batch] | None = None
    send: ObjectSendStream[Batch] | None = None  # the original send side, closed once cloned
    outs: dict[tuple[str, str], list[ObjectSendStream[Batch]]] = field(default_factory=dict)
    segment: Segment | None = None  # a chain of fused transforms, once it runs: which of them is at work

    def at_work(self) -> str:
        """The id of the stage this task runs now (of a chain of transforms, the one at work)."""
        return self._node_at_work().id

    def built_in_at_work(self) -> bool:
        """Is the stage this task runs now one of replay's own (``stages/``), not a plugin's?"""
        return is_built_in(type(self._node_at_work().stage))

    def _node_at_work(self) -> _Live:
        return self.nodes[self.segment.current] if self.segment is not None else self.nodes[0]


@dataclass
class _Live:
    """A node of the graph as one run executes it: its id and a fresh copy of its stage."""

    id: str
    stage: Stage


def plan(graph: Graph, args: list[str] | None = None) -> tuple[list[_Task], list[Edge]]:
    """Group nodes into tasks: sources and sinks alone, transforms fused along single links; each task runs fresh
    copies of its stages. ``args``: the command arguments of this run, where the graph was built with others
    (``Stage.fresh``: a graph run once per input is checked and laid out once, ``layout``)."""
    groups, external = layout(graph)
    live = {node_id: _Live(node_id, node.stage.fresh(args)) for node_id, node in graph.nodes.items()}
    for node_id in graph.documents():
        sink = live[node_id].stage
        if isinstance(sink, Sink):
            sink.whole_document = True
    return [_Task([live[node_id] for node_id in group]) for group in groups], external


def layout(graph: Graph) -> tuple[list[list[str]], list[Edge]]:
    """The graph checked (``Graph.validate``) and its nodes grouped into tasks (their ids, in task order), with the
    edges between tasks; kept on the graph until its nodes or their wiring change."""
    shape = [(n.id, n.stage, tuple(n.inputs), n.route_errors, n.declared_inputs) for n in graph.nodes.values()]
    kept = graph.laid_out
    if kept is not None and kept[0] == shape:
        return kept[1], kept[2]
    edges = graph.validate()
    order = graph.topological(edges)
    consumers: dict[tuple[str, str], list[str]] = {}
    inputs: dict[str, list[Edge]] = {n: [] for n in graph.nodes}
    for e in edges:
        consumers.setdefault((e.producer, e.port), []).append(e.consumer)
        inputs[e.consumer].append(e)
    groups: list[list[str]] = []
    group_of: dict[str, list[str]] = {}
    for node_id in order:
        ins = inputs[node_id]
        if isinstance(graph.nodes[node_id].stage, Transform) and len(ins) == 1 and ins[0].port == MAIN:
            up = ins[0].producer
            up_group = group_of.get(up)
            if (
                up_group is not None
                and isinstance(graph.nodes[up].stage, Transform)
                and up_group[-1] == up
                and len(consumers[(up, MAIN)]) == 1
            ):
                up_group.append(node_id)
                group_of[node_id] = up_group
                continue
        group = [node_id]
        groups.append(group)
        group_of[node_id] = group
    fused = {(g[k], g[k + 1]) for g in groups for k in range(len(g) - 1)}
    external = [e for e in edges if not (e.port == MAIN and (e.producer, e.consumer) in fused)]
    graph.laid_out = (shape, groups, external)
    return groups, external


async def run_graph(
    graph: Graph,
    *,
    strict: bool = False,
    error_port: ErrorPort | None = None,
    buffer: int = DEFAULT_BUFFER,
    log: Any = None,
    args: list[str] | None = None,
    probed: set[Path] | None = None,
) -> RunResult:
    """Execute ``graph`` to completion; diagnostics not routed elsewhere go to ``error_port``.
    ``log`` is the logger the stages get (``stage.log``); ``args``: this run's command arguments (see ``plan``);
    ``probed``: the folders its outputs were tried in already (``preflight``), by runs over other inputs."""
    port = error_port or ErrorPort(strict=strict)
    tasks, edges = plan(graph, args)
    try:  # refusals before anything runs (a Ctrl-C cuts them at once: no task is there to cancel)
        with interrupts.at_once():
            preflight((live.stage for task in tasks for live in task.nodes), graph.read_files, probed)
    except ReplayError as exc:
        raise graph.as_written(exc) from None
    shared: dict[str, Any] = {}  # (``Stage.shared``: one for all the stages of this run)
    for task in tasks:
        for live in task.nodes:
            live.stage.log = log
            live.stage.diagnostics_limit = port.limit
            live.stage.shared = shared
    task_by_head = {t.nodes[0].id: t for t in tasks}
    task_of = {n.id: t for t in tasks for n in t.nodes}
    result = RunResult()
    notices, notice_log = Quota(port.limit), log or make_logger()  # (the notices no stage takes, as ``log`` has them)
    empty_outputs: list[Callable[[], None]] = []  # the sinks' outputs with nothing in them (``Sink.commit_empty``)

    for task in tasks:
        if task.nodes[0].stage.kind != "source":
            # (not ``create_memory_object_stream[Batch](...)``: calling the subscripted form costs ~5 µs a channel)
            task.send, task.receive = anyio.create_memory_object_stream(buffer)
    for e in edges:
        consumer = task_by_head[e.consumer]
        assert consumer.send is not None
        task_of[e.producer].outs.setdefault((e.producer, e.port), []).append(consumer.send.clone())
    for task in tasks:
        if task.send is not None:
            task.send.close()

    async def fanout(sends: list[ObjectSendStream[Batch]], batch: Batch) -> None:
        for s in sends[:-1]:
            await _send(s, batch.copy())
        await _send(sends[-1], batch)

    async def forward_side(task: _Task, node: _Live, side: dict[str, list[dict[str, Any]]] | None = None) -> None:
        side = node.stage.drain() if side is None else side
        if not side:
            return
        for name, records in side.items():
            for record in records:
                if type(record) is not dict:  # (a plugin's: every built-in stage emits dicts)
                    raise record_invalid(node.id, name, record)
            sends = task.outs.get((node.id, name))
            if sends:
                await fanout(sends, Batch.side(records, name, f"<{node.id}.{name}>"))
            elif name == "errors":
                port.put(records)
            elif name == "notices":  # what a stage saw but did not change: a warning on stderr, unless a stage takes it
                for record in records:
                    if notices.admit(record):
                        log_record(notice_log, "warning", "notice", record)
            elif name not in node.stage.ports:
                raise port_undeclared(node.id, name, node.stage.ports)
            else:
                result.dropped[name] = result.dropped.get(name, 0) + len(records)

    async def run_task(task: _Task) -> None:
        head = task.nodes[0]
        try:
            async with AsyncExitStack() as stack:
                # an interrupt's last resort names the stage of a task that outlives the grace (interrupts.py)
                stack.enter_context(interrupts.running(task.at_work, sys._getframe(), task.built_in_at_work))
                for sends in task.outs.values():
                    for s in sends:
                        stack.push_async_callback(s.aclose)
                if task.receive is not None:
                    stack.push_async_callback(task.receive.aclose)
                try:
                    if isinstance(head.stage, Source | AsyncTransform):
                        await run_source(task, head)
                    elif isinstance(head.stage, Transform):
                        await run_segment(task)
                    else:
                        assert task.receive is not None
                        head.stage._report = lambda: forward_side(task, head)  # type: ignore[attr-defined]
                        head.stage._commit_empty = empty_outputs.append  # type: ignore[attr-defined]
                        head.stage._errors = lambda: port.count  # type: ignore[attr-defined]
                        taken = _Counted(task.receive)
                        try:
                            await head.stage.consume(taken)  # type: ignore[attr-defined]
                        finally:
                            if head.stage.takes_output:  # type: ignore[attr-defined]
                                result.sunk += taken.count
                        await _input_taken(head.id, task.receive)
                        await forward_side(task, head)
                except BaseException:
                    # Stop everyone before our channels close: a consumer must not mistake a failure
                    # upstream for the end of its input and commit a partial output file.
                    group[0].cancel_scope.cancel()
                    raise
        except (ReplayError, StrictAbort, PipeClosed, BrokenPipeError, StageFailed, anyio.get_cancelled_exc_class()):
            raise
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            await _cancelled_first()  # (its consumer went away on being cancelled: the run's cancellation, not a failure)
            raise
        except Exception as exc:
            raise StageFailed(task.at_work(), exc) from exc  # (named: the stage at work when it raised)
        except (KeyboardInterrupt, BaseExceptionGroup):
            raise
        except BaseException as exc:  # a stage's SystemExit (a library calling sys.exit), GeneratorExit, its own kind
            raise StageFailed(task.at_work(), exc) from exc

    async def run_source(task: _Task, node: _Live) -> None:
        """A source, or an async transform (a source that also reads its input channel)."""
        main = task.outs.get((node.id, MAIN), [])
        counts = isinstance(node.stage, Source)

        async def send(batch: Batch) -> None:
            if counts:
                result.records += len(batch)
            if main:
                await fanout(main, batch)

        out = Output(send, lambda: forward_side(task, node), node.id)
        if isinstance(node.stage, AsyncTransform):
            assert task.receive is not None
            await node.stage.process(Incoming(task.receive), out)
            await _input_taken(node.id, task.receive)
        else:
            await node.stage.produce(out)  # type: ignore[attr-defined]
        await forward_side(task, node)

    async def run_segment(task: _Task) -> None:
        nodes = task.nodes
        segment = task.segment = Segment([n.stage for n in nodes])  # type: ignore[misc]
        tail_outs = task.outs.get((nodes[-1].id, MAIN), [])

        async def deliver(items: Iterator[Item]) -> None:
            """Each item as the segment gives it out (it runs its stages as they are taken: batches a stage gives
            back lazily go through one at a time, each sent on, waiting on the channel, before the next is made)."""
            for item in items:
                if type(item) is tuple:
                    await forward_side(task, nodes[item[0]], item[1])
                elif tail_outs:
                    await fanout(tail_outs, item)  # type: ignore[arg-type]

        assert task.receive is not None
        async for batch in Incoming(task.receive):
            await deliver(segment.push(batch))
        await deliver(segment.finish())

    group: list[Any] = []
    try:
        with interrupts.watching():  # a stage that outlives an interrupt's grace is ended hard (the CLI arms it)
            async with anyio.create_task_group() as tg:
                group.append(tg)
                for task in tasks:
                    tg.start_soon(run_task, task)
    except BaseExceptionGroup as failures:  # (not `group`: the handler's end unbinds its name, which run_task reads)
        telling = _most_telling(failures)
        if isinstance(telling, PipeClosed):
            telling.errors += port.count  # (stdout's reader went: the command's verdict so far counts this run's errors)
        elif isinstance(telling, StageFailed):  # (named as the config wrote it: a chain's item, not the id it made up)
            telling.declared(graph.declared_at(telling.stage_id))
        elif isinstance(telling, ReplayError):
            graph.as_written(telling)
        raise telling from None
    finally:
        port.finish()  # the errors left out are summed up, however the run ended
        for summary in notices.left_out("warning"):
            log_record(notice_log, "warning", "notice", summary)
    if port.count == 0 or result.sunk:  # (a run that failed with nothing written anywhere leaves no empty output)
        for commit in empty_outputs:
            commit()
    result.errors = port.count
    result.first_error = port.first
    for task in tasks:
        for live in task.nodes:
            result.facts.update(live.stage.facts)
    return result


async def _input_taken(stage_id: str, stream: ObjectReceiveStream[Batch]) -> None:
    """A sink or async transform returned: E_STAGE_FAILED naming it when its input had more to give (the stages before it
    failed sending into a closed channel, naming no one, or the rest was dropped without a word when it fitted)."""
    try:
        await stream.receive()
    except (anyio.EndOfStream, anyio.ClosedResourceError):
        return
    raise StageFailed(stage_id, RuntimeError("returned early"), f"stage {stage_id!r} returned before its input ended: a sink "
                      "or async transform takes every batch of its input (`async for batch in batches`)")


async def _send(stream: ObjectSendStream[Batch], batch: Batch) -> None:
    """Send a batch; straight into the buffer when it has room. anyio's ``send`` yields to the event
    loop first, and a round through the loop per batch and channel costs ~10% of a plain read."""
    try:
        stream.send_nowait(batch)
    except anyio.WouldBlock:
        await stream.send(batch)


async def _cancelled_first() -> None:
    """Raise the run's cancellation, when it is cancelled (an interrupt, or a stage that failed). A task that sends
    and takes batches without waiting (the buffers have room, or batches) reaches no checkpoint, and one waiting
    where cancellation cannot reach it (a worker thread, a shielded scope) sees none: cancelled meanwhile, it finds
    the channel its consumer closed on being cancelled (BrokenResourceError: an interrupted run ended with
    E_UNHANDLED, exit 1), or the end of the input its producers closed on being cancelled (a sink took it for the
    end of its input and published part of it), before the cancellation. Where a channel says so, the cancellation
    comes first."""
    await checkpoint_if_cancelled()


class Incoming:
    """The batches of a task's input channel, taken without a round through the event loop while
    some are buffered (a task still yields whenever its input runs dry or its output is full)."""

    __slots__ = ("stream",)

    def __init__(self, stream: ObjectReceiveStream[Batch]) -> None:
        self.stream = stream

    def __aiter__(self) -> Incoming:
        return self

    async def __anext__(self) -> Batch:
        try:
            return self.stream.receive_nowait()
        except anyio.WouldBlock:
            try:
                return await self.stream.receive()
            except anyio.EndOfStream:
                pass
        except anyio.EndOfStream:
            pass
        await _cancelled_first()  # (its producers closed it on being cancelled: no end of the input)
        raise StopAsyncIteration

    def statistics(self) -> Any:
        return self.stream.statistics()


class _Counted(Incoming):
    """A sink's input: ``Incoming``, counting the records taken."""

    __slots__ = ("count",)

    def __init__(self, stream: ObjectReceiveStream[Batch]) -> None:
        super().__init__(stream)
        self.count = 0

    async def __anext__(self) -> Batch:
        batch = await super().__anext__()
        self.count += len(batch)
        return batch


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _leaves(sub)]
    return [exc]


def _most_telling(group: BaseExceptionGroup) -> BaseException:
    """Pick the one exception that explains a failed run (a broken pipe is only a symptom)."""
    leaves = _leaves(group)
    for kind in (KeyboardInterrupt, StrictAbort, ReplayError, StageFailed):
        for leaf in leaves:
            if isinstance(leaf, kind):
                return leaf
    for leaf in leaves:
        if isinstance(leaf, BrokenPipeError | PipeClosed):
            return PipeClosed()
    return leaves[0]

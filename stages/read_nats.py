"""ReadNats: the source that pulls a live stream from NATS JetStream (durable pull consumer), batched, de-duplicated."""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any

import anyio
import msgspec

from replay.pipeline.engine import exactjson
from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.errors import diagnostic
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import Option, Output, Source
from replay.pipeline.io.journals import DEFAULT_MAX_LINE_BYTES, SKIPPED, line_too_long, without_mark
from replay.pipeline.io.nats_stream import (
    acknowledge,
    check_name,
    close,
    close_ledger,
    connect,
    keep_pending,
    no_stream,
    open_ledger,
    parse_address,
    run_key,
    server_gone,
    take_back,
)
from replay.pipeline.model.dropped import dropped_lines
from replay.pipeline.model.records import dropped_record

UNAVAILABLE_SECONDS = 30.0  # how long JetStream may not answer a connection that is back (a server restarting)
NEW = object()  # ``read_before``: a message this reader has not read
SEEN_KEYS = 1_000_000  # messages (their stream sequences) remembered to know one delivered again


@register("read_nats")
class ReadNats(Source):
    """Each message holds one record (a JSONL line; several lines are read as several records; a byte order mark
    at a line's start is left out, as ``read`` leaves it out: ``without_mark``). A message delivered again
    (a stream sequence this reader read already) is dropped, so it produces nothing twice; another message
    is kept whatever it holds, as ``read`` keeps a line written twice (heal de-duplicates a record an agent
    wrote twice, and says so). At start, messages an earlier reader left unacknowledged are delivered first
    (``take_back``). Batches are cut by count (``batch``) or when ``window_ms`` passes, whichever comes first.

    ``ack = "sink"``: a message is acknowledged by the ``publish_nats`` sink of the same graph once what
    its run produced is stored downstream (see ``pipeline/io/nats_stream.py``); ``ack = "sent"``: once
    its batch went downstream (``replay read nats://...`` to stdout). Lines that are not JSON are
    passed on (``parse`` reports them) and acknowledged once sent: they produce no output to wait for.
    """

    summary = "Read a NATS JetStream subject (nats://HOST:PORT/SUBJECT) with a durable pull consumer: batched, a message delivered again dropped."
    options = {
        "url": Option(str, "", "nats://HOST:PORT/SUBJECT; empty: the command's argument", bind="args"),
        "durable": Option(str, "replay", "the durable consumer's name: a restarted reader goes on where it stopped"),
        "stream": Option(str, "", "the JetStream stream holding the subject; empty: looked up by subject"),
        "batch": Option(int, 256, "most messages in one batch", minimum=1),
        "window_ms": Option(int, 100, "longest wait for a batch to fill, in milliseconds", minimum=0),
        "ack": Option(str, "sink", "when messages are acknowledged: 'sink' (publish_nats stored the output) or 'sent'",
                      choices=("sink", "sent")),
        "ack_wait_s": Option(float, 30.0, "seconds before an unacknowledged message is delivered again", minimum=0.001),
        "max_messages": Option(int, 0, "stop after this many messages (0: never)", minimum=0),
        "idle_seconds": Option(float, 0.0, "stop when no message came for this long (0: never)", minimum=0),
        "max_line_bytes": Option(int, DEFAULT_MAX_LINE_BYTES, "longest line accepted; longer lines are reported and "
                                 "skipped (E_JSONL_LINE_TOO_LONG)", minimum=1),
        "mark_dropped": Option(bool, False, "put a {\"$record\": \"dropped\"} line where a line was skipped (too long), "
                               "as `read` does"),
    }
    emits_raw = True

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.seen: OrderedDict[int, Any] = OrderedDict()  # stream sequence -> the run of its message (or None)

    def read_before(self, sequence: int) -> Any:
        """The run (``runId``, or None) of the message at stream ``sequence`` when this reader read it already: it is
        delivered again (its ack_wait passed, the consumer was reset); else ``NEW``. Two messages that hold the same
        bytes are two stream sequences: both read."""
        return self.seen.get(sequence, NEW)

    def remember(self, sequence: int, run: Any) -> None:
        self.seen[sequence] = run
        if len(self.seen) > SEEN_KEYS:
            self.seen.popitem(last=False)

    def reaches(self, after: list[Any]) -> None:
        """``ack = "sink"`` waits for a ``publish_nats`` after this stage: with none, no message would ever be
        acknowledged (each read again by every later reader, the pending ones held in memory as long as it reads)."""
        if self.config["ack"] == "sink" and not any(stage.name == "publish_nats" for stage in after):
            from replay.pipeline.engine.errors import ReplayError

            _, path = self.named("ack")
            raise ReplayError("E_CONFIG_OPTION_INVALID",
                              f"stage {self.id!r} acknowledges a message once a publish_nats stage after it stored what "
                              "it produced (ack = \"sink\", the default), but none comes after it: no message would "
                              "ever be acknowledged", path=path, received="sink", expected=["sent"],
                              howToFix="Set ack = \"sent\" (a message is acknowledged once its batch went downstream), "
                                       "or publish the output to a subject with a publish_nats stage.",
                              example='ack = "sent"')

    def preflight(self, inputs: list[str]) -> None:
        parse_address(self.config["url"], option=f"stages.{self.id}.url")  # a bad address refused before anything runs
        check_name(self.config["durable"], self.named("durable")[1], "a durable consumer")
        if self.config["stream"]:
            check_name(self.config["stream"], self.named("stream")[1], "a stream")

    async def produce(self, out: Output) -> None:
        dropped_lines(self.shared)  # the stages after know the lines left out are noted (none so far), as ``read`` says
        address = parse_address(self.config["url"])
        connection = await connect(address)
        ledger = open_ledger(f"{address.server}/{address.subject}#{self.config['durable']}")
        source = address.source
        try:
            subscription = await self._subscribe(connection, address.subject)
            async with server_gone(address):
                await self._pull(subscription, connection, ledger, source, out)
        finally:
            if self.config["ack"] == "sent":
                close_ledger(ledger)
            await close(connection)

    async def _subscribe(self, connection: Any, subject: str) -> Any:
        from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

        from replay.pipeline.engine.errors import ReplayError

        config = ConsumerConfig(ack_policy=AckPolicy.EXPLICIT, deliver_policy=DeliverPolicy.ALL,
                                ack_wait=self.config["ack_wait_s"], max_ack_pending=-1)
        durable = self.config["durable"]
        js = connection.jetstream()
        try:
            stream = self.config["stream"] or await js.find_stream_name_by_subject(subject)
            reads = await self._consumer_subjects(js, stream, durable)
        except Exception as exc:  # no stream holds the subject, JetStream off
            raise no_stream("consume", subject, exc) from exc
        if reads is not None and reads != [subject]:
            # nats-py binds to a durable consumer of that name whatever it reads: its messages would come out as this subject's
            raise ReplayError("E_USAGE_INVALID", f"the durable consumer {durable!r} of stream {stream!r} reads {', '.join(reads) or 'every subject'}, "
                              f"not {subject!r}: reading through it would give another subject's messages",
                              expected=[subject], received=reads,
                              howToFix="Give each subject its own durable consumer (`durable = \"NAME\"` on the read_nats stage of "
                              "a `replay run` config), or delete that consumer (nats consumer rm).")
        try:
            subscription = await js.pull_subscribe(subject, durable=durable, stream=stream, config=config)
        except Exception as exc:  # JetStream refused the consumer
            raise no_stream("consume", subject, exc) from exc
        await take_back(connection, stream, durable)  # an earlier reader's unacknowledged messages: first, in order
        return subscription

    @staticmethod
    async def _consumer_subjects(js: Any, stream: str, durable: str) -> list[str] | None:
        """The subjects the durable consumer ``durable`` of ``stream`` reads (a consumer with no filter reads all the
        stream's); None when there is no such consumer yet (it will be made for the subject)."""
        from nats.js.errors import NotFoundError

        try:
            info = await js.consumer_info(stream, durable)
        except NotFoundError:
            return None
        filters = info.config.filter_subjects or ([info.config.filter_subject] if info.config.filter_subject else [])
        if filters:
            return list(filters)
        return list((await js.stream_info(stream)).config.subjects or [])

    async def _pull(self, subscription: Any, connection: Any, ledger: Any, source: str, out: Output) -> None:
        from nats.errors import TimeoutError as NatsTimeout
        from nats.js.errors import ServiceUnavailableError

        limit, idle = self.config["max_messages"], self.config["idle_seconds"]
        window = max(self.config["window_ms"], 1) / 1000.0
        taken = 0
        unavailable_since: float | None = None
        quiet_since = last_progress = time.monotonic()
        while not limit or taken < limit:
            if time.monotonic() - last_progress >= self.config["ack_wait_s"] / 2:
                await keep_pending(connection, ledger)  # runs still open: not delivered again meanwhile
                last_progress = time.monotonic()
            want = self.config["batch"] if not limit else min(self.config["batch"], limit - taken)
            try:
                messages = await subscription.fetch(want, timeout=window)
                unavailable_since = None
            except (NatsTimeout, TimeoutError):  # nothing came within the window
                messages = []
            except ServiceUnavailableError:  # reconnected to a server whose JetStream is not up yet (it restarted)
                unavailable_since = unavailable_since or time.monotonic()
                if time.monotonic() - unavailable_since >= UNAVAILABLE_SECONDS:
                    raise  # (the server gone: E_NATS_UNREACHABLE, server_gone)
                await anyio.sleep(window)
                messages = []
            if not messages:
                if idle and time.monotonic() - quiet_since >= idle:
                    return
                continue
            taken += len(messages)
            raws: list[bytes] = []
            lines: list[int | None] = []
            at_once: list[str] = []  # replies to acknowledge as soon as the batch is sent
            for message in messages:
                sequence = message.metadata.sequence.stream
                run_of_message = self.read_before(sequence)
                if run_of_message is not NEW:  # delivered again: read already, dropped (acknowledged with its run)
                    self._acknowledge_with(run_of_message, message.reply, ledger, at_once)
                    continue
                run_of_message = None
                for line in message.data.split(b"\n"):
                    raw = without_mark(line)[0]  # (as ``read`` leaves a mark out: a message has no offsets to move)
                    if not raw.strip():
                        continue
                    if len(raw) > self.config["max_line_bytes"]:  # (a message with no run to wait for: acknowledged once sent)
                        raws += self._too_long(source, sequence)
                        lines += [sequence] * (len(raws) - len(lines))
                        continue
                    run_id = _run_id(raw)
                    run_of_message = run_id if run_id is not None else run_of_message
                    raws.append(raw)
                    lines.append(sequence)
                self.remember(sequence, run_of_message)
                self._acknowledge_with(run_of_message, message.reply, ledger, at_once, fresh=True)
            if raws:
                quiet_since = time.monotonic()  # messages delivered again, all duplicates, do not count as news
                await out.send(Batch(source, None, raws, lines, [None] * len(raws)))  # type: ignore[arg-type]
            await out.drain()
            await acknowledge(connection, at_once)


    def _acknowledge_with(self, run: Any, reply: str, ledger: Any, at_once: list[str], *, fresh: bool = False) -> None:
        """A message (``fresh``: read for the first time) is acknowledged with its run, with ``ack = "sink"``, when it
        has one and that run's output is not stored yet (a fresh one's never is), else at once (its run's output is
        stored, or it has no run to wait for)."""
        if self.config["ack"] == "sink" and run is not None and (fresh or run in ledger.pending):
            ledger.add(run, reply)
        else:
            at_once.append(reply)

    def _too_long(self, source: str, sequence: int) -> list[bytes]:
        """Report a line longer than max_line_bytes, as ``read`` reports one; with mark_dropped, the dropped record
        that stands for it."""
        limit = self.config["max_line_bytes"]
        found = diagnostic("E_JSONL_LINE_TOO_LONG", line_too_long(sequence, limit) + SKIPPED,
                           source=source, line=sequence, expected=f"at most {limit} bytes", stage=self.id)
        self.emit("errors", found)
        dropped_lines(self.shared).note(source, 0, sequence, found["code"])
        if not self.config["mark_dropped"]:
            return []
        where = {k: v for k, v in found.items() if k not in ("code", "message", "stage")}
        return [exactjson.dumps(dropped_record(found["code"], found["message"], where))]


class _Run(msgspec.Struct, gc=False):
    """The field the ledger reads; the rest of the line is checked as JSON and skipped, not built (``parse`` reads
    the whole record once, downstream)."""

    runId: Any = None


_RUN = msgspec.json.Decoder(_Run)


def _run_id(raw: bytes) -> Any:
    """The runId of a record (as ``run_key`` holds it), when it is a JSON object that has one, else None."""
    try:
        run = _RUN.decode(raw)
    except (msgspec.DecodeError, RecursionError):  # (msgspec.ValidationError is a DecodeError: not an object)
        return None
    return run_key(run.runId)

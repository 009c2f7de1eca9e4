"""PublishNats: the sink that publishes each record to a NATS JetStream subject and acknowledges what was read."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
from collections.abc import AsyncIterator
from typing import Any

from replay.pipeline.engine.batch import Batch
from replay.pipeline.engine.registry import register
from replay.pipeline.engine.stage import Option, Sink
from replay.pipeline.io.nats_stream import (
    acknowledge,
    close,
    close_ledger,
    connect,
    ledgers,
    no_stream,
    parse_address,
    run_key,
    server_gone,
)
from replay.pipeline.model.records import RUN_RECORD, is_record

MSG_ID = "Nats-Msg-Id"


def message_id(record: Any, data: bytes, first: int | None = None) -> str:
    """What JetStream de-duplicates a published record by: its run (its id, and ``first``: the position in the input,
    a line or a stream sequence, where this run of that id began) and its seq, or its kind for a reserved record of
    a named kind; else its bytes' hash (a record of the kind null has no name to go by). A record published again
    (after a redelivery, which sends a run again from its first message) is dropped; a run whose id comes back later
    in the stream is another run, its records kept (``RUN:SEQ`` alone dropped them as the first run's)."""
    if isinstance(record, dict):
        run_id, seq, kind = record.get("runId"), record.get("seq"), record.get("$record")
        run = f"{run_id}@{'' if first is None else first}"  # (a position is digits: the last "@" ends the run id)
        if run_id is not None and seq is not None and not is_record(record):
            plain = isinstance(seq, int) and not isinstance(seq, bool)
            return _named(run_id, first, seq, f"{run}:{seq}" if plain else None)
        if run_id is not None and isinstance(kind, str):
            readable = f"{run}:${kind}" if _plain(kind) and ":" not in kind else None
            return _named(run_id, first, {"$record": kind}, readable)
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _plain(text: str) -> bool:
    """Does a header carry ``text`` as it is? (nats-py sends a value stripped, its line breaks made spaces, and fails
    on half a surrogate pair, which UTF-8 has no bytes for)"""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return text == text.strip() and "\r" not in text and "\n" not in text


def _named(run_id: Any, first: int | None, part: Any, readable: str | None) -> str:
    """``readable`` (``RUN@FIRST:SEQ``, ``RUN@FIRST:$KIND``) when given and its run id is text a header carries as it
    is (runs ``a`` and ``a `` had one id, one's records dropped as the other's), else a hash of the three, one id per
    record all the same (a seq that is text, ``"1:2"`` of run ``c``, had the id of seq ``"2"`` of run ``c:1``)."""
    if readable is not None and isinstance(run_id, str) and _plain(run_id):
        return readable
    return "pair:" + hashlib.sha256(repr([run_id, first, part]).encode()).hexdigest()  # (repr escapes half a surrogate)


_NO_RUN = object()


def _position(lines: list[int | None], i: int) -> int | None:
    """Where a run beginning at record ``i`` of a batch began in the input: the line (or stream sequence) of its first
    record read there, one heal invented having none (a ``run_started``, a run record)."""
    return next((line for line in itertools.islice(lines, i, None) if line is not None), None)


@register("publish_nats")
class PublishNats(Sink):
    """Every record is published with a ``Nats-Msg-Id`` and its stored acknowledgement awaited (a batch
    at a time). Once a record of a later run is stored, the messages ``read_nats`` read for the runs
    before it are acknowledged (their output is whole: heal keeps runs in order); at the end of the
    stream, all of them. Untouched events are published as their original bytes."""

    summary = "Publish records to a NATS JetStream subject (nats://HOST:PORT/SUBJECT); acknowledge the messages read_nats read once their runs are stored."
    options = {
        "url": Option(str, "", "nats://HOST:PORT/SUBJECT to publish to", required=True),
        "dedupe_ids": Option(bool, True, "send a Nats-Msg-Id per record so JetStream drops a record published twice"),
    }
    accepts_raw = False
    takes_anything = True

    def preflight(self, inputs: list[str]) -> None:
        parse_address(self.config["url"], option=f"stages.{self.id}.url", publish=True)  # a bad address refused before anything runs

    async def consume(self, batches: AsyncIterator[Batch]) -> None:
        address = parse_address(self.config["url"], publish=True)
        connection = await connect(address)
        js = connection.jetstream()
        try:  # a subject no stream stores: said before anything is published (each publish would fail, no answer)
            await js.find_stream_name_by_subject(address.subject)
        except Exception as exc:  # no stream holds the subject, JetStream off
            await close(connection)
            raise no_stream("publish to", address.subject, exc) from exc
        last_run: Any = None
        begun: Any = _NO_RUN  # the run whose records were published last (for their ids), and where it began
        first: int | None = None
        published = 0
        try:
            async with server_gone(address):  # (the server gone mid-stream: E_NATS_UNREACHABLE)
                async for batch in batches:
                    if not len(batch):
                        continue
                    records = batch.events or [None] * len(batch)
                    payloads = batch.to_jsonl().split(b"\n")[:-1]
                    lines = batch.lines
                    sends = []
                    later_runs: list[Any] = []
                    for i, (record, data) in enumerate(zip(records, payloads, strict=True)):
                        run_id = run_key(record.get("runId")) if isinstance(record, dict) else None
                        if run_id != begun or (isinstance(record, dict) and record.get("$record") == RUN_RECORD):
                            begun, first = run_id, _position(lines, i)  # (a run record begins a run of its id anew)
                        headers = {MSG_ID: message_id(record, data, first)} if self.config["dedupe_ids"] else None
                        sends.append(js.publish(address.subject, data, headers=headers))
                        if run_id is not None and run_id != last_run:
                            later_runs.append(run_id)
                            last_run = run_id
                    await asyncio.gather(*sends)  # stored: JetStream answered for every record
                    published += len(sends)
                    for run_id in later_runs:
                        for ledger in ledgers():
                            await acknowledge(connection, ledger.take_before(run_id))
                for ledger in ledgers():  # the stream ended: every run's output is stored
                    await acknowledge(connection, ledger.take_all())
                    close_ledger(ledger)
                self.publish("published", published)
        finally:
            await close(connection)

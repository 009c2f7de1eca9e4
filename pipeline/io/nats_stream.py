"""NATS JetStream plumbing for the ``read_nats`` source and the ``publish_nats`` sink: addresses, connections, acks.

An address is ``nats://HOST:PORT/SUBJECT``. The source pulls from a durable consumer and hands every
message's reply subject to a ``Ledger`` under the run it belongs to; the sink publishes the healed
records (each with a ``Nats-Msg-Id``, so JetStream drops a record published twice) and, once a
record of a later run is stored (a run's output is whole before the next run's first record: heal
keeps runs in order), acknowledges every message of the runs before it; at the end of the stream,
all of them. A message is thus acknowledged only after what it produced is stored downstream; one
whose output was not stored is delivered again (at least once: to a reader that starts while such
messages are pending, first, ``take_back``), and what it produces again is dropped by its
``Nats-Msg-Id``. nats-py is an optional extra, ``nats`` (``pip install '.[nats]'`` from a clone).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from replay.pipeline.engine.errors import EXIT_FAILED, ReplayError, optional_module

ACK = b"+ACK"
FLUSH_SECONDS = 10
WORKING = b"+WPI"  # "work in progress": the server waits another ack_wait before delivering it again


@dataclass(frozen=True)
class Address:
    server: str  # nats://[USER:PASSWORD@]HOST:PORT, as connected to
    subject: str
    shown: str = ""  # nats://HOST:PORT, as messages and records name it: no credentials (a token, a password) in them

    @property
    def source(self) -> str:
        """The subject's address as records and diagnostics give their source."""
        return f"{self.shown or self.server}/{self.subject}"


def without_credentials(url: str) -> str:
    """``url`` with what its user part holds (a token, a user and a password) shown as ``***``."""
    scheme, sep, rest = url.partition("://")
    netloc, slash, path = rest.partition("/")
    return f"{scheme}{sep}***@{netloc.rpartition('@')[2]}{slash}{path}" if sep and "@" in netloc else url


def parse_address(url: str, option: str = "url", *, publish: bool = False) -> Address:
    """The server and subject of ``nats://HOST:PORT/SUBJECT``; E_USAGE_INVALID (exit 2) for anything else, a subject
    NATS does not take among it (see ``subject_fault``); ``publish``: a subject to publish to, where no wildcard goes."""
    try:
        parts = urlsplit(url)
        subject = parts.path.lstrip("/")
        parts.port  # noqa: B018 - (a port out of range, or not a number, raises here)
    except ValueError:  # a bracket left open (nats://[::1/x), a port out of range: no address at all
        parts, subject = None, ""
    shown = without_credentials(url)
    if parts is None or parts.scheme != "nats" or not parts.hostname or not subject:
        raise ReplayError("E_USAGE_INVALID", f"{shown!r} is not a NATS address with a subject", path=option, received=shown,
                          expected="nats://HOST:PORT/SUBJECT", example="nats://127.0.0.1:4222/agents.raw")
    fault = subject_fault(subject, publish=publish)
    if fault:
        raise ReplayError("E_USAGE_INVALID", f"{shown!r} names no subject NATS takes: {fault}", path=option, received=shown,
                          expected="nats://HOST:PORT/SUBJECT, the subject's tokens parted by dots (no spaces)"
                                   + (", no wildcard" if publish else ""),
                          example="nats://127.0.0.1:4222/agents.raw")
    return Address(f"nats://{parts.netloc}", subject, f"nats://{parts.netloc.rpartition('@')[2]}")


def subject_fault(subject: str, *, publish: bool = False) -> str | None:
    """What makes ``subject`` no NATS subject, else None: whitespace (the protocol parts a command at it), an empty
    token (``a..b``, ``a.``), a wildcard that is not a whole token (``a*``), ``>`` before the last token, or, to publish
    to, any wildcard (the message would be stored under the literal subject ``a.*``, which every subscriber to ``a.*``
    reads as all of ``a``'s)."""
    if any(c.isspace() for c in subject):
        return "a subject has no whitespace"
    tokens = subject.split(".")
    if "" in tokens:
        return "a subject's tokens, parted by dots, are not empty"
    for n, token in enumerate(tokens):
        if ("*" in token or ">" in token) and token not in ("*", ">"):
            return f"a wildcard is a whole token ({token!r} is not)"
        if token == ">" and n != len(tokens) - 1:
            return "'>' is the last token"
        if publish and token in ("*", ">"):
            return "a message is published to one subject, with no wildcard ('*', '>')"
    return None


NAME_FORBIDS = ". *>/\\\t\r\n"  # what a stream's or a consumer's name may not hold (JetStream makes files of them)


def check_name(name: str, option: str, what: str) -> None:
    """E_CONFIG_OPTION_INVALID (exit 2) for a stream or consumer name JetStream does not take (``what`` it names)."""
    if not name or any(c in NAME_FORBIDS for c in name):
        raise ReplayError("E_CONFIG_OPTION_INVALID", f"{name!r} cannot name {what}: a name is not empty and has no "
                          "dot, space, '*', '>', '/', '\\', tab or line break", path=option, received=name,
                          expected="a name such as replay-heal", example=f'{option.rpartition(".")[2]} = "replay-heal"',
                          howToFix="Name it with letters, digits, '-' and '_'.")


def nats_module() -> Any:
    return optional_module("nats", "NATS streams need nats-py", "the `nats` extra", "pip install nats-py where replay is installed (the nats extra)")


async def connect(address: Address, connect_seconds: float = 5.0) -> Any:
    """A connection to ``address``'s server; E_NATS_UNREACHABLE when nothing answers."""
    nats = nats_module()
    try:
        return await nats.connect(servers=[address.server], connect_timeout=connect_seconds, max_reconnect_attempts=2,
                                  reconnect_time_wait=0.5, allow_reconnect=True, error_cb=_quiet)
    except Exception as exc:  # nats-py raises its own NoServersError, OSError, TimeoutError
        server = address.shown or address.server
        raise ReplayError("E_NATS_UNREACHABLE", f"no NATS server answered at {server!r}: {type(exc).__name__}: {exc}",
                          received=server, expected="a NATS server with JetStream (nats-server -js)") from exc


@asynccontextmanager
async def server_gone(address: Address) -> AsyncIterator[None]:
    """The connection to ``address``'s server lost mid-stream (the server stopped, the network went): E_NATS_UNREACHABLE,
    exit 1, not a stage failure. What was acknowledged is stored; the durable consumer hands the rest over again next time."""
    server = address.shown or address.server
    errors = nats_module().errors
    from nats.js.errors import ServiceUnavailableError

    try:
        yield
    except (errors.ConnectionClosedError, errors.NoServersError, errors.StaleConnectionError, errors.UnexpectedEOF,
            errors.OutboundBufferLimitError, errors.ConnectionReconnectingError, errors.ConnectionDrainingError,
            errors.FlushTimeoutError, errors.TimeoutError, ServiceUnavailableError) as exc:  # (an acknowledgement's
        # flush, a publish's stored acknowledgement, that no server answers; a JetStream that does not come back)
        raise ReplayError("E_NATS_UNREACHABLE", f"the NATS server at {server!r} went away: {type(exc).__name__}: {exc}",
                          received=server, exit_code=EXIT_FAILED, howToFix="Start the server again and run the same "
                          "command: the durable consumer goes on where it stopped, and messages not acknowledged come "
                          "again.") from exc


def no_stream(doing: str, subject: str, exc: Exception) -> ReplayError:
    """E_NATS_UNREACHABLE for a subject JetStream has no stream for (or no JetStream at all): ``doing`` it is not done."""
    from nats.js.errors import NotFoundError

    why = "no stream stores it" if isinstance(exc, NotFoundError) else f"{type(exc).__name__}: {exc}"
    return ReplayError("E_NATS_UNREACHABLE", f"cannot {doing} {subject!r} in JetStream: {why}",
                       received=subject, howToFix="Create a stream for the subject (nats stream add) on a server run with -js.")


RESET_SINCE = (2, 14)  # the first nats-server with the consumer reset API ($JS.API.CONSUMER.RESET, ADR-60)
RESET_SECONDS = 5.0


async def take_back(connection: Any, stream: str, durable: str) -> bool:
    """Have the messages an earlier reader of ``durable`` took and never acknowledged (it was stopped, or it died)
    delivered first, in stream order: the consumer is reset to its ack floor, so delivery goes on from the first
    message not acknowledged. Left pending, they came again only once ack_wait passed, after the messages published
    since (a run's tail healed after the runs that follow it). Nothing is done when none is pending; a server that
    has no reset (before 2.14) or refuses it (an account not allowed the API) delivers them again after ack_wait, as
    before. Returns whether the consumer was reset."""
    info = await connection.jetstream().consumer_info(stream, durable)
    version = connection.connected_server_version
    if not info.num_ack_pending or (version.major, version.minor) < RESET_SINCE:
        return False
    try:
        reply = await connection.request(f"$JS.API.CONSUMER.RESET.{stream}.{durable}", b"", timeout=RESET_SECONDS)
        answer = json.loads(reply.data)
    except Exception:  # (no answer: the API not allowed the account; an answer no JSON)
        return False
    return isinstance(answer, dict) and "error" not in answer


async def _quiet(_exc: Exception) -> None:
    """nats-py prints connection errors itself by default; ours surface as the calls that fail."""


async def close(connection: Any) -> None:
    """Close the connection (acknowledgements were flushed when sent; a drain would wait on the pull subscription)."""
    with suppress(Exception):
        await connection.close()


def run_key(value: Any) -> Any:
    """A record's ``runId`` (or ``seq``) as a key the reader's de-duplication and the ledger can hold, the same on
    the reading and the publishing side: the value itself, or, for one a key cannot be (an object, an array: a
    message naming such a run failed the reader, TypeError, and came again forever), its type and text."""
    try:
        hash(value)
    except TypeError:
        return type(value).__name__, repr(value)
    return value


class Ledger:
    """Messages read but not yet acknowledged, by run, in the order their runs began."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.pending: OrderedDict[Any, list[str]] = OrderedDict()  # runId -> reply subjects
        self.acked = 0

    def add(self, run_id: Any, reply: str) -> None:
        self.pending.setdefault(run_id, []).append(reply)

    def take_before(self, run_id: Any) -> list[str]:
        """Replies of every run that began before ``run_id`` (their output is whole once ``run_id``'s is stored)."""
        if run_id not in self.pending:
            return []
        replies: list[str] = []
        for key in list(self.pending):
            if key == run_id:
                break
            replies += self.pending.pop(key)
        return replies

    def take_all(self) -> list[str]:
        replies = [r for group in self.pending.values() for r in group]
        self.pending.clear()
        return replies


_LEDGERS: dict[str, Ledger] = {}


def open_ledger(name: str) -> Ledger:
    ledger = _LEDGERS[name] = Ledger(name)
    return ledger


def close_ledger(ledger: Ledger) -> None:
    if _LEDGERS.get(ledger.name) is ledger:
        del _LEDGERS[ledger.name]


def ledgers() -> list[Ledger]:
    """The sources reading in this process whose messages a sink acknowledges."""
    return list(_LEDGERS.values())


async def acknowledge(connection: Any, replies: list[str]) -> int:
    """Acknowledge messages by their reply subjects (any connection may), then flush: returns how many."""
    for reply in replies:
        if reply:
            await connection.publish(reply, ACK)
    if replies:
        await connection.flush(timeout=FLUSH_SECONDS)
    return len(replies)


async def keep_pending(connection: Any, ledger: Ledger) -> None:
    """Tell the server the messages of runs still open are being worked on (no redelivery meanwhile)."""
    replies = [r for group in ledger.pending.values() for r in group if r]
    for reply in replies:
        await connection.publish(reply, WORKING)
    if replies:
        await connection.flush(timeout=FLUSH_SECONDS)

"""Live streams through a real nats-server older than 2.14 (no consumer reset API: the reader's fallback), on loopback.

The binary is build/nats-server-2.12.8 (tests/tools/old_nats_server.py; `make test` installs it). README, on a
reader started again: "the messages the one stopped before it left unacknowledged delivered first, before those
published since (its durable consumer is reset to its ack floor; a server before nats-server 2.14, or an account
not allowed `$JS.API.CONSUMER.RESET`, delivers them again once `ack_wait` has passed)". So here: the reader reads,
acknowledges, and a reader started again goes on where the last one stopped, each record once; what it left
unacknowledged comes again only once ack_wait has passed, not first.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e.test_nats_stream import (  # noqa: F401 (nats_server: a fixture; pytestmark: the skip)
    _admin,
    _by_run,
    _config,
    _expected,
    _messages,
    _pending,
    _publish,
    _read_until,
    _runs,
    _serve,
    _stop,
    _wait_for_heal_records,
    nats,
    nats_server,
    pytestmark,
    restarted_with_a_run_open,
    run,
)
from tools.old_nats_server import BINARY, VERSION

from replay.pipeline.io.nats_stream import RESET_SINCE, take_back


@pytest.fixture(scope="module")
def old_server(tmp_path_factory: pytest.TempPathFactory):
    if not BINARY.exists():
        pytest.skip(f"nats-server {VERSION} is not installed (`make test` installs it: tests/tools/old_nats_server.py)")
    yield from _serve(tmp_path_factory, str(BINARY))


async def _version(server: str) -> tuple[int, int]:
    nc = await nats.connect(server)
    version = nc.connected_server_version
    await nc.close()
    return version.major, version.minor


def test_the_old_server_is_one_without_the_consumer_reset(old_server: str) -> None:
    assert run(_version(old_server)) < RESET_SINCE


async def _left_pending(server: str, stream: str, subject: str, durable: str) -> tuple[bool, list[bytes], int]:
    """A reader that took two messages and never acknowledged them (it died); then another one starting: whether
    ``take_back`` reset the consumer, the messages it is handed next, and how many are still unacknowledged."""
    from nats.js.api import AckPolicy, ConsumerConfig

    config = ConsumerConfig(ack_policy=AckPolicy.EXPLICIT, ack_wait=60.0)
    dead = await nats.connect(server)
    await (await dead.jetstream().pull_subscribe(subject, durable=durable, stream=stream, config=config)).fetch(2)
    await dead.close()
    nc = await nats.connect(server)
    subscription = await nc.jetstream().pull_subscribe(subject, durable=durable, stream=stream, config=config)
    reset = await take_back(nc, stream, durable)
    handed = [m.data for m in await subscription.fetch(10, timeout=2)]
    unacknowledged = (await nc.jetstream().consumer_info(stream, durable)).num_ack_pending
    await nc.close()
    return reset, handed, unacknowledged


@pytest.mark.parametrize(("server", "reset", "first"), [("nats_server", True, 0), ("old_server", False, 2)])
def test_messages_left_unacknowledged_are_taken_back_first_only_by_a_server_with_the_reset(
        request: pytest.FixtureRequest, server: str, reset: bool, first: int) -> None:
    """A reader that took two messages and died; another one starting. The current server: ``take_back`` resets the
    consumer, and the two come first. The old one: no reset asked (it would not answer it: a 5 s wait for nothing),
    the messages published since come first, and the two wait for their ack_wait."""
    address = request.getfixturevalue(server)
    prefix = f"floor{first}"
    run(_admin(address, prefix))
    lines = _runs(1)[0]
    run(_publish(address, f"{prefix}.raw", lines))
    assert run(_left_pending(address, prefix.upper(), f"{prefix}.raw", "dead")) == (reset, lines[first:], 4)


def test_replay_read_reads_acknowledges_and_goes_on_where_it_stopped(old_server: str) -> None:
    """`replay read nats://...` on the old server: each message once, acknowledged once sent; started again, it reads
    the messages published since, and none of those it read before."""
    run(_admin(old_server, "oldread"))
    first, second = _runs(2)
    run(_publish(old_server, "oldread.raw", first))
    out, code = _read_until(["read", f"{old_server}/oldread.raw"], len(first))
    assert out.splitlines() == first and code == 130
    assert run(_pending(old_server, "OLDREAD", "replay")) == (0, 0)
    run(_publish(old_server, "oldread.raw", second))
    out, code = _read_until(["read", f"{old_server}/oldread.raw"], len(second))
    assert out.splitlines() == second and code == 130
    assert run(_pending(old_server, "OLDREAD", "replay")) == (0, 0)


def test_a_pipeline_restarted_heals_each_record_once(old_server: str, tmp_path: Path) -> None:
    """The example pipeline stopped while its last run is still open (its messages unacknowledged), then started
    again after another run was published: every record is healed and stored once, each run whole, and every message
    acknowledged in the end. The open run's messages come again once ack_wait has passed: after the run published
    since when the restart was quicker than that (on a server with the reset, they come first)."""
    healed, expected = restarted_with_a_run_open(old_server, tmp_path, "oldheal", ack_wait_s=2.0, idle_seconds=4.0)
    assert sorted(healed) == sorted(expected) and _by_run(healed) == _by_run(expected)
    assert run(_pending(old_server, "OLDHEAL", "heal")) == (0, 0)

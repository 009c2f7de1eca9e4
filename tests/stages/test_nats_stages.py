"""The NATS stages without a server: addresses, message ids, which messages a stored run acknowledges."""

from __future__ import annotations

import pytest

from replay.pipeline.engine.errors import ReplayError
from replay.pipeline.io.nats_stream import Ledger, parse_address
from replay.stages.publish_nats import message_id
from replay.stages.read_nats import NEW, ReadNats, _run_id


def test_addresses_need_a_host_and_a_subject() -> None:
    assert parse_address("nats://127.0.0.1:4222/agents.raw") == parse_address("nats://127.0.0.1:4222/agents.raw")
    address = parse_address("nats://127.0.0.1:4222/agents.raw")
    assert (address.server, address.subject) == ("nats://127.0.0.1:4222", "agents.raw")
    for bad in ("nats://127.0.0.1:4222", "nats:///x", "http://h/x"):
        with pytest.raises(ReplayError) as caught:
            parse_address(bad)
        assert caught.value.code == "E_USAGE_INVALID"


def test_a_record_published_twice_has_one_id() -> None:
    event = {"seq": 3, "runId": "r1", "type": "tool_called"}
    assert message_id(event, b"x", 7) == message_id(dict(event), b"other bytes", 7) == "r1@7:3"
    assert message_id({"$record": "heal", "runId": "r1"}, b"", 7) == "r1@7:$heal"
    assert message_id(event, b"x") == "r1@:3"  # (where the run began unknown: none of its records was read)
    assert message_id({"no": "ids"}, b"abc") == message_id({"no": "ids"}, b"abc") != message_id({"no": "ids"}, b"abd")


def test_two_records_of_a_null_kind_in_one_run_are_two_messages() -> None:
    """A ``"$record": null`` record is a record (``is_record``), of no kind to name it by: it took the id
    "r1:$None", so JetStream dropped a second, different one of its run as a redelivery of the first."""
    one, other = {"$record": None, "runId": "r1", "n": 1}, {"$record": None, "runId": "r1", "n": 2}
    assert message_id(one, b'{"$record":null,"runId":"r1","n":1}') != message_id(other, b'{"$record":null,"runId":"r1","n":2}')
    assert "None" not in message_id(one, b"x")


def test_a_run_is_acknowledged_once_a_later_run_is_stored_and_all_at_the_end() -> None:
    ledger = Ledger("t")
    for run, reply in (("a", "1"), ("a", "2"), ("b", "3"), ("c", "4"), ("b", "5")):
        ledger.add(run, reply)
    assert ledger.take_before("zzz") == []  # a run the ledger does not hold says nothing
    assert ledger.take_before("b") == ["1", "2"]
    assert ledger.take_before("b") == []
    assert ledger.take_all() == ["3", "5", "4"] and not ledger.pending


def test_the_reader_remembers_what_it_read_by_stream_sequence() -> None:
    """A message delivered again is one of a stream sequence read already (its run kept, to acknowledge it with)."""
    reader = ReadNats(url="nats://h:1/s")
    assert reader.read_before(7) is NEW
    reader.remember(7, "r")
    reader.remember(8, None)
    assert reader.read_before(7) == "r" and reader.read_before(8) is None and reader.read_before(9) is NEW


@pytest.mark.parametrize(("line", "run"), [
    (b'{"seq":2,"runId":"r1","payload":{"n":123456789012345678901234567890}}', "r1"),  # (beyond 64 bits)
    (b'{"runId":"r1","seq":"2","payload":{"a":[1,{"b":null}]}}', "r1"),
    (b'{"runId":18446744073709551617}', 2**64 + 1),  # exact: runs 2**64 and 2**64 + 1 are two runs
    (b'{"payload":{}}', None),
    (b"[1,2]", None),
    (b'{"runId":"r1",', None),
    (b'{"runId":"r\xff"}', None),
])
def test_the_reader_knows_a_record_s_run_whatever_else_it_holds(line: bytes, run: object) -> None:
    assert _run_id(line) == run


def test_a_message_id_names_one_run_and_seq_alone_and_goes_into_a_header_as_it_is() -> None:
    """`RUN@FIRST:SEQ` as it reads when a header carries it unchanged and no other record reads the same; else a hash."""
    ids = [message_id({"runId": rid, "seq": seq}, b"") for rid, seq in
           (("a", 1), ("a ", 1), (" a", 1), ("a\r\n", 1), ("c:1", "2"), ("c", "1:2"), ("c:1", 2), ("5", 1), (5, 1), ("d\ud800", 1))]
    assert len(set(ids)) == len(ids)
    assert ids[0] == "a@:1" and ids[6] == "c:1@:2" and ids[7] == "5@:1"
    assert all(i == i.strip() and "\n" not in i and i.isascii() for i in ids[1:6] + ids[8:])
    assert message_id({"$record": "heal", "runId": "a"}, b"") != message_id({"$record": "heal", "runId": "a "}, b"")


def test_a_message_id_says_where_its_run_began() -> None:
    """Two runs of one id are two runs: a run beginning at another position has other ids, and no run id, however
    written, reads as another run's id and position (a position is digits, so the last "@" ends the run id)."""
    assert message_id({"runId": "a", "seq": 1}, b"", 1) != message_id({"runId": "a", "seq": 1}, b"", 4)
    assert message_id({"runId": "a@5", "seq": 1}, b"") != message_id({"runId": "a", "seq": 1}, b"", 5)
    assert message_id({"runId": "a@", "seq": 1}, b"", 5) != message_id({"runId": "a", "seq": 1}, b"", 5)

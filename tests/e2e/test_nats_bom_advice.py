"""A NATS message's line that starts with a byte order mark is read as `replay read` reads one (the mark left out,
io.journals.without_mark), through a real nats-server on loopback: it was E_JSONL_LINE_INVALID, the message's lines
passed on as they were."""

from __future__ import annotations

from pathlib import Path

import orjson
from conftest import run_replay
from e2e.test_nats_stream import _admin, _publish, nats_server, pytestmark, run  # noqa: F401 (the fixture, the skip)


def test_a_message_line_with_a_byte_order_mark_is_read_without_it(nats_server: str, tmp_path: Path) -> None:  # noqa: F811
    run(_admin(nats_server, "bom"))
    record = b'{"seq":1,"runId":"r","type":"run_started","timestamp":"2026-03-01T12:00:00.000Z","payload":{}}'
    second = record.replace(b'"seq":1', b'"seq":2').replace(b"run_started", b"user_message")
    run(_publish(nats_server, "bom.raw", [b"\xef\xbb\xbf" + record, b"\xef\xbb\xbf" + second + b"\n\xef\xbb\xbf{oops"]))
    config = tmp_path / "bom.toml"
    config.write_text(f'[stages.read]\ntype = "read_nats"\nurl = "{nats_server}/bom.raw"\ndurable = "bom"\nack = "sent"\n'
                      'idle_seconds = 0.5\n[stages.parse]\ntype = "parse"\ninputs = ["read"]\n'
                      f'[stages.out]\ntype = "write"\ninputs = ["parse"]\npath = "{tmp_path / "out.jsonl"}"\n')
    done = run_replay("run", str(config), process=True, timeout=60)
    assert (tmp_path / "out.jsonl").read_bytes().splitlines() == [record, second]  # (each line's mark, not only a message's)
    [error] = [r["error"] for r in map(orjson.loads, done.stderr.splitlines()) if "error" in r]
    assert error["code"] == "E_JSONL_LINE_INVALID" and error["received"] == "{oops"  # (the line after it, its mark left out)

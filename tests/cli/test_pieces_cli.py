"""A large journal file in pieces (``engine/forked_pieces.py``) as a user meets it: where it is cut, what is refused before any
piece runs, and what Ctrl-C, a kill and a closed pipe leave behind (nothing: no piece's process, no spooled file)."""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson
import pytest
from conftest import REPLAY, ROOT, errors_of, no_temp_folder, run_replay

from replay.pipeline.engine.forked_pieces import spooled
from replay.pipeline.model.run_cuts import plan

sys.path.insert(0, str(ROOT / "tests" / "bench"))
from journal_gen import write_journal

LIMIT = 64 << 20


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pieces") / "runs.jsonl"
    write_journal(path, 1_500_000)
    return path


def cuts_begin_runs(path: Path, parts: int) -> list[int]:
    """``plan``'s cuts of ``path``, each checked: at a line's start, an event of another run than the line before."""
    data = path.read_bytes()
    cuts = plan(str(path), parts, LIMIT)
    assert cuts[0] == 0 and cuts[-1] == len(data) and cuts == sorted(set(cuts))
    for cut in cuts[1:-1]:
        assert data[cut - 1:cut] == b"\n"
        before = orjson.loads(data[data.rindex(b"\n", 0, cut - 1) + 1:cut - 1])
        at = orjson.loads(data[cut:data.index(b"\n", cut)])
        assert before["runId"] != at["runId"] and "seq" in at and "$record" not in at
    return cuts


def test_every_cut_begins_a_run_and_the_pieces_cover_the_file(journal: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("REPLAY_PIECE_BYTES", "200000")
    assert len(cuts_begin_runs(journal, 5)) == 6


def test_runs_are_told_apart_by_their_decoded_ids_not_by_how_they_are_written(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch):
    """The run a line's bytes name (``"runId":"..."``) only hints where to decode: a payload that names another
    runId before the event's own, and ids written with escapes, are cut where the decoded ids change."""
    monkeypatch.setenv("REPLAY_PIECE_BYTES", "10000")
    lines = []
    for run in range(200):
        for seq in range(1, 6):
            rid = f"\\u0072un-{run}" if run % 2 else f"run-{run}"  # (r written as an escape: the same letter)
            lines.append(f'{{"payload":{{"runId":"same"}},"seq":{seq},"type":"user_message","runId":"{rid}"}}')
    path = tmp_path / "escaped.jsonl"
    path.write_text("\n".join(lines) + "\n")
    assert len(cuts_begin_runs(path, 4)) == 5


def test_what_is_not_cut(tmp_path: Path, journal: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("REPLAY_PIECE_BYTES", "200000")
    data = journal.read_bytes()
    assert plan(str(journal), 1, LIMIT) == []  # one piece asked for
    assert plan(str(journal), 99, LIMIT)[-1] == len(data) and len(plan(str(journal), 99, LIMIT)) == 8  # 1.5 MB / 200 kB
    cases = {
        "bom.jsonl": b"\xef\xbb\xbf" + data,  # a byte order mark: read strips it, a piece's head would not
        "source.jsonl": b'{"$record":"source","source":"a.jsonl"}\n' + data,  # what follows is a.jsonl's
        "claude.jsonl": b'{"type":"user","uuid":"u1","sessionId":"s"}\n' + data,  # another agent's log
        "doc.json": data,  # a .json file is one document
        "one-run.jsonl": b"".join(line.replace(b'"runId":"', b'"runId":"x', 1) for line in data.splitlines(True)
                                  if b'"runId":"run_000001"' in line) * 40,  # one run: nowhere to cut
    }
    for name, content in cases.items():
        path = tmp_path / name
        path.write_bytes(content)
        assert plan(str(path), 4, LIMIT) == [], name
    gz = tmp_path / "runs.jsonl.gz"
    gz.write_bytes(gzip.compress(data))
    assert plan(str(gz), 4, LIMIT) == []
    monkeypatch.setenv("REPLAY_PIECE_BYTES", str(len(data)))
    assert plan(str(journal), 4, LIMIT) == []  # smaller than two pieces


@pytest.mark.parametrize("value", ["0", "-5", "lots", "", "²", "١٢"])
def test_a_piece_size_that_is_no_number_of_bytes_is_refused(journal: Path, value: str):
    run = run_replay("validate", "--workers", "2", str(journal), env={"REPLAY_PIECE_BYTES": value}, process=True)
    assert run.returncode == 2 and run.stdout == b""
    error, = errors_of(run.stderr)
    assert error["code"] == "E_USAGE_INVALID" and error["path"] == "REPLAY_PIECE_BYTES"


def test_stdout_into_the_input_is_refused_before_any_piece_runs(tmp_path: Path, journal: Path):
    path = tmp_path / "runs.jsonl"
    path.write_bytes(journal.read_bytes())
    with path.open("ab") as out:
        run = subprocess.run([REPLAY, "heal", "--workers", "3", str(path)], stdout=out, stderr=subprocess.PIPE,
                             env={**os.environ, "REPLAY_PIECE_BYTES": "100000"}, check=False)
    assert run.returncode == 2 and errors_of(run.stderr)[0]["code"] == "E_OUTPUT_UNWRITABLE"
    assert path.read_bytes() == journal.read_bytes()


def test_a_reader_that_goes_away_ends_heal_as_it_ends_one_run(tmp_path: Path, journal: Path):
    env = {**os.environ, "REPLAY_PIECE_BYTES": "100000"}
    for workers in ("3", "1"):
        for log in (None, tmp_path / f"repairs-{workers}.jsonl"):  # with --log: not written (it would hold part of the
            command = f"{REPLAY} --log-level info heal --workers {workers} {f'--log {log} ' if log else ''}{journal}"  # run)
            run = subprocess.run(f"{command} | head -c 100 >/dev/null; echo ${{PIPESTATUS[0]}}", shell=True,
                                 executable="/bin/bash", capture_output=True, env=env, check=False)
            said = [orjson.loads(line) for line in run.stderr.splitlines()]
            assert run.stdout == b"0\n" and not (log and log.exists()), workers
            assert [line["code"] for line in said if line.get("level") != "info"] == (["E_HEAL_LOG_NOT_WRITTEN"] if log
                                                                                      else [])
            assert workers == "1" or "pieces.done" in [line.get("event") for line in said]


def pieces_running(marker: str) -> list[int]:
    """The processes whose command line names ``marker`` (the command, and its pieces: forked, the same line)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                line = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in line:
                found.append(int(entry))
    return found


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("big") / "big.jsonl"
    write_journal(path, 60_000_000)
    return path


def started(tmp_path: Path, big: Path | None = None, *, stop: bool = True, own_group: bool = False,
            stderr_closed: bool = False) -> tuple[subprocess.Popen[bytes], Path, Path, list[int]]:
    """A heal in 4 pieces of ``big`` (made here when None), once its pieces run, and those (``stop``: stopped by
    SIGSTOP, so they stay until something ends them): (the command, its temp folder, its stdout's file, the pieces).
    ``own_group``: the command in a process group of its own in this session, as a shell starts a job (a group of a
    session of its own is orphaned, and the kernel discards SIGTSTP sent to one); ``stderr_closed``: started so."""
    if big is None:
        big = tmp_path / "big.jsonl"
        write_journal(big, 60_000_000)
    spool = tmp_path / "tmp"
    spool.mkdir()
    out = tmp_path / "healed.jsonl"
    command = [REPLAY, "heal", "--workers", "4", str(big)]
    if stderr_closed:
        command = ["/bin/sh", "-c", 'exec "$@" 2>&-', "sh", *command]
    with out.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=None if stderr_closed else subprocess.PIPE,
                                   env={**os.environ, "REPLAY_PIECE_BYTES": "1000000", "TMPDIR": str(spool)},
                                   process_group=0 if own_group else None)
    deadline = time.monotonic() + 30
    while len(pieces := [pid for pid in pieces_running(str(big)) if spooling(pid, spool)]) < 4:
        assert time.monotonic() < deadline and process.poll() is None
    for pid in pieces if stop else ():
        os.kill(pid, signal.SIGSTOP)
    return process, spool, out, pieces


def spooling(pid: int, spool: Path) -> bool:
    """Is ``pid`` a piece set up to run (its stdout a nameless file of the temp folder ``spool``)?"""
    try:
        return os.readlink(f"/proc/{pid}/fd/1").startswith(str(spool))
    except OSError:
        return False


def alive(pid: int) -> bool:
    """Is ``pid`` a process that has not ended (running or stopped; not a zombie waiting to be reaped)?"""
    try:
        return b"Z (zombie)" not in Path(f"/proc/{pid}/status").read_bytes()
    except OSError:
        return False


def state(pid: int) -> str:
    """The state letter of process ``pid`` (R, S, T for stopped, Z for a zombie: done, as one already reaped is)."""
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split()[0]
    except FileNotFoundError:
        return "Z"


def gone(pieces: list[int]) -> bool:
    """Have the ``pieces`` ended within a few seconds? (Those left are ended here.)"""
    deadline = time.monotonic() + 5
    while left := [pid for pid in pieces if alive(pid)]:
        if time.monotonic() > deadline:
            for pid in left:
                os.kill(pid, signal.SIGKILL)
            return False
        time.sleep(0.02)
    return True


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_an_interrupt_ends_every_piece_and_leaves_nothing(tmp_path: Path, big: Path, number: int):
    process, spool, out, pieces = started(tmp_path, big)
    process.send_signal(number)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 128 + number, stderr
    assert gone(pieces)
    assert list(spool.iterdir()) == []  # (the pieces' outputs were nameless files: nothing to remove)
    assert out.read_bytes() == b""  # nothing of the pieces was written


# The command killed outright, its pieces stopped: run in a process of its own that adopts orphans (a subreaper), so the
# pieces' process group is not orphaned when the command dies (the kernel would then end stopped members with SIGHUP)
# and only PR_SET_PDEATHSIG can end them; it prints how many were left.
KILLED_OUTRIGHT = """
import ctypes, os, signal, sys, time
sys.path[:0] = [{tests!r}, {cli!r}]
ctypes.CDLL(None).prctl(36, 1)  # PR_SET_CHILD_SUBREAPER
from pathlib import Path
from test_pieces_cli import started
process, spool, _, pieces = started(Path({folder!r}))
process.kill()
process.wait()
left = list(pieces)
deadline = time.monotonic() + 30  # (each piece's death signal is the kernel's to deliver: waited for, not a speed)
while left and time.monotonic() < deadline:
    left = [pid for pid in left if os.waitpid(pid, os.WNOHANG)[0] == 0]
    time.sleep(0.02)
for pid in left:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
print(len(left), len(list(spool.iterdir())))
"""


def test_a_command_killed_outright_takes_its_pieces_with_it(tmp_path: Path):
    script = KILLED_OUTRIGHT.format(tests=str(ROOT / "tests"), cli=str(ROOT / "tests" / "cli"), folder=str(tmp_path))
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    # (PR_SET_PDEATHSIG: each piece ended when the command's process did; their outputs had no names to leave)
    assert run.stdout == b"0 0\n"


def test_a_temp_folder_without_room_for_the_pieces_spools_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # (the temp folder is looked up again, as a new process does)
    with spooled(2, 1 << 62) as files:  # (more than any disk: the command runs once)
        assert files is None
    with spooled(3, 1) as files:
        assert files is not None and len(files) == 3
        files[0].write(b"kept until closed")
        assert list(tmp_path.iterdir()) == []  # (nameless: nothing to remove, whatever ends the command)
    assert files[0].closed


def test_with_stderr_closed_the_pieces_write_what_one_run_writes(tmp_path: Path, big: Path, journal: Path):
    process, _, out, _ = started(tmp_path, big, stop=False, stderr_closed=True)  # (its 4 pieces ran)
    assert process.wait(timeout=60) == 0 and out.read_bytes() == big.read_bytes()
    validated = [subprocess.run(f"{REPLAY} validate --workers {workers} {journal} 2>&-", shell=True, capture_output=True,
                                env={**os.environ, "REPLAY_PIECE_BYTES": "100000"}, check=False) for workers in (3, 1)]
    assert validated[0].returncode == validated[1].returncode == 0 and validated[0].stdout == validated[1].stdout


def test_ctrl_z_stops_the_pieces_with_the_command_and_fg_goes_on_with_them(tmp_path: Path, big: Path):
    """The pieces are in the command's process group, as the terminal sees it: a job stopped (SIGTSTP to the group)
    stops them all; continued (SIGCONT), they end as one run would."""
    process, _, out, pieces = started(tmp_path, big, stop=False, own_group=True)
    os.killpg(process.pid, signal.SIGTSTP)
    deadline = time.monotonic() + 30  # (until each took the signal in: a wait for the kernel, not a speed)
    while not ((states := [state(pid) for pid in [process.pid, *pieces]])[0] == "T" and set(states[1:]) <= {"T", "Z"}):
        if time.monotonic() > deadline:
            break
        time.sleep(0.02)
    os.killpg(process.pid, signal.SIGCONT)
    _, stderr = process.communicate(timeout=60)
    # each stopped (or done already: a zombie): none went on while the command could not take its result
    assert states[0] == "T" and set(states[1:]) <= {"T", "Z"} and "T" in states[1:], states
    assert process.returncode == 0, stderr
    assert out.read_bytes() == big.read_bytes()


@pytest.mark.parametrize("command", ["heal", "validate", "report"])
def test_no_temp_folder_at_all_runs_the_command_once(tmp_path: Path, journal: Path, command: str):
    """``spooled`` when ``tempfile.gettempdir()`` finds no temp folder (it raises FileNotFoundError): no pieces, the
    command runs once (as for no room), the same output as --workers 1, no E_UNHANDLED."""
    env = {**os.environ, "REPLAY_PIECE_BYTES": "100000", "TMPDIR": str(tmp_path / "gone"), "PYTHONDONTWRITEBYTECODE": "1"}
    run = subprocess.run([REPLAY, "--log-level", "info", command, "--workers", "3", str(journal)], cwd=tmp_path, env=env,
                         capture_output=True, timeout=300, check=False, preexec_fn=no_temp_folder)
    alone = run_replay(command, "--workers", "1", str(journal), process=True)
    said = [orjson.loads(line) for line in run.stderr.splitlines()]
    assert [line["why"] for line in said if line.get("event") == "pieces.not_used"] == [
        "no file could be spooled in the temp folder (TMPDIR): no room, or none can be made there"], run.stderr
    assert (run.returncode, run.stdout) == (alone.returncode, alone.stdout)
    assert not errors_of(run.stderr)


def test_a_heal_log_in_pieces_is_one_runs_and_leaves_nothing_in_the_temp_folder(tmp_path: Path, journal: Path):
    spool = tmp_path / "tmp"
    spool.mkdir()
    broken = tmp_path / "broken.jsonl"  # (repairs to log: every run's terminal event gone)
    broken.write_bytes(b"".join(line for line in journal.read_bytes().splitlines(True) if b'"type":"run_' not in line
                                or b'"run_started"' in line))
    env = {"REPLAY_PIECE_BYTES": "100000", "TMPDIR": str(spool)}
    many = run_replay("--log-level", "info", "heal", "--workers", "3", "--log", str(tmp_path / "many.jsonl"), str(broken),
                      env=env, process=True)
    one = run_replay("heal", "--workers", "1", "--log", str(tmp_path / "one.jsonl"), str(broken))
    assert b'"event":"pieces.done"' in many.stderr and many.stdout == one.stdout
    assert (tmp_path / "many.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes() != b""
    assert list(spool.iterdir()) == []  # (a spool's name is no file to write: it was written through its descriptor)


def test_ctrl_c_at_the_terminal_ends_the_command_and_its_pieces_as_one_run_ends(tmp_path: Path, big: Path):
    """The terminal's Ctrl-C reaches the whole job (its process group): the pieces too, and the command ends them and
    exits as an interrupted run does (130, nothing said, nothing written)."""
    process, _, out, pieces = started(tmp_path, big, stop=False, own_group=True)
    os.killpg(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=30)
    assert (process.returncode, stderr) == (130, b"")
    assert gone(pieces) and out.read_bytes() == b""


@pytest.mark.parametrize("command", ["heal", "report", "validate"])
def test_stdin_is_read_as_it_comes_whatever_file_is_named_dash(tmp_path: Path, journal: Path, command: str):
    """`-` is stdin, not a file of that name in the folder (a journal there is not cut and read instead)."""
    (tmp_path / "-").write_bytes(journal.read_bytes())
    one_run = journal.read_bytes()[:journal.read_bytes().index(b'"runId":"run_000002"')]
    one_run = one_run[:one_run.rindex(b"\n") + 1]
    run = run_replay("--log-level", "info", command, "--workers", "3", "-", input=one_run, cwd=tmp_path,
                     env={"REPLAY_PIECE_BYTES": "100000"}, process=True)
    alone = run_replay(command, "-", input=one_run, cwd=tmp_path)
    assert b"pieces." not in run.stderr and run.stdout == alone.stdout and run.returncode == alone.returncode

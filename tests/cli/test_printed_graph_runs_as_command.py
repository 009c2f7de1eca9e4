"""`replay run` of the graph `replay stages --graph NAME` prints does what `replay NAME` does, over inputs that take
read's document paths (another agent's log read whole, a healed artifact, a key written twice, a line too long):
read bound mark_named_documents, mark_dropped, heal_records and its notices in code, not in its spec (found by a
tester: the printed graph named an OpenHands run `stdin` down a pipe, and left a line too long out without a word)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES, run_replay, timeless
from heal_support import ev

T = "2026-03-01T12:00:00Z"
OPENHANDS = FIXTURES / "corpus" / "openhands" / "basic.json"


def _printed(tmp_path: Path, name: str, *edits: tuple[str, str]) -> Path:
    """`replay stages --graph NAME > NAME.toml`, each (old, new) of ``edits`` replaced in it as a user edits it."""
    printed = run_replay("stages", "--graph", name)
    assert printed.returncode == 0, printed.stderr
    text = printed.stdout.decode()
    for old, new in edits:
        assert old in text
        text = text.replace(old, new, 1)
    target = tmp_path / f"{name}.toml"
    target.write_text(text)
    return target


def _same(ran, command) -> None:
    assert (ran.returncode, ran.stdout, timeless(ran.stderr)) == \
        (command.returncode, command.stdout, timeless(command.stderr))


def _inputs(tmp_path: Path) -> dict[str, Path]:
    """An OpenHands log (.json, read whole), a healed artifact (its `heal` block) and a document with a key twice."""
    src = tmp_path / "in"
    src.mkdir()
    artifact = {"schemaVersion": "1.0.0", "artifactType": "replay", "id": "a1", "runId": "a1", "timestamp": T,
                "prompt": "p", "query": "p", "status": "ok", "response": "r",
                "events": [ev(1, "run_started", run="a1"), ev(1, "run_completed", run="a1")]}  # (heal renumbers)
    (src / "art.json").write_text(json.dumps(artifact))
    healed = run_replay("heal", "--in", str(src), "--out", str(tmp_path / "healed"))
    assert healed.returncode == 0, healed.stderr
    twice = tmp_path / "twice.json"
    twice.write_text(json.dumps(artifact).replace('"prompt": "p"', '"prompt": "p", "prompt": "q"'))
    return {"openhands": OPENHANDS, "healed": tmp_path / "healed" / "art.healed.json", "twice": twice}


@pytest.mark.parametrize("which", ["openhands", "healed", "twice"])
def test_the_printed_read_graph_is_replay_read(tmp_path: Path, which: str) -> None:
    path = str(_inputs(tmp_path)[which])
    _same(run_replay("run", str(_printed(tmp_path, "read")), path), run_replay("read", path))


def test_the_printed_read_graph_names_another_agents_run_after_its_file_down_a_pipe(tmp_path: Path) -> None:
    ran = run_replay("run", str(_printed(tmp_path, "read")), str(OPENHANDS))
    healed = run_replay("heal", input=ran.stdout)
    assert b'"runId":"basic"' in healed.stdout and b'"runId":"stdin"' not in healed.stdout


def test_the_printed_read_graph_marks_a_line_too_long_as_read_does(tmp_path: Path) -> None:
    long = tmp_path / "long.jsonl"
    long.write_text("".join(json.dumps(e) + "\n" for e in (
        ev(1, "run_started", run="r1"), ev(2, "user_message", run="r1", payload={"text": "x" * 200}),
        ev(3, "run_completed", run="r1"))))
    spec = _printed(tmp_path, "read", ('type = "read"', 'type = "read"\nmax_line_bytes = 150'),
                    ('type = "check_lines"', 'type = "check_lines"\nmark_max_bytes = 150'))
    ran, command = run_replay("run", str(spec), str(long)), run_replay("read", "--max-line-bytes", "150", str(long))
    _same(ran, command)
    assert b'{"$record":"dropped","code":"E_JSONL_LINE_TOO_LONG"' in ran.stdout


# every command whose printed graph runs over journals as a config, and the flags it needs to run
RUN_AS_CONFIG = {"read": [], "heal": [], "validate": [], "report": [], "write": [], "export": ["--otlp"], "walk": []}


@pytest.mark.parametrize("command", sorted(RUN_AS_CONFIG))
def test_each_printed_graph_is_its_command_over_documents_read_whole(tmp_path: Path, command: str) -> None:
    for which, path in _inputs(tmp_path).items():
        if command == "walk" and which == "openhands":  # (walk walks another agent's log by walk-log.toml: its spec
            continue  # says so; `replay stages --graph walk-log` is that graph)
        spec = _printed(tmp_path, command)
        ran, done = run_replay("run", str(spec), str(path)), run_replay(command, *RUN_AS_CONFIG[command], str(path))
        assert (ran.returncode, ran.stdout, timeless(ran.stderr)) == \
            (done.returncode, done.stdout, timeless(done.stderr)), which

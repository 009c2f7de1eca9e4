"""Nothing of another agent's log is lost in silence, as real processes: an empty trajectory, a null message, an
event whose `$origin` this replay cannot write back, through `replay read --dialect`, `heal` and `write --dialect`
(attribution of the corpus logs: tests/fixtures/corpus/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import orjson
from conftest import errors_of, jsonl, run_replay
from dialect_support import CORPUS

MINI = CORPUS / "mini-swe-agent" / "github_issue.traj.json"
CODEX = "rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl"


def test_a_trajectory_with_no_messages_is_a_run_not_nothing(tmp_path: Path):
    """A mini-swe-agent trajectory whose `messages` is empty (the agent failed before its first message) came out
    of `read --dialect`, `heal` and `write --dialect` as nothing at all, exit 0: its info (how it ended) was lost
    in silence. It is a run: its run record says how it ended, and it is written back as it was."""
    document = {"info": {"exit_status": "RuntimeError"}, "messages": [], "trajectory_format": "mini-swe-agent-1"}
    path = tmp_path / "failed.traj.json"
    path.write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2))
    read = run_replay("read", "--dialect", "auto", str(path))
    assert read.returncode == 0, read.stderr
    mark, record = jsonl(read.stdout)  # (read's source line first: the run is named after its file down a pipe)
    assert mark == {"$record": "source", "source": str(path)}
    assert (record["$record"], record["runId"], record["status"], record["error"]["code"]) == (
        "run", "failed", "error", "RuntimeError")
    healed = run_replay("heal", str(path))
    assert healed.returncode == 0, healed.stderr
    assert [r.get("type") for r in jsonl(healed.stdout) if "$record" not in r] == ["run_started", "run_failed"]
    for back in (run_replay("write", "--dialect", "mini-swe-agent", input=read.stdout),
                 run_replay("heal", "--dialect-out", "mini-swe-agent", str(path))):
        assert back.returncode == 0, back.stderr
        assert jsonl(back.stdout) == [document]


def test_a_null_message_of_a_trajectory_is_written_back(tmp_path: Path):
    """A trajectory's message that is JSON null was read (an `unknown` event keeping it under $origin) but left out
    when written back, in silence: undialect took the null record for a record nothing was left of."""
    messages = orjson.loads(MINI.read_bytes())
    document = {"info": {"exit_status": "Submitted"}, "messages": [*messages[:3], None, 7, *messages[3:]]}
    path = tmp_path / "nulls.traj.json"
    path.write_bytes(orjson.dumps(document))
    read = run_replay("read", "--dialect", "mini-swe-agent", str(path))
    assert read.returncode == 0, read.stderr
    for back in (run_replay("write", "--dialect", "mini-swe-agent", input=read.stdout),
                 run_replay("heal", "--dialect-out", "auto", str(path))):
        assert back.returncode == 0, back.stderr
        assert jsonl(back.stdout) == [document]


def test_an_origin_write_cannot_use_is_reported_not_left_out_in_silence():
    """`replay write --dialect` of events whose $origin names a dialect this replay does not know (a newer replay's,
    say) or has no integer index wrote nothing of them, exit 0, no error: the stream looked written back whole. Each
    such event is E_EVENT_INVALID at its line and byte offset (exit 1); the other runs are still written."""
    claude = CORPUS / "claude-code" / "representative_messages.jsonl"
    mapped = run_replay("read", "--dialect", "claude-code", str(claude)).stdout
    codex = run_replay("read", "--dialect", "codex", str(CORPUS / "codex" / CODEX)).stdout
    for broken, path, received in ((mapped.replace(b'"dialect":"claude-code"', b'"dialect":"gemini-cli"'),
                                    "$['$origin'].dialect", "gemini-cli"),
                                   (mapped.replace(b'"index":3,', b'"index":"3",'), "$['$origin'].index", "3")):
        done = run_replay("write", "--dialect", "auto", input=codex + broken)
        assert done.returncode == 1, done.stderr
        errors = [e for e in errors_of(done.stderr) if e["code"] == "E_EVENT_INVALID"]
        assert errors and {(e["path"], e["received"]) for e in errors} == {(path, received)}
        lines = (codex + broken).split(b"\n")
        first = errors[0]
        assert (codex + broken)[first["offset"]:].startswith(lines[first["line"] - 1])
        assert jsonl(done.stdout)[:2] == jsonl((CORPUS / "codex" / CODEX).read_bytes())[:2]  # the codex run is written


def test_a_line_read_dialect_left_out_is_said_again_down_the_pipe(tmp_path: Path):
    """`replay read --dialect` reported a line it could not read on stderr but wrote no dropped record in its place
    (plain `read` does): `replay read --dialect auto log | replay heal` then healed with exit 0 and said nothing of it,
    and a torn last line's `drop_torn_line` repair was missing from the heal record. Down the pipe, heal writes, logs
    and exits as `replay heal log` does, however the log's first line is bad (it does not decide the dialect)."""
    lines = (CORPUS / "claude-code" / "session_b.jsonl").read_bytes().splitlines()
    cases = {
        "garbage.jsonl": b"\n".join([lines[0], b"this is garbage }{", *lines[1:]]) + b"\n",
        "first.jsonl": b"\n".join([b"[1]", *lines]) + b"\n",
        "torn.jsonl": b"\n".join([*lines, lines[0][:40]]),
    }
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        direct = run_replay("heal", str(path))
        for dialect in ("auto", "claude-code"):
            read = run_replay("read", "--dialect", dialect, str(path))
            assert read.returncode == 1 and [e["code"] for e in errors_of(read.stderr)], read.stderr
            assert b"E_DIALECT_MISMATCH" not in read.stderr, (name, dialect)  # (a dropped record is no line of replay's)
            assert [r.get("framework") for r in jsonl(read.stdout) if r.get("$record") == "run"] == ["claude-code"]
            piped = run_replay("heal", input=read.stdout)
            assert piped.returncode == direct.returncode, (name, dialect, piped.stderr)
            assert piped.stdout == direct.stdout, (name, dialect)
            said = [(e["code"], e["line"], e["offset"]) for e in errors_of(piped.stderr)]
            assert said == [(e["code"], e["line"], e["offset"]) for e in errors_of(direct.stderr)], (name, dialect)

"""A JSON document read whole (an artifact `.json`, an array of records, a mini-swe-agent `.traj.json` trajectory)
with a key written twice in one object: only the last value of each is read, and every record of it is written
anew from that, so the key is said, as a JSONL line written anew says it: E_JSON_DUPLICATE_KEY, a warning (never a
failure, with --strict neither), once, with the keys and where in the input the first of them is written again
(line, byte column, the offset of that line, its JSON path). It was reduced to its last value in silence."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from conftest import CORPUS, FIXTURES, ROOT, errors_of, jsonl, run_replay
from jsonschema import Draft202012Validator

MINIMAL = FIXTURES / "artifacts" / "valid" / "minimal.json"  # a valid artifact, pretty-printed
TRAJECTORY = CORPUS / "mini-swe-agent" / "github_issue.traj.json"  # a bare array of messages
STATUS = b'"status": "ok"'  # the artifact's status, written again before it
MESSAGE = "only the last value of each was read from the document"


def notices(stderr: bytes) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in stderr.splitlines() if b"E_JSON_DUPLICATE_KEY" in line]


def twice(data: bytes, line: bytes, again: bytes) -> bytes:
    """``data`` with ``again`` (a key and a value, and a comma) written before ``line``, indented as it is."""
    at = data.index(line)
    start = data.rindex(b"\n", 0, at) + 1
    return data[:start] + data[start:at] + again + b"\n" + data[start:]


def second_key_at(note: dict[str, Any], data: bytes, line: bytes, skipped: int = 0) -> None:
    """The note's line, column and offset name where ``line`` (the key's second writing: ``twice`` put the first
    before it) starts in ``data`` (a file whose first ``skipped`` bytes are a byte order mark)."""
    at = data.index(line)
    assert note["offset"] + note["column"] - 1 == at, (note, data[note["offset"]:note["offset"] + 60])
    assert data[:at].count(b"\n") + 1 == note["line"]
    assert note["offset"] == (data.rindex(b"\n", 0, at) + 1 if note["line"] > 1 else skipped)


def artifact(tmp_path: Path, bom: bytes = b"") -> tuple[Path, bytes]:
    data = MINIMAL.read_bytes()
    data = twice(data, STATUS, b'"status": "error",')  # the artifact's status, then the one read
    data = twice(data, b'"text": "What are my top holdings?"', b'"text": "first",')  # in an event's payload
    path = tmp_path / "run.artifact.json"
    path.write_bytes(bom + data)
    return path, bom + data


def check(note: dict[str, Any], source: str, keys: list[str], path: str, event: str) -> None:
    assert (note["code"], note["action"], note["keys"], note["source"], note["path"]) == (
        "E_JSON_DUPLICATE_KEY", "reported", keys, source, path), note
    assert note["message"] == f"line {note['line']} has a key written twice in one object ({', '.join(keys)}); {MESSAGE}"
    if event:
        assert (note["level"], note["event"], note["stage"]) == ("warning", event, "read"), note


ARTIFACT_KEYS = ["$.events[1].payload.text", "$.status"]


def test_an_artifact_read_whole_says_a_key_written_twice_in_read_heal_and_validate(tmp_path: Path):
    path, data = artifact(tmp_path)
    for args, event in ((("read",), "read.notice"), (("read", "--dialect", "auto"), "read.notice"),
                        (("heal",), "heal.notice"), (("heal", "--strict"), "heal.notice"),
                        (("validate",), "validate.notice"), (("validate", "--strict"), "validate.notice")):
        done = run_replay(*args, str(path))
        assert done.returncode == 0 and errors_of(done.stderr) == [], (args, done.stderr)
        (note,) = notices(done.stderr)
        check(note, str(path), ARTIFACT_KEYS, "$.status", event)
        second_key_at(note, data, STATUS)
    healed = jsonl(run_replay("heal", str(path)).stdout)
    assert healed[0]["status"] == "ok" and healed[2]["payload"] == {"text": "What are my top holdings?"}
    assert orjson.loads(run_replay("validate", str(path)).stdout)["valid"] is True


def test_heal_in_out_writes_it_in_the_inputs_heal_log(tmp_path: Path):
    (tmp_path / "in").mkdir()
    path, data = artifact(tmp_path / "in")
    done = run_replay("heal", "--in", str(tmp_path / "in"), "--out", str(tmp_path / "out"))
    assert done.returncode == 0 and notices(done.stderr) == [], done.stderr
    log = orjson.loads((tmp_path / "out" / "run.heal-log.json").read_bytes())
    (note,) = [n for n in log["notices"] if n["code"] == "E_JSON_DUPLICATE_KEY"]
    check(note, str(path), ARTIFACT_KEYS, "$.status", "")
    second_key_at(note, data, STATUS)
    assert log["summary"]["total"] == 0
    Draft202012Validator(orjson.loads((ROOT / "schemas" / "heal-log.schema.json").read_bytes())).validate(log)


def test_the_position_counts_a_byte_order_mark_and_stdin_says_it_too(tmp_path: Path):
    path, data = artifact(tmp_path, bom=b"\xef\xbb\xbf")
    for args in (("read", str(path)), ("validate", str(path)), ("heal", str(path))):
        done = run_replay(*args)
        assert done.returncode == 0, (args, done.stderr)
        (note,) = notices(done.stderr)
        second_key_at(note, data, STATUS, skipped=3)
    piped = run_replay("heal", input=data)
    assert piped.returncode == 0, piped.stderr
    (note,) = notices(piped.stderr)
    assert note["keys"] == ARTIFACT_KEYS and note["event"] == "heal.notice"
    second_key_at(note, data, STATUS, skipped=3)


def test_a_mini_swe_agent_trajectory_says_a_key_written_twice(tmp_path: Path):
    messages = orjson.loads(TRAJECTORY.read_bytes())
    document = {"info": {"exit_status": "Submitted", "submission": "done"}, "messages": messages[:3],
                "trajectory_format": "mini-swe-agent-1"}
    data = twice(orjson.dumps(document, option=orjson.OPT_INDENT_2), b'"exit_status": "Submitted"',
                 b'"exit_status": "LimitsExceeded",')
    path = tmp_path / "run.traj.json"
    path.write_bytes(data)
    for args, event in ((("read", "--dialect", "auto"), "read.notice"), (("read", "--dialect", "mini-swe-agent"), "read.notice"),
                        (("heal",), "heal.notice"), (("heal", "--dialect-out", "mini-swe-agent"), "heal.notice")):
        done = run_replay(*args, str(path))
        assert done.returncode == 0 and errors_of(done.stderr) == [], (args, done.stderr)
        (note,) = notices(done.stderr)
        check(note, str(path), ["$.info.exit_status"], "$.info.exit_status", event)
        second_key_at(note, data, b'"exit_status": "Submitted"')
    run = jsonl(run_replay("heal", str(path)).stdout)[0]
    assert run["status"] == "ok"  # the last value read: Submitted
    # a bare array of messages (early trajectories), a key written twice in one message
    array = twice(TRAJECTORY.read_bytes(), b'"role": "user"', b'"role": "system",')
    path = tmp_path / "early.traj.json"
    path.write_bytes(array)
    done = run_replay("heal", str(path))
    assert done.returncode == 0, done.stderr
    (note,) = notices(done.stderr)
    check(note, str(path), ["$[1].role"], "$[1].role", "heal.notice")
    second_key_at(note, array, b'"role": "user"')

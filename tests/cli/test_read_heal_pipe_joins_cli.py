"""`replay read a | replay heal` joins a record split across lines as `replay heal a` does: read keeps each piece whole in
its dropped record (`original`), heal takes it as the piece it stands for (same stream, same heal log, exit 0)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import errors_of, jsonl, run_replay
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def event(seq: int, kind: str, **payload: Any) -> dict[str, Any]:
    return {"seq": seq, "timestamp": f"2026-01-01T00:00:0{seq}Z", "type": kind, "runId": "r", "payload": payload}


def line(record: dict[str, Any], split: str) -> str:
    """One record as a writer may have put it: compact, pretty-printed, or with its newlines in strings unescaped."""
    if split == "pretty":
        return json.dumps(record, indent=2)
    text = json.dumps(record, separators=(",", ":"))
    return text.replace("\\n", "\n") if split == "raw" else text


def journal(splits: list[str]) -> bytes:
    kinds = ["run_started", *["user_message"] * (len(splits) - 2), "run_completed"]
    return "".join(line(event(n + 1, kind, text="a\nb\n\nc"), split) + "\n"
                   for n, (kind, split) in enumerate(zip(kinds, splits, strict=True))).encode()


def entries(log: Path, source: str | None = None) -> list[dict[str, Any]]:
    """The heal log's entries, each entry's source as ``source`` (when given)."""
    found = jsonl(log.read_bytes())
    return [{**e, "source": source} if source is not None else e for e in found]


def healed_both(tmp_path: Path, data: bytes, process: bool) -> tuple[Any, Any, Any]:
    path = tmp_path / "a.jsonl"
    path.write_bytes(data)
    by_file = run_replay("heal", str(path), "--log", str(tmp_path / "file.log"), cwd=tmp_path, process=process)
    read = run_replay("read", str(path), cwd=tmp_path, process=process)
    piped = run_replay("heal", "--log", str(tmp_path / "pipe.log"), input=read.stdout, cwd=tmp_path, process=process)
    return by_file, read, piped


SPLITS = {
    "start": ["pretty", "compact", "compact", "compact"],
    "middle": ["compact", "pretty", "compact", "compact"],
    "end": ["compact", "compact", "compact", "pretty"],
    "raw newline in a string, blank line too": ["compact", "raw", "compact", "compact"],
    "every record": ["pretty", "raw", "pretty", "raw"],
}


def test_a_split_record_heals_by_pipe_as_by_file(tmp_path: Path) -> None:
    for name, splits in SPLITS.items():
        by_file, read, piped = healed_both(tmp_path, journal(splits), process=True)
        assert read.returncode == 1 and errors_of(read.stderr), name  # (read is strict: it reports each piece)
        assert by_file.returncode == 0 and piped.returncode == 0, (name, piped.stderr)
        assert errors_of(piped.stderr) == [], name
        assert piped.stdout == by_file.stdout, name
        assert entries(tmp_path / "file.log")  # (one join a split record)
        # (source: the stream's, as every entry of a piped single file names it)
        assert entries(tmp_path / "pipe.log") == entries(tmp_path / "file.log", "<stdin>"), name
        assert {e["source"] for e in entries(tmp_path / "pipe.log")} == {"<stdin>"}


def test_a_folder_heals_by_pipe_as_by_file_source_and_all(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "a.jsonl").write_bytes(journal(SPLITS["middle"]))
    (runs / "b.jsonl").write_bytes(journal(SPLITS["end"]))
    by_file = run_replay("heal", "runs", "--log", "file.log", cwd=tmp_path, process=True)
    read = run_replay("read", "runs", cwd=tmp_path, process=True)
    piped = run_replay("heal", "--log", "pipe.log", input=read.stdout, cwd=tmp_path, process=True)
    assert (read.returncode, by_file.returncode, piped.returncode) == (1, 0, 0)
    assert piped.stdout == by_file.stdout
    assert (tmp_path / "pipe.log").read_bytes() == (tmp_path / "file.log").read_bytes()
    assert [e["source"] for e in entries(tmp_path / "pipe.log")] == ["runs/a.jsonl", "runs/b.jsonl"]


def test_read_keeps_a_piece_whole_in_its_dropped_record(tmp_path: Path) -> None:
    data = b'{"seq":1,\n"y"\n[]\n}\n'
    (tmp_path / "p.jsonl").write_bytes(data)
    read = run_replay("read", "p.jsonl", cwd=tmp_path)
    assert read.returncode == 1
    marks = jsonl(read.stdout)
    assert [(m["code"], m["original"]) for m in marks] == [
        ("E_JSONL_LINE_INVALID", '{"seq":1,'), ("E_EVENT_NOT_OBJECT", '"y"'), ("E_EVENT_NOT_OBJECT", "[]"),
        ("E_JSONL_LINE_INVALID", "}")]
    (tmp_path / "bad.jsonl").write_bytes(b'{"seq":\xff\n')  # not UTF-8: no piece of a record, no original
    assert "original" not in jsonl(run_replay("read", "bad.jsonl", cwd=tmp_path).stdout)[0]


@st.composite
def split_journals(draw: st.DrawFn) -> bytes:
    runs = []
    for r in range(draw(st.integers(1, 3))):
        n = draw(st.integers(2, 5))
        # (a line of blanks read left out between two pieces: what it held is not known down the pipe, no join spans it)
        texts = draw(st.lists(st.text(st.sampled_from("ab \n"), max_size=6).filter(
            lambda t: not any(part and not part.strip() for part in t.split("\n"))), min_size=n, max_size=n))
        splits = draw(st.lists(st.sampled_from(["compact", "compact", "pretty", "raw"]), min_size=n, max_size=n))
        for k in range(n):
            kind = "run_started" if k == 0 else "run_completed" if k == n - 1 else "user_message"
            record = {"seq": k + 1, "timestamp": "2026-01-01T00:00:00Z", "type": kind, "runId": f"r{r}",
                      "payload": {"text": texts[k]}}
            runs.append(line(record, splits[k]))
    return "".join(f"{text}\n" for text in runs).encode()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=split_journals())
def test_read_then_heal_is_heal_of_the_file(tmp_path: Path, data: bytes) -> None:
    by_file, _read, piped = healed_both(tmp_path, data, process=False)
    assert (by_file.returncode, piped.returncode) == (0, 0), piped.stderr
    assert piped.stdout == by_file.stdout
    assert entries(tmp_path / "pipe.log") == entries(tmp_path / "file.log", "<stdin>")


def test_a_dropped_record_whose_code_is_no_string_is_reported_not_a_crash_of_the_join(tmp_path: Path) -> None:
    """Found by review: the join looked a dropped record's `code` up in a set, and a list there (`[1]`) stopped heal
    with E_STAGE_FAILED (TypeError); it is an invalid record, as validate reports it, and the run's events flow."""
    path = tmp_path / "j.jsonl"
    path.write_bytes(b'{"seq":1,"timestamp":"2026-01-01T00:00:01Z","type":"run_started","runId":"r","payload":{}}\n'
                     b'{"$record":"dropped","code":[1],"message":"m","source":"x","line":2,"offset":5}\n'
                     b'{"seq":2,"timestamp":"2026-01-01T00:00:02Z","type":"run_completed","runId":"r","payload":{}}\n')
    done = run_replay("heal", str(path))
    assert "E_STAGE_FAILED" not in [e["code"] for e in errors_of(done.stderr)], done.stderr
    assert [e["type"] for e in jsonl(done.stdout) if "type" in e] == ["run_started", "run_completed"]


def test_pieces_whose_places_claim_millions_of_empty_lines_between_them_are_not_joined_and_cost_no_memory(
        tmp_path: Path) -> None:
    """Found by review: the empty lines read leaves out between two pieces were made back one object each, however many
    the pieces' places claimed (a 253-byte stream took 566 MB at 4 million). More than a join reaches over
    (``max_lines``) is one break now; under an address-space limit the old way fails with MemoryError."""
    import resource
    import subprocess

    from conftest import REPLAY

    def marks(n: int) -> bytes:
        first = {"$record": "dropped", "code": "E_JSONL_LINE_INVALID", "message": "m", "line": 2, "offset": 10, "original": "{"}
        second = {**first, "line": 3 + n, "offset": 12 + n, "original": "}"}
        return b"".join(json.dumps(m, separators=(",", ":")).encode() + b"\n" for m in (first, second))

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    done = subprocess.run([REPLAY, "heal"], input=marks(40_000_000), capture_output=True, preexec_fn=limited,
                          timeout=120, check=False)
    assert [e["code"] for e in errors_of(done.stderr)] == ["E_JSONL_LINE_INVALID"] * 2, done.stderr

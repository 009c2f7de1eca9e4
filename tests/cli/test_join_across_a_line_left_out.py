"""A pretty-printed record with a line read left out inside it (too long for --max-line-bytes) is not joined around it.

`replay heal FILE --max-line-bytes 1000` joined the lines of such a record on either side of its too-long `text` line
into a record never written (`text` gone), logged as a join_split_records repair, while `replay read FILE | replay
heal` joined nothing. Now a join never spans a line left out: the pieces are reported as they are, by file, by `cat`
and by `replay read` down the pipe alike (stdout, heal log, exit code). Real processes and real pipes.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

import orjson
import pytest
from conftest import REPLAY, errors_of

RULE = "join_split_records"
RUN = {"$record": "run", "runId": "r", "prompt": "hi", "status": "ok"}
STARTED = {"seq": 1, "timestamp": "2026-03-01T12:00:01.000Z", "type": "run_started", "runId": "r", "payload": {}}
LIMIT = "1000"


def message(text: str) -> dict:
    return {"seq": 2, "timestamp": "2026-03-01T12:00:02.000Z", "type": "assistant_message", "runId": "r",
            "payload": {"model": "m", "text": text, "final": True}}


def journal(pretty: bytes) -> bytes:
    return orjson.dumps(RUN) + b"\n" + orjson.dumps(STARTED) + b"\n" + pretty + b"\n"


def healed(tmp_path: Path, data: bytes, name: str) -> dict[str, tuple[int, bytes, list[dict], bytes]]:
    """`replay heal FILE`, `cat FILE | replay heal`, `replay read FILE | replay heal`, each with --max-line-bytes and
    --log: its exit code, stdout, heal log (sources left out: the file's name, or `<stdin>` down a pipe) and stderr."""
    path = tmp_path / f"{name}.jsonl"
    path.write_bytes(data)
    heal = f"{shlex.quote(REPLAY)} heal --max-line-bytes {LIMIT}"
    commands = {"file": f"{heal} --log {{log}} {path}", "cat": f"cat {path} | {heal} --log {{log}}",
                "read": f"{shlex.quote(REPLAY)} read --max-line-bytes {LIMIT} {path} 2>/dev/null | {heal} --log {{log}}"}
    out = {}
    for how, command in commands.items():
        log = tmp_path / f"{name}-{how}.log"
        run = subprocess.run(command.format(log=log), shell=True, capture_output=True, check=False, timeout=120)
        entries = [{k: v for k, v in orjson.loads(line).items() if k != "source"} for line in log.read_bytes().splitlines()]
        out[how] = (run.returncode, run.stdout, entries, run.stderr)
    return out


def agree(runs: dict[str, tuple[int, bytes, list[dict], bytes]]) -> tuple[int, bytes, list[dict]]:
    """What the three runs agree on (each's code, stdout and log the same), as one."""
    seen = {how: run[:3] for how, run in runs.items()}
    assert seen["cat"] == seen["file"], runs["cat"][3]
    assert seen["read"] == seen["file"], runs["read"][3]
    return seen["file"]


def test_a_line_too_long_inside_a_pretty_printed_record_breaks_its_join(tmp_path: Path) -> None:
    # 3000 bytes: a line too long cut out of the batch it came in; 600 KB: a line longer than a read, skipped as it comes
    for size in (3000, 600_000):
        pretty = json.dumps(message("y" * size), indent=2).encode()
        runs = healed(tmp_path, journal(pretty), f"long{size}")
        code, stdout, log = agree(runs)
        assert code == 1 and [e["rule"] for e in log] == ["ensure_terminal"]  # no join logged
        records = [orjson.loads(line) for line in stdout.splitlines()]
        assert not any(r.get("type") == "assistant_message" for r in records)  # no record made up without its text
        first = 3  # the record's first line
        long_line = first + next(k for k, line in enumerate(pretty.split(b"\n")) if len(line) > int(LIMIT))
        for how, run in runs.items():  # every line of the record reported, as it is
            reported = sorted(e["line"] for e in errors_of(run[3]))
            assert reported == list(range(first, first + pretty.count(b"\n") + 1)), how
            assert [e["code"] for e in errors_of(run[3]) if e["line"] == long_line] == ["E_JSONL_LINE_TOO_LONG"], how


def test_a_line_not_utf8_inside_a_pretty_printed_record_joins_nothing_by_file_or_pipe(tmp_path: Path) -> None:
    pretty = json.dumps(message("TEXT"), indent=2).encode().replace(b"TEXT", b"a\xffb")
    code, stdout, log = agree(healed(tmp_path, journal(pretty), "utf8"))
    assert code == 1 and RULE not in {e["rule"] for e in log}
    assert not any(r.get("type") == "assistant_message" for r in map(orjson.loads, stdout.splitlines()))


@pytest.mark.parametrize("blank", [b"", b"   ", b"\t", b" \r"], ids=["empty", "spaces", "tab", "space-cr"])
def test_an_empty_line_inside_a_pretty_printed_record_is_joined_by_file_or_pipe(tmp_path: Path, blank: bytes) -> None:
    """A blank line between pieces is no line left out of the record: it held nothing but JSON's whitespace, and the
    join goes over it, logged with the very lines it spans (`replay read` keeps a whitespace-only one in the dropped
    record after it, `blankBefore`: down the pipe it was joined over by the file only)."""
    pretty = json.dumps(message("z"), indent=2).encode()
    pretty = re.sub(rb'\n(  "runId")', lambda m: b"\n" + blank + b"\n" + m.group(1), pretty)
    code, stdout, log = agree(healed(tmp_path, journal(pretty), "blank"))
    joins = [e for e in log if e["rule"] == RULE]
    assert code == 0 and [(e["line"], e["joined"], e["original"].encode()) for e in joins] == [(3, 12, pretty)]
    assert message("z") in [orjson.loads(line) for line in stdout.splitlines()]


def test_blank_lines_before_a_line_not_utf8_never_make_reads_record_longer_than_the_limit(tmp_path: Path) -> None:
    """Blank lines of blanks (long together) before a line that is not UTF-8: read's dropped record of that line fits
    its --max-line-bytes without them (a record with no ``original`` to cut has nothing else to give), so a heal down
    the pipe under the same limit reads it, and reports the line as heal of the file does."""
    data = journal(b" " * 450 + b"\n" + b"\t" * 450 + b"\n" + b'{"text": "\xff\xfe"}')
    path = tmp_path / "nu.jsonl"
    path.write_bytes(data)
    read = subprocess.run([REPLAY, "read", "--max-line-bytes", LIMIT, str(path)], capture_output=True, check=False,
                          timeout=120)
    assert max(map(len, read.stdout.splitlines())) <= int(LIMIT)
    code, _, _ = agree(healed(tmp_path, data, "nu"))
    assert code == 1

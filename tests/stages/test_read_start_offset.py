"""read.start_offset: a journal read from a line's first byte on gives that part of a whole read, lines and
diagnostics at their places in the whole file; inputs it cannot be read from are refused before anything runs."""

from __future__ import annotations

import gzip
import tempfile
from pathlib import Path

import orjson
from conftest import errors_of, run_replay
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay.pipeline.engine.exactjson import UTF8_BOM

LIMIT = 120  # max_line_bytes of the reads here: a line longer is reported and skipped

events = st.fixed_dictionaries({"seq": st.integers(1, 999), "type": st.sampled_from(["run_started", "tool_called"]),
                                "runId": st.just("r1"), "payload": st.dictionaries(st.text(max_size=5),
                                                                                    st.integers(-999, 999), max_size=3)})
event_line = events.map(orjson.dumps)
other_line = (event_line.map(lambda b: UTF8_BOM + b)  # a byte order mark at a line's start
              | st.sampled_from([b"not json", b"{oops", b"42", b"", b"   "])  # invalid JSON, blank lines
              | st.just(b'{"pad": "' + b"x" * (2 * LIMIT) + b'"}'))  # longer than LIMIT


def _spec(folder: Path, start: int, end: int) -> Path:
    spec = folder / f"read-{start}-{end}.toml"
    spec.write_text(f'[stages.read]\ntype = "read"\nstart_offset = {start}\nend_offset = {end}\nmax_line_bytes = {LIMIT}\n'
                    '[stages.parse]\ntype = "check_lines"\ninputs = ["read"]\n'
                    '[stages.write]\ntype = "write"\ninputs = ["parse"]\n')
    return spec


def _read(folder: Path, journal: Path, start: int = 0, end: int = 0, process: bool = False) -> tuple[bytes, list]:
    result = run_replay("run", str(_spec(folder, start, end)), str(journal), process=process)
    assert result.returncode in (0, 1), result.stderr
    where = [(e.get("line"), e.get("offset"), e["code"]) for e in errors_of(result.stderr)]
    return result.stdout, where


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=event_line, rest=st.lists(event_line | other_line, max_size=10), torn=st.booleans(), data=st.data())
def test_three_parts_are_the_whole(first: bytes, rest: list[bytes], torn: bool, data: st.DataObject) -> None:
    text = b"\n".join([first, *rest]) + (b"" if torn else b"\n")
    # where a part may begin: a line start not right after a blank line (whitespace, a byte order mark: what read leaves
    # out). A dropped record carries the blank lines read before it (``blankBefore``); a part that begins after them did
    # not read them. (Pieces are cut where a run begins, at an event read whole: never before a dropped line.)
    lines = text.split(b"\n")
    starts = [0] + [i + 1 for i, c in enumerate(text) if c == 0x0A]
    starts = [s for k, s in enumerate(starts) if k == 0 or lines[k - 1].replace(UTF8_BOM, b"").strip()]
    a = data.draw(st.sampled_from(starts))
    b = data.draw(st.sampled_from([s for s in starts if s >= a]))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        journal = folder / "run.jsonl"
        journal.write_bytes(text)
        whole_out, whole_errors = _read(folder, journal)
        outs, errors = [], []
        parts = [(0, a)] if a else []  # (end_offset 0 reads to the end: an empty part is not read)
        parts += [(a, b)] if b > a else []
        for start, end in [*parts, (b, 0)]:
            out, where = _read(folder, journal, start, end)
            outs.append(out)
            # the whole read's diagnostics of the lines that start in the part (in the order of their lines: a
            # read's own and a later stage's come in the order the stages send them)
            assert sorted(where) == sorted(e for e in whole_errors if start <= e[1] < (end or len(text) + 1))
            errors += where
        assert b"".join(outs) == whole_out
        assert sorted(errors) == sorted(whole_errors)


def test_line_numbers_and_offsets_are_the_whole_files(tmp_path: Path) -> None:
    journal = tmp_path / "run.jsonl"
    journal.write_bytes(b'{"type":"a"}\n\nnot json\n' + UTF8_BOM + b'{"type":"b"}\n{oops')
    _, where = _read(tmp_path, journal, start=13)
    assert where == [(3, 14, "E_JSONL_LINE_INVALID"), (5, 39, "E_JSONL_LINE_INVALID")]
    assert where == _read(tmp_path, journal)[1]


def _refused(tmp_path: Path, journal: str, start: int, stdin: bytes | None = None) -> dict:
    result = run_replay("run", str(_spec(tmp_path, start, 0)), journal, input=stdin)
    assert result.returncode == 2, result.stderr
    assert result.stdout == b""
    [error] = errors_of(result.stderr)
    assert error["code"] == "E_CONFIG_OPTION_INVALID"
    assert error["path"] == "stages.read.start_offset" and error["offset"] == start
    assert "line's first byte" in error["howToFix"]
    return error


def test_mid_line_offset_is_refused(tmp_path: Path) -> None:
    journal = tmp_path / "run.jsonl"
    journal.write_bytes(b'{"type":"a"}\n{"type":"b"}\n')
    error = _refused(tmp_path, str(journal), 15)
    assert "byte 15 is inside a line" in error["message"] and "not a newline" in error["message"]


def test_offset_past_the_end_is_refused(tmp_path: Path) -> None:
    journal = tmp_path / "run.jsonl"
    journal.write_bytes(b'{"type":"a"}\n')
    assert "only 13 bytes" in _refused(tmp_path, str(journal), 14)["message"]


def test_stdin_is_refused(tmp_path: Path) -> None:
    assert "stdin" in _refused(tmp_path, "-", 13, stdin=b'{"type":"a"}\n{"type":"b"}\n')["message"]


def test_gzip_is_refused(tmp_path: Path) -> None:
    named = tmp_path / "run.jsonl.gz"
    named.write_bytes(gzip.compress(b'{"type":"a"}\n{"type":"b"}\n'))
    assert "gzip" in _refused(tmp_path, str(named), 13)["message"]
    unnamed = tmp_path / "packed.jsonl"  # gzip by its bytes, not its name
    packed = gzip.compress(b'{"type":"a"}\n' * 40) + b"\n"  # (a newline after it: the offset is a line's start)
    unnamed.write_bytes(packed)
    assert "gzip" in _refused(tmp_path, str(unnamed), len(packed))["message"]


def test_json_documents_are_refused(tmp_path: Path) -> None:
    artifact = tmp_path / "run.json"
    artifact.write_bytes(b'{"events": [\n{"type": "a"}\n]}\n')
    assert ".json" in _refused(tmp_path, str(artifact), 13)["message"]
    array = tmp_path / "array.jsonl"  # a journal written as one array: read whole, though named as lines
    array.write_bytes(b'[\n{"type": "a"},\n{"type": "b"}\n]\n')
    assert "one JSON document" in _refused(tmp_path, str(array), 2)["message"]


def test_follow_is_refused(tmp_path: Path) -> None:
    journal = tmp_path / "run.jsonl"
    journal.write_bytes(b'{"type":"a"}\n{"type":"b"}\n')
    spec = _spec(tmp_path, 13, 0)
    spec.write_text(spec.read_text().replace('type = "read"\n', 'type = "read"\nfollow = true\n', 1))
    result = run_replay("run", str(spec), str(journal))
    assert result.returncode == 2 and result.stdout == b""
    [error] = errors_of(result.stderr)
    assert error["code"] == "E_CONFIG_OPTION_INVALID" and "follow" in error["message"]


def test_run_spec_with_start_offset_in_a_process(tmp_path: Path) -> None:
    journal = tmp_path / "run.jsonl"
    journal.write_bytes(b'{"type":"a"}\n{"type":"b"}\nbad\n{"type":"c"}\n')
    out, where = _read(tmp_path, journal, start=13, process=True)
    assert out.splitlines()[0] == b'{"type":"b"}' and out.splitlines()[-1] == b'{"type":"c"}'
    assert where == [(3, 26, "E_JSONL_LINE_INVALID")]

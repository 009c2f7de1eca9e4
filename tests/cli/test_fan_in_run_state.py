"""A stage that follows the run in progress (heal's rules, parse, summarize, ...) takes one stream of events: a config
giving it two (two inputs that are main outputs, or a stage that mixes several before it) is refused before anything
runs (exit 2, E_CONFIG_INPUTS_INVALID at the `inputs` entry at fault). Their batches came interleaved, and heal cut
each run wherever the other stream's batch came between: 60 repairs, 16 run_started invented over two clean journals
that heal alone repairs nothing in (found by a tester). A stage that takes each batch on its own (`write`, `select`)
still takes several, and loses nothing."""

from __future__ import annotations

import tomllib
from pathlib import Path

import orjson
import pytest
from conftest import EXAMPLES, errors_of, run_replay

from replay.pipeline.engine.config import graph_from_config

RUNS = 1500  # tool calls per journal: a few thousand lines, several batches of each input


def journal(path: Path, run_id: str) -> list[bytes]:
    """A clean run: a run record, run_started, RUNS answered tool calls, run_completed."""
    stamp = "2026-03-01T12:00:01.000Z"
    records: list[dict] = [{"$record": "run", "runId": run_id, "prompt": "p", "status": "ok"},
                           {"seq": 1, "timestamp": stamp, "type": "run_started", "runId": run_id, "payload": {}}]
    for i in range(RUNS):
        for kind in ("tool_called", "tool_completed"):
            records.append({"seq": len(records), "timestamp": stamp, "type": kind, "runId": run_id,
                            "payload": {"callId": f"c{i}", "toolName": "t"}})
    records.append({"seq": len(records), "timestamp": stamp, "type": "run_completed", "runId": run_id, "payload": {}})
    lines = [orjson.dumps(r) for r in records]
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return lines


@pytest.fixture
def two(tmp_path: Path) -> tuple[list[bytes], list[bytes]]:
    return journal(tmp_path / "a.jsonl", "run_x"), journal(tmp_path / "b.jsonl", "run_y")


def refused(tmp_path: Path, config: str, *args: str) -> dict:
    (tmp_path / "fanin.toml").write_text(config)
    done = run_replay("run", "fanin.toml", *args, cwd=tmp_path, process=True)
    assert done.returncode == 2 and done.stdout == b"", done.stderr
    (body,) = errors_of(done.stderr)
    assert body["code"] == "E_CONFIG_INPUTS_INVALID", body
    assert 'paths = [\\"a.jsonl\\", \\"b.jsonl\\"]' in orjson.dumps(body["howToFix"]).decode(), body["howToFix"]
    assert not (tmp_path / "fanin-log.jsonl").exists()  # refused before anything ran: no output made
    return body


TWO_READS = """
[stages.r1]
type = "read"
paths = ["a.jsonl"]
[stages.r2]
type = "read"
paths = ["b.jsonl"]
"""  # a.jsonl and b.jsonl, each read by a stage of its own

HEALED_OUT = """
[stages.out]
type = "write"
inputs = ["heal"]
[stages.log]
type = "write"
path = "fanin-log.jsonl"
inputs = ["heal.repairs"]
"""  # heal's stream to stdout, its repairs to fanin-log.jsonl

TWO_READS_INTO_PARSE = TWO_READS + """
[stages.parse]
type = "parse"
inputs = ["r1", "r2"]
[stages.heal]
type = "heal"
inputs = ["parse"]
""" + HEALED_OUT


def test_two_reads_into_one_parse_then_heal_are_refused_at_the_second_input(tmp_path: Path, two) -> None:
    body = refused(tmp_path, TWO_READS_INTO_PARSE)
    assert body["path"] == "stages.parse.inputs[1]" and body["received"] == ["r1", "r2"], body
    # what to do instead (its howToFix): both files read by one `read` stage, each judged alone: nothing to repair
    one_read = TWO_READS_INTO_PARSE.replace('paths = ["a.jsonl"]', 'paths = ["a.jsonl", "b.jsonl"]')
    (tmp_path / "fanin.toml").write_text(one_read.replace('[stages.r2]\ntype = "read"\npaths = ["b.jsonl"]\n', "")
                                         .replace('inputs = ["r1", "r2"]', 'inputs = ["r1"]'))
    done = run_replay("run", "fanin.toml", cwd=tmp_path, process=True)
    assert done.returncode == 0 and (tmp_path / "fanin-log.jsonl").read_bytes() == b"", done.stderr
    assert [line for line in done.stdout.splitlines() if b'"$record":"source"' not in line] == [*two[0], *two[1]]


SPLIT_AND_MERGED = """
[stages.read]
type = "read"
paths = ["a.jsonl"]
[stages.parse]
type = "parse"
inputs = ["read"]
[stages.tools]
type = "select"
types = ["tool_*"]
inputs = ["parse"]
[stages.rest]
type = "select"
exclude = ["tool_*"]
inputs = ["parse"]
[stages.heal]
type = "heal"
inputs = ["tools", "parse.repairs", "rest"]
""" + HEALED_OUT


def test_one_stream_split_by_two_selects_and_merged_into_heal_is_refused(tmp_path: Path, two) -> None:
    """(heal is a composite: the entry named is the config's, past the side port before it)"""
    body = refused(tmp_path, SPLIT_AND_MERGED)
    assert body["path"] == "stages.heal.inputs[2]" and body["received"] == ["tools", "rest"], body
    assert "'heal'" in body["message"] and "heal/" not in orjson.dumps(body).decode()


MIXED_BEFORE = TWO_READS + """
[stages.p1]
type = "parse"
inputs = ["r1"]
[stages.p2]
type = "parse"
inputs = ["r2"]
[stages.both]
type = "select"
inputs = ["p*"]
[stages.summarize]
type = "summarize"
inputs = ["both"]
[stages.out]
type = "write"
path = "fanin-log.jsonl"
inputs = ["summarize"]
"""


def test_streams_mixed_by_a_stage_that_passes_batches_on_are_refused_at_the_stage_after_it(tmp_path: Path, two) -> None:
    """`select` may take both parses (by a pattern), but what it passes on is both streams mixed: summarize, which
    follows each run, is refused at its input, naming where they met."""
    body = refused(tmp_path, MIXED_BEFORE)
    assert body["path"] == "stages.summarize.inputs[0]" and body["received"] == ["p1", "p2"], body
    assert "'both'" in body["message"]


STATELESS = TWO_READS + """
[stages.raw]
type = "write"
path = "raw.jsonl"
inputs = ["r1", "r2"]
[stages.p1]
type = "parse"
inputs = ["r1"]
[stages.p2]
type = "parse"
inputs = ["r2"]
[stages.h1]
type = "heal"
inputs = ["p1"]
[stages.h2]
type = "heal"
inputs = ["p2"]
[stages.both]
type = "select"
inputs = ["h1", "h2"]
[stages.out]
type = "write"
inputs = ["both"]
"""


def test_stages_that_take_each_batch_alone_still_take_several_streams_and_lose_nothing(tmp_path: Path, two) -> None:
    (tmp_path / "fanin.toml").write_text(STATELESS)
    done = run_replay("run", "fanin.toml", cwd=tmp_path, process=True)
    assert done.returncode == 0 and errors_of(done.stderr) == [], done.stderr
    for written in (done.stdout, (tmp_path / "raw.jsonl").read_bytes()):
        lines = written.splitlines()
        assert sorted(lines) == sorted([*two[0], *two[1]])  # every line once, none invented (heal repaired nothing)
        for one in two:  # each input's lines in their order
            assert [line for line in lines if line in set(one)] == one


def test_every_example_pipeline_is_still_a_valid_graph() -> None:
    for example in sorted((EXAMPLES / "pipelines").glob("*.toml")):
        assert graph_from_config(tomllib.loads(example.read_text())).nodes, example

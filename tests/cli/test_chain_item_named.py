"""A stage of a `chain` that fails while it runs is named as the chain's item (`path: chain[k]`, and in the message):
its id (`crash_2`) is one the chain made up, which the config never wrote. [stages.*] stages keep their ids, unpathed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import EXAMPLES, errors_of, run_replay
from plugin_support import make_plugin

TWO_RUNS = EXAMPLES / "journals" / "two-runs.jsonl"

MODULE = '''
from replay.pipeline.engine.stage import Option, Sink, Transform


class Crash(Transform):
    summary = "Raises on its first batch when `on`."
    options = {"on": Option(bool, False, "raise")}

    def __call__(self, batch):
        if self.config["on"]:
            raise ValueError("boom")
        return batch


class Stops(Sink):
    summary = "Takes one batch and returns."

    async def consume(self, batches):
        async for batch in batches:
            return
'''

TABLES = """[stages.read]
type = "read"
[stages.parse]
type = "parse"
inputs = ["read"]
[stages.crash]
type = "crash"
inputs = ["parse"]
[stages.crash_2]
type = "crash"
on = true
inputs = ["crash"]
[stages.write]
type = "write"
inputs = ["crash_2"]
"""


def plugin(tmp_path: Path) -> dict[str, str]:
    site = make_plugin(tmp_path / "site", {"crash": "replay_upper_plugin:Crash", "stops": "replay_upper_plugin:Stops"},
                       module=MODULE)
    return {"PYTHONPATH": os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)}


def failed(tmp_path: Path, config: str, *args: str) -> dict:
    (tmp_path / "p.toml").write_text(config)
    done = run_replay("run", str(tmp_path / "p.toml"), *args, env=plugin(tmp_path), process=True, timeout=120)
    assert b"Traceback" not in done.stderr and (done.returncode, done.stdout) == (1, b"")
    [error] = errors_of(done.stderr)
    assert error["code"] == "E_STAGE_FAILED"
    return error


@pytest.mark.parametrize("workers", [[], ["--workers", "2"]], ids=["here", "workers"])
def test_a_chain_item_that_raises_is_named_by_its_place(tmp_path: Path, workers: list[str]):
    """Before: `stage 'crash_2' failed: ValueError: boom` and no path, which of the chain's items left to guess."""
    error = failed(tmp_path, 'chain = ["crash", {type = "crash", on = true}]\n', str(TWO_RUNS), str(TWO_RUNS), *workers)
    assert error["stage"] == "crash_2" and error["path"] == "chain[1]"
    assert error["message"] == "stage 'crash_2' (chain[1] of the config) failed: ValueError: boom"


def test_a_chain_sink_that_stops_early_is_named_by_its_place(tmp_path: Path):
    """A sink that returns after its first batch of many: exit 1 (the rest of its input was never taken), at its item."""
    journal = tmp_path / "big.jsonl"
    journal.write_bytes(TWO_RUNS.read_bytes() * 2000)
    error = failed(tmp_path, 'chain = ["parse", "stops"]\n', str(journal))
    assert error["stage"] == "stops" and error["path"] == "chain[1]" and "before its input ended" in error["message"]


def test_stages_tables_keep_their_ids_and_messages(tmp_path: Path):
    error = failed(tmp_path, TABLES, str(TWO_RUNS))
    assert error["stage"] == "crash_2" and "path" not in error
    assert error["message"] == "stage 'crash_2' failed: ValueError: boom"

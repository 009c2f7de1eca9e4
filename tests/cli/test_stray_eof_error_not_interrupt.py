"""An EOFError replay did not foresee (a plugin stage's, a library's) is an unhandled error: E_UNHANDLED, exit 1, one
JSON line on stderr. click's main takes any EOFError for an interrupt (Ctrl-D at a prompt): it was exit 130,
"interrupted", with a blank line on stderr and nothing else, whoever raised it. Found by a read-only pass (a fork
server killed: the pool's submit raised EOFError)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import EXAMPLES, REPLAY
from plugin_support import make_plugin
from test_cli_run_interrupts import plugin_env

PLUGIN = '''
import pickle

from replay.pipeline.engine.stage import Transform


class ReadsAnEmptyPickle(Transform):
    summary = "Loads an empty pickle in its preflight (EOFError: Ran out of input)."

    def preflight(self, inputs):
        pickle.loads(b"")

    def __call__(self, batch):
        return batch
'''


def test_an_eof_error_from_a_stage_is_unhandled_not_an_interrupt(tmp_path: Path) -> None:
    site = make_plugin(tmp_path / "site", {"eof": "replay_upper_plugin:ReadsAnEmptyPickle"}, module=PLUGIN)
    config = tmp_path / "p.toml"
    config.write_text('chain = ["parse", "eof"]\n')
    done = subprocess.run([REPLAY, "run", str(config), str(EXAMPLES / "journals" / "two-runs.jsonl")],
                          capture_output=True, env=plugin_env(site), cwd=tmp_path, timeout=60, check=False)
    assert done.returncode == 1, (done.returncode, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    error = json.loads(lines[0])["error"]
    assert error["code"] == "E_UNHANDLED" and error["message"] == "EOFError: Ran out of input", error

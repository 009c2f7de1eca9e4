"""A plugin stage that sends its own error records (emit("errors", ...)) with a code not in the catalogue is stopped
as one reporting it through self.error is: E_STAGE_FAILED naming the stage and the code, exit 1; not printed as
one of replay's errors."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import EXAMPLES, errors_of, run_replay
from plugin_support import make_plugin

EMITS = '''
from replay.pipeline.engine.stage import Transform


class EmitsOwn(Transform):
    summary = "Sends an error record of its own making."
    ports = ("errors",)

    def __call__(self, batch):
        self.emit("errors", {"code": "CODE", "message": "mine"})
        return batch
'''


def run_with(tmp_path: Path, code: str):
    site = make_plugin(tmp_path / "site", {"emits_own": "replay_upper_plugin:EmitsOwn"}, module=EMITS.replace("CODE", code))
    (tmp_path / "p.toml").write_text('chain = ["emits_own"]\n')
    env = {"PYTHONPATH": os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)}
    return run_replay("run", str(tmp_path / "p.toml"), str(EXAMPLES / "journals" / "two-runs.jsonl"), env=env,
                      process=True)


def test_an_unknown_code_stops_the_run_naming_the_stage(tmp_path: Path) -> None:
    done = run_with(tmp_path, "E_MY_OWN")
    assert b"Traceback" not in done.stderr and done.returncode == 1
    (error,) = errors_of(done.stderr)
    assert (error["code"], error["stage"], error["received"]) == ("E_STAGE_FAILED", "emits_own", "E_MY_OWN"), error


def test_a_catalogue_code_is_printed(tmp_path: Path) -> None:
    done = run_with(tmp_path, "E_EVENT_INVALID")
    assert {e["code"] for e in errors_of(done.stderr)} == {"E_EVENT_INVALID"}, done.stderr

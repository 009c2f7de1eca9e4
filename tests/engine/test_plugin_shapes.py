"""A plugin stage class the executor cannot run as what it says it is is refused when it loads (E_STAGE_LOAD_FAILED at
the config's `type`, exit 2, before anything runs), not found out by the run (E_STAGE_FAILED: AttributeError, exit 1),
nor run as what it is not."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import EXAMPLES, errors_of, run_replay
from plugin_support import make_plugin

SHAPES = '''
from replay.pipeline.engine.stage import Stage, Transform


class OwnKind(Stage):
    """Subclasses Stage itself: the executor runs it as none of source, transform or sink."""
    kind = "filter"
    summary = "A stage of a kind there is not."


class SaysSink(Transform):
    """A transform (run as one) that says it is a sink: the graph checks it as one, and nothing takes its output."""
    kind = "sink"
    summary = "A transform that says it is a sink."

    def __call__(self, batch):
        return batch


class PortsText(Transform):
    """Its ports a string: `"errors"`; an input `ports_text.err` (a part of the string) was taken as a port of it."""
    ports = "errors"
    summary = "Ports given as a string."

    def __call__(self, batch):
        return batch
'''


@pytest.mark.parametrize("target, said", [
    ("OwnKind", "subclasses Stage itself"), ("SaysSink", "kind = 'sink'"), ("PortsText", "ports"),
])
def test_a_plugin_class_that_is_no_runnable_stage_is_refused_when_it_loads(tmp_path: Path, target: str, said: str):
    site = make_plugin(tmp_path / "site", {"odd": f"replay_upper_plugin:{target}"}, module=SHAPES)
    config = tmp_path / "p.toml"
    config.write_text('chain = [{type = "odd"}]\n')
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}
    ran = run_replay("run", str(config), str(EXAMPLES / "journals" / "two-runs.jsonl"), env=env, process=True)
    assert ran.returncode == 2 and ran.stdout == b"", ran.stderr
    assert b"Traceback" not in ran.stderr
    [error] = errors_of(ran.stderr)
    assert error["code"] == "E_STAGE_LOAD_FAILED" and error["path"] == "chain[0].type"
    assert said in error["message"]

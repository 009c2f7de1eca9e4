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


class ExitsWhenBuilt(Transform):
    """Its constructor calls sys.exit(): replay ended with that code, and said nothing."""
    summary = "Calls sys.exit() in __init__."

    def __init__(self, **options):
        raise SystemExit(3)

    def __call__(self, batch):
        return batch


class PortsText(Transform):
    """Its ports a string: `"errors"`; an input `ports_text.err` (a part of the string) was taken as a port of it."""
    ports = "errors"
    summary = "Ports given as a string."

    def __call__(self, batch):
        return batch
'''


def run_plugin(tmp_path: Path, targets: dict[str, str], module: str = SHAPES):
    """`replay run` of a chain of the plugin stage `odd` over two runs, with the plugin installed; and its env."""
    site = make_plugin(tmp_path / "site", targets, module=module)
    config = tmp_path / "p.toml"
    config.write_text('chain = [{type = "odd"}]\n')
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}
    return run_replay("run", str(config), str(EXAMPLES / "journals" / "two-runs.jsonl"), env=env, process=True), env


@pytest.mark.parametrize("target, said", [
    ("OwnKind", "subclasses Stage itself"), ("SaysSink", "kind = 'sink'"), ("PortsText", "ports"),
])
def test_a_plugin_class_that_is_no_runnable_stage_is_refused_when_it_loads(tmp_path: Path, target: str, said: str):
    ran, _ = run_plugin(tmp_path, {"odd": f"replay_upper_plugin:{target}"})
    assert ran.returncode == 2 and ran.stdout == b"", ran.stderr
    assert b"Traceback" not in ran.stderr
    [error] = errors_of(ran.stderr)
    assert error["code"] == "E_STAGE_LOAD_FAILED" and error["path"] == "chain[0].type"
    assert said in error["message"]


@pytest.mark.parametrize("module, target, path", [
    (SHAPES, "replay_upper_plugin:ExitsWhenBuilt", "chain[0]"),
    ("import sys\nsys.exit(5)\n", "replay_upper_plugin:Anything", "chain[0].type"),
])
def test_a_plugin_that_calls_sys_exit_as_it_loads_or_is_built_is_refused(tmp_path: Path, module: str, target: str,
                                                                        path: str):
    """A plugin module calling sys.exit() when imported (or a constructor when called) ended `replay run` with its
    code and nothing on stderr, and `replay stages` too: every other stage type went unlisted."""
    ran, env = run_plugin(tmp_path, {"odd": target}, module=module)
    assert ran.returncode == 2 and ran.stdout == b"", ran.stderr
    [error] = errors_of(ran.stderr)
    assert error["code"] == "E_STAGE_LOAD_FAILED" and error["path"] == path and "SystemExit" in error["message"]
    listed = run_replay("stages", env=env, process=True)
    assert listed.returncode == 0 and b"select" in listed.stdout

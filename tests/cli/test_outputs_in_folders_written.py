"""A `replay run` config whose output (a file or a folder) lies in a folder another stage writes into (`write_healed`'s
`out_dir`, `emit`'s, `write_incident`'s), is that folder, or holds it, is refused before anything runs
(E_CONFIG_OPTION_INVALID, exit 2, at the option of the one inside): what is in the folder is its stage's, and one
would replace what the other wrote, as two writers of one file would. Before, a `write` to `out/in.healed.jsonl` beside
`write_healed`'s `out_dir = "out"` ran, exit 0, and the healed copy was the other stage's lines. Real processes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLES, errors_of, run_replay

TWO_RUNS = EXAMPLES / "journals" / "two-runs.jsonl"
HEALED = ('[stages.read]\ntype = "read"\n[stages.parse]\ntype = "parse"\ninputs = ["read"]\n'
          '[stages.h]\ntype = "heal"\ninputs = ["parse", "parse.repairs"]\n'
          '[stages.healed]\ntype = "write_healed"\nout_dir = "out"\ninputs = ["h", "h.repairs"]\n')


def write(path: str) -> str:
    return f'[stages.tools]\ntype = "select"\ntypes = ["tool_*"]\ninputs = ["h"]\n' \
           f'[stages.tools_out]\ntype = "write"\npath = "{path}"\ninputs = ["tools"]\n'


def emit(out_dir: str) -> str:
    return f'[stages.e]\ntype = "emit"\nout_dir = "{out_dir}"\njournal_dir = ""\nsummary = false\ninputs = ["h", "h.repairs"]\n'


def run(tmp_path: Path, config: str):
    shutil.copy(TWO_RUNS, tmp_path / "in.jsonl")
    (tmp_path / "p.toml").write_text(config)
    return run_replay("run", "p.toml", "in.jsonl", cwd=tmp_path, process=True)


@pytest.mark.parametrize(("config", "path", "received", "relation"), [
    (HEALED + write("out/in.healed.jsonl"), "stages.tools_out.path", "out/in.healed.jsonl", "inside"),  # the healed copy
    (HEALED + write("out/in.heal-log.json"), "stages.tools_out.path", "out/in.heal-log.json", "inside"),  # its log
    (HEALED + write("./out/sub/../tools.jsonl"), "stages.tools_out.path", "./out/sub/../tools.jsonl", "inside"),
    (write("out/tools.jsonl") + HEALED, "stages.tools_out.path", "out/tools.jsonl", "inside"),  # (declared first)
    (HEALED + write("out"), "stages.tools_out.path", "out", "which is"),
    (HEALED.replace('"out"', '"out/deep"') + write("out"), "stages.tools_out.path", "out", "which holds"),
    (HEALED + emit("out"), "stages.e.out_dir", "out", "which is"),  # two folders: the later stage's
    (HEALED + emit("out/sub"), "stages.e.out_dir", "out/sub", "inside"),  # the one inside
    (emit("out/sub") + HEALED, "stages.e.out_dir", "out/sub", "inside"),
], ids=["healed-copy", "heal-log", "other-name", "declared-first", "the-folder", "holding-it", "two-folders",
        "nested-folder", "nested-first"])
def test_an_output_in_a_folder_another_stage_writes_is_refused(tmp_path: Path, config: str, path: str, received: str,
                                                                relation: str):
    done = run(tmp_path, config)
    assert (done.returncode, done.stdout) == (2, b""), done.stderr
    [error] = errors_of(done.stderr)
    assert (error["code"], error["path"], error["received"]) == ("E_CONFIG_OPTION_INVALID", path, received), error
    assert f", {relation} the folder " in error["message"] and "replace what the other wrote" in error["message"]
    assert error["howToFix"] and "--" not in error["howToFix"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "p.toml"]  # nothing written
    assert (tmp_path / "in.jsonl").read_bytes() == TWO_RUNS.read_bytes()


def test_an_output_beside_the_folder_is_fine(tmp_path: Path):
    done = run(tmp_path, HEALED + write("out.jsonl") + emit("out-emitted"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "in.healed.jsonl").read_bytes() == TWO_RUNS.read_bytes()  # (nothing to heal)
    assert b'"type":"run_started"' not in (tmp_path / "out.jsonl").read_bytes()
    assert (tmp_path / "out-emitted").is_dir()

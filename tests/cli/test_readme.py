"""The README's console examples are real output: each block below is run as the README shows it, in one shell,
in a scratch folder holding the repository's examples and fixtures, and must print what the README says."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

README = (ROOT / "README.md").read_text()
MARK = "@@ next step @@"
FRONT_DOOR = ".venv/bin/replay heal examples/journals/broken.jsonl --log repairs.jsonl"
SESSION = "cp tests/fixtures/corpus/claude-code/representative_messages.jsonl session.jsonl"
CUT = "head -8 session.jsonl > cut.jsonl     # the session stopped before the Bash call's result"
SPLIT = "sed '9s/\\\\n/\\n/g' session.jsonl > split.jsonl     # line 9 becomes lines 9-13"
INCIDENT = "replay incident import examples/incidents/refund-export.json --out imported"
GATE = ("replay incident replay cases/refund-incident.json --agent-command "
        "'[\"python3\",\"examples/incidents/replay_agent.py\"]' --out ci-result --gate")
FIXED = ("replay incident replay cases/refund-incident.json --agent-command "
         "'[\"python3\",\"examples/incidents/replay_agent.py\",\"--fixed\"]' --out ci-fixed")
VALIDATE = "replay read examples/journals/broken.jsonl | replay validate"
VALIDATE_SESSION = "replay validate session.jsonl"
REPORT_SESSION = "replay report session.jsonl | head -5"
BOTH = "(cat session.jsonl; echo; cat tests/fixtures/corpus/codex/rollout-2026-*.jsonl) > both.jsonl"
ODD = "replay heal examples/journals/odd.jsonl --log odd-repairs.jsonl"
# A block is named by its first command and runs in a folder of its own.
BLOCKS = [
    FRONT_DOOR,
    "head -2 repairs.jsonl",
    VALIDATE,
    "replay read examples/journals/two-runs.jsonl | replay heal | replay report",
    "replay walk tests/fixtures/walk/hello.jsonl",
    "replay walk tests/fixtures/corpus/codex/rollout-2026-*.jsonl --at 2",
    "replay walk tests/fixtures/corpus/codex/rollout-66666666-*.jsonl --at nothing",
    SESSION,
    VALIDATE_SESSION,
    REPORT_SESSION,
    "replay read --dialect claude-code session.jsonl | head -2",
    BOTH,
    CUT,
    SPLIT,
    "replay read --dialect claude-code session.jsonl | replay write --dialect claude-code > again.jsonl",
    "replay export --otlp healed.jsonl | head -c 300",
    "python examples/incidents/replay_example.py",
    INCIDENT,
    "sed -n 3,6p replayed/junit.xml",
    FIXED,
    "replay run examples/pipelines/tools-only.toml examples/journals/two-runs.jsonl",
    "replay run examples/pipelines/heal.toml examples/journals/broken.jsonl",
    "cat bad.toml",
    "replay script examples/echo-agent/scenarios/echo/session.jsonl",
    "replay script examples/echo-agent/scenarios/overloaded/session.jsonl --no-override > /dev/null",
    ODD,
    "replay read examples/journals/messy.jsonl > /dev/null",
    "replay what are my holdings",
]
AFTER = {  # the blocks whose files a block reads, run before it
    "head -2 repairs.jsonl": [FRONT_DOOR],
    "replay read --dialect claude-code session.jsonl | head -2": [SESSION],
    CUT: [SESSION],
    VALIDATE_SESSION: [SESSION],
    REPORT_SESSION: [SESSION],
    BOTH: [SESSION],
    SPLIT: [SESSION],
    "replay read --dialect claude-code session.jsonl | replay write --dialect claude-code > again.jsonl": [SESSION, SPLIT],
    "replay export --otlp healed.jsonl | head -c 300": [SESSION, CUT],
    "sed -n 3,6p replayed/junit.xml": [INCIDENT],
    FIXED: [INCIDENT],
}
MIXED = {VALIDATE, VALIDATE_SESSION, ODD, GATE, FIXED}  # stdout and stderr both: their lines are compared in any order
VARIES = [  # what differs from run to run, and what it is shown as here
    (re.compile(r'"timestamp":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z"'), "<when a log line was written>"),
    (re.compile(r"inc_[0-9a-f]{16}"), "<incident id: from a fresh secret>"),
    (re.compile(r"\bid_[0-9a-f]{16}"), "<a redacted value: keyed by that secret>"),
    (re.compile(r'"sha256":"[0-9a-f]{64}"'), "<the bundle's checksum: it holds the id>"),
    (re.compile(r'"traceId":"[0-9a-f]{32}"'), "<a trace id: of the file's absolute path>"),
]
ELIDED = "..."  # a line of its own: the README shows the output's first lines only; within a line (" ..."): the
# line's middle is left out, what is shown before and after it must be there


def console_blocks() -> dict[str, list[tuple[str, list[str]]]]:
    """Each console block of the README, by its first command: its steps, (command, the output shown)."""
    blocks = {}
    for body in re.findall(r"```console\n(.*?)```", README, re.S):
        steps: list[tuple[str, list[str]]] = []
        for line in body.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            elif steps:
                steps[-1][1].append(line)
        if steps:
            blocks[steps[0][0]] = steps
    return blocks


def same_output(command: str, shown: list[str], printed: list[str]) -> bool:
    shown, printed = list(map(steady, shown)), list(map(steady, printed))
    if ELIDED in shown:
        head = shown[: shown.index(ELIDED)]
        return len(printed) > len(head) and all(map(same_line, head, printed))
    if command in MIXED:
        shown, printed = sorted(shown), sorted(printed)
    return len(printed) == len(shown) and all(map(same_line, shown, printed))


def steady(line: str) -> str:
    for pattern, shown_as in VARIES:
        line = pattern.sub(shown_as, line)
    return line


def same_line(shown: str, printed: str) -> bool:
    start, elided, end = shown.partition(" " + ELIDED)
    return printed == shown if not elided else printed.startswith(start) and printed.endswith(end)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    for name in ("examples", "tests"):
        (tmp_path / name).symlink_to(ROOT / name)
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "replay").symlink_to(Path(sys.executable).parent / "replay")
    return tmp_path


def run_block(folder: Path, steps: list[tuple[str, list[str]]]) -> list[list[str]]:
    """What each step of a block prints (stdout and stderr as a terminal shows them), run in one shell."""
    script = ["exec 2>&1"]
    for command, shown in steps:
        cat = re.fullmatch(r"cat (\S+)", command)
        if cat and not (folder / cat[1]).exists():  # the README shows a file the reader writes: write it
            (folder / cat[1]).write_text("\n".join(shown) + "\n")
        # the mark between steps keeps the exit status the step before left (`echo $?` asks for it)
        script += [f"status=$?; echo '{MARK}'; (exit $status)", re.sub(r"\s+#.*$", "", command)]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-c", "\n".join(script)], cwd=folder, env=env, capture_output=True, timeout=120)
    printed = done.stdout.decode().split(MARK + "\n")[1:]
    assert len(printed) == len(steps), done.stdout.decode()
    return [out.rstrip("\n").splitlines() for out in printed]


def test_every_block_named_here_is_in_the_readme():
    assert set(BLOCKS) <= set(console_blocks()), set(BLOCKS) - set(console_blocks())


@pytest.mark.parametrize("first", BLOCKS)
def test_a_readme_example_prints_what_the_readme_shows(folder: Path, first: str):
    blocks = console_blocks()
    for before in AFTER.get(first, []):
        run_block(folder, blocks[before])
    steps = blocks[first]
    for (command, shown), printed in zip(steps, run_block(folder, steps), strict=True):
        assert same_output(command, shown, printed), (command, printed)

"""`replay capture` (and `replay "prompt"`): run one prompt through the user's runner and write the run's files (spec: capture)."""

from __future__ import annotations

import click

from replay.pipeline.cli.app import bounded, exit_code_for, run_spec
from replay.pipeline.cli.command import ReplayCommand
from replay.pipeline.engine.errors import ReplayError, interrupted_exit
from replay.pipeline.engine.spec import Flag
from replay.pipeline.model.runner_protocol import load_context
from replay.stages.spawn import DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_TIMEOUT_MS, SpawnRunner

HELP_EPILOG = """\b
Runner search order (first match wins):
  1. --runner PATH            5. .replay/runner.cjs
  2. REPLAY_RUNNER=PATH       6. .replay/runner.py
  3. .replay/runner.mjs       7. .replay/runner (executable)
  4. .replay/runner.js        8. package.json script "replay:runner"
                              9. pyproject.toml [tool.replay] runner = "PATH"
.py runs with this Python, .mjs/.js/.cjs with node, TypeScript is refused,
anything else must be executable.

\b
The runner reads {"prompt","query","runId","timestamp","context"} on stdin and
prints {"status":"ok"|"error","response","events":[...],...} on stdout; it may
also stream its events first, one JSON object per line, then the output object.

\b
Files: .replay/artifacts/YYYY-MM-DD/<id>.raw.json, .artifact.json, .healed.json,
.heal-log.json (or --out DIR), and .replay/journal/<runId>.jsonl. If the runner
fails (timeout, crash, bad output, or it cannot be started) the files are still
written, with status "error" and every event it printed, and replay exits 1.
Ctrl-C stops the runner (SIGINT to its process group, SIGKILL 2 s later or at a
second Ctrl-C) and writes the same, marked E_CAPTURE_INTERRUPTED; then exit 130
(SIGTERM and SIGHUP do the same; exit 143 and 129).

\b
Examples:
  replay "What are my top holdings?"
  echo "What are my top holdings?" | replay --runner examples/runners/echo_runner.py
  replay capture --context '{"userId":"u1"}' --timeout-ms 30000 "Summarise my week"
"""


def parse_timeout(text: str | None, default: int = DEFAULT_TIMEOUT_MS) -> int:
    """A --timeout-ms value (ASCII digits, at least 1); ``default`` when it was not given; else E_TIMEOUT_INVALID."""
    if text is None:
        return default
    value = text.strip()
    if not (value.isascii() and value.isdigit()) or int(value) <= 0:  # (str.isdigit takes '²', which int() refuses)
        raise ReplayError(
            "E_TIMEOUT_INVALID", f"--timeout-ms must be a positive whole number of milliseconds, not {text!r}",
            path="--timeout-ms", expected="positive integer (milliseconds)", received=text, example="--timeout-ms 120000",
        )
    return int(value)


@click.command(cls=ReplayCommand, epilog=HELP_EPILOG)
@click.argument("prompt", nargs=-1)
@click.option("--runner", metavar="PATH", help="Runner to use instead of searching for one.")
@click.option("--out", "out_dir", metavar="DIR", help="Write the <id>.*.json files here instead of .replay/artifacts/YYYY-MM-DD.")
@click.option("--context", metavar="JSON", help="Context object passed to the runner, inline.")
@click.option("--context-file", metavar="PATH", help="Context object passed to the runner, from a JSON file.")
@click.option("--timeout-ms", metavar="MS", help=f"Runner time limit; then its process group is killed.  [default: {DEFAULT_TIMEOUT_MS}]")
@click.option("--max-output-bytes", type=bounded(SpawnRunner.options["max_output_bytes"]), default=DEFAULT_MAX_OUTPUT_BYTES, show_default=True,
              help="Runner stdout cap; past it the runner is killed.")
@click.option("--no-heal", is_flag=True, help="Skip healing: no .healed.json / .heal-log.json; the journal holds the run as captured (what capture "
              "changed, such as events naming another runId given the run's, is a warning on stderr).")
def capture(prompt: tuple[str, ...], runner: str | None, out_dir: str | None, context: str | None,
            context_file: str | None, timeout_ms: str | None, max_output_bytes: int, no_heal: bool) -> int:
    """Run PROMPT through your runner and write the run's raw capture, artifact, healed artifact, heal log
    and journal. With no PROMPT, the prompt is read from stdin.

    stdout gets one JSON line naming the files (a failed run's error too: `error`, its code, and `errorMessage`);
    errors are JSON on stderr. Exit 0 when the runner
    answered (even with status "error"); 1 when the run failed, its files written with status "error":
    the runner timed out, exited non-zero or printed bad output, or the system could not start the
    runner found (E_RUNNER_START_FAILED: a #! interpreter that is not there, a format it cannot run);
    2 when nothing was run or written: bad flags, context or prompt, or no runner replay can use (none
    found, a path that is not there, TypeScript, not executable, node not on PATH).
    """
    timeout = parse_timeout(timeout_ms)
    run_context = load_context(context, context_file)
    bound = {"discover.runner": runner, "discover.context": run_context, "spawn.timeout_ms": timeout,
             "spawn.max_output_bytes": max_output_bytes, "emit.out_dir": Flag("--out", out_dir)}
    if no_heal:
        bound["emit.healed"] = False
        bound["spawn.repairs_as_notices"] = True  # no heal log: what capture changed is said on stderr
    if prompt:  # else discover reads it from stdin; a blank one (even "") is refused as blank
        bound["discover.prompt"] = " ".join(prompt) or " "
    result = run_spec("capture", set=bound, bypass=["heal"] if no_heal else ())
    if result.facts.get("interrupted"):  # Ctrl-C, SIGTERM, SIGHUP: the runner was stopped, what it printed is written
        return interrupted_exit(result.facts["interrupted"])  # (E_CAPTURE_INTERRUPTED): 130, 143, 129
    return exit_code_for(result)

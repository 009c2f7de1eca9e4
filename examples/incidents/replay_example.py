#!/usr/bin/env python3
"""Run the fictional refund incident end to end: import the export, then replay the example agent against it.

Portable (Windows, macOS, Linux): the commands are Python argument lists, so no shell quoting of JSON
is involved. Run it from any folder with replay installed; the output folders are created in the
current folder (or --workdir) and must not exist yet:

    python examples/incidents/replay_example.py

Then open incident-example-imported/report.html (the redacted incident and its captured effects) and
incident-example-replayed/report.html (the agent reproducing it: replay MATCHED; business rules FAIL).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from replay.pipeline.cli.app import run_cli

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default=".", help="where the incident-example-* folders are created")
    args = parser.parse_args(argv)
    work = Path(args.workdir)
    imported, replayed = work / "incident-example-imported", work / "incident-example-replayed"

    code = run_cli(["incident", "import", str(HERE / "refund-export.json"), "--out", str(imported)])
    if code != 0:
        return code
    agent = json.dumps([sys.executable, str(HERE / "replay_agent.py")])
    code = run_cli(["incident", "replay", str(imported / "incident.json"), "--agent-command", agent, "--out", str(replayed)])
    if code == 0:
        verdict = json.loads((replayed / "replay.json").read_text(encoding="utf-8"))["summary"]
        print(f"{verdict}: open {imported / 'report.html'} and {replayed / 'report.html'}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())

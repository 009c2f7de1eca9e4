"""Fuzz the `replay` executable against its error and output contract (cli_contract) for a long run.

    make fuzz                                   # after the atheris run: FUZZ_CLI_EXAMPLES (default 2000) examples
    python tests/fuzz/fuzz_cli.py --examples 500 [--seed N]

Every example runs; the distinct findings (command and problem, numbers left out) are printed at the end with
the argv of the first example that showed each, and kept in build/fuzz/cli-findings.json.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]

import cli_contract  # noqa: E402
from hypothesis import HealthCheck, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

OUT = cli_contract.ROOT / "build" / "fuzz" / "cli-findings.json"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--examples", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    findings: dict[str, dict] = {}
    stats = {"runs": 0}
    started = time.time()

    @settings(max_examples=args.examples, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def one(data: st.DataObject) -> None:
        ex, problems = cli_contract.run_example(lambda base: data.draw(cli_contract.example(base)))
        stats["runs"] += 1
        outcome = f"{' '.join(ex.command)} exit {ex.exit_code} {ex.first_error or ''}".strip()
        stats[outcome] = stats.get(outcome, 0) + 1
        for problem in problems:
            key = " ".join(ex.command) + ": " + re.sub(r"[0-9]+", "N", problem)[:120]
            entry = findings.setdefault(key, {"count": 0, "argv": ex.argv, "stdin": ex.stdin[:300].decode(
                "utf-8", "replace"), "problem": problem})
            entry["count"] += 1
            if entry["count"] == 1:
                print(f"[{stats['runs']}] {key}\n    argv: {ex.argv}", flush=True)
        if stats["runs"] % 100 == 0:
            print(f"... {stats['runs']} runs, {len(findings)} distinct findings, {time.time() - started:.0f} s",
                  flush=True)

    if args.seed is not None:
        one = seed(args.seed)(one)
    one()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"runs": stats["runs"], "findings": findings}, indent=1, ensure_ascii=False))
    print(json.dumps(dict(sorted(stats.items())), indent=0))
    print(f"{stats['runs']} runs, {len(findings)} distinct findings (in {OUT})")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())

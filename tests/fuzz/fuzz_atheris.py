"""Coverage-guided fuzzing of the reader, parse, heal, the commands and the runner protocol with atheris.

    make fuzz                      # FUZZ_SECONDS (default 900) of fuzzing, seeded with tests/fixtures
    python tests/fuzz/fuzz_atheris.py -max_total_time=60

Findings (an input and what broke) go to build/fuzz/findings/; the run goes on after one, and the
number of executions and findings is printed at the end (and kept in build/fuzz/stats.json).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import re
import sys
import time
import traceback
from pathlib import Path

import atheris

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]  # harness, inprocess
sys.setrecursionlimit(10000)

with atheris.instrument_imports(include=["replay"]):
    import harness
    import seeds

BUILD = seeds.ROOT / "build" / "fuzz"
FINDINGS = BUILD / "findings"
STARTED = time.time()
STATS: dict = {"executions": 0, "findings": 0, "kinds": {}}


def record(data: bytes, exc: BaseException) -> None:
    kind = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"
    where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    shape = re.sub(rb"[0-9]+", b"N", kind.encode()[:80]) + (f"{where.filename}:{where.lineno}".encode() if where else b"")
    key = hashlib.sha1(shape).hexdigest()[:12]
    STATS["findings"] += 1
    if key not in STATS["kinds"]:
        STATS["kinds"][key] = kind
        FINDINGS.mkdir(parents=True, exist_ok=True)
        (FINDINGS / f"{key}.input").write_bytes(data)
        (FINDINGS / f"{key}.txt").write_text(kind + "\n\n" + "".join(traceback.format_exception(exc)))
        print(f"\nFINDING {key}: {kind}", file=sys.stderr, flush=True)


def test_one_input(data: bytes) -> None:
    STATS["executions"] += 1
    if STATS["executions"] % 2000 == 0:
        report(quiet=True)  # libFuzzer ends the process without running atexit handlers
    try:
        harness.one(data)
    except Exception as exc:
        record(data, exc)


def report(quiet: bool = False) -> None:
    STATS["seconds"] = round(time.time() - STARTED, 1)
    BUILD.mkdir(parents=True, exist_ok=True)
    (BUILD / "stats.json").write_text(json.dumps(STATS, indent=2))
    if not quiet:
        print(f"\nfuzz: {STATS['executions']} executions in {STATS['seconds']} s, {STATS['findings']} findings "
          f"({len(STATS['kinds'])} kinds): {json.dumps(STATS['kinds'], indent=1)}", file=sys.stderr, flush=True)


def main() -> None:
    corpus = BUILD / "corpus"
    seeds.write_corpus(corpus)
    os.environ.setdefault("REPLAY_LOG_LEVEL", "error")
    atexit.register(report)
    args = [sys.argv[0], *sys.argv[1:]]
    if not any(a.startswith("-max_len") for a in args):
        args.append(f"-max_len={seeds.MAX_SEED + 1}")
    atheris.Setup([*args, str(corpus)], test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()

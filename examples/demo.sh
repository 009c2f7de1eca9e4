#!/bin/sh
# `make demo`: capture three runs in a scratch directory and show what replay wrote and repaired.
#   1. the Node example runner (a clean run)
#   2. a runner whose trace is broken on purpose (healed, every repair logged)
#   3. a streaming runner that crashes halfway (its events are kept; exit 1)
# then heal, validate and report the artifacts, and heal the broken example journal.
# REPLAY_DEMO_KEEP=1 keeps the scratch directory.
set -eu

examples=$(cd "$(dirname "$0")" && pwd)
runners=$examples/runners
python=$(command -v python3 || command -v python)
work=$(mktemp -d "${TMPDIR:-/tmp}/replay-demo.XXXXXX")
cleanup() {
  if [ "${REPLAY_DEMO_KEEP:-0}" = 1 ]; then echo "(kept $work)"; else rm -rf "$work"; fi
}
trap cleanup EXIT
cd "$work"

step() { printf '\n== %s\n' "$*"; }
last_journal() { ls -t .replay/journal/*.jsonl | head -n 1; }
heal_summary() {
  "$python" - "$1" <<'PY'
import json, sys
log = json.load(open(sys.argv[1]))
print(f"{log['summary']['total']} repairs:", json.dumps(log["summary"]["byRule"]))
for entry in log["repairs"]:
    print("  -", entry["rule"], entry["action"] + ":", entry["message"])
PY
}

echo "working in $work"

step "1. replay \"What are my top holdings?\" with the Node runner"
runner=$runners/echo_runner.mjs
if ! command -v node >/dev/null 2>&1; then
  echo "(node is not installed: using the Python runner instead)"
  runner=$runners/echo_runner.py
fi
replay --runner "$runner" "What are my top holdings?"

step "2. a broken trace: aliases, a duplicate, bad seq, a string payload, no run_started, no terminal event"
summary=$(replay capture --runner "$runners/broken_trace_runner.py" "Summarise my portfolio")
echo "$summary"
heal_log=$(echo "$summary" | "$python" -c 'import json,sys; print(json.load(sys.stdin)["files"]["healLog"])')
heal_summary "$heal_log"
echo "healed journal ($(last_journal)):"
cat "$(last_journal)"

step "3. a streaming runner that dies halfway (exit 1 expected; the events it printed are kept)"
set +e
replay capture --runner "$runners/streaming_crash_runner.py" "Find my dividend stocks"
status=$?
set -e
echo "exit status: $status"
echo "journal ($(last_journal)):"
cat "$(last_journal)"

step "files written"
find .replay -type f | sort

step "replay heal --in .replay/artifacts --out .replay/healed"
replay heal --in .replay/artifacts --out .replay/healed || echo "(heal exit status $?)"

step "replay validate --in .replay/artifacts"
replay validate --in .replay/artifacts || echo "(validate exit status $?: the broken run's artifact before healing is flagged)"

step "replay report --in .replay/artifacts"
replay report --in .replay/artifacts || echo "(report exit status $?)"

step "replay heal examples/journals/broken.jsonl --log repairs.jsonl"
replay heal "$examples/journals/broken.jsonl" --log repairs.jsonl
echo "repairs.jsonl: $(wc -l < repairs.jsonl) entries"

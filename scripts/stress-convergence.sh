#!/usr/bin/env bash
# Runs ConvergenceTests.foldersConvergeAndNoEditIsLost many times at once, longer than the suite
# does and beside two busy loops: the engine's races (a save between a write and its record, a
# stop between files and their record) show only under load. A failed run's report is kept; its
# seed replays its steps, not its timing (DOCSYNC_CONVERGENCE_SEED).
# usage: scripts/stress-convergence.sh [RUNS=30] [AT_ONCE=6] [ROUNDS=100]   (after building the tests)
set -euo pipefail
runs=${1:-30}; at_once=${2:-6}; rounds=${3:-100}
cd "$(dirname "$0")/.."
tests=$PWD/.build/debug/docsyncPackageTests.xctest
[ -x "$tests" ] || { echo "build the tests first (the README's test command)" >&2; exit 2; }
out=$(mktemp -d /tmp/stress-convergence.XXXXXX)
python3 -c 'while True: pass' & hog1=$!
python3 -c 'while True: pass' & hog2=$!
trap 'kill $hog1 $hog2 2>/dev/null || true' EXIT
export tests rounds out
seq 1 "$runs" | xargs -P "$at_once" -I{} bash -c '
  if DOCSYNC_CONVERGENCE_ROUNDS=$rounds "$tests" --testing-library swift-testing --filter foldersConvergeAndNoEditIsLost > "$out/run{}.txt" 2>&1
  then rm "$out/run{}.txt"; else echo "run {} failed: $out/run{}.txt"; fi'
failed=$(find "$out" -name "run*.txt" | wc -l)
echo "$((runs - failed)) of $runs runs passed (reports of failures in $out)"
[ "$failed" -eq 0 ] && rmdir "$out"
[ "$failed" -eq 0 ]

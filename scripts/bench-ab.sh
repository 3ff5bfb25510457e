#!/usr/bin/env bash
# Interleaved A/B of two docsync builds with one benchmark binary: A, B, A, B, … so that the
# host's drift lands on both sides. Prints one line per run and the medians of each side.
#
#   scripts/bench-ab.sh A_DOCSYNC B_DOCSYNC ROUNDS [docsync-bench options...]
#
# A_DOCSYNC / B_DOCSYNC: release `docsync` binaries (each built from its own checkout);
# the benchmark binary is this checkout's .build/release/docsync-bench, or $BENCH.
set -euo pipefail
cd "$(dirname "$0")/.."
a=$1 b=$2 rounds=$3
shift 3
bench=${BENCH:-.build/release/docsync-bench}
out=$(mktemp -d)
for i in $(seq 1 "$rounds"); do
  for side in A B; do
    bin=$a; [ "$side" = B ] && bin=$b
    DOCSYNC_BIN=$bin "$bench" "$@" --json "$out/$side$i.json" > "$out/$side$i.md" 2> "$out/$side$i.log"
    python3 - "$out/$side$i.json" "$side" "$i" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"{sys.argv[2]}{sys.argv[3]}: import {r['import_docs_per_s']:.0f} docs/s, pull {r['pull_docs_per_s']:.0f} docs/s, "
      f"latency p50 {r['latency_p50_ms']:.1f} ms p99 {r['latency_p99_ms']:.1f} ms, rescan {r['rescan_s']:.2f} s")
PY
  done
done
python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
for side in "AB":
    runs = [json.load(open(f"{out}/{side}{i}.json")) for i in range(1, rounds + 1)]
    med = lambda k: statistics.median(r[k] for r in runs)
    print(f"{side} median: import {med('import_docs_per_s'):.0f} docs/s, pull {med('pull_docs_per_s'):.0f} docs/s, "
          f"latency p50 {med('latency_p50_ms'):.1f} ms p99 {med('latency_p99_ms'):.1f} ms, rescan {med('rescan_s'):.2f} s")
PY
echo "runs kept in $out"

#!/bin/bash
# Save -> stored latency of two builds, interleaved: `docsync-bench`'s latency run (SAVES single
# saves at 20 a second, close of the file to the server's `stored_at`, beside the `inotifywait` +
# `curl` loop) with A's and then B's `docsync` (DOCSYNC_BIN), PAIRS pairs, the order alternating,
# each run on a new ext4 from scripts/fresh-ext4.sh (needs root). The benchmark itself is this
# checkout's release build. Prints each run's p50 and p99 beside the curl loop's.
#   scripts/latency-ab.sh A_DOCSYNC B_DOCSYNC [PAIRS] [SAVES]
set -euo pipefail
A=$1 B=$2 PAIRS=${3:-3} SAVES=${4:-200}
cd "$(dirname "$0")/.."
out=$(mktemp -d /tmp/docsync-latency-ab-XXXXXX)
# Only the import the saves edit, the baselines and the latency run; every other part skipped.
args=(--docs $((SAVES * 10)) --rounds 1 --saves "$SAVES" --rate 20 --attachment-mib 1 --kinto-docs 0 --node-writes 0
  --agents 0 --selective-docs 0 --busy-folders 0 --idle-seconds 1 --baseline-docs "$SAVES")
for pair in $(seq 1 "$PAIRS"); do
  order="A B"; [ $((pair % 2)) = 0 ] && order="B A"
  for side in $order; do
    bin=$A; [ "$side" = B ] && bin=$B
    scripts/fresh-ext4.sh
    DOCSYNC_BIN=$bin DOCSYNC_TEST_TMP=/mnt/docsync-bench .build/release/docsync-bench "${args[@]}" \
      --json "$out/$side-$pair.json" > "$out/$side-$pair.log" 2>&1
    python3 - "$side" "$pair" "$out/$side-$pair.json" <<'PY'
import json, sys
side, pair, path = sys.argv[1:]
r = json.load(open(path))
print(f"{side} pair {pair}: p50 {r['latency_p50_ms']:.1f} p99 {r['latency_p99_ms']:.1f} ms; "
      f"curl loop p50 {r['curl_loop_latency_p50_ms']:.1f} p99 {r['curl_loop_latency_p99_ms']:.1f} ms")
PY
  done
done
echo "logs and JSON: $out"

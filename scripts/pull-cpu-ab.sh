#!/bin/bash
# The pull's agent CPU alone, two builds interleaved: one server (A's), DOCS documents, then
# A, B, A, B, … each pulls them into an empty folder on tmpfs. MODE=watch (default) runs
# `docsync watch` until the index holds every document and reads the process's user + system CPU
# from /proc; MODE=sync runs a one-shot `docsync sync` under `perf stat` (task-clock).
#   scripts/pull-cpu-ab.sh A_DOCSYNC B_DOCSYNC DOCS ROUNDS
set -euo pipefail
A=$1 B=$2 N=$3 R=$4
BIN=$A PROFILE_TMP=${PROFILE_TMP:-/dev/shm}
. "$(dirname "$0")/serve-for-profile.sh" pull-cpu-ab
put 0 "$N" 0
for i in $(seq 1 "$R"); do
  for side in A B; do
    bin=$A; [ $side = B ] && bin=$B
    d="$W/$side$i"; mkdir "$d"
    if [ "${MODE:-watch}" = sync ]; then
      perf stat -x, -e task-clock -o "$W/perf" "$bin" sync "$d" --endpoint "$URL" --token-file "$W/token" --log-level warning 2> "$d.err" > /dev/null
      cpu="$(grep task-clock "$W/perf" | cut -d, -f1) ms"
    else
      t0=$(date +%s.%N)
      "$bin" watch "$d" --endpoint "$URL" --token-file "$W/token" --log-level warning 2> "$d.err" > /dev/null &
      pid=$!
      until [ "$(sqlite3 "file:$d/.docsync/index.sqlite?mode=ro" "select count(*) >= $N from document" 2>/dev/null || echo 0)" = 1 ]; do sleep 0.05; done
      cpu="$(awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) * 1000 / hz}' /proc/$pid/stat) ms, $(echo "$(date +%s.%N) - $t0" | bc) s"
      kill $pid; wait $pid 2>/dev/null || true
    fi
    echo "$side$i: $(find "$d" -name '*.json' -not -path '*/.docsync/*' | wc -l) files, $cpu"
    rm -rf "$d"
  done
done

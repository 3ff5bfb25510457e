#!/bin/bash
# The import's agent CPU alone, two builds interleaved: DOCS documents of about 1 KiB written once
# into a folder (under $PROFILE_TMP, default /dev/shm), then A, B, A, B, …: each side's
# `docsync watch` imports that folder into an empty server of this checkout's release build (or
# $BIN) until the server holds every document; the agent's user + system CPU from /proc, the wall
# time, and the server's CPU. The folder's state (.docsync) is removed between runs; the files
# hold their ids, so no run writes into them.
#   scripts/import-cpu-ab.sh A_DOCSYNC B_DOCSYNC DOCS ROUNDS
set -euo pipefail
A=$1 B=$2 N=$3 R=$4
BIN=${BIN:-$(dirname "$0")/../.build/release/docsync}
W=$(mktemp -d "${PROFILE_TMP:-/dev/shm}/docsync-import-ab-XXXXXX")
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$W"' EXIT
head -c 24 /dev/urandom | base64 | tr -d '/+=' > "$W/token"
python3 - "$W/docs" "$N" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
body = "lorem ipsum dolor sit amet " * 30
for i in range(n):
    d = f"{root}/import/g{i // 100}"
    os.makedirs(d, exist_ok=True)
    with open(f"{d}/d{i}.json", "w") as f:
        f.write(f'{{"id":"d{i}","docType":"bench","title":"Document {i}","n":{i},"price":{i}.25,"tags":["a","b","c"],"body":"{body}"}}')
PY
sync
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
for i in $(seq 1 "$R"); do
  for side in A B; do
    bin=$A; [ $side = B ] && bin=$B
    rm -rf "$W/server" "$W/docs/.docsync" "$W/serve.out"
    "$BIN" serve --data "$W/server" --port 0 --token-file "$W/token" --log-level warning > "$W/serve.out" 2> /dev/null &
    spid=$!
    until [ -s "$W/serve.out" ]; do sleep 0.05; done
    url=$(head -1 "$W/serve.out")
    t0=$(date +%s.%N)
    "$bin" watch "$W/docs" --endpoint "$url" --token-file "$W/token" --log-level warning 2> /dev/null > /dev/null &
    pid=$!
    until [ "$(curl -s -H "Authorization: Token token=$(cat "$W/token")" "$url/api/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["documents"])' 2>/dev/null || echo 0)" -ge "$N" ]; do sleep 0.1; done
    t1=$(date +%s.%N)
    hz=$(getconf CLK_TCK)
    echo "$side$i: agent $(echo "scale=2; $(ticks $pid) / $hz" | bc) s CPU, $(echo "$t1 - $t0" | bc | cut -c1-5) s, server $(echo "scale=2; $(ticks $spid) / $hz" | bc) s CPU"
    kill $pid $spid; wait $pid $spid 2>/dev/null || true
  done
done

#!/bin/bash
# What the first poll of a plain PingPong endpoint (no /api/sync: every document of a type listed
# in one reply) costs the agent: one `docsync sync --types t` of an empty folder against a fake
# plain server listing DOCS documents of 20 fields (about 470 bytes each). Prints the agent's peak
# RSS, CPU and time, and how many files it wrote; BIN and BASE are two binaries to compare in
# alternating pairs (BASE optional).
#   scripts/plain-poll-memory.sh [DOCS] [PAIRS]     (default 100000 2; a release build, or $BIN)
set -euo pipefail
N=${1:-100000} PAIRS=${2:-2}
BIN=${BIN:-$(dirname "$0")/../.build/release/docsync}
W=$(mktemp -d "${PROFILE_TMP:-/tmp}/docsync-plain-poll-XXXXXX")
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$W"' EXIT
python3 - "$N" "$W/port" <<'PY' &
import http.server, json, socketserver, sys
n, portfile = int(sys.argv[1]), sys.argv[2]
docs = []
for i in range(n):
    d = {"id": "d%d" % i, "docType": "t", "rev": "1", "updated_at": "2026-12-01T00:00:00.000Z"}
    for k in range(16): d["f%d" % k] = "value %d %d" % (i, k)
    docs.append(d)
listing = json.dumps({"data": docs}).encode()
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args): pass
    def reply(self, status, body):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        self.reply(200, listing) if self.path == "/api/document/type/t" else self.reply(404, b'{"error":"not found"}')
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.reply(404, b'{"error":"not found"}')
    do_PUT = do_POST
class Server(socketserver.ThreadingMixIn, http.server.HTTPServer): daemon_threads = True
server = Server(("127.0.0.1", 0), Handler)
open(portfile, "w").write(str(server.server_address[1]))
sys.stderr.write("listing of %d documents: %d bytes\n" % (n, len(listing)))
server.serve_forever()
PY
for _ in $(seq 600); do [ -s "$W/port" ] && break; sleep 0.1; done
PORT=$(cat "$W/port")
echo tok > "$W/token"
run() {
  local bin=$1 folder
  folder=$(mktemp -d "$W/folder-XXXX")
  /usr/bin/time -f "%M %U %S %e" -o "$W/time" "$bin" sync "$folder" --types t --endpoint "http://127.0.0.1:$PORT" --token-file "$W/token" > "$W/log" 2>&1 || true
  read -r kib user sys wall < "$W/time"
  printf '%s: peak %d MiB, CPU %.2f s (user %s, system %s), %s s, %d files\n' "$bin" $((kib / 1024)) "$(echo "$user + $sys" | bc)" "$user" "$sys" "$wall" "$(find "$folder/t" -name '*.json' 2>/dev/null | wc -l)"
  rm -rf "$folder"
}
for _ in $(seq "$PAIRS"); do
  run "$BIN"
  [ -n "${BASE:-}" ] && run "$BASE"
done

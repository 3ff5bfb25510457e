#!/bin/bash
# What a message of nested arrays costs the side that parses it (docs/PROMISES.md: the server holds
# it in its body budget; the agent, to the values a reply may hold): DOCS documents, each one small
# number DEPTH arrays deep, about 530 bytes apiece. Two measures, each the process's peak RSS:
#   the agent pulling them as one page of a fake server (what a hostile server can send);
#   the reference server taking them as one batch request (what any token that may write can send).
# Every document is within the limits both sides share (depth 256, 16 MiB). A parsed value costs
# tens of bytes, an array in a document one byte of the text, so the peak is many times the bytes.
#   scripts/tree-amplification.sh [DOCS] [DEPTH]     (default 50000 250; a release build, or $BIN)
set -euo pipefail
N=${1:-50000} DEPTH=${2:-250}
BIN=${BIN:-$(dirname "$0")/../.build/release/docsync}
W=$(mktemp -d "${PROFILE_TMP:-/tmp}/docsync-amplification-XXXXXX")
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$W"' EXIT
peak() { awk '/VmHWM/ { printf "%d MiB", $2 / 1024 }' "/proc/$1/status"; }
# 1. The agent: a fake server whose first pull reply is the whole page, then nothing new.
python3 - "$N" "$DEPTH" "$W/port" <<'PY' &
import http.server, sys
n, depth, portfile = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
docs = ",".join('{"id":"d%d","docType":"t","v":%s1%s}' % (i, "[" * depth, "]" * depth) for i in range(n))
page = ('{"documents":{"success":[' + docs + '],"error":[]},"cursor":1,"more":false}').encode()
empty = b'{"documents":{"success":[],"error":[]},"cursor":1,"more":false}'
sent = []
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args): pass
    def reply(self, body):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = empty if sent else page
        if self.path.startswith("/api/sync"): sent.append(1)
        self.reply(body)
    def do_GET(self): self.reply(b'{"data":[]}')
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
open(portfile, "w").write(f"{server.server_address[1]} {len(page)}\n")
server.serve_forever()
PY
until [ -s "$W/port" ]; do sleep 0.1; done
read -r PORT BYTES < "$W/port"
mkdir "$W/folder"
echo token > "$W/token"
"$BIN" watch "$W/folder" --endpoint "http://127.0.0.1:$PORT" --token-file "$W/token" --log-level warning 2> "$W/agent.err" &
AGENT=$!
# It writes every document, or refuses the reply (over the values a reply may hold) and says so.
written() { find "$W/folder" -name '*.json' | wc -l; }
until [ "$(written)" -ge "$N" ] || grep -q "pulling failed" "$W/agent.err"; do sleep 0.2; done
OUTCOME="$(written) files written"
if grep -q "pulling failed" "$W/agent.err"; then OUTCOME="refused ($(grep -o 'the reply holds.*may' "$W/agent.err" | head -1))"; fi
echo "agent pulling one page of $BYTES bytes ($N documents $DEPTH deep): $OUTCOME; peak RSS $(peak $AGENT)"
kill $AGENT
# 2. The reference server: the same documents as one batch request.
head -c 24 /dev/urandom | base64 | tr -d '/+=' > "$W/server-token"
"$BIN" serve --data "$W/server" --port 0 --token-file "$W/server-token" --log-level warning > "$W/serve.out" 2> /dev/null &
SERVER=$!
until [ -s "$W/serve.out" ]; do sleep 0.1; done
python3 - "$(head -1 "$W/serve.out")" "$W/server-token" "$N" "$DEPTH" <<'PY'
import sys, urllib.error, urllib.request
url, token, n, depth = sys.argv[1], open(sys.argv[2]).read().strip(), int(sys.argv[3]), int(sys.argv[4])
docs = ",".join('{"id":"d%d","docType":"t","v":%s1%s}' % (i, "[" * depth, "]" * depth) for i in range(n))
body = ('{"since":0,"echo":false,"documents":[' + docs + ']}').encode()
try:
    status = urllib.request.urlopen(urllib.request.Request(url + "/api/sync", data=body, headers={"Authorization": f"Token token={token}"}), timeout=300).status
except urllib.error.HTTPError as refused:
    status = f"{refused.code} ({refused.read().decode()[:120]})"
print(f"server taking one batch request of {len(body)} bytes: HTTP {status}", end="")
PY
echo ", peak RSS $(peak $SERVER)"

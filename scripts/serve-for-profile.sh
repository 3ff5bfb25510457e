# Sourced by the profiling scripts: a reference server of the release build (or $BIN) on a port
# of its own, with a random token, in a temporary folder (under $PROFILE_TMP, default /tmp)
# removed on exit with whatever the script started ($SERVE_BIN, if set, serves instead of $BIN:
# an A/B of two agents against one server). Sets W (the folder), URL and BIN, and
# defines put and delete. Usage: . serve-for-profile.sh NAME
BIN=${BIN:-$(dirname "${BASH_SOURCE[0]}")/../.build/release/docsync}
W=$(mktemp -d "${PROFILE_TMP:-/tmp}/docsync-$1-XXXXXX")
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$W"' EXIT
head -c 24 /dev/urandom | base64 | tr -d '/+=' > "$W/token"
"${SERVE_BIN:-$BIN}" serve --data "$W/server" --port 0 --token-file "$W/token" --log-level warning > "$W/serve.out" 2> "$W/serve.err" &
until [ -s "$W/serve.out" ]; do sleep 0.1; done
URL=$(head -1 "$W/serve.out")
put() {  # put FIRST COUNT EDIT: documents dFIRST… of docType bench (about 1 KiB), 1,000 a batch call
  python3 - "$1" "$2" "$3" "$URL" "$W/token" <<'PY'
import json, sys, urllib.request
first, count, edit, url, token = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], open(sys.argv[5]).read().strip()
for start in range(first, first + count, 1000):
    docs = [{"id": f"d{i}", "docType": "bench", "title": f"document {i}", "edit": edit, "body": "x" * 900} for i in range(start, min(first + count, start + 1000))]
    body = json.dumps({"documents": docs, "echo": False}).encode()
    urllib.request.urlopen(urllib.request.Request(url + "/api/sync", data=body, headers={"Authorization": f"Token token={token}"})).read()
PY
}
delete() {  # delete ID_NUMBER: tombstones dID_NUMBER (docType bench)
  curl -sf -X DELETE -H "Authorization: Token token=$(cat "$W/token")" -H "Content-Type: application/json" \
    --data "{\"id\": \"d$1\", \"docType\": \"bench\"}" "$URL/api/document" > /dev/null
}

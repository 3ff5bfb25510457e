# Sourced by the profiling scripts: a reference server of the release build (or $BIN) on a port
# of its own, with a random token, in a temporary folder removed on exit with whatever the
# script started. Sets W (the folder), URL and BIN. Usage: . serve-for-profile.sh NAME
BIN=${BIN:-$(dirname "${BASH_SOURCE[0]}")/../.build/release/docsync}
W=$(mktemp -d "/tmp/docsync-$1-XXXXXX")
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$W"' EXIT
head -c 24 /dev/urandom | base64 | tr -d '/+=' > "$W/token"
"$BIN" serve --data "$W/server" --port 0 --token-file "$W/token" --log-level warning > "$W/serve.out" 2> "$W/serve.err" &
until [ -s "$W/serve.out" ]; do sleep 0.1; done
URL=$(head -1 "$W/serve.out")

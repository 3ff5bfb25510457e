#!/usr/bin/env bash
# Installs the Debian package as a user would and runs the installed `docsync up` on a copy of the
# example folder for a few seconds: the documents must reach its embedded endpoint.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
deb="$("$root/scripts/package-deb.sh" "$@")"
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get install -y -qq "$root/$deb" > /dev/null
dpkg -L docsync | grep -qx /usr/bin/docsync
dpkg -L docsync | grep -q '/usr/lib/systemd/system/docsync-serve.service'
dpkg -L docsync | grep -q '/usr/share/man/man1/docsync.1.gz'
work="$(mktemp -d)"
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
cp -r "$root/examples/docs" "$work/docs"
expected="$(find "$work/docs" -name '*.json' | wc -l)"
/usr/bin/docsync up "$work/docs" --port 0 > "$work/up.out" 2> "$work/up.err" &
pid=$!
for _ in $(seq 1 100); do
  synced="$(/usr/bin/docsync status "$work/docs" --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["synced"])' 2>/dev/null || echo 0)"
  [ "$synced" = "$expected" ] && break
  sleep 0.1
done
kill -TERM "$pid"; wait "$pid" || true
[ "$synced" = "$expected" ] || { echo "the installed docsync up synced $synced of $expected documents" >&2; cat "$work/up.err" >&2; exit 1; }
echo "package: $deb installs, and its docsync up synced $expected example documents"

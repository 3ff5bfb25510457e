#!/usr/bin/env bash
# Installs what docsync needs on a fresh Debian/Ubuntu machine that already has Swift:
# the SQLite headers GRDB links against, and the tools the tests and the benchmark use.
set -euo pipefail
packages=(libsqlite3-dev sqlite3 util-linux inotify-tools curl python3)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi

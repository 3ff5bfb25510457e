#!/usr/bin/env bash
# Installs what docsync needs on a fresh Debian/Ubuntu machine that already has Swift:
# the SQLite headers GRDB links against, PCRE2 (schema patterns, matched with a bound), zlib
# (git objects written by the agent), PostgreSQL (the tests start throw-away clusters of it),
# headless Chromium (the status page is tested in it),
# git (the git history tests use real repositories), the JSON-Schema-Test-Suite (the schema
# validator's conformance tests), and the tools the tests and the benchmark use.
set -euo pipefail
packages=(libsqlite3-dev libpcre2-dev zlib1g-dev sqlite3 util-linux inotify-tools curl python3 postgresql chromium git)
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
# Kinto, the independent document server the Kinto adapter is tested against (pinned versions that
# run on Debian 12's Python 3.11), in a virtual environment of its own: .venv-kinto/bin/kinto.
root="$(cd "$(dirname "$0")/.." && pwd)"
if [ ! -x "$root/.venv-kinto/bin/kinto" ]; then
  python3 -m venv "$root/.venv-kinto" 2>/dev/null || {
    # Debian splits venv out of python3.
    apt_sudo=""; [ "$(id -u)" -eq 0 ] || apt_sudo="sudo"
    $apt_sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $apt_sudo apt-get install -y -qq python3-venv
    python3 -m venv "$root/.venv-kinto"
  }
  "$root/.venv-kinto/bin/pip" install -q "kinto==26.5.0" "kinto-attachment==8.0.0"
fi
# The API's checkers: openapi-spec-validator (docs/openapi.yaml is valid OpenAPI 3.1) and
# schemathesis (the server fuzzed from it: scripts/fuzz-api.sh), pinned, in .venv-api.
if [ ! -x "$root/.venv-api/bin/schemathesis" ]; then
  python3 -m venv "$root/.venv-api"
  "$root/.venv-api/bin/pip" install -q "schemathesis==4.32.5" "openapi-spec-validator==0.9.0"
fi
# The JSON-Schema-Test-Suite, as the `jsonschema` project ships it inside its source package on
# PyPI (json/): the draft 2020-12 tests and their remotes, unpacked to .schema-suite/ for
# SchemaSuiteTests. Pinned, so the pass counts in README stay comparable.
suite="$root/.schema-suite"
if [ ! -f "$suite/tests/draft2020-12/ref.json" ]; then
  download="$(mktemp -d)"
  python3 -m pip download -q --no-deps --no-binary :all: "jsonschema==4.26.0" -d "$download"
  tar -xzf "$download/jsonschema-4.26.0.tar.gz" -C "$download"
  rm -rf "$suite"
  mv "$download/jsonschema-4.26.0/json" "$suite"
  rm -rf "$download"
fi

#!/usr/bin/env bash
# The seams stay seams: only the PingPong adapter's target and the CLI's wiring name PingPong,
# and neither the engine nor the endpoint seam imports an HTTP library.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
if leaks=$(grep -rln "PingPong" Sources/ | grep -v "^Sources/DocsyncPingPong/\|^Sources/docsync/"); then
  echo "PingPong named outside its adapter and the CLI's wiring:" >&2
  echo "$leaks" >&2
  status=1
fi
if http=$(grep -rlnE "^import (AsyncHTTPClient|NIO[A-Za-z0-9]*|Hummingbird[A-Za-z]*)$" Sources/DocsyncAgent Sources/DocsyncEndpoint); then
  echo "the engine or the endpoint seam imports an HTTP library:" >&2
  echo "$http" >&2
  status=1
fi
[ $status -eq 0 ] && echo "seams: PingPong only in its adapter and the CLI; no HTTP in the engine"
exit $status

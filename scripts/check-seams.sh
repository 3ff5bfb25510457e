#!/usr/bin/env bash
# The seams stay seams: only the PingPong adapter's target and the CLI's wiring name PingPong,
# neither the engine nor the endpoint seam imports an HTTP library or an adapter, and the engine's
# parts are built with what they need (nothing linked after construction, no part holding another
# part it only needs a signal from).
#
# Usage: scripts/check-seams.sh [ROOT]   (ROOT: a tree with Sources/ to check; default this repository)
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
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
if adapters=$(grep -rlnE "^import Docsync(PingPong|SyncRails|Kinto|Server|Postgres)$" Sources/DocsyncAgent Sources/DocsyncEndpoint); then
  echo "the engine or the endpoint seam imports an adapter or a store:" >&2
  echo "$adapters" >&2
  status=1
fi
if late=$(grep -rnE "func attach\((applier|reconcile)|\.attach\((applier|reconcile)" Sources/DocsyncAgent); then
  echo "an engine part is linked after construction (attach):" >&2
  echo "$late" >&2
  status=1
fi
if held=$(find Sources/DocsyncAgent \( -name 'ChangeApplier*.swift' -o -name 'Puller*.swift' -o -name 'Pusher*.swift' \) -exec grep -nE "^\s*(let|var) scanner: Scanner" {} +); then
  echo "a part holds the scanner (give it a signal or a closure instead):" >&2
  echo "$held" >&2
  status=1
fi
if stores=$(grep -rlnE "^import (DocsyncServer|Hummingbird[A-Za-z]*|HTTPTypes|NIO[A-Za-z0-9]*)$" Sources/DocsyncStore Sources/DocsyncSQLiteStore Sources/DocsyncPostgres); then
  echo "a store imports the server or an HTTP library (stores speak StoreError; the server maps it to HTTP):" >&2
  echo "$stores" >&2
  status=1
fi
if statuses=$(grep -rnE "StoreError\([0-9]" Sources); then
  echo "a StoreError made from an HTTP status (use its Kind; HTTP-only refusals are HTTPRefusal):" >&2
  echo "$statuses" >&2
  status=1
fi
# One writer into the folder: the applier's writes are called by the folder writer alone (and by
# the download placement the writer hands its applier to), never by a part on the side.
if doors=$(grep -rnE "applier\.(apply|writeFile|writeConflictCopy|trash|mergeAndWrite)\(" Sources/DocsyncAgent \
    | grep -vE "^Sources/DocsyncAgent/([^:]*/)?(ChangeApplier[^/:]*|FolderWriter|Downloader\+Place)\.swift:"); then
  echo "a side door into the folder: the applier's writes go through FolderWriter:" >&2
  echo "$doors" >&2
  status=1
fi
# Built once: a part of the engine is a constant made with everything it needs, nothing is set
# on it afterwards.
if assigned=$(grep -rnE "^\s*(var (applier|changes|writer|scanner|pusher|puller|downloader|uploader) = |(applier|changes|writer|scanner|pusher|puller|downloader|uploader)\.[a-zA-Z]+ = )" Sources/DocsyncAgent); then
  echo "a part of the engine is assigned after it was made (give it what it needs in its init):" >&2
  echo "$assigned" >&2
  status=1
fi
# One context per folder: a part keeps the FolderContext (FolderPart) and reads the shared values
# through it; a copy of one into a stored property of the part's own is a second truth.
if copies=$(grep -rnE "^\s*(self\.)?[a-zA-Z]+ = context\.(root|gate|index|clock|logger|metrics|policy|credential|selection)\b|^\s*\(self\.[^)]*\) = \(context\." Sources/DocsyncAgent \
    | grep -vE "^Sources/DocsyncAgent/Agent/Agent\.swift:"); then
  echo "a part copies a value of its FolderContext (keep the context: FolderPart):" >&2
  echo "$copies" >&2
  status=1
fi
[ $status -eq 0 ] && echo "seams: PingPong only in its adapter and the CLI; no HTTP and no adapter in the engine; no part linked late or set after init; one writer into the folder; one context per folder, not copied; stores without the server or HTTP"
exit $status

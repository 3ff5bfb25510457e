#!/usr/bin/env bash
# Installs docsync's man pages and its bash, zsh and fish completions, all generated from the
# command-line definitions (swift-argument-parser's generate-manual and --generate-completion-script),
# so they cannot drift from the binary.
#
#   scripts/install-extras.sh                      # into ~/.local (no root needed)
#   sudo PREFIX=/usr/local scripts/install-extras.sh
#
# DOCSYNC_BIN names the binary to describe (default: .build/release/docsync, built if missing);
# GENERATE_MANUAL a generate-manual already built (default: built here; SwiftPM waits for any
# other build or `swift test` of the package to end first, so .ci/run builds it up front).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
prefix="${PREFIX:-$HOME/.local}"
bin="${DOCSYNC_BIN:-$root/.build/release/docsync}"
if [ ! -x "$bin" ]; then
  (cd "$root" && swift build -c release --product docsync)
fi
# generate-manual is swift-argument-parser's own tool, built from the package's dependency.
tool="${GENERATE_MANUAL:-}"
if [ -z "$tool" ]; then
  (cd "$root" && swift build --product generate-manual -q)
  tool="$(cd "$root" && swift build --product generate-manual --show-bin-path)/generate-manual"
fi
pages="$(mktemp -d)"
trap 'rm -rf "$pages"' EXIT
"$tool" "$bin" --multi-page --authors "docsync developers" -o "$pages"
install -d "$prefix/share/man/man1" "$prefix/share/bash-completion/completions" "$prefix/share/zsh/site-functions" \
  "$prefix/share/fish/vendor_completions.d"
install -m 644 "$pages"/*.1 "$prefix/share/man/man1/"
"$bin" --generate-completion-script bash > "$prefix/share/bash-completion/completions/docsync"
"$bin" --generate-completion-script zsh > "$prefix/share/zsh/site-functions/_docsync"
"$bin" --generate-completion-script fish > "$prefix/share/fish/vendor_completions.d/docsync.fish"
echo "installed $(ls "$pages" | wc -l) man pages and 3 completion scripts under $prefix"

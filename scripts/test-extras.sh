#!/usr/bin/env bash
# Checks scripts/install-extras.sh as a user would: into a throw-away prefix, then the man page
# renders with every command in it, and bash loads the completion and completes a subcommand.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
prefix="$(mktemp -d)"
trap 'rm -rf "$prefix"' EXIT
PREFIX="$prefix" DOCSYNC_BIN="${DOCSYNC_BIN:-$root/.build/debug/docsync}" "$root/scripts/install-extras.sh"
page="$prefix/share/man/man1/docsync.1"
grep -q '^\.Dt DOCSYNC 1' "$page" || { echo "no docsync(1) man page" >&2; exit 1; }
for command in up init watch sync status doctor conflicts resolve serve clock; do
  [ -f "$prefix/share/man/man1/docsync.$command.1" ] || { echo "no man page for docsync $command" >&2; exit 1; }
done
grep -q 'Fl -metrics-addr' "$prefix/share/man/man1/docsync.watch.1" && grep -q 'Fl -config' "$prefix/share/man/man1/docsync.watch.1" || { echo "docsync.watch.1 lacks --metrics-addr or --config" >&2; exit 1; }
completion="$prefix/share/bash-completion/completions/docsync"
words="$(bash -c "source '$completion'; COMP_WORDS=(docsync do); COMP_CWORD=1; COMP_LINE='docsync do'; COMP_POINT=10; _docsync; printf '%s\n' \"\${COMPREPLY[@]}\"")"
echo "$words" | grep -qx doctor || { echo "bash completes 'docsync do' to: $words" >&2; exit 1; }
[ -s "$prefix/share/zsh/site-functions/_docsync" ] && [ -s "$prefix/share/fish/vendor_completions.d/docsync.fish" ]
echo "extras: man pages and completions install and work"

#!/usr/bin/env bash
# Builds a Debian package of docsync that needs no Swift toolchain: the release binary with the
# Swift runtime linked in (--static-swift-stdlib), its man pages and completions, and the systemd
# units of examples/systemd/. Prints the package's path.
#
#   scripts/package-deb.sh                   # → dist/docsync_<version>_<arch>.deb
#   sudo apt-get install ./dist/docsync_*.deb
#
# --binary PATH packages that binary instead of building one (CI packages its debug build to try
# the package itself: installing, the units, running it; the static build is checked here).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
binary=""
if [ "${1:-}" = "--binary" ]; then binary="$2"; fi
if [ -z "$binary" ]; then
  swift build -c release --static-swift-stdlib --product docsync
  binary="$(swift build -c release --show-bin-path)/docsync"
  # Nothing of the Swift runtime may be left to find on the user's machine.
  if ldd "$binary" | grep -q 'libswift\|libFoundation\|libdispatch'; then
    echo "the binary still needs the Swift runtime:" >&2; ldd "$binary" >&2; exit 1
  fi
fi
version="0.$(git rev-list --count HEAD).0+g$(git rev-parse --short HEAD)"
arch="$(dpkg --print-architecture)"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
install -Dm755 "$binary" "$stage/usr/bin/docsync"
# Symbols are most of a release binary's size; the package ships without them.
[ "${1:-}" = "--binary" ] || strip --strip-unneeded "$stage/usr/bin/docsync"
PREFIX="$stage/usr" DOCSYNC_BIN="$binary" scripts/install-extras.sh > /dev/null
gzip -9n "$stage"/usr/share/man/man1/*.1
# Debian's places for completions: bash-completion's, zsh's vendor folder, fish's vendor folder.
mkdir -p "$stage/usr/share/zsh/vendor-completions"
mv "$stage/usr/share/zsh/site-functions/_docsync" "$stage/usr/share/zsh/vendor-completions/_docsync"
rmdir "$stage/usr/share/zsh/site-functions"
install -Dm644 examples/systemd/system/docsync-serve.service "$stage/usr/lib/systemd/system/docsync-serve.service"
install -Dm644 examples/systemd/system/docsync-watch@.service "$stage/usr/lib/systemd/system/docsync-watch@.service"
install -Dm644 examples/systemd/user/docsync@.service "$stage/usr/lib/systemd/user/docsync@.service"
install -Dm644 examples/systemd/user/docsync.service "$stage/usr/lib/systemd/user/docsync.service"
install -Dm644 README.md "$stage/usr/share/doc/docsync/README.md"
size="$(du -sk "$stage" | cut -f1)"
mkdir -p "$stage/DEBIAN"
cat > "$stage/DEBIAN/control" <<CONTROL
Package: docsync
Version: $version
Architecture: $arch
Maintainer: docsync developers <docsync@localhost>
Depends: libc6, libsqlite3-0, libpcre2-8-0, libstdc++6, zlib1g
Recommends: inotify-tools
Installed-Size: $size
Section: utils
Priority: optional
Homepage: https://github.com/docsync/docsync
Description: keep a folder of JSON documents in sync with a document server
 docsync watches a folder of *.json documents with inotify and mirrors it into a document
 endpoint (its own reference server, PingPong-style REST, sync-rails or Kinto), and the
 server's changes back into the folder: durable outbox, offline edits, field-level merge and
 conflict copies, a server-calibrated clock. One binary: docsync up, watch, sync, serve.
CONTROL
mkdir -p dist
out="dist/docsync_${version}_${arch}.deb"
# The debug build CI packages is 150 MB: xz (dpkg-deb's default) took most of a minute on it, so
# a package of a given binary is gzip'd fast; the release package keeps xz.
compress=()
[ "${1:-}" = "--binary" ] && compress=(-Zgzip -z1)
dpkg-deb --build --root-owner-group "${compress[@]}" "$stage" "$out" > /dev/null
echo "$out"

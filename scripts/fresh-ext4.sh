#!/bin/bash
# A new, empty ext4 file system at MOUNTPOINT (default /mnt/docsync-bench): an 8 GiB image on
# /var/tmp behind a loop device with direct I/O, so that writes reach the disk as on a real one.
# Made again before each benchmark run: ext4 slows down after many 100,000-file folders were
# made and removed (it skips recently freed inodes for minutes), which weighed on whichever side
# ran later. Needs root. Use with DOCSYNC_TEST_TMP=MOUNTPOINT.
set -euo pipefail
mnt=${1:-/mnt/docsync-bench}
img=/var/tmp/docsync-bench-ext4.img
mkdir -p "$mnt"
# Every earlier one, with its loop device (a removed image stays while mounted).
while mountpoint -q "$mnt"; do umount "$mnt" || { echo "$mnt is busy (a process has files there)" >&2; exit 1; }; done
for dev in $(losetup -j "$img" | cut -d: -f1); do losetup -d "$dev" || true; done
rm -f "$img"
truncate -s 8G "$img"
mkfs.ext4 -q -F -i 4096 "$img"  # an inode a 4 KiB: the main run makes over 500,000 files
mount "$(losetup -f --show --direct-io=on "$img")" "$mnt"

#!/usr/bin/env python3
"""What this machine does for single stages of an import or a pull, alone, beside docsync-bench:

  files-write   N files of ~1 KiB created in one new folder with atomic replace (a temporary,
                write, rename into place), one syncfs at the end: what a pull's files cost the
                kernel and the disk, without HTTP, JSON or an index;
  files-read    the same N files opened, read whole and closed: an import's reading;
  sqlite        N rows of ~1 KiB inserted into a WAL-mode SQLite file, 500 a transaction, with
                one secondary index: an index's writes, without docsync's schema.

Usage: scripts/stage-limits.py [N, default 100000] [folder on the disk to measure, default /tmp]
The folder made is removed at the end; removing many files just before a run slows file creation
on ext4 for minutes (its inode allocator skips recently freed inodes), so run it on a quiet disk.
"""
import os
import sqlite3
import sys
import tempfile
import time

n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
base = sys.argv[2] if len(sys.argv) > 2 else "/tmp"
body = (b'{"id":"d%d","docType":"bench","title":"Document","body":"' + b"x" * 900 + b'"}\n')


def rate(label, seconds):
    print(f"{label:12} {n / seconds:10,.0f} per second ({seconds:.2f} s for {n:,})")


work = tempfile.mkdtemp(prefix="stage-limits-", dir=base)
folder = os.path.join(work, "bench")
os.mkdir(folder)
dirfd = os.open(folder, os.O_RDONLY)
start = time.monotonic()
for i in range(n):
    temp = f".d{i}.json.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=dirfd)
    os.write(fd, body % i)
    os.close(fd)
    os.rename(temp, f"d{i}.json", src_dir_fd=dirfd, dst_dir_fd=dirfd)
os.syncfs(dirfd) if hasattr(os, "syncfs") else os.sync()
rate("files-write", time.monotonic() - start)

start = time.monotonic()
for i in range(n):
    fd = os.open(f"d{i}.json", os.O_RDONLY, dir_fd=dirfd)
    while os.read(fd, 65536):
        pass
    os.close(fd)
rate("files-read", time.monotonic() - start)
os.close(dirfd)

db = sqlite3.connect(os.path.join(work, "index.sqlite"), isolation_level=None)
db.execute("PRAGMA journal_mode=WAL")
db.execute("PRAGMA synchronous=NORMAL")
db.execute("CREATE TABLE document (id TEXT PRIMARY KEY, path TEXT NOT NULL, body TEXT NOT NULL, hash TEXT NOT NULL)")
db.execute("CREATE INDEX document_path ON document (path)")
start = time.monotonic()
for first in range(0, n, 500):
    db.execute("BEGIN")
    db.executemany(
        "INSERT INTO document VALUES (?, ?, ?, ?)",
        ((f"d{i}", f"bench/d{i}.json", (body % i).decode(), f"{i:064x}") for i in range(first, min(n, first + 500))))
    db.execute("COMMIT")
rate("sqlite", time.monotonic() - start)
db.close()

for name in os.listdir(folder):
    os.unlink(os.path.join(folder, name))
os.rmdir(folder)
for name in os.listdir(work):
    os.unlink(os.path.join(work, name))
os.rmdir(work)

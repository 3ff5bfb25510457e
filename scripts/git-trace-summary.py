#!/usr/bin/env python3
"""Sums git's own trace (GIT_TRACE2_EVENT lines on stdin) by command: the time of each git
process, named by its command after any -C and -c options. Used by the profiling scripts.

Usage: git-trace-summary.py            (seconds in all)
       git-trace-summary.py COMMITS    (milliseconds a commit)
"""
import collections
import json
import sys

names, total, runs = {}, collections.defaultdict(float), collections.Counter()
for line in sys.stdin:
    event = json.loads(line)
    if event.get("event") == "start":
        argv = event["argv"][1:]
        while argv[:1] in (["-C"], ["-c"]):
            argv = argv[2:]
        names[event["sid"]] = argv[0] if argv else "?"
    elif event.get("event") == "exit" and event["sid"] in names:
        total[names[event["sid"]]] += event["t_abs"]
        runs[names[event["sid"]]] += 1
commits = int(sys.argv[1]) if len(sys.argv) > 1 else None
for name, seconds in sorted(total.items(), key=lambda kv: -kv[1]):
    spent = f"{seconds:7.2f} s" if commits is None else f"{seconds * 1000 / commits:7.1f} ms a commit"
    print(f"  git {name:14s} {runs[name]:4d} runs {spent}")

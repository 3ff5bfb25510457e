#!/usr/bin/env python3
"""The documents that describe the code stay true and short.

docs/ARCHITECTURE.md: at most 15 KiB, and every type, member, test, module and file it names in
backticks exists in the tree. BENCHMARKS.md: at most 30 KiB (current figures, their method, a
short list of what was tried; the history is in the commit messages).
Usage: scripts/check-docs.py [ROOT]
"""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
os.chdir(root)
LIMITS = {"docs/ARCHITECTURE.md": 15 * 1024, "BENCHMARKS.md": 30 * 1024}
problems = []
for path, limit in LIMITS.items():
    size = os.path.getsize(path)
    if size > limit:
        problems.append(f"{path} is {size} bytes, over its limit of {limit}")

sources = {}
for top in ("Sources", "Tests"):
    for folder, _, names in os.walk(top):
        for name in names:
            if name.endswith(".swift"):
                with open(os.path.join(folder, name), encoding="utf-8") as f:
                    sources[os.path.join(folder, name)] = f.read()
everything = "\n".join(sources.values())
files = {os.path.basename(p) for p in sources}


def declared(name):
    return re.search(rf"\b(struct|class|enum|protocol|actor|typealias|extension)\s+{re.escape(name)}\b", everything)


def has_member(name):
    if name == "init":
        return True
    return re.search(rf"\b(func|var|let|case|static func|init)\s+{re.escape(name)}\b", everything) or re.search(rf"\bfunc\s+{re.escape(name)}\(", everything)


text = open("docs/ARCHITECTURE.md", encoding="utf-8").read()
for token in sorted(set(re.findall(r"`([^`\n]+)`", text))):
    if re.fullmatch(r"(Sources|Tests|scripts|docs|examples)/[\w+./-]*", token):
        if not os.path.exists(token.rstrip("/")):
            problems.append(f"docs/ARCHITECTURE.md names {token}, which does not exist")
    elif re.fullmatch(r"[\w+]+\.swift", token):
        if token not in files:
            problems.append(f"docs/ARCHITECTURE.md names the file {token}, which does not exist")
    elif re.fullmatch(r"Docsync[A-Z]\w*", token) and (os.path.isdir(os.path.join("Sources", token)) or os.path.isdir(os.path.join("Tests", token))):
        continue
    elif m := re.fullmatch(r"([A-Z][A-Za-z0-9]+)(?:\.([a-z][A-Za-z0-9]*)(?:\(.*\))?)?", token):
        kind, member = m.group(1), m.group(2)
        if not declared(kind):
            problems.append(f"docs/ARCHITECTURE.md names the type {kind}, which no source declares")
        elif member and not has_member(member):
            problems.append(f"docs/ARCHITECTURE.md names {kind}.{member}, which no source declares")

for p in problems:
    print(p, file=sys.stderr)
if problems:
    sys.exit(1)
print("docs: ARCHITECTURE.md and BENCHMARKS.md within their sizes; every name ARCHITECTURE.md gives exists")

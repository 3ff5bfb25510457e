#!/usr/bin/env python3
"""Lists Swift source files over 400 lines and functions over 60 lines (the house limits).

Usage: scripts/sizes.py [DIR ...]   (default: Sources)
Exit status 1 when anything is over, unless it is named in scripts/size-exceptions.txt
("path" or "path:function", one a line, with the reason after a '#').
"""
import os, re, sys

FILE_LIMIT, FUNC_LIMIT = 400, 60
DECL = re.compile(r'^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|private|fileprivate|internal|package|static|nonisolated|override|mutating|final|@discardableResult)\s+)*(func\s+(\w+)|init\??|deinit|subscript)\b')

def strip(line):
    """The line without string literals and // comments (good enough for brace counting)."""
    out, i, quote = [], 0, False
    while i < len(line):
        c = line[i]
        if quote:
            if c == '\\': i += 2; continue
            if c == '"': quote = False
        elif c == '"': quote = True
        elif line.startswith('//', i): break
        else: out.append(c)
        i += 1
    return ''.join(out)

def functions(lines):
    for start, line in enumerate(lines):
        m = DECL.match(line)
        if not m: continue
        name = m.group(2) or m.group(1).split('(')[0]
        depth, opened = 0, False
        for end in range(start, len(lines)):
            text = strip(lines[end])
            if not opened and '{' not in text and end > start + 8: break  # a protocol requirement
            for c in text:
                if c == '{': depth += 1; opened = True
                elif c == '}': depth -= 1
            if opened and depth <= 0:
                yield name, start + 1, end - start + 1
                break

def main():
    roots = sys.argv[1:] or ['Sources']
    exceptions = set()
    if os.path.exists('scripts/size-exceptions.txt'):
        for line in open('scripts/size-exceptions.txt'):
            line = line.split('#')[0].strip()
            if line: exceptions.add(line)
    over = []
    for root in roots:
        for dirpath, _, names in os.walk(root):
            for n in sorted(names):
                if not n.endswith('.swift'): continue
                path = os.path.join(dirpath, n)
                lines = open(path, encoding='utf-8').read().split('\n')
                if len(lines) > FILE_LIMIT and path not in exceptions:
                    over.append(f'{path}: {len(lines)} lines')
                for name, at, length in functions(lines):
                    if length > FUNC_LIMIT and f'{path}:{name}' not in exceptions:
                        over.append(f'{path}:{at}: {name} is {length} lines')
    print('\n'.join(over) or 'all files and functions within the limits')
    return 1 if over else 0

sys.exit(main())

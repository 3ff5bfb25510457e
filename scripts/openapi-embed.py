#!/usr/bin/env python3
"""Writes docs/openapi.yaml as JSON into the server's source, which serves it at /api/openapi.json.

Usage: scripts/openapi-embed.py [--check]
With --check, writes nothing and exits 1 when the embedded copy differs from the YAML (CI runs
this, so the description served and the one in docs/ cannot drift apart). Needs PyYAML (the
.venv-api that scripts/install-deps.sh makes has it).
"""
import json, os, sys
import yaml

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
source = os.path.join(root, "docs", "openapi.yaml")
target = os.path.join(root, "Sources", "DocsyncServer", "Routes", "OpenAPIDescription.swift")

with open(source) as f:
    description = yaml.safe_load(f)


def empty_values(node, path="#"):
    """Paths of keys whose value is null: in a YAML flow mapping, an unquoted comma inside a
    value (`{description: A, b}`) silently makes a key `b` with no value."""
    if isinstance(node, dict):
        for key, value in node.items():
            if value is None:
                yield f"{path}/{key}"
            yield from empty_values(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from empty_values(value, f"{path}/{i}")


if empty := list(empty_values(description)):
    sys.exit("docs/openapi.yaml: keys without a value (a comma unquoted in a flow mapping?): " + ", ".join(empty))
text = json.dumps(description, separators=(",", ":"), ensure_ascii=False, sort_keys=False)
if "\"##" in text:
    sys.exit("the description holds a quote followed by ##, which would end the Swift raw string")
swift = f'''// Written by scripts/openapi-embed.py from docs/openapi.yaml: edit the YAML, then run the script.

extension ServiceRoutes {{
    /// docs/openapi.yaml as JSON, served at `GET /api/openapi.json`.
    static let openAPIDescription = ##"{text}"##
}}
'''
if "--check" in sys.argv[1:]:
    current = open(target).read() if os.path.exists(target) else ""
    if current != swift:
        sys.exit(f"{os.path.relpath(target, root)} is not docs/openapi.yaml as it is now: run scripts/openapi-embed.py")
    print("the served description is docs/openapi.yaml")
else:
    with open(target, "w") as f:
        f.write(swift)
    print(f"wrote {os.path.relpath(target, root)} ({len(text)} bytes of JSON)")

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

#!/usr/bin/env python3
"""After a fuzz run with one kind of token, reads every document back with the full token and
checks, from the store's side, that the token wrote nothing it may not: each document records
the name of the token that last wrote it (`updated_by`).

Usage: DOCSYNC_FUZZ_TOKEN=<a token with every right> audit.py BASE_URL KIND
"""
import json
import os
import sys
import urllib.request

base, kind = sys.argv[1:3]
token = os.environ["DOCSYNC_FUZZ_TOKEN"]


def every_document():
    since, documents = 0, []
    while True:
        request = urllib.request.Request(
            base + "/api/sync", data=json.dumps({"since": since}).encode(), method="POST",
            headers={"Authorization": "Token token=" + token, "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as reply:
            page = json.load(reply)
        documents += page["documents"]["success"]
        if not page["more"]:
            return documents
        since = page["cursor"]


def wrong(doc):
    """Why this document, last written by the token under test, should not have been; or None."""
    doc_type, rev = doc.get("docType"), doc.get("rev")
    if kind == "reader":
        return "a read-only token wrote it"
    if kind == "noter" and doc_type != "note":
        return "a token that writes only notes wrote it"
    if kind == "inbox" and (doc_type != "report" or rev != 1):
        return "a create-only token for reports changed it" if doc_type == "report" else "a create-only token for reports wrote it"
    return None


documents = every_document()
findings = [(d.get("id"), d.get("docType"), why) for d in documents if d.get("updated_by") == kind and (why := wrong(d))]
for finding in findings:
    print("audit: document %r of docType %r: %s" % finding, file=sys.stderr)
written = sum(1 for d in documents if d.get("updated_by") == kind)
print(f"audit ({kind}): {len(documents)} documents in the store, {written} last written by this token, {len(findings)} it may not have written")
sys.exit(1 if findings else 0)

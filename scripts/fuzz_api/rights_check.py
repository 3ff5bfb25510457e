"""schemathesis hooks for scripts/fuzz-api.sh: a check that a token is never let do or read what
its rights do not give (docs/OPERATIONS.md, tokens and their rights).

The kind of token under test is DOCSYNC_FUZZ_KIND: full (every right), reader (read:*), noter
(read:note write:note) or inbox (create:report). Each reply is judged by what that token may do;
the run's writes are audited afterwards by audit.py from the store's side as well.
"""
import json
import os

import schemathesis

import ast_lock  # noqa: F401  (one ast.parse at a time: see its docstring)

KIND = os.environ.get("DOCSYNC_FUZZ_KIND", "full")
READS = {"full": None, "reader": None, "noter": {"note"}, "inbox": set()}[KIND]  # None: every docType
WRITES = {"full": None, "reader": set(), "noter": {"note"}, "inbox": set()}[KIND]
CREATES = {"full": None, "reader": set(), "noter": {"note"}, "inbox": {"report"}}[KIND]


def may(grant, doc_type):
    return grant is None or doc_type in grant


def body(response):
    try:
        return json.loads(response.content or b"null")
    except ValueError:
        return None


def sent_doc_type(case):
    return case.body.get("docType") if isinstance(case.body, dict) else None


@schemathesis.check
def token_rights_hold(ctx, response, case):
    """A 2xx is only ever an answer to what the token may do; nothing it may not read comes back."""
    status, method, path = response.status_code, case.method.upper(), case.operation.path
    if not 200 <= status < 300:
        return
    reply = body(response)
    if method in ("PUT", "POST", "DELETE") and path == "/api/document":
        data = reply.get("data") if isinstance(reply, dict) else None
        doc_type = data.get("docType") if isinstance(data, dict) else sent_doc_type(case)
        created = method == "POST" or (isinstance(data, dict) and data.get("rev") == 1)
        allowed = may(CREATES, doc_type) if created and method != "DELETE" else may(WRITES, doc_type)
        if not allowed:
            raise AssertionError(f"{KIND} token: {method} {path} of docType {doc_type!r} was accepted ({status})")
    if method == "POST" and path == "/api/app/upload" and WRITES is not None:
        data = reply.get("data") if isinstance(reply, dict) else None
        if not (isinstance(data, dict) and may(WRITES, data.get("docType"))):
            raise AssertionError(f"{KIND} token: an upload was accepted ({status})")
    if path in ("/api/stats", "/metrics") and READS is not None:
        raise AssertionError(f"{KIND} token: {path} answered {status}; its counts are for tokens that read everything")
    for doc in documents_read(method, path, reply):
        doc_type = doc.get("docType")
        if not may(READS, doc_type) and not may(CREATES, doc_type):
            raise AssertionError(f"{KIND} token: {method} {path} returned a document of docType {doc_type!r}")


def documents_read(method, path, reply):
    """The documents a reply shows the caller."""
    if not isinstance(reply, dict):
        return []
    if method == "GET" and path.startswith("/api/document"):
        data = reply.get("data")
        return [d for d in (data if isinstance(data, list) else [data]) if isinstance(d, dict)]
    if method == "POST" and path == "/api/sync":
        documents = reply.get("documents") or {}
        return [d for d in documents.get("success") or [] if isinstance(d, dict) and "docType" in d]
    return []


# Generated values steered, some of the time, to the documents and docTypes the server holds
# (n1: note, s1: secret, r1: report; scripts/fuzz-api.sh stores them): random ids and docTypes
# would almost never meet a document, and a token's limits would go untried. Only a value that
# is valid already is replaced, by another valid one, so a negative case stays negative; the
# choice is a function of the value, so a failure replays.
TEMPTING = [("n1", "note"), ("s1", "secret"), ("r1", "report")]


def valid_doc_type(value):
    return isinstance(value, str) and 0 < len(value.encode()) <= 128 and value not in (".", "..") \
        and not any(c in "/\\" or ord(c) < 0x20 or ord(c) == 0x7F for c in value)


def valid_id(value):
    return isinstance(value, str) and 0 < len(value) <= 128 and value.isascii() and value[0].isalnum() \
        and all(c.isalnum() or c in "_-" for c in value)


def pick(value):
    n = sum(map(ord, value)) % 5
    return TEMPTING[n] if n < len(TEMPTING) else None


def steer(doc, id_key="id", type_key="docType"):
    if not isinstance(doc, dict):
        return doc
    doc = dict(doc)
    if valid_doc_type(doc.get(type_key)) and (choice := pick(doc[type_key])):
        doc[type_key] = choice[1]
        if valid_id(doc.get(id_key)) and len(doc[id_key]) % 2 == 0:
            doc[id_key] = choice[0]
    return doc


@schemathesis.hook
def map_body(context, body):
    if not isinstance(body, dict):
        return body
    body = steer(body)
    if isinstance(body.get("documents"), list):
        body["documents"] = [steer(d) for d in body["documents"]]
    if isinstance(body.get("targetDocument"), dict):
        body["targetDocument"] = steer(body["targetDocument"], "targetId", "targetDocType")
    return body


@schemathesis.hook
def map_path_parameters(context, parameters):
    if not isinstance(parameters, dict):
        return parameters
    parameters = dict(parameters)
    if valid_doc_type(parameters.get("docType")) and (choice := pick(parameters["docType"])):
        parameters["docType"] = choice[1]
    if valid_id(parameters.get("id")) and (choice := pick(parameters["id"])):
        parameters["id"] = choice[0]
    return parameters

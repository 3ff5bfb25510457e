"""One `ast.parse` at a time in the fuzzing process, so a Python bug cannot fail a run.

CPython before 3.11.8 (Debian 12 ships 3.11) keeps the AST constructor's recursion depth in
one place for the whole interpreter (gh-106905). Two threads parsing at once overwrite each
other's depth, and the second to finish fails with "SystemError: AST constructor recursion
depth mismatch". schemathesis runs with `--workers 2`, and Hypothesis parses the source of each
lambda strategy it describes, so a run failed on it about one time in three. Parsing under a
lock takes that interleaving away; nothing in the run depends on parses being parallel.
"""
import ast
import threading

_parse = ast.parse
_lock = threading.Lock()


def _locked_parse(*args, **kwargs):
    with _lock:
        return _parse(*args, **kwargs)


# Every caller found (Hypothesis's lambda descriptions, its pretty printer, schemathesis) looks
# up `ast.parse` on the module when it calls, so replacing the attribute reaches them all.
ast.parse = _locked_parse

"""`ast.parse` made safe from a Python bug that failed fuzzing runs, loaded with the hooks.

CPython before 3.11.8 keeps the AST constructor's recursion depth in one place for the whole
interpreter (gh-106905), and checks it at the end of each parse: "SystemError: AST constructor
recursion depth mismatch". schemathesis runs with `--workers 2`, and Hypothesis parses the source
of every lambda strategy it describes, so about one run in three failed on it, and most runs on
a loaded machine. Two things keep it away:
- one parse at a time (two threads parsing at once overwrite each other's depth: a two-thread
  reproduction fails 65 times in 600 parses without the lock, never with it);
- a parse that still fails so is made once more on a thread of its own, from a fresh stack (the
  check failed under the lock too, always from deep in Hypothesis's stack).
Any other error, or a second failure, is raised as it was.
"""
import ast
import atexit
import sys
import threading

_parse = ast.parse
_lock = threading.Lock()
_retried = 0  # parses made again; said at exit, so a run shows how often the bug came


def _fresh_thread_parse(args, kwargs):
    box = {}

    def run():
        try:
            box["tree"] = _parse(*args, **kwargs)
        except BaseException as error:  # handed back to the caller's thread as it was
            box["error"] = error

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["tree"]


def _safe_parse(*args, **kwargs):
    global _retried
    with _lock:
        try:
            return _parse(*args, **kwargs)
        except SystemError as error:
            if "recursion depth mismatch" not in str(error):
                raise
        _retried += 1
        return _fresh_thread_parse(args, kwargs)


@atexit.register
def _say_retries():
    if _retried:
        print(f"ast_lock: {_retried} parse(s) failed CPython's depth check and were made again", file=sys.stderr)


# Every caller found (Hypothesis's lambda descriptions, its pretty printer, schemathesis) looks
# up `ast.parse` on the module when it calls, so replacing the attribute reaches them all.
ast.parse = _safe_parse

# What parses source as it is first imported is imported here, once, while the hooks load and
# before schemathesis's workers start: anyio (from 4.16) builds its lazy imports from its own
# source with `compile(..., ast.PyCF_ONLY_AST)`, which the lock above does not cover, and
# schemathesis first imports it from a worker (its ASGI transport), where the same depth check
# failed a CI run ("Runtime Error" on POST /api/app/upload).
import anyio  # noqa: E402,F401
import schemathesis.transport.asgi  # noqa: E402,F401

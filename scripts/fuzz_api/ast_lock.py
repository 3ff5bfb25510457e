"""Python's AST made safe from a bug of CPython 3.11 that failed fuzzing runs, loaded with the hooks.

CPython before 3.11.8 keeps the AST constructor's recursion depth in one place for the whole
interpreter (gh-106905), and checks it at the end of each parse that returns a tree: "SystemError:
AST constructor recursion depth mismatch". schemathesis runs with `--workers 2`, Hypothesis parses
the source of every lambda strategy it describes, and anyio (from 4.16) parses its own source the
first time it is imported, from a worker: about one run in three failed on it, and most runs on a
loaded machine. Every such parse goes through `compile` with `ast.PyCF_ONLY_AST` (`ast.parse`
calls it so), and that is where two things keep the bug away:
- one parse at a time (two threads parsing at once overwrite each other's depth: a two-thread
  reproduction fails 65 times in 600 parses without the lock, never with it);
- a parse that still fails so is made once more on a thread of its own, from a fresh stack (the
  check failed under the lock too, always from deep in Hypothesis's stack).
Any other error, or a second failure, is raised as it was; a compile to code is left alone.
"""
import ast
import atexit
import builtins
import sys
import threading

_compile = builtins.compile
_lock = threading.Lock()
_retried = 0  # parses made again; said at exit, so a run shows how often the bug came


def _fresh_thread_parse(args, kwargs):
    box = {}

    def run():
        try:
            box["tree"] = _compile(*args, **kwargs)
        except BaseException as error:  # handed back to the caller's thread as it was
            box["error"] = error

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["tree"]


def _flags(args, kwargs):
    return kwargs.get("flags", args[3] if len(args) > 3 else 0)


def _safe_compile(*args, **kwargs):
    global _retried
    if not _flags(args, kwargs) & ast.PyCF_ONLY_AST:
        return _compile(*args, **kwargs)
    with _lock:
        try:
            return _compile(*args, **kwargs)
        except SystemError as error:
            if "recursion depth mismatch" not in str(error):
                raise
        _retried += 1
        return _fresh_thread_parse(args, kwargs)


@atexit.register
def _say_retries():
    if _retried:
        print(f"ast_lock: {_retried} parse(s) failed CPython's depth check and were made again", file=sys.stderr)


# `ast.parse`, Hypothesis, schemathesis and anyio all call `compile` by its builtin name when they
# parse, so replacing the builtin reaches them all, whenever they were imported.
builtins.compile = _safe_compile

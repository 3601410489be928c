"""The per-file limits for analyses that run in the calling process: `dpmlens cc` (one file per
compiler invocation, inside the kernel build) and `check --patch/--commits` (the text before and
after each patch, never a file on disk the worker pool could take).

`check` puts each file in a worker process it can kill (check.py); here there is none, so:
- a file nested beyond `limits.NESTING_DEPTH` is refused before parsing (nesting.py);
- the analysis runs under a SIGALRM timer of `limits.FILE_SECONDS`, which stops Python code
  anywhere. It cannot stop tree-sitter inside one parse (C code), which is linear in the size
  and bounded by `limits.SOURCE_BYTES`; the rules, where the time of a pathological file goes,
  are Python. Off the main thread, or without SIGALRM, only the nesting check applies.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from typing import TypeVar

from dpmlens.core import limits
from dpmlens.core.nesting import EditedNesting, too_deep

T = TypeVar("T")
_RETRY_SECONDS = 0.05


class Skipped(Exception):
    """The file was not analyzed; the message says which limit and how to raise it."""


class _Expired(BaseException):  # not an Exception: a checker's `except Exception` must not eat it
    pass


def refusal(source: bytes, nesting: EditedNesting | None = None) -> str | None:
    """Why a text already in memory is not analyzed at all (its size, its nesting), or None.
    `nesting`: the nesting check of the document `source` is the latest text of."""
    if len(source) > limits.SOURCE_BYTES.value:
        return limits.SOURCE_BYTES.exceeded(f"{limits.human_bytes(len(source))}:")
    return nesting.too_deep(source) if nesting is not None else too_deep(source)


def within_limits(source: bytes, run: Callable[[], T]) -> T:
    """`run()` for one file's `source`, or Skipped when the file is over a limit."""
    if (reason := refusal(source)) is not None:
        raise Skipped(reason)
    seconds = limits.FILE_SECONDS.value
    if threading.current_thread() is not threading.main_thread() or not hasattr(
        signal, "setitimer"
    ):
        return run()

    stopped = False

    def expire(_signum: int, _frame: object) -> None:
        if not stopped:
            raise _Expired

    old = signal.signal(signal.SIGALRM, expire)
    # Repeating: a raise that lands in a GC callback or a finalizer is swallowed by Python
    # ("Exception ignored in ..."); the next tick raises again, in the code that runs on.
    signal.setitimer(signal.ITIMER_REAL, seconds, _RETRY_SECONDS)
    try:
        try:
            return run()
        finally:  # a tick that lands here, before `stopped`, is caught just below
            stopped = True
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _Expired:
        raise Skipped(limits.FILE_SECONDS.exceeded("analysis:")) from None
    finally:
        signal.signal(signal.SIGALRM, old)

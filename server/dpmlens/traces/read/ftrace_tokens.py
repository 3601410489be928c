"""The ftrace reader's event scan: where its events are in a block, and their timestamps.

`scanner(event, plain)` gives tokens(buf, limit): per match of `event` in buf[:limit], in
order, a tuple (s, e, le, p, ls, ts):
  s   where the match starts (its ": "), e where it ends;
  le  the end of the event's line (before a "\\r"): for a callback event, e itself;
  p   the last space before s (-1: none), ls the start of the line before p (the task
      column is buf[ls:p]);
  ts  float(buf[p + 1 : s]), None when that is not a number.
For rpm_* events (read elsewhere) le, p and ls are 0 and ts is None.

The Python scan below is the reference. _ftrace_tokens.c does the same in C when `make` could
build it (server/tools/build_ftrace_tokens.py): the per-event positions and float() were a
third of the reader's time (BENCHMARKS.md, "Session 3: trace reader throughput").
DPMLENS_PURE_SCAN=1 makes the reader use the Python scan; tests/test_ftrace_tokens.py holds
the two equal on the real captures.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator

Token = tuple[int, int, int, int, int, "float | None"]
Tokens = Callable[[bytes, int], Iterable[Token]]

_R, _P, _D, _CR = ord("r"), ord("p"), ord("d"), ord("\r")


def python_tokens(event: re.Pattern[bytes]) -> Tokens:
    def tokens(buf: bytes, limit: int) -> Iterator[Token]:
        rfind = buf.rfind
        find = buf.find
        for m in event.finditer(buf, 0, limit):
            s, e = m.span()
            c = buf[s + 2]
            if c == _R and buf[s + 3] == _P:
                yield s, e, 0, 0, 0, None
                continue
            le = e if c == _D else find(b"\n", e)
            if buf[le - 1] == _CR:
                le -= 1
            p = rfind(b" ", 0, s)
            try:
                ts: float | None = float(buf[p + 1 : s])
            except ValueError:
                ts = None
            yield s, e, le, p, rfind(b"\n", 0, p) + 1, ts

    return tokens


def c_tokens(plain: Iterable[bytes]) -> Tokens | None:
    """The C scan, or None when it was not built. `plain`: the names matched as "<name>: "
    (the callback, suspend_resume and trace_marker forms are written into the C)."""
    try:
        from dpmlens.traces.read import _ftrace_tokens  # type: ignore[attr-defined]
    except ImportError:
        return None
    names = tuple(plain)
    if names != _configured[0]:  # (a table in the module: set once per process)
        _ftrace_tokens.configure(names)
        _configured[0] = names
    tokens: Tokens = _ftrace_tokens.tokens
    return tokens


_configured: list[tuple[bytes, ...] | None] = [None]


def scanner(event: re.Pattern[bytes], plain: Iterable[bytes]) -> Tokens:
    if os.environ.get("DPMLENS_PURE_SCAN") != "1":
        fast = c_tokens(plain)
        if fast is not None:
            return fast
    return python_tokens(event)

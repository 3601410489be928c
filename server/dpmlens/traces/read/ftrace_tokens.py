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

`pairing()` is the C scan with the delay kprobes' call/return pairing, the common case of the
callbacks' start/end pairing and the -dev probe returns' search for their calls done in C as
well (_ftrace_tokens.c: pairing_step, callback_start, callback_end, other_return): it gives the
same tokens as an iterator, less the lines it paired itself, on the reader's own state and in
the reader's order (the kprobe lines were more than half of the reader's time: BENCHMARKS.md,
"Session 4"; the callbacks and the -dev returns most of the rest, "Session 5"). Without it
(no C, DPMLENS_PURE_SCAN=1 or DPMLENS_PY_PAIRING=1) ftrace._scan's Python loop pairs them: the
reference.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

Token = tuple[int, int, int, int, int, "float | None"]
Tokens = Callable[[bytes, int], Iterable[Token]]
# pairing(buf, limit, stamps, state): `stamps` the block's sleepgraph header positions,
# `state` (thread cache, probe cache, not-delay func ids, open delays, threads in a delay,
# Assembler.delay, and the Assembler's open_on_thread, pending, delay_acc, activity_outside,
# the Assembler, its open_members, the Collector's cycle_base and file_id, a list the
# samples it appended and their largest cycle are written into once the block is done, the
# func ids of the other -dev probes, the Assembler's cycles and outside_acc, the store's
# activity spans, and Collector.skip_many), see ftrace._scan
Pairing = Callable[[bytes, int, list[int], tuple[Any, ...]], Iterator[Token]]

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


def _module(plain: Iterable[bytes], delays: Iterable[bytes] | None,
            others: Iterable[bytes] = ()) -> Any:
    """The C module configured with these names, or None when it was not built. `plain`: the
    names matched as "<name>: " (the callback, suspend_resume and trace_marker forms are
    written into the C); `delays`: those of them pairing() pairs, `others`: the -dev probes'
    returns whose calls it finds (None: as configured before, tokens() does not read them)."""
    try:
        from dpmlens.traces.read import _ftrace_tokens  # type: ignore[attr-defined]
    except ImportError:
        return None
    done = _configured[0]
    names = ((tuple(plain), tuple(delays), tuple(others)) if delays is not None
             else done if done is not None and done[0] == tuple(plain)
             else (tuple(plain), (), ()))
    if names != done:  # (a table in the module: set once per process)
        _ftrace_tokens.configure(*names)
        _configured[0] = names
    return _ftrace_tokens


def c_tokens(plain: Iterable[bytes]) -> Tokens | None:
    """The C scan, or None when it was not built."""
    module = _module(plain, None)
    return None if module is None else module.tokens  # type: ignore[no-any-return]


_configured: list[tuple[tuple[bytes, ...], tuple[bytes, ...], tuple[bytes, ...]] | None] = [None]


def scanner(event: re.Pattern[bytes], plain: Iterable[bytes]) -> Tokens:
    if os.environ.get("DPMLENS_PURE_SCAN") != "1":
        fast = c_tokens(plain)
        if fast is not None:
            return fast
    return python_tokens(event)


def pairing(plain: Iterable[bytes], delays: Iterable[bytes],
            others: Iterable[bytes] = ()) -> Pairing | None:
    """The C scan that pairs the `delays` kprobe lines, the callbacks and the `others` -dev
    probe returns itself, or None (not built, or DPMLENS_PURE_SCAN=1, or DPMLENS_PY_PAIRING=1:
    the C scan with the pairing in Python): then the reader pairs them in Python."""
    if "1" in (os.environ.get("DPMLENS_PURE_SCAN"), os.environ.get("DPMLENS_PY_PAIRING")):
        return None
    module = _module(plain, delays, others)
    return None if module is None else module.pairing  # type: ignore[no-any-return]


def delay_tables() -> tuple[Any, Any]:
    """Assembler.open_delays and in_delay while pairing() pairs: (thread, func) -> (t0,
    requested, nested) and the threads inside a delay, in C tables
    (_ftrace_tokens.OpenDelays: pop(key, default) and d[key] = value; ThreadSet: `t in s`,
    add, discard: all ftrace._scan does with the dict and the set), which the pairing reads
    without key tuples, value tuples or set lookups. Only once pairing() gave the C pairing."""
    from dpmlens.traces.read import _ftrace_tokens  # type: ignore[attr-defined]

    return _ftrace_tokens.OpenDelays(), _ftrace_tokens.ThreadSet()

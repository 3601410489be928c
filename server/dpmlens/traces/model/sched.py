"""Thread states from the scheduler's events: who ran, who waited for a CPU, who slept.

`sched_switch` says when a thread left a CPU (preempted: prev_state R/R+, still runnable; else
blocked) and when one got it; `sched_waking` when a blocked thread was made runnable, and by
whom: the task the event ran on, unless it ran in interrupt context (a device or a timer woke
it: the flags column's h/s/H) or on the idle task. Kept per (file, thread): every boot of a
multi-file capture has its own pids and clock.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterator

RUN, READY, BLOCKED = 0, 1, 2
# what an event makes of the thread; WOKEN makes a blocked thread READY (a wake-up of a thread
# still on its CPU, between setting its sleep state and schedule(), changes nothing)
_SWITCH_IN, _PREEMPTED, _SLEPT, _WOKEN = 0, 1, 2, 3
EXTERNAL = -1  # the waker of a thread woken by an interrupt, a timer or the idle task


class _Track:
    __slots__ = ("times", "kinds", "wakers", "ordered", "after")

    def __init__(self) -> None:
        self.times = array("d")
        self.kinds = array("b")
        self.wakers = array("l")
        self.ordered = True
        self.after: array[int] | None = None  # the state after each event (from the first)


class SchedLog:
    def __init__(self) -> None:
        self._tracks: dict[tuple[int, int], _Track] = {}
        self.events = 0

    def _add(self, file: int, thread: int, ts: float, kind: int, waker: int) -> None:
        t = self._tracks.get((file, thread))
        if t is None:
            t = self._tracks[(file, thread)] = _Track()
        t.after = None
        if t.times and ts < t.times[-1]:
            t.ordered = False  # per-CPU buffers interleave: sorted once, on first use
        t.times.append(ts)
        t.kinds.append(kind)
        t.wakers.append(waker)
        self.events += 1

    def switch(self, file: int, ts: float, prev: int, prev_runnable: bool, nxt: int) -> None:
        """A context switch; -1 for a side that is the idle task (not tracked)."""
        if prev >= 0:
            self._add(file, prev, ts, _PREEMPTED if prev_runnable else _SLEPT, EXTERNAL)
        if nxt >= 0:
            self._add(file, nxt, ts, _SWITCH_IN, EXTERNAL)

    def woken(self, file: int, ts: float, thread: int, waker: int) -> None:
        self._add(file, thread, ts, _WOKEN, waker)

    def has(self, file: int, thread: int) -> bool:
        return (file, thread) in self._tracks

    def _track(self, file: int, thread: int) -> _Track | None:
        t = self._tracks.get((file, thread))
        if t is not None and not t.ordered:
            order = sorted(range(len(t.times)), key=t.times.__getitem__)  # stable: ties keep
            t.times = array("d", (t.times[i] for i in order))              # the file's order
            t.kinds = array("b", (t.kinds[i] for i in order))
            t.wakers = array("l", (t.wakers[i] for i in order))
            t.ordered = True
        if t is not None and t.after is None and t.times:
            state = _before(t.kinds[0])
            after = array("b")
            for kind in t.kinds:
                state = _after(kind, state)
                after.append(state)
            t.after = after
        return t

    def states(self, file: int, thread: int, start: float, end: float
               ) -> Iterator[tuple[float, float, int, int]]:
        """The thread's states over [start, end]: (from, to, state, waker) with waker the
        thread that ended a BLOCKED stretch (EXTERNAL: an interrupt, a timer; -2: not seen
        before `end`). The state before the thread's first event is read from that event (a
        switch-in follows READY, a wake-up BLOCKED, a switch-out RUN). Nothing for a thread
        without events."""
        t = self._track(file, thread)
        if t is None or not t.times or end <= start:
            return
        times, kinds = t.times, t.kinds
        k = bisect.bisect_right(times, start)
        state = t.after[k - 1] if k > 0 and t.after is not None else _before(kinds[0])
        at = start
        n = len(times)
        while at < end:
            # the next event that changes the state (a wake-up of a running thread does not)
            while k < n and _after(kinds[k], state) == state:
                k += 1
            nxt = times[k] if k < n else end
            to = min(nxt, end)
            if to > at:
                waker = -2
                if state == BLOCKED:
                    waker = t.wakers[k] if k < n and kinds[k] == _WOKEN else (
                        EXTERNAL if k < n else -2)
                yield at, to, state, waker
            if k >= n or nxt >= end:
                return
            state = _after(kinds[k], state)
            at = nxt
            k += 1


def _after(kind: int, state: int) -> int:
    if kind == _SWITCH_IN:
        return RUN
    if kind == _PREEMPTED:
        return READY
    if kind == _SLEPT:
        return BLOCKED
    return READY if state == BLOCKED else state  # _WOKEN


def _before(kind: int) -> int:
    """The state before an event, from what the event is."""
    if kind == _SWITCH_IN:
        return READY
    if kind == _WOKEN:
        return BLOCKED
    return RUN

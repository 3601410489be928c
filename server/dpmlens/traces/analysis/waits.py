"""What a callback waited for, from the scheduler's events (traces.model.sched).

A callback's thread is on a CPU (its work), runnable without one (CPU contention: work too,
just late), or blocked. Blocked until an interrupt or a timer woke it, it waited for a device
or a sleep: that time does not change with the number of callbacks running beside it. Blocked
until another thread woke it (a libata port waiting for its scsi_eh thread, a mutex's
holder), it waited for that thread's work, which is followed the same way over the wait.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dpmlens.traces.model.sample import SampleStore
from dpmlens.traces.model.sched import BLOCKED, EXTERNAL, RUN, SchedLog

if TYPE_CHECKING:
    from dpmlens.traces.analysis.handoffs import Running

DEPTH = 3  # threads followed from a wait (the waker of the waker of the waker)


# what a stretch of a callback's time was, as the walk sees it
ON_CPU, RUNNABLE, HELPERS, DEVICE, OTHER, CALLBACK = range(6)
_Visit = Callable[[float, float, int, "str | None"], None]


def _walk(log: SchedLog, file: int, thread: int, start: float, end: float, depth: int,
          visit: _Visit, helper: bool = False, running: Running | None = None,
          own: str = "") -> None:
    """Calls visit(from, to, what, who) over [start, end]: blocked stretches are followed
    into the thread that ended them (`depth` more hops), unless an interrupt or a timer did,
    or (with `running`) that thread was running another device's callback when it did: then
    the stretch was a wait for that callback (who: its device; traces.analysis.handoffs)."""
    for a, b, state, waker in log.states(file, thread, start, end):
        if state == BLOCKED:
            if waker == EXTERNAL or waker == -2:
                visit(a, b, DEVICE, None)
                continue
            other = running.at(file, waker, b) if running is not None else None
            if other is not None and other[0] != own and waker != thread:
                visit(a, b, CALLBACK, other[0])
            elif depth > 0 and waker != thread and log.has(file, waker):
                _walk(log, file, waker, a, b, depth - 1, visit, True, running, own)
            else:
                visit(a, b, OTHER, None)
        else:
            visit(a, b, HELPERS if helper else ON_CPU if state == RUN else RUNNABLE, None)


def external_waits(log: SchedLog, file: int, thread: int, start: float, end: float,
                   depth: int = DEPTH) -> list[tuple[float, float]] | None:
    """The stretches of [start, end] in which `thread`, or the threads it waited for, waited
    for something other than a CPU; None when the capture has no scheduler events of the
    thread. A chain deeper than `depth` counts as work (as without these events)."""
    if not log.has(file, thread):
        return None
    out: list[tuple[float, float]] = []

    def visit(a: float, b: float, what: int, who: str | None) -> None:
        if what == DEVICE:
            out.append((a, b))

    _walk(log, file, thread, start, end, depth, visit)
    return out


@dataclass
class TimeSplit:
    """Where one callback's time went, in microseconds."""

    on_cpu: float = 0.0  # its thread ran
    runnable: float = 0.0  # its thread waited for a CPU
    helpers: float = 0.0  # it waited for threads that ran or waited for a CPU (their work)
    device: float = 0.0  # it (or a thread it waited for) waited for a device or a timer
    other: float = 0.0  # it waited for threads not followed (deeper, or without events)
    # it waited for another device's callback (woken by that callback's thread: a lock's
    # hand-over, a completion; traces.analysis.handoffs), per device
    callbacks: float = 0.0
    waited_for: dict[str, float] = field(default_factory=dict)


def split(log: SchedLog, file: int, thread: int, start: float, end: float,
          depth: int = DEPTH, running: Running | None = None, own: str = ""
          ) -> TimeSplit | None:
    """The callback's time by what its thread did; None without scheduler events of it.
    With `running`, a wait ended by another device's callback is a wait for that callback."""
    if not log.has(file, thread):
        return None
    sums = [0.0] * 6
    who_us: dict[str, float] = {}

    def visit(a: float, b: float, what: int, who: str | None) -> None:
        sums[what] += (b - a) * 1e6
        if who is not None:
            who_us[who] = who_us.get(who, 0.0) + (b - a) * 1e6

    _walk(log, file, thread, start, end, depth, visit, running=running, own=own)
    return TimeSplit(*sums, waited_for=who_us)


@dataclass
class GroupSplit:
    """A callback's median split over its runs that have scheduler events."""

    key: tuple[str, str, str, str, str]
    n: int
    median_us: float
    on_cpu: float
    runnable: float
    helpers: float
    device: float
    other: float
    callbacks: float = 0.0  # waiting for other devices' callbacks
    # the devices it waited for: (runs in which it did, the median wait in those)
    waited_for: dict[str, tuple[int, float]] = field(default_factory=dict)


_PARTS = ("on_cpu", "runnable", "helpers", "device", "other", "callbacks")


def group_splits(store: SampleStore, top: int) -> list[GroupSplit]:
    """The `top` callbacks by total time that have scheduler events, each split (medians
    of each part over its runs: they need not add up to the median time)."""
    log = store.sched
    if log is None:
        return []
    from dpmlens.traces.analysis.handoffs import Running

    running = Running(store)
    out = []
    for key, g in store.groups.items():
        parts: list[TimeSplit] = []
        times = []
        for i in range(len(g.durations)):
            if g.threads[i] < 0:
                continue
            s = split(log, g.files[i], g.threads[i], g.starts[i],
                      g.starts[i] + g.durations[i] / 1e6, running=running, own=key[1])
            if s is not None:
                parts.append(s)
                times.append(g.durations[i])
        if parts:
            meds = [statistics.median(getattr(p, f) for p in parts) for f in _PARTS]
            who = {d: (len(v), statistics.median(v)) for d in sorted(
                {d for p in parts for d in p.waited_for})
                for v in [[p.waited_for[d] for p in parts if d in p.waited_for]]}
            out.append((sum(times), GroupSplit(key, len(parts), statistics.median(times),
                                               *meds, waited_for=who)))
    out.sort(key=lambda x: -x[0])
    return [g for _, g in out[:top]]

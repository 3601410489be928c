"""What a callback waited for, from the scheduler's events (traces.model.sched).

A callback's thread is on a CPU (its work), runnable without one (CPU contention: work too,
just late), or blocked. Blocked until an interrupt or a timer woke it, it waited for a device
or a sleep: that time does not change with the number of callbacks running beside it. Blocked
until another thread woke it (a libata port waiting for its scsi_eh thread, a mutex's
holder), it waited for that thread's work, which is followed the same way over the wait.
"""

from __future__ import annotations

from dpmlens.traces.model.sched import BLOCKED, EXTERNAL, SchedLog

DEPTH = 3  # threads followed from a wait (the waker of the waker of the waker)


def external_waits(log: SchedLog, file: int, thread: int, start: float, end: float,
                   depth: int = DEPTH) -> list[tuple[float, float]] | None:
    """The stretches of [start, end] in which `thread`, or the threads it waited for, waited
    for something other than a CPU; None when the capture has no scheduler events of the
    thread. A chain deeper than `depth` counts as work (as without these events)."""
    if not log.has(file, thread):
        return None
    out: list[tuple[float, float]] = []
    _walk(log, file, thread, start, end, depth, out)
    return out


def _walk(log: SchedLog, file: int, thread: int, start: float, end: float, depth: int,
          out: list[tuple[float, float]]) -> None:
    for a, b, state, waker in log.states(file, thread, start, end):
        if state != BLOCKED:
            continue
        if waker == EXTERNAL or waker == -2:
            out.append((a, b))
        elif depth > 0 and waker != thread and log.has(file, waker):
            _walk(log, file, waker, a, b, depth - 1, out)

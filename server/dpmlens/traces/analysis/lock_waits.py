"""Per callback run: the time it waited for another device's callback, from whatever evidence
the capture has, and for whom.

The same evidence the what-if's locks rest on (traces.analysis.whatif._locks), in the same
order: the scheduler's events (a wake-up from another callback's thread:
traces.analysis.handoffs), else the delay kprobes (delay sites that never overlap across
threads: traces.analysis.exclusive), else the device names (USB devices behind one
controller whose resumes overlapped: each waited for the one that ended before it). The fleet
stores it per run, so a device that got slower only because it now waits for its siblings is
told apart from one whose own time grew.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from dpmlens.traces.analysis.delays import MeasuredDelay
from dpmlens.traces.analysis.exclusive import Exclusion
from dpmlens.traces.model.sched import SchedLog
from dpmlens.traces.model.timeline import Interval, PhaseRun

SCHED, KPROBES, NAMES = "scheduler events", "delay kprobes", "device names"


@dataclass
class CallbackWait:
    """What one callback run waited for in other callbacks."""

    us: float  # 0 for a lock member that never waited
    holders: list[str] = field(default_factory=list)  # the devices it waited for
    evidence: str = SCHED


def callback_waits(runs: list[PhaseRun], delays: list[MeasuredDelay],
                   sched: SchedLog | None) -> dict[int, CallbackWait]:
    """id(interval) -> its wait for other callbacks. With the scheduler's events every
    callback that waited has an entry; from a lock (kprobes, names) every member's run has
    one, waits of 0 included: the runs of other devices have none (nothing is known)."""
    if sched is not None and sched.events > 0:
        return _from_sched(runs, sched)
    from dpmlens.traces.analysis.exclusive import infer

    excl = infer(runs, delays)
    if excl is not None:
        return _from_lock(runs, excl, KPROBES)
    from dpmlens.traces.analysis.handoffs import end_order_spans, topology_locks

    out: dict[int, CallbackWait] = {}
    for lk in topology_locks(runs):
        out.update(_from_lock(runs, end_order_spans(runs, lk), NAMES))
    return out


def _from_sched(runs: list[PhaseRun], log: SchedLog) -> dict[int, CallbackWait]:
    from dpmlens.traces.analysis.handoffs import run_waits

    out: dict[int, CallbackWait] = {}
    for r in runs:
        per: dict[int, list[float]] = defaultdict(lambda: [0.0])
        who: dict[int, dict[str, float]] = defaultdict(dict)
        for w in run_waits(r, log):
            per[id(w.waiter)][0] += w.us
            h = who[id(w.waiter)]
            h[w.holder.device] = h.get(w.holder.device, 0.0) + w.us
        for k, (us,) in per.items():
            out[k] = CallbackWait(us, sorted(who[k], key=lambda d: -who[k][d]), SCHED)
    return out


def _from_lock(runs: list[PhaseRun], lock: Exclusion, evidence: str
               ) -> dict[int, CallbackWait]:
    """A member's wait runs from its start to when it took the lock; it waited for the
    members that held the lock in that stretch (the longest first)."""
    out: dict[int, CallbackWait] = {}
    for r in runs:
        members: list[Interval] = [iv for iv in r.intervals if id(iv) in lock.held]
        for iv in members:
            us = lock.wait.get(id(iv), 0.0)
            took = lock.held[id(iv)][0]
            who: dict[str, float] = {}
            if us > 0:
                for o in members:
                    if o is iv:
                        continue
                    hs, he = lock.held[id(o)]
                    share = min(he, took) - max(hs, iv.start)
                    if share > 0:
                        who[o.device] = who.get(o.device, 0.0) + share
            out[id(iv)] = CallbackWait(us, sorted(who, key=lambda d: -who[d]), evidence)
    return out

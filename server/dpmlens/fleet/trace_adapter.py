"""The one place the fleet reaches past `dpmlens.traces`' public names (its `__all__`).

The critical path, the measured delays and the runtime-PM log live in modules of the trace
package (traces/analysis, traces/model) that it does not export; every such import is here,
and so is every read of the sample store's internals (groups, steps, firmware, threads), so a
move changes this file only. Everything else in `dpmlens.fleet` imports `dpmlens.traces`
names only.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from dpmlens.model.phases import PHASES
from dpmlens.traces import TraceSet
from dpmlens.traces.analysis.critical import critical_path  # not exported by dpmlens.traces
from dpmlens.traces.analysis.delays import measured_delays  # not exported
from dpmlens.traces.analysis.lock_waits import callback_waits  # not exported
from dpmlens.traces.model.rpm_log import CALL_KINDS  # not exported
from dpmlens.traces.model.timeline import build_timeline  # not exported


@dataclass(frozen=True, slots=True)
class DelayRow:
    cycle: int
    func: str
    caller: str
    requested_ms: float
    calls: int
    total_us: float
    start: float
    owner: tuple[str, str, str] | None  # driver, device, phase of the callback it ran in
    on_path: bool


@dataclass(frozen=True, slots=True)
class RpmRow:
    device: str
    kind: str  # suspend, resume, idle
    start: float
    end: float  # nan: never returned within the capture
    ret: int
    usage: int
    thread: str


@dataclass(frozen=True, slots=True)
class StepRow:
    cycle: int
    name: str
    val: int
    start: float
    end: float


def callback_runs(ts: TraceSet) -> Iterator[tuple[Any, ...]]:
    """(driver, device, parent, phase, layer, start s, duration us, error, cycle, thread,
    path key) per callback run, from the sample store's column arrays; `path key` is what
    `critical_marks` returns for runs on a critical path."""
    threads = ts.store.threads
    for g in ts.groups.values():
        drv, dev, parent, phase, layer = g.key
        gid = id(g)
        durs, starts, cycles, thr, errs = g.durations, g.starts, g.cycles, g.threads, g.errors
        for i in range(len(durs)):
            yield (drv, dev, parent, phase, layer, starts[i], durs[i], errs.get(i, 0),
                   cycles[i], threads[thr[i]] if thr[i] >= 0 else "", (gid, i))


def steps(ts: TraceSet) -> list[StepRow]:
    return [StepRow(s.cycle, s.name, s.val, s.start, s.end) for s in ts.store.steps]


def firmware(ts: TraceSet) -> dict[int, tuple[float, float]]:
    """cycle -> (firmware suspend us, firmware resume us), where the capture has them."""
    return {f.cycle: (f.suspend_us, f.resume_us) for f in ts.store.firmware}


@dataclass(frozen=True, slots=True)
class WaitRow:
    """A callback run's wait for other devices' callbacks (traces.analysis.lock_waits)."""

    us: float
    holders: list[str]
    evidence: str


def critical_marks(ts: TraceSet) -> tuple[set[tuple[int, int]], list[DelayRow],
                                          dict[tuple[int, int], WaitRow]]:
    """(id(group), sample index) of every callback on its phase's critical path, the
    measured delays with their owning callback and whether it was on the path, and the
    callbacks' waits for each other (keyed like the path marks)."""
    runs = build_timeline(ts)
    on_path: set[tuple[int, int]] = set()
    on_ids: set[int] = set()
    for run in runs:
        if not run.intervals:
            continue
        for link in critical_path(run).chain:
            on_path.add((id(link.interval.group), link.interval.index))
            on_ids.add(id(link.interval))
    measured = measured_delays(ts, runs)
    ivs = {id(iv): iv for run in runs for iv in run.intervals}
    waits = {(id(ivs[k].group), ivs[k].index): WaitRow(w.us, w.holders, w.evidence)
             for k, w in callback_waits(runs, measured, ts.store.sched).items()}
    delays = []
    for d in measured:
        iv = d.interval
        owner = (iv.driver, iv.device, iv.phase) if iv is not None else None
        delays.append(DelayRow(d.cycle, d.func, d.caller, d.requested_ms, d.calls, d.total_us,
                               d.start, owner, iv is not None and id(iv) in on_ids))
    return on_path, delays, waits


def rpm_rows(ts: TraceSet) -> Iterator[RpmRow]:
    log: Any = getattr(ts.store, "rpm", None)
    if log is None:
        return
    threads = ts.store.threads
    for i in range(len(log.dev)):
        kind = log.kinds[i]
        t = log.thread[i]
        yield RpmRow(log.devices[log.dev[i]],
                     CALL_KINDS[kind] if 0 <= kind < len(CALL_KINDS) else str(kind),
                     log.start[i], log.end[i], log.ret[i], log.usage[i],
                     threads[t] if 0 <= t < len(threads) else "")


def is_resume_phase(phase: str) -> bool:
    p = PHASES.get(phase)
    return p is not None and p.direction == "up"

"""The one place the fleet reaches past `dpmlens.traces`' public names (its `__all__`).

The critical path, the measured delays and the runtime-PM log live in modules of the trace
package that it does not export; while that package is being reorganised, every such import
is here so a move changes this file only. Everything else in `dpmlens.fleet` imports
`dpmlens.traces` names only.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from dpmlens.model.phases import PHASES
from dpmlens.traces import TraceSet
from dpmlens.traces.critical import critical_path  # not exported by dpmlens.traces
from dpmlens.traces.delays import measured_delays  # not exported
from dpmlens.traces.rpm_events import CALL_KINDS  # not exported
from dpmlens.traces.timeline import build_timeline  # not exported


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


def critical_marks(ts: TraceSet) -> tuple[set[tuple[int, int]], list[DelayRow]]:
    """(id(group), sample index) of every callback on its phase's critical path, and the
    measured delays with their owning callback and whether it was on the path."""
    runs = build_timeline(ts)
    on_path: set[tuple[int, int]] = set()
    on_ids: set[int] = set()
    for run in runs:
        if not run.intervals:
            continue
        for link in critical_path(run).chain:
            on_path.add((id(link.interval.group), link.interval.index))
            on_ids.add(id(link.interval))
    delays = []
    for d in measured_delays(ts, runs):
        iv = d.interval
        owner = (iv.driver, iv.device, iv.phase) if iv is not None else None
        delays.append(DelayRow(d.cycle, d.func, d.caller, d.requested_ms, d.calls, d.total_us,
                               d.start, owner, iv is not None and id(iv) in on_ids))
    return on_path, delays


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

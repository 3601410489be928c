"""Measured delays (sleepgraph's kprobes on msleep, usleep_range, udelay, ...) attributed to
the callback they ran in and grouped per delay site (calling function, delay function,
requested value).

A delay belongs to the callback interval of the same thread that contains it; a delay inside
another delay of the same thread (schedule_timeout under msleep) is not counted twice. A site
is on the critical path when a call of it ran inside a callback of a phase's chain.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from dpmlens.traces.critical import CriticalPath
from dpmlens.traces.timeline import Interval, PhaseRun
from dpmlens.traces.traceset import TraceSet


@dataclass(frozen=True)
class MeasuredDelay:
    func: str  # msleep, usleep_range, udelay, ...
    caller: str  # the function that called it (from the _ret probe)
    cycle: int
    thread: int
    start: float  # seconds on the trace clock
    end: float
    requested_ms: float  # the argument (msleep time=, usleep_range min=), nan if unknown
    interval: Interval | None  # the callback it ran in, None outside callbacks

    @property
    def measured_us(self) -> float:
        return round((self.end - self.start) * 1e6, 3)


@dataclass
class DelaySite:
    func: str
    caller: str
    requested_ms: float
    calls: list[MeasuredDelay] = field(default_factory=list)
    on_path: int = 0  # calls inside a callback of a critical path
    on_path_us: float = 0.0
    static: dict | None = None  # the delay site in the source (traces.delay_sites)

    @property
    def total_us(self) -> float:
        return round(math.fsum(d.measured_us for d in self.calls), 3)

    @property
    def mean_us(self) -> float:
        return round(self.total_us / len(self.calls), 3)

    def cycles(self) -> int:
        return len({d.cycle for d in self.calls})

    def callbacks(self) -> Counter[tuple[str, str, str]]:
        return Counter((d.interval.driver, d.interval.device, d.interval.phase)
                       for d in self.calls if d.interval is not None)


def measured_delays(traces: TraceSet, runs: list[PhaseRun]) -> list[MeasuredDelay]:
    cols = traces.store.delays
    if not len(cols):
        return []
    by_thread: dict[tuple[int, int], list[Interval]] = defaultdict(list)
    for r in runs:
        for iv in r.intervals:
            by_thread[(r.cycle, iv.thread)].append(iv)
    starts: dict[tuple[int, int], list[float]] = {}
    for k, lst in by_thread.items():
        lst.sort(key=lambda iv: iv.start)
        starts[k] = [iv.start for iv in lst]
    rows = sorted(range(len(cols)), key=lambda i: (cols.threads[i], cols.starts[i],
                                                   -cols.ends[i]))
    out: list[MeasuredDelay] = []
    outer_end: dict[int, float] = {}
    for i in rows:
        tid, s, e = cols.threads[i], cols.starts[i], cols.ends[i]
        if outer_end.get(tid, -math.inf) >= e:  # nested in the previous delay of its thread
            continue
        outer_end[tid] = e
        key = (cols.cycles[i], tid)
        iv = None
        lst = by_thread.get(key)
        if lst is not None:
            j = bisect.bisect_right(starts[key], s) - 1
            if j >= 0 and lst[j].end >= e:
                iv = lst[j]
        out.append(MeasuredDelay(cols.names[cols.funcs[i]], cols.names[cols.callers[i]],
                                 cols.cycles[i], tid, s, e, cols.requested[i], iv))
    out.sort(key=lambda d: d.start)
    return out


def delay_sites(delays: list[MeasuredDelay], paths: list[CriticalPath]) -> list[DelaySite]:
    """Per (caller, function, requested value), largest measured total first."""
    on_path = {id(x.interval) for p in paths for x in p.chain}
    sites: dict[tuple[str, str, float], DelaySite] = {}
    for d in delays:
        req = d.requested_ms if d.requested_ms == d.requested_ms else -1.0
        site = sites.get((d.caller, d.func, req))
        if site is None:
            site = sites[(d.caller, d.func, req)] = DelaySite(d.func, d.caller, d.requested_ms)
        site.calls.append(d)
        if d.interval is not None and id(d.interval) in on_path:
            site.on_path += 1
            site.on_path_us += d.measured_us
    out = list(sites.values())
    out.sort(key=lambda s: (-s.total_us, s.caller, s.func))
    return out


def by_interval(delays: list[MeasuredDelay]) -> dict[int, list[MeasuredDelay]]:
    out: dict[int, list[MeasuredDelay]] = defaultdict(list)
    for d in delays:
        if d.interval is not None:
            out[id(d.interval)].append(d)
    return out


def call_text(d: MeasuredDelay | DelaySite) -> str:
    """msleep(40), usleep_range(10000, ...), udelay(?)."""
    req = d.requested_ms
    if req != req:
        return f"{d.func}(?)"
    if d.func.startswith("usleep"):
        return f"{d.func}({req * 1000:g}, ...)"
    return f"{d.func}({req:g})"

"""Measured delays (sleepgraph's kprobes on msleep, usleep_range, udelay, ...) attributed to
the callback they ran in and grouped per delay site (calling function, delay function,
requested value).

The importer sums the calls per callback run and site as it reads them (a delay belongs to
the callback open on its thread; one inside another delay of the same thread, schedule_timeout
under msleep, is not counted again): a MeasuredDelay is such a sum, or one per cycle, thread
and site outside callbacks. A site is on the critical path when a call of it ran inside a
callback of a phase's chain.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from dpmlens.traces.analysis.critical import CriticalPath
from dpmlens.traces.model.timeline import Interval, PhaseRun
from dpmlens.traces.model.traceset import TraceSet

_GROUP = operator.attrgetter("group")


@dataclass(frozen=True)
class MeasuredDelay:
    """The calls of one delay site in one callback run (or outside callbacks, per cycle and
    thread)."""

    func: str  # msleep, usleep_range, udelay, ...
    caller: str  # the function that called it (from the _ret probe)
    cycle: int
    thread: int
    start: float  # the first call's start, seconds on the trace clock
    end: float  # the last call's end
    requested_ms: float  # the argument (msleep time=, usleep_range min=), nan if unknown
    interval: Interval | None  # the callback it ran in, None outside callbacks
    calls: int = 1
    total_us: float = 0.0

    @property
    def measured_us(self) -> float:
        return round(self.total_us, 3)

    @property
    def mean_us(self) -> float:
        return self.total_us / self.calls


@dataclass
class DelaySite:
    func: str
    caller: str
    requested_ms: float
    rows: list[MeasuredDelay] = field(default_factory=list)
    on_path: int = 0  # calls inside a callback of a critical path
    on_path_us: float = 0.0
    static: dict | None = None  # the delay site in the source (traces.delay_sites)

    @property
    def calls(self) -> int:
        return sum(d.calls for d in self.rows)

    @property
    def total_us(self) -> float:
        return round(math.fsum(d.total_us for d in self.rows), 3)

    @property
    def mean_us(self) -> float:
        return round(self.total_us / self.calls, 3)

    def cycles(self) -> int:
        return len({d.cycle for d in self.rows})

    def callbacks(self) -> Counter[tuple[str, str, str]]:
        out: Counter[tuple[str, str, str]] = Counter()
        for d in self.rows:
            iv = d.interval
            if iv is not None:
                k = iv.group.key  # (Interval.driver, .device, .phase: its group's key)
                out[(k[0], k[1], k[3])] += d.calls
        return out


def measured_delays(traces: TraceSet, runs: list[PhaseRun]) -> list[MeasuredDelay]:
    cols = traces.store.delays
    if not len(cols):
        return []
    owners = {g for g in cols.owners if g is not None}  # Group: hashed by identity
    has_owner = owners.__contains__
    by_sample: dict[tuple[int, int], Interval] = {}
    for r in runs:
        ivs = r.intervals
        # the intervals with delays, picked out in C (a report has ~10^5-10^6 intervals)
        for iv in itertools.compress(ivs, map(has_owner, map(_GROUP, ivs))):
            by_sample[(id(iv.group), iv.index)] = iv
    names = cols.names
    get = by_sample.get
    new, put = object.__new__, object.__setattr__
    out = []
    for g, sample, func, caller, cycle, thread, first, last, req, calls, total in zip(
            cols.owners, cols.samples, cols.funcs, cols.callers, cols.cycles, cols.threads,
            cols.firsts, cols.lasts, cols.requested, cols.calls, cols.totals, strict=True):
        # MeasuredDelay(...) without its __init__ (frozen: a global lookup and a call of
        # object.__setattr__ per field, 2.2 us a row, ~20,000 rows): the same calls, bound once,
        # 1.4 us; the attributes set one by one keep the instances' shared-key dicts
        d = new(MeasuredDelay)
        put(d, "func", names[func])
        put(d, "caller", names[caller])
        put(d, "cycle", cycle)
        put(d, "thread", thread)
        put(d, "start", first)
        put(d, "end", last)
        put(d, "requested_ms", req)
        put(d, "interval", get((id(g), sample)) if g is not None else None)
        put(d, "calls", calls)
        put(d, "total_us", total)
        out.append(d)
    out.sort(key=lambda d: d.start)
    return out


def delay_sites(delays: list[MeasuredDelay], paths: list[CriticalPath],
                on_path: set[int] | None = None) -> list[DelaySite]:
    """Per (caller, function, requested value), largest measured total first. `on_path`:
    id() of the intervals on a critical path, when the paths were not kept
    (critical.summarize_paths)."""
    if on_path is None:
        on_path = {id(x.interval) for p in paths for x in p.chain}
    sites: dict[tuple[str, str, float], DelaySite] = {}
    for d in delays:
        req = d.requested_ms if d.requested_ms == d.requested_ms else -1.0
        site = sites.get((d.caller, d.func, req))
        if site is None:
            site = sites[(d.caller, d.func, req)] = DelaySite(d.func, d.caller, d.requested_ms)
        site.rows.append(d)
        if d.interval is not None and id(d.interval) in on_path:
            site.on_path += d.calls
            site.on_path_us += d.total_us
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

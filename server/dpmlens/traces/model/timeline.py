"""Each cycle's callback intervals, per phase: who ran when, on which thread.

The samples keep start, duration and thread per callback (sample.Group); this groups them by
(cycle, phase) with the phase's window (its dpm_* markers, else the span of its callbacks)
and the synchronous PM thread (the one that emitted the markers; without markers the busiest
thread that is not a kworker).
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dpmlens.model.phases import PHASES
from dpmlens.traces.model.sample import Group
from dpmlens.traces.model.traceset import TraceSet

if TYPE_CHECKING:
    from dpmlens.traces.model.links import DeviceLinks


class Interval:
    """One callback run: [start, end] seconds on the trace clock."""

    __slots__ = ("start", "thread", "group", "index")

    def __init__(self, start: float, thread: int, group: Group, index: int) -> None:
        self.start = start
        self.thread = thread
        self.group = group
        self.index = index  # sample index within the group

    @property
    def end(self) -> float:
        # from the sample's duration, not stored: a timeline of 100 cycles has ~500,000
        return self.start + self.group.durations[self.index] / 1e6

    @property
    def driver(self) -> str:
        return self.group.key[0]

    @property
    def device(self) -> str:
        return self.group.key[1]

    @property
    def parent(self) -> str:
        return self.group.key[2]

    @property
    def phase(self) -> str:
        return self.group.key[3]

    @property
    def layer(self) -> str:
        return self.group.key[4]

    @property
    def duration_us(self) -> float:
        return round(self.group.durations[self.index], 3)

    def __repr__(self) -> str:
        return f"Interval({self.driver} {self.device} {self.start:.6f}-{self.end:.6f})"


@dataclass
class PhaseRun:
    cycle: int
    phase: str
    start: float  # the window: markers when measured, else the callbacks' span
    end: float
    measured: bool
    sync_thread: int  # -1 unknown
    intervals: list[Interval] = field(default_factory=list)  # by start
    links: DeviceLinks | None = None  # --links, for the critical path
    # resume: async devices are queued when the synchronous loop reaches them (Linux 6.8+,
    # 7839d0078e0d, and stable backports), not all at the phase start (traces.ordering)
    loop_dispatch: bool = False
    # the capture's kernel orders async work as Linux 6.16+ does (traces.analysis.ordering):
    # suspend queues async leaves before the loop and a parent when its children are done
    # (no loop dispatch); resume queues a child when its parent is done, or the loop does
    async_616: bool = False
    # device -> parent over the whole capture (every phase): a parent without a callback in
    # this phase is waited for through its own parent (traces.critical)
    ancestry: dict[str, str] | None = None

    @property
    def wall_us(self) -> float:
        return round((self.end - self.start) * 1e6, 3)

    @property
    def direction(self) -> str:
        p = PHASES.get(self.phase)
        return p.direction if p else "down"


Bucket = tuple[int, str, list[Interval], float]  # cycle, phase, intervals by start, last end


def _buckets(traces: TraceSet) -> list[Bucket]:
    """Each (cycle, phase)'s intervals ordered by (start, end), in the order first seen, with
    the latest end (the reference of _timeline_runs.c's buckets())."""
    buckets: dict[tuple[int, str], list[Interval]] = {}  # in the order first seen
    by_phase: dict[str, dict[int, list[Interval]]] = {}  # the same lists, by cycle
    for g in traces.groups.values():
        phase = g.key[3]
        per = by_phase.get(phase)
        if per is None:
            per = by_phase[phase] = {}
        get = per.get
        for i, (s, t, c) in enumerate(zip(g.starts, g.threads, g.cycles, strict=True)):
            if s != s:  # no timestamp (some dmesg forms)
                continue
            lst = get(c)
            if lst is None:
                lst = per[c] = buckets[(c, phase)] = []
            lst.append(Interval(s, t, g, i))
    out = []
    for (cycle, phase), ivs in buckets.items():
        ends = [iv.start + iv.group.durations[iv.index] / 1e6 for iv in ivs]  # Interval.end
        order = sorted(range(len(ivs)), key=lambda k: (ivs[k].start, ends[k]))
        ivs[:] = [ivs[k] for k in order]
        out.append((cycle, phase, ivs, max(ends)))
    return out


def _c_buckets(traces: TraceSet) -> list[Bucket] | None:
    """_buckets() in C (_timeline_runs.c), or None: not built, DPMLENS_PY_TIMELINE=1, or
    groups it leaves to Python (columns that are not Group's arrays, an end that is NaN)."""
    if os.environ.get("DPMLENS_PY_TIMELINE") == "1":
        return None
    try:
        from dpmlens.traces.model import _timeline_runs  # type: ignore[attr-defined]
    except ImportError:
        return None
    got: list[Bucket] | None = _timeline_runs.buckets(list(traces.groups.values()), Interval)
    return got


def build_timeline(traces: TraceSet) -> list[PhaseRun]:
    """Every (cycle, phase) with timestamped callbacks, in time order."""
    markers: dict[tuple[int, str], tuple[float, float, int]] = {}
    for pt in traces.phase_times:
        if pt.measured and pt.start == pt.start:
            markers[(pt.cycle, pt.phase)] = (pt.start, pt.start + pt.wall_us / 1e6, pt.thread)
    runs = []
    buckets = _c_buckets(traces)
    for cycle, phase, ivs, last in buckets if buckets is not None else _buckets(traces):
        m = markers.get((cycle, phase))
        if m is not None:  # (a callback outside its markers would be clock skew: widen)
            start, end, sync, measured = min(m[0], ivs[0].start), max(m[1], last), m[2], True
        else:
            start, end, sync, measured = ivs[0].start, last, -1, False
        if sync < 0:
            sync = _busiest_thread(traces, ivs)
        runs.append(PhaseRun(cycle, phase, start, end, measured, sync, ivs,
                             traces.device_links))
    runs.sort(key=lambda r: r.start)
    ancestry = {k[1]: k[2] for k in traces.groups if k[2] and k[2] != k[1]}
    for r in runs:
        r.ancestry = ancestry
    # 6.8+ by the kernel's own version line (dmesg); else what the capture shows (stable
    # kernels got 7839d0078e0d without a version to tell: Debian's 6.1.192)
    versions = [f.kernel_version for f in traces.files if f.kernel_version is not None]
    if (versions and min(versions) >= (6, 8)) or loop_dispatch(runs):
        for r in runs:
            r.loop_dispatch = r.direction == "up"
    if versions and min(versions) >= (6, 16):  # only by version: no reliable trace evidence
        for r in runs:
            r.async_616 = True
    return runs


# An async resume callback that started this long after its parent ended and this soon after
# a synchronous callback ended was queued by the loop, not at the phase start (a worker
# queued upfront starts within microseconds of its parent's end).
_LATE_S = 5e-3
_DISPATCH_S = 2e-3
_LOOK_RUNS = 24  # resume-direction phase runs looked at (8 cycles)


def loop_dispatch(runs: list[PhaseRun]) -> bool:
    """Whether the capture's kernel queues async resume work when the synchronous loop
    reaches the device (6.8+: 7839d0078e0d "PM: sleep: Fix possible deadlocks in core
    system-wide PM code", and the stable kernels it was backported to, Debian's 6.1.192
    among them) rather than all at the phase start. Evidence: async callbacks whose parent
    (and own worker's previous callback) ended long before they started, right after a
    synchronous callback ended; two are enough."""
    import bisect

    seen = looked = 0
    for r in runs:
        sync = r.sync_thread
        if sync < 0 or r.direction != "up":
            continue
        looked += 1
        if looked > _LOOK_RUNS:  # a kernel property: it shows in the first cycles or not
            break
        ivs = r.intervals
        ends = {iv.device: iv.end for iv in ivs}
        sync_ends = sorted(iv.end for iv in ivs if iv.thread == sync)
        last_on: dict[int, float] = {}
        for iv in ivs:
            t = iv.thread
            before = last_on.get(t, r.start)
            last_on[t] = iv.end
            parent_end = ends.get(iv.parent)
            # (a parent without a callback completes when the loop reaches it: any kernel)
            if t == sync or t < 0 or parent_end is None:
                continue
            start = iv.start
            ready = max(before, parent_end)
            if ready > start or start - ready < _LATE_S:
                continue
            k = bisect.bisect_right(sync_ends, start + 2e-6) - 1
            if k >= 0 and 0 <= start - sync_ends[k] <= _DISPATCH_S:
                seen += 1
                if seen >= 2:
                    return True
    return False


def _busiest_thread(traces: TraceSet, ivs: list[Interval]) -> int:
    counts = Counter(iv.thread for iv in ivs if iv.thread >= 0)
    names = traces.store.threads
    for tid, _ in counts.most_common():
        if not names[tid].startswith("kworker/"):
            return tid
    return counts.most_common(1)[0][0] if counts else -1


def timeline_json(traces: TraceSet, runs: list[PhaseRun]) -> list[dict]:
    names = traces.store.threads
    out = []
    for r in runs:
        out.append({
            "cycle": r.cycle, "phase": r.phase, "start_s": round(r.start, 6),
            "wall_us": r.wall_us, "measured": r.measured,
            "sync_thread": names[r.sync_thread] if r.sync_thread >= 0 else None,
            "callbacks": [{
                "start_us": round((iv.start - r.start) * 1e6, 3),
                "end_us": round((iv.end - r.start) * 1e6, 3),
                "thread": names[iv.thread] if iv.thread >= 0 else None,
                "device": iv.device, "driver": iv.driver, "parent": iv.parent,
                "layer": iv.layer} for iv in r.intervals],
        })
    return out

"""The critical path of each phase: the chain of callbacks (and waits) that set its wall time.

Walk back from the callback that ends last. What a callback waited for is the latest-ending
of the things it can wait for that ended before it started (drivers/base/power/main.c):
  - its parent, on resume (dpm_wait_for_superior: a device resumes after its parent);
  - its children, on suspend (dpm_wait_for_subordinate: a device suspends after them);
  - the previous callback of its own thread (the synchronous PM thread runs the list in order;
    an async worker runs one work item after another);
  - for an async callback, the synchronous thread's callback before it (the loop schedules
    async work as it reaches the device, async_schedule_dev in dpm_suspend()/dpm_resume());
  - for a callback of the synchronous thread, the latest async callback that ended before it:
    the loop waits in dpm_wait() for async devices, also for ones without a callback of their
    own in the phase (an audio codec under its async controller), which the trace cannot show;
  - else the phase start.
The wait between the two is the step's `wait_us`; the phase end waits for the last callback
(the async barrier, async_synchronize_full, then the end marker): `tail_us`. Device links
(suppliers) are not in the trace and are not used.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass

from dpmlens.traces.timeline import Interval, PhaseRun

EPS = 2e-6  # s: timestamps of different CPUs; an end this much after a start still counts

# preference when two candidates end at the same time
_RANK = {"parent": 0, "child": 0, "sync thread": 1, "thread": 2, "dispatched": 3,
         "async wait": 4}


@dataclass(frozen=True)
class Link:
    interval: Interval
    wait_us: float  # from what it waited for (or the phase start) to its start
    link: str  # "phase start", "parent", "child", "sync thread", "thread", "dispatched"


@dataclass(frozen=True)
class CriticalPath:
    run: PhaseRun
    chain: tuple[Link, ...]  # in time order
    tail_us: float  # the last callback's end -> the phase end

    @property
    def callbacks_us(self) -> float:
        return round(sum(x.interval.duration_us for x in self.chain), 3)

    @property
    def waits_us(self) -> float:
        return round(sum(x.wait_us for x in self.chain) + self.tail_us, 3)

    @property
    def accounted_us(self) -> float:
        return round(self.callbacks_us + self.waits_us, 3)

    @property
    def error_pct(self) -> float:
        wall = self.run.wall_us
        return 0.0 if wall <= 0 else round(abs(self.accounted_us - wall) / wall * 100, 3)


class PhaseGraph:
    """The dependency candidates of one phase run, indexed for the walk and the replay."""

    def __init__(self, run: PhaseRun) -> None:
        self.run = run
        ivs = run.intervals
        # the position by start: a predecessor comes before (same-microsecond callbacks are
        # common, so time alone cannot order them)
        self.order: dict[int, int] = {id(iv): i for i, iv in enumerate(ivs)}
        self.by_device: dict[str, Interval] = {}
        self.children: dict[str, list[Interval]] = defaultdict(list)
        by_thread: dict[int, list[Interval]] = defaultdict(list)
        for iv in ivs:
            self.by_device[iv.device] = iv
            self.children[iv.parent].append(iv)
            by_thread[iv.thread].append(iv)
        self.prev_same_thread: dict[int, Interval] = {}
        for lst in by_thread.values():
            for a, b in zip(lst, lst[1:], strict=False):
                self.prev_same_thread[id(b)] = a
        self.sync = by_thread.get(run.sync_thread, []) if run.sync_thread >= 0 else []
        self._sync_ends = [iv.end for iv in self.sync]
        self._async = sorted((iv for iv in ivs if iv.thread != run.sync_thread),
                             key=lambda iv: iv.end)
        self._async_ends = [iv.end for iv in self._async]
        self.up = run.direction == "up"

    def candidates(self, c: Interval) -> list[tuple[Interval, str]]:
        """What `c` may have waited for (not yet filtered by time)."""
        out: list[tuple[Interval, str]] = []
        sync_id = self.run.sync_thread
        prev = self.prev_same_thread.get(id(c))
        if prev is not None:
            out.append((prev, "sync thread" if c.thread == sync_id else "thread"))
        if self.up:
            p = self.by_device.get(c.parent)
            if p is not None and p is not c:
                out.append((p, "parent"))
        else:
            out.extend((ch, "child") for ch in self.children.get(c.device, ()) if ch is not c)
        if c.thread != sync_id and self.sync:
            i = bisect.bisect_right(self._sync_ends, c.start + EPS) - 1
            if i >= 0:
                out.append((self.sync[i], "dispatched"))
        elif c.thread == sync_id and self._async:
            pos = self.order[id(c)]
            i = bisect.bisect_right(self._async_ends, c.start + EPS) - 1
            while i >= 0 and self.order[id(self._async[i])] >= pos:
                i -= 1
            if i >= 0:
                out.append((self._async[i], "async wait"))
        return out

    def predecessor(self, c: Interval) -> tuple[Interval | None, str]:
        best: Interval | None = None
        best_link = "phase start"
        pos = self.order[id(c)]
        order = self.order
        for iv, link in self.candidates(c):
            if iv.end > c.start + EPS or order[id(iv)] >= pos:
                continue
            if best is None or iv.end > best.end + 1e-9 or (
                    abs(iv.end - best.end) <= 1e-9 and _RANK[link] < _RANK[best_link]):
                best, best_link = iv, link
        return best, best_link


def critical_path(run: PhaseRun, graph: PhaseGraph | None = None) -> CriticalPath:
    graph = graph or PhaseGraph(run)
    last = max(run.intervals, key=lambda iv: (iv.end, iv.start))
    chain: list[Link] = []
    c: Interval | None = last
    seen: set[int] = set()
    while c is not None and id(c) not in seen:
        seen.add(id(c))
        pred, link = graph.predecessor(c)
        origin = run.start if pred is None else pred.end
        chain.append(Link(c, round(max(0.0, c.start - origin) * 1e6, 3), link))
        c = pred
    chain.reverse()
    tail = round(max(0.0, run.end - last.end) * 1e6, 3)
    return CriticalPath(run, tuple(chain), tail)


@dataclass(frozen=True)
class DeviceOnPath:
    driver: str
    device: str
    phase: str
    on_path: int  # phase runs where it is on the critical path
    runs: int  # phase runs where it has a callback
    contribution_us: float  # its callback time on the path, summed over those runs


def across_cycles(paths: list[CriticalPath]) -> list[DeviceOnPath]:
    """How often each (driver, device, phase) is on the critical path, and the time it adds."""
    on: dict[tuple[str, str, str], list[float]] = defaultdict(lambda: [0, 0.0])
    runs: dict[tuple[str, str, str], int] = defaultdict(int)
    for p in paths:
        for iv in p.run.intervals:
            runs[(iv.driver, iv.device, iv.phase)] += 1
        for x in p.chain:
            k = (x.interval.driver, x.interval.device, x.interval.phase)
            on[k][0] += 1
            on[k][1] += x.interval.duration_us
    out = [DeviceOnPath(k[0], k[1], k[2], int(v[0]), runs[k], round(v[1], 3))
           for k, v in on.items()]
    out.sort(key=lambda d: (-d.contribution_us, d.driver, d.device))
    return out

"""The critical path of each phase: the chain of callbacks (and waits) that set its wall time.

Walk back from the callback that ends last. What a callback waited for is the latest-ending
of the things it can wait for that ended before it started (drivers/base/power/main.c):
  - its parent, on resume (dpm_wait_for_superior: a device resumes after its parent);
  - its children, on suspend (dpm_wait_for_subordinate: a device suspends after them);
  - with device links (--links, traces.links): its suppliers on resume, its consumers on
    suspend (the same two functions wait for them);
  - the previous callback of its own thread (the synchronous PM thread runs the list in order;
    an async worker runs one work item after another);
  - for an async callback, the synchronous thread's callback before it: on suspend the loop
    queues async work as it reaches the device (async_schedule_dev in dpm_suspend()); on
    resume up to 6.7 all async work is queued upfront and waits for the parent, so only a
    device whose parent has no callback in the phase may have waited for the loop (to reach
    the parent); since 6.8 (7839d0078e0d, PhaseRun.loop_dispatch) resume queues it when the
    loop reaches it too;
  - for a callback of the synchronous thread that started more than IDLE after the previous
    one, the latest async callback that ended in between: the loop waits in dpm_wait() for
    async devices, also for ones without a callback of their own in the phase (an audio codec
    under its async controller), which the trace cannot show;
  - else the phase start.
The wait between the two is the step's `wait_us`; the phase end waits for the last callback
(the async barrier, async_synchronize_full, then the end marker): `tail_us`. Device links
are not in any trace: they are used when given (PhaseRun.links).
"""

from __future__ import annotations

import bisect
import itertools
import math
import operator
import os
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from dpmlens.traces.model.sample import Group
from dpmlens.traces.model.timeline import Interval, PhaseRun

_GROUP = operator.attrgetter("group")
_START = operator.attrgetter("start")
_THREAD = operator.attrgetter("thread")
_INDEX = operator.attrgetter("index")
_DURATIONS = operator.attrgetter("durations")
_KEY = operator.attrgetter("key")
_SECOND = operator.itemgetter(1)
_THIRD = operator.itemgetter(2)
EPS = 2e-6  # s: timestamps of different CPUs; an end this much after a start still counts
# The synchronous loop waited for an async device only if it sat idle this long after its
# previous callback (back-to-back synchronous callbacks are 1-5 us apart on the captures).
IDLE = 20e-6

# preference when two candidates end at the same time
_RANK = {"parent": 0, "child": 0, "supplier": 0, "consumer": 0, "sync thread": 1,
         "thread": 2, "dispatched": 3, "async wait": 4}


class Link(NamedTuple):  # one per step of every cycle's path: small and quick to make
    interval: Interval
    wait_us: float  # from what it waited for (or the phase start) to its start
    link: str  # "phase start", "parent", "child", "supplier", "consumer", "sync thread",
    # "thread", "dispatched", "async wait"


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
    """The dependency candidates of one phase run by interval index (the position by start:
    a predecessor comes before; same-microsecond callbacks are common, so time alone cannot
    order them), for the walk and the replay."""

    def __init__(self, run: PhaseRun) -> None:
        self.run = run
        ivs = run.intervals
        n = len(ivs)
        # built with map/attrgetter (C loops): a report builds one per phase run of every cycle
        self.starts = starts = list(map(_START, ivs))
        self.groups = groups = list(map(_GROUP, ivs))
        # Interval.duration (us, unrounded) and Interval.end, inlined
        self.durs = durs = list(map(operator.getitem, map(_DURATIONS, groups), map(_INDEX, ivs)))
        self.ends = ends = list(map(operator.add, starts,
                                    map(operator.truediv, durs, itertools.repeat(1e6))))
        keys = list(map(_KEY, groups))
        self.devices = devices = list(map(_SECOND, keys))
        self.parents = parents = list(map(_THIRD, keys))
        self.threads = threads = list(map(_THREAD, ivs))
        self.sync_thread = sync = run.sync_thread
        self.up = run.direction == "up"
        self.loop = run.loop_dispatch
        # 6.16+ suspend: no async callback waits for the loop to reach it
        self.down_upfront = not self.up and run.async_616
        self.by_device: dict[str, int] = dict(zip(devices, range(n), strict=True))
        # the nearest ancestor with a callback in this phase: one without completes only
        # after its own parent did (dpm_wait_for_superior), so waiting for it is waiting
        # for that ancestor (input2 -> hid device -> usb interface -> usb device 2-1)
        # legacy resume: queued upfront, it waited for a parent that has a callback here
        # (one without completes when the loop reaches it: the dispatch stays a candidate)
        by_device = self.by_device
        self.own_parent = own = list(map(by_device.__contains__, parents))
        ancestry = run.ancestry
        missing = ([i for i, ok in enumerate(own) if not ok]
                   if ancestry and not all(own) else [])
        if missing and ancestry is not None:
            parents = list(parents)
            for i in missing:
                p = parents[i]
                hops = 0
                while p not in by_device and hops < 8:
                    q = ancestry.get(p)
                    if q is None:
                        break
                    p, hops = q, hops + 1
                if p in by_device:
                    parents[i] = p
            self.parents = parents
        # children matter on suspend only (a device suspends after them)
        self.children = children = defaultdict[str, list[int]](list)
        if not self.up:
            for i, parent in enumerate(parents):
                children[parent].append(i)
        self.prev = prev = [-1] * n
        last_on: dict[int, int] = {}
        get = last_on.get
        for i, t in enumerate(threads):
            prev[i] = get(t, -1)
            last_on[t] = i
        # the synchronous thread runs one callback after another: its ends are in order
        self.sync_idx = (list(itertools.compress(range(n), map(sync.__eq__, threads)))
                         if sync >= 0 else [])
        self.sync_ends = list(map(ends.__getitem__, self.sync_idx))
        self.async_idx = sorted(itertools.compress(range(n), map(sync.__ne__, threads)),
                                key=ends.__getitem__)
        self.async_ends = list(map(ends.__getitem__, self.async_idx))
        links = run.links
        # on resume a consumer waits for its suppliers; on suspend a supplier for its consumers
        if links is None:
            self.linked: dict[str, set[str]] = {}
        else:
            self.linked = links.suppliers if self.up else links.consumers
        self.link_name = "supplier" if self.up else "consumer"

    def deps(self, i: int) -> list[tuple[int, str]]:
        """What callback `i` may have waited for and that had ended when it started."""
        s = self.starts[i] + EPS
        ends = self.ends
        sync = self.sync_thread
        on_sync = self.threads[i] == sync
        out: list[tuple[int, str]] = []
        p = self.prev[i]
        if p >= 0 and ends[p] <= s:
            out.append((p, "sync thread" if on_sync else "thread"))
        if self.up:
            j = self.by_device.get(self.parents[i])
            if j is not None and j < i and ends[j] <= s:
                out.append((j, "parent"))
        else:
            for j in self.children.get(self.devices[i], ()):
                if j < i and ends[j] <= s:
                    out.append((j, "child"))
        for dev in self.linked.get(self.devices[i], ()):
            j = self.by_device.get(dev)
            if j is not None and j < i and ends[j] <= s:
                out.append((j, self.link_name))
        if not on_sync:
            idx, arr = self.sync_idx, self.sync_ends
            link, after = "dispatched", -math.inf
            if (self.up and not self.loop and self.own_parent[i]) or self.down_upfront:
                idx = []  # queued upfront: it waited for its parent/children, not the loop
        else:
            idx, arr = self.async_idx, self.async_ends
            link = "async wait"
            after = ends[p] if p >= 0 else -math.inf  # it ended after the previous one
            if p >= 0 and self.starts[i] - ends[p] <= IDLE:
                idx = []  # the loop went straight on: it waited for nothing else
        if idx:
            k = bisect.bisect_right(arr, s) - 1
            while k >= 0 and idx[k] >= i:
                k -= 1
            if k >= 0 and arr[k] > after:
                out.append((idx[k], link))
        return out

    def all_deps(self) -> list[list[tuple[int, str]]]:
        """`[deps(i) for i in ...]`, the same logic inlined (the what-if replay of 100 cycles
        builds this for every callback; tests/test_traces_critical.py checks they agree)."""
        starts, ends, threads, prev = self.starts, self.ends, self.threads, self.prev
        parents, devices, by_device = self.parents, self.devices, self.by_device
        children = self.children
        sync, up = self.sync_thread, self.up
        upfront = up and not self.loop
        down_upfront = self.down_upfront
        own_parent = self.own_parent
        linked, link_name = self.linked, self.link_name
        sync_idx, sync_ends = self.sync_idx, self.sync_ends
        async_idx, async_ends = self.async_idx, self.async_ends
        bisect_right = bisect.bisect_right
        inf = math.inf
        out: list[list[tuple[int, str]]] = []
        for i in range(len(starts)):
            s = starts[i] + EPS
            on_sync = threads[i] == sync
            d: list[tuple[int, str]] = []
            p = prev[i]
            if p >= 0 and ends[p] <= s:
                d.append((p, "sync thread" if on_sync else "thread"))
            if up:
                j = by_device.get(parents[i])
                if j is not None and j < i and ends[j] <= s:
                    d.append((j, "parent"))
            else:
                for j in children.get(devices[i], ()):
                    if j < i and ends[j] <= s:
                        d.append((j, "child"))
            if linked:
                for dev in linked.get(devices[i], ()):
                    j = by_device.get(dev)
                    if j is not None and j < i and ends[j] <= s:
                        d.append((j, link_name))
            if on_sync:
                idx, arr, link = async_idx, async_ends, "async wait"
                after = ends[p] if p >= 0 else -inf
                if p >= 0 and starts[i] - ends[p] <= IDLE:
                    idx = ()
            else:
                idx, arr, link, after = sync_idx, sync_ends, "dispatched", -inf
                if (upfront and own_parent[i]) or down_upfront:
                    idx = ()
            if idx:
                k = bisect_right(arr, s) - 1
                while k >= 0 and idx[k] >= i:
                    k -= 1
                if k >= 0 and arr[k] > after:
                    d.append((idx[k], link))
            out.append(d)
        return out

    def predecessor(self, i: int) -> tuple[int, str]:
        """The latest-ending of `deps(i)` (-1, "phase start" when none). `walk` chooses the
        same inline for graphs without device links (its hot loop); this is the general
        choice it uses when links add candidates."""
        return self._predecessor_of(self.deps(i))

    def _predecessor_of(self, deps: list[tuple[int, str]]) -> tuple[int, str]:
        if not deps:
            return -1, "phase start"
        if len(deps) == 1:
            return deps[0]
        best, best_link = -1, "phase start"
        ends = self.ends
        for j, link in deps:
            if best < 0 or ends[j] > ends[best] + 1e-9 or (
                    abs(ends[j] - ends[best]) <= 1e-9 and _RANK[link] < _RANK[best_link]):
                best, best_link = j, link
        return best, best_link


def walk(graph: PhaseGraph) -> list[tuple[int, int, str]]:
    """The critical path as interval indices, last step first: (k, what k waited for or -1,
    the link). Without device links the choice `PhaseGraph.predecessor` makes over `deps` is
    made here inline, from the graph's columns: a 100-cycle report walks 240,000 steps, and
    only the median runs' paths become Link objects (summarize_paths)."""
    starts, ends = graph.starts, graph.ends
    # the last end (then start; the first of equals)
    k = -max(zip(ends, starts, range(0, -len(starts), -1), strict=True))[2]
    out: list[tuple[int, int, str]] = []
    seen: set[int] = set()
    if graph.linked:
        while k >= 0 and k not in seen:
            seen.add(k)
            j, link = graph.predecessor(k)
            out.append((k, j, link))
            k = j
        return out
    threads, prev, sync = graph.threads, graph.prev, graph.sync_thread
    up, upfront = graph.up, graph.up and not graph.loop
    down_upfront = graph.down_upfront
    by_device, parents, own_parent = graph.by_device, graph.parents, graph.own_parent
    children, devices = graph.children, graph.devices
    sync_idx, sync_ends = graph.sync_idx, graph.sync_ends
    async_idx, async_ends = graph.async_idx, graph.async_ends
    bisect_right = bisect.bisect_right
    rank = _RANK
    inf = math.inf
    while k >= 0 and k not in seen:
        seen.add(k)
        s = starts[k] + EPS
        best, best_link, best_end = -1, "phase start", -inf
        on_sync = threads[k] == sync
        p = prev[k]
        if p >= 0 and ends[p] <= s:
            best, best_link, best_end = p, "sync thread" if on_sync else "thread", ends[p]
        if up:
            j = by_device.get(parents[k])
            if j is not None and j < k:
                e = ends[j]
                if e <= s and (best < 0 or e > best_end + 1e-9 or (
                        abs(e - best_end) <= 1e-9 and rank["parent"] < rank[best_link])):
                    best, best_link, best_end = j, "parent", e
        else:
            for j in children.get(devices[k], ()):
                if j < k:
                    e = ends[j]
                    if e <= s and (best < 0 or e > best_end + 1e-9 or (
                            abs(e - best_end) <= 1e-9 and rank["child"] < rank[best_link])):
                        best, best_link, best_end = j, "child", e
        if on_sync:
            idx: list[int] = async_idx
            arr, link = async_ends, "async wait"
            after = ends[p] if p >= 0 else -inf
            if p >= 0 and starts[k] - ends[p] <= IDLE:
                idx = []
        else:
            idx, arr, link, after = sync_idx, sync_ends, "dispatched", -inf
            if (upfront and own_parent[k]) or down_upfront:
                idx = []
        if idx:
            m = bisect_right(arr, s) - 1
            while m >= 0 and idx[m] >= k:
                m -= 1
            if m >= 0 and arr[m] > after:
                j = idx[m]
                e = ends[j]
                if best < 0 or e > best_end + 1e-9 or (
                        abs(e - best_end) <= 1e-9 and rank[link] < rank[best_link]):
                    best, best_link = j, link
        out.append((k, best, best_link))
        k = best
    return out


Steps = list[tuple[int, int, str]]


def compiled_walk() -> Callable[..., Steps | None] | None:
    """`walk(PhaseGraph(run))` in C (_critical_walk.c: the graph's columns and the walk in
    one call, no PhaseGraph), with a tally its `add_steps()`, with `watched` and `on_path` sets
    summarize_paths' marking of the watched intervals on the path; or None when it was not
    built or DPMLENS_PY_WALK=1. The function returns None (and adds nothing) for a run it
    leaves to Python: one with device links, a start or end that is not a number, or a
    device or parent name that is not a str; with keep=False, [] for a run it walked (the
    steps are not made)."""
    if os.environ.get("DPMLENS_PY_WALK") == "1":
        return None
    try:
        from dpmlens.traces.analysis import _critical_walk  # type: ignore[attr-defined]
    except ImportError:
        return None
    c_walk: Callable[..., Steps | None] = _critical_walk.walk

    def walk_run(run: PhaseRun, tally: PathTally | None = None,
                 watched: set[int] | None = None, on_path: set[int] | None = None,
                 keep: bool = True) -> Steps | None:
        up = run.direction == "up"
        links = run.links
        if links is not None and (links.suppliers if up else links.consumers):
            return None  # PhaseGraph.predecessor's general choice
        return c_walk(run.intervals, run.sync_thread, up, up and not run.loop_dispatch,
                      not up and run.async_616, run.ancestry,
                      None if tally is None else tally.on, None if tally is None else tally.seen,
                      watched, on_path, keep)

    return walk_run


def critical_path(run: PhaseRun, graph: PhaseGraph | None = None) -> CriticalPath:
    graph = graph or PhaseGraph(run)
    return _path_of(run, graph, walk(graph))


def _path_of(run: PhaseRun, graph: PhaseGraph,
             steps: list[tuple[int, int, str]]) -> CriticalPath:
    ivs = run.intervals
    starts, ends = graph.starts, graph.ends
    chain: list[Link] = []
    for k, j, link in reversed(steps):
        origin = run.start if j < 0 else ends[j]
        chain.append(Link(ivs[k], round(max(0.0, starts[k] - origin) * 1e6, 3), link))
    last_end = ends[steps[0][0]]
    tail = round(max(0.0, run.end - last_end) * 1e6, 3)
    return CriticalPath(run, tuple(chain), tail)


@dataclass(frozen=True)
class DeviceOnPath:
    driver: str
    device: str
    phase: str
    on_path: int  # phase runs where it is on the critical path
    runs: int  # phase runs where it has a callback
    contribution_us: float  # its callback time on the path, summed over those runs


class PathTally:
    """Folds critical paths one at a time into how often each (driver, device, phase) is on
    the path and the time it adds, so that a report over many cycles need not keep every
    cycle's path."""

    def __init__(self) -> None:
        self.on: dict[Group, list[float]] = {}  # by group first (no key tuple per step)
        self.seen: Counter[Group] = Counter()  # group -> phase runs it has a callback in
        self._k3: dict[Group, tuple[str, str, str]] = {}

    def _key(self, g: Group) -> tuple[str, str, str]:
        k = self._k3.get(g)
        if k is None:
            k = self._k3[g] = (g.key[0], g.key[1], g.key[3])
        return k

    def add(self, p: CriticalPath) -> None:
        on = self.on
        # the groups of a run (one per driver, device, parent, phase, layer), counted in C
        # (Counter.update); devices() folds them per (driver, device, phase)
        self.seen.update(set(map(_GROUP, p.run.intervals)))
        for x in p.chain:
            iv = x.interval
            g = iv.group
            acc = on.get(g)
            if acc is None:
                acc = on[g] = [0, 0.0]
            acc[0] += 1
            acc[1] += round(g.durations[iv.index], 3)  # Interval.duration_us

    def add_steps(self, graph: PhaseGraph, steps: list[tuple[int, int, str]]) -> None:
        """`add()` of the path `walk(graph)` returned, without its Link objects (the same
        sums in the same order)."""
        on = self.on
        groups, durs = graph.groups, graph.durs
        self.seen.update(set(groups))
        for k, _, _ in reversed(steps):
            g = groups[k]
            acc = on.get(g)
            if acc is None:
                acc = on[g] = [0, 0.0]
            acc[0] += 1
            acc[1] += round(durs[k], 3)

    def devices(self) -> list[DeviceOnPath]:
        by_key: dict[tuple[str, str, str], list[float]] = defaultdict(lambda: [0, 0.0])
        for g, (n, us) in self.on.items():
            acc = by_key[self._key(g)]
            acc[0] += n
            acc[1] += us
        groups: dict[tuple[str, str, str], list[Group]] = defaultdict(list)
        for g in self.seen:
            k = self._key(g)
            if k in by_key:
                groups[k].append(g)
        out = [DeviceOnPath(k[0], k[1], k[2], int(v[0]), self._runs(groups[k]), round(v[1], 3))
               for k, v in by_key.items()]
        out.sort(key=lambda d: (-d.contribution_us, d.driver, d.device))
        return out


    def _runs(self, gs: list[Group]) -> int:
        """Phase runs with a callback of any of these groups (of one driver, device, phase):
        one group's count, or for several (other parents or layers) the cycles they share
        counted once (a phase run is a cycle of the phase)."""
        if len(gs) == 1:
            return self.seen[gs[0]]
        cycles: set[int] = set()
        for g in gs:
            cycles.update(c for c, t in zip(g.cycles, g.starts, strict=True) if t == t)
        return len(cycles)


def across_cycles(paths: list[CriticalPath]) -> list[DeviceOnPath]:
    """How often each (driver, device, phase) is on the critical path, and the time it adds."""
    tally = PathTally()
    for p in paths:
        tally.add(p)
    return tally.devices()


def median_runs(runs: list[PhaseRun]) -> set[int]:
    """id() of each phase's run whose wall time is the median of its cycles (the lower one
    for an even count; the first of equal ones in `runs` order)."""
    by_phase: dict[str, list[PhaseRun]] = {}
    for r in runs:
        by_phase.setdefault(r.phase, []).append(r)
    out = set()
    for lst in by_phase.values():
        lst.sort(key=lambda r: r.wall_us)
        out.add(id(lst[(len(lst) - 1) // 2]))
    return out


@dataclass
class PathSummary:
    """Every run's critical path folded (PathTally), keeping only the median runs' paths and
    which of the `watched` intervals (id()) were on a path."""

    median: list[CriticalPath]  # in `runs` order
    devices: list[DeviceOnPath]
    runs_of: dict[str, int]  # phase -> runs summarized
    on_path: set[int]


def summarize_paths(runs: list[PhaseRun], watched: set[int] | None = None) -> PathSummary:
    keep = median_runs(runs)
    tally = PathTally()
    median: list[CriticalPath] = []
    runs_of: dict[str, int] = defaultdict(int)
    on_path: set[int] = set()
    fast = compiled_walk()
    for r in runs:
        graph: PhaseGraph | None = None
        median_run = id(r) in keep
        # (C: added to the tally, the watched intervals on the path to on_path; the steps
        # made only for the median runs)
        steps = (fast(r, tally, watched or None, on_path, median_run)
                 if fast is not None else None)
        if steps is None:
            graph = PhaseGraph(r)
            steps = walk(graph)
            tally.add_steps(graph, steps)
            if watched:
                ivs = r.intervals
                for k, _, _ in steps:
                    if id(ivs[k]) in watched:
                        on_path.add(id(ivs[k]))
        runs_of[r.phase] += 1
        if median_run:
            median.append(_path_of(r, graph or PhaseGraph(r), steps))
    return PathSummary(median, tally.devices(), dict(runs_of), on_path)

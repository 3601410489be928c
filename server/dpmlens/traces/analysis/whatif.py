"""Replay each phase's dependency graph with changed durations (`dpmlens trace whatif`).

Every callback of a phase run starts when the last of its dependencies (traces.critical:
parent on resume, children on suspend, the previous callback of its thread, the synchronous
loop that dispatched it, the async callback a synchronous one waited for) has ended, plus the
lag measured after the one it did wait for (one lag per callback: a dependency that ended
earlier would have been followed by the same scheduling lag); a callback with no dependency
starts at its measured offset from the phase start. The phase ends the measured tail after
its last callback. With nothing changed this reproduces every measured callback start and
phase wall time. An async worker keeps running its work items one after another as in the
capture (a pessimistic choice: the kernel may start another worker instead).

Changes:
  delays     a measured delay call (traces.delays) of FUNCTION (its caller), or of one delay
             function it calls (FUNCTION:msleep), or of one call site by its request
             (FUNCTION:msleep(50)), runs MS instead of what it requested; the overhead
             measured beyond the request is kept
  async      a callback of the synchronous thread runs on a worker: it no longer waits for the
             previous synchronous callback, it is dispatched by it (plus the start-up lag
             measured for async callbacks in the capture), and the synchronous thread goes on
  sync       an async callback runs on the synchronous thread, in its measured start order
  ordering   "6.16": the async ordering of Linux 6.16 (traces/ordering.py); "legacy" (the
             default) replays the capture's own
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from dpmlens.model.phases import PHASES
from dpmlens.traces.analysis.bands import NOT_REPLAYED, Evidence, Sureness, sureness
from dpmlens.traces.analysis.critical import _RANK as _RANK_OF
from dpmlens.traces.analysis.critical import PhaseGraph
from dpmlens.traces.analysis.delays import MeasuredDelay
from dpmlens.traces.analysis.exclusive import Exclusion
from dpmlens.traces.analysis.handoffs import SchedLock
from dpmlens.traces.analysis.nodes import Nodes
from dpmlens.traces.analysis.sleep_calls import SleepClock
from dpmlens.traces.model.durations import format_us
from dpmlens.traces.model.sched import SchedLog
from dpmlens.traces.model.timeline import Interval, PhaseRun

# --delay targets: CALLER, CALLER:FUNC or CALLER:FUNC(VALUE), VALUE in the delay
# function's own unit (msleep(50): ms, usleep_range(10000): us, ndelay(500): ns)
_TARGET = re.compile(r"^([A-Za-z_]\w*)(?::([A-Za-z_]\w*)(?:\(\s*([0-9.]+)\s*(?:,[^)]*)?\))?)?$")


def _unit_ms(func: str) -> float:
    if func.startswith(("usleep", "udelay", "fsleep")):
        return 1e-3
    if func.startswith("ndelay"):
        return 1e-6
    return 1.0


def parse_target(text: str) -> tuple[str, str | None, float | None] | None:
    """`hub_port_reset:msleep(50)` -> (caller, func, requested ms); None: not a target."""
    m = _TARGET.match(text.strip())
    if m is None:
        return None
    caller, func, value = m.groups()
    try:
        req = float(value) * _unit_ms(func or "") if value is not None else None
    except ValueError:
        return None
    return caller, func, req


_CALL = re.compile(r"^([A-Za-z_]\w*)\(\s*([0-9.]+)\s*(?:,[^)]*)?\)$")


def parse_call(text: str) -> tuple[str, float] | None:
    """`usleep_range(10000, 12000)` -> ("usleep_range", 10.0 ms requested)."""
    m = _CALL.match(text.strip())
    if m is None:
        return None
    try:
        return m.group(1), float(m.group(2)) * _unit_ms(m.group(1))
    except ValueError:
        return None


def target_matches(target: tuple[str, str | None, float | None], d: MeasuredDelay) -> bool:
    caller, func, req = target
    if caller != d.caller or (func is not None and func != d.func):
        return False
    return req is None or (d.requested_ms == d.requested_ms
                           and abs(d.requested_ms - req) <= 1e-9 * max(1.0, req))


@dataclass
class Changes:
    # --delay target (CALLER, CALLER:FUNC, CALLER:FUNC(VALUE): parse_target) -> ms
    delays: dict[str, float] = field(default_factory=dict)
    make_async: Callable[[Interval], bool] | None = None
    make_sync: Callable[[Interval], bool] | None = None
    # per delay site (caller, func, requested ms) -> new ms (--spec-minimums)
    site_ms: dict[tuple[str, str, float], float] = field(default_factory=dict)
    ordering: str = "legacy"  # or "6.16" (traces.ordering)
    # --spec-minimums was asked (site_ms stays empty when no measured delay joined a site)
    spec_minimums: bool = False
    # --delay TARGET=FUNC(VALUE): the call becomes another delay call, which takes what the
    # capture's own calls of it with that request took (call_us, filled by what_if)
    replace: dict[str, tuple[str, float]] = field(default_factory=dict)
    call_us: dict[tuple[str, float], tuple[float, int]] = field(default_factory=dict)
    # locks inferred from another capture of the same machine (--locks-from), when this one
    # cannot show them (a pm_async=0 capture runs nothing at the same time)
    locks: Exclusion | None = None
    # the same from the scheduler's events of that capture: each lock with the median time
    # (us) from a member's callback start to its ask (traces.analysis.handoffs)
    sched_locks: list[tuple[SchedLock, dict[str, float]]] = field(default_factory=list)
    # ... and by the device names, when that capture has no timing evidence of its locks
    # either (traces.analysis.handoffs.topology_locks)
    name_locks: list[SchedLock] = field(default_factory=list)
    # the guest's CPU count: callbacks running at once share them (traces.analysis.contention);
    # None: no contention (every callback as fast as measured, whatever runs beside it)
    cpus: int | None = None
    # the capture's scheduler events (traces.model.sched): with them the contended replay
    # tells a callback's waits for a device or a timer from its work
    sched: SchedLog | None = None
    # how long an msleep() sleeps on the captured kernel: without delay kprobes a --delay
    # target's calls are told from its thread's sleeps (traces.analysis.sleep_calls)
    clock: SleepClock = field(default_factory=SleepClock)

    def delay_ms(self, d: MeasuredDelay) -> float | None:
        """The new time of delay `d`, None when no change targets it (the most specific
        --delay target wins, then --spec-minimums)."""
        best, rank = None, -1
        for text, ms in self.delays.items():
            if text in self.replace:
                continue
            t = parse_target(text)
            if t is not None and target_matches(t, d):
                r = (t[1] is not None) + (t[2] is not None)
                if r > rank:
                    best, rank = ms, r
        if best is None and self.site_ms:
            req = d.requested_ms if d.requested_ms == d.requested_ms else -1.0
            best = self.site_ms.get((d.caller, d.func, req))
        return best

    def replacement(self, d: MeasuredDelay) -> tuple[str, float] | None:
        for text, call in self.replace.items():
            t = parse_target(text)
            if t is not None and target_matches(t, d):
                return call
        return None

    def kinds(self) -> list[str]:
        """The change kinds, as traces.analysis.bands rates them."""
        out = []
        if self.make_sync is not None:
            out.append("sync")
        if self.make_async is not None:
            out.append("async")
        if self.delays or self.site_ms or self.replace or self.spec_minimums:
            out.append("delay")
        if self.ordering != "legacy":
            out.append("ordering")
        return out

    def empty(self) -> bool:
        return not (self.delays or self.site_ms or self.make_async or self.make_sync
                    or self.ordering != "legacy")


# when the capture has no dispatched async callback to measure the start-up lag from
DEFAULT_ASYNC_LAG_US = 50.0


@dataclass
class Replay:
    run: PhaseRun
    measured_us: float
    predicted_us: float
    # (interval, start us, duration us, link); None: nothing changed in this run, the chain
    # is the measured critical path (traces.critical)
    chain: list[tuple[Interval, float, float, str]] | None
    saved_in_callbacks_us: float  # duration removed from callbacks (before overlap)

    def path(self) -> list[tuple[Interval, float, float, str]]:
        if self.chain is None:
            from dpmlens.traces.analysis.critical import critical_path

            p = critical_path(self.run)
            self.chain = [(x.interval, round((x.interval.start - self.run.start) * 1e6, 3),
                           x.interval.duration_us, x.link) for x in p.chain]
        return self.chain


def build_nodes(run: PhaseRun, graph: PhaseGraph | None = None) -> Nodes:
    """The measured dependency graph of a phase run, in start order (deps point backwards)."""
    graph = graph or PhaseGraph(run)
    t0 = run.start
    starts, ends = graph.starts, graph.ends
    all_deps = graph.all_deps()
    lags = []
    for s, deps in zip(starts, all_deps, strict=True):
        lag = 0.0
        if deps:
            latest = max([ends[j] for j, _ in deps])
            lag = (s - latest) * 1e6
            if lag < 0.0:
                lag = 0.0
        lags.append(lag)
    release = [(s - t0) * 1e6 if s > t0 else 0.0 for s in starts]
    durs = [iv.group.durations[iv.index] for iv in run.intervals]
    return Nodes(run.intervals, durs, release, all_deps, list(graph.threads), lags, max(ends))


def replay(run: PhaseRun, nodes: Nodes) -> Replay:
    """Start times from the dependencies, in order; the phase wall time and its new chain.
    With a lock (nodes.held) the nodes run in the order of their start times, so that the
    lock goes to the first to ask for it."""
    n = len(nodes)
    start = [0.0] * n
    end = [0.0] * n
    why = [-1] * n
    dur, release, all_deps, lag, extra = (nodes.dur, nodes.release, nodes.deps, nodes.lag,
                                          nodes.extra)
    k, k_end = 0, -math.inf
    inf = -math.inf
    held = nodes.held
    wlink = [0] * n  # which of its deps it waited for

    def start_of(i: int) -> float:
        deps = all_deps[i]
        if not deps:
            return release[i]
        if extra and i in extra:
            own = extra[i]
            best, arg, w = inf, -1, 0
            for x, (d, _) in enumerate(deps):
                t = end[d] + own.get(d, lag[i])
                if t > best:
                    best, arg, w = t, d, x
            why[i], wlink[i] = arg, w
            return best
        if len(deps) == 1:
            why[i], wlink[i] = deps[0][0], 0
            return end[deps[0][0]] + lag[i]
        best, arg, w = inf, -1, 0
        for x, (d, _) in enumerate(deps):
            e = end[d]
            if e > best:
                best, arg, w = e, d, x
        why[i], wlink[i] = arg, w
        return best + lag[i]

    lock_by: dict[int, int] = {}  # node -> the node whose lock it waited for
    saved_us = round(nodes.measured_us - math.fsum(dur), 3)
    if nodes.segments is not None:
        from dpmlens.traces.analysis.contention import replay_contended

        k, k_end = replay_contended(nodes, nodes.segments, nodes.cpus, start_of, start, end,
                                    lock_by)
        for i in range(n):
            dur[i] = end[i] - start[i]
    elif not held:
        for i in range(n):
            t = start[i] = start_of(i)
            e = end[i] = t + dur[i]
            if e >= k_end:
                k, k_end = i, e
    else:
        k, k_end = _replay_locked(n, all_deps, held, start, end, dur, start_of, lock_by)
    tail = max(0.0, (run.end - nodes.last_end) * 1e6)
    predicted = k_end + tail
    chain: list[tuple[Interval, float, float, str]] = []
    seen = set()
    while k >= 0 and k not in seen:
        seen.add(k)
        s, dk = start[k], dur[k]
        if k in lock_by:  # on the path from when the lock was released
            d, link = lock_by[k], "lock"
            s = max(s, end[d])
            dk = end[k] - s
        else:
            d = why[k]
            link = all_deps[k][wlink[k]][1] if d >= 0 else "phase start"
        chain.append((nodes.ivs[k], s, dk, link))
        k = d
    chain.reverse()
    return Replay(run, run.wall_us, round(predicted, 3), chain, saved_us)


def _replay_locked(n: int, all_deps: list[list[tuple[int, str]]], held: dict[int, list[float]],
                   start: list[float], end: list[float], dur: list[float],
                   start_of: Callable[[int], float], lock_by: dict[int, int]
                   ) -> tuple[int, float]:
    """The replay as events: a node is started when its dependencies are done, earliest
    first (a lock holder by the time it asks for the lock), so the lock is granted in the
    order it is asked for."""
    import heapq

    waiting = [len(d) for d in all_deps]
    users: list[list[int]] = [[] for _ in range(n)]
    for i, deps in enumerate(all_deps):
        for d, _ in deps:
            users[d].append(i)
    heap: list[tuple[float, float, int]] = []

    def ready(i: int) -> None:
        t = start[i] = start_of(i)
        h = held.get(i)
        # (asks are compared to the microsecond: a waiter's ask is computed back from its
        # wait and often equals the holder's to rounding; the capture's order decides then)
        heapq.heappush(heap, (round(t + h[0]), h[3], i) if h is not None else (t, t, i))

    for i in range(n):
        if not waiting[i]:
            ready(i)
    free: dict[float, tuple[float, int]] = {}  # lock -> (free from, its last holder)
    k, k_end = 0, -math.inf
    while heap:
        _, _, i = heapq.heappop(heap)
        t = start[i]
        if i in held:
            before, holding, after, _, lock = held[i]
            ask = t + before
            lock_free, holder = free.get(lock, (-math.inf, -1))
            if lock_free > ask:
                lock_by[i] = holder
            got = max(ask, lock_free)
            lock_free = got + holding
            free[lock] = (lock_free, i)
            e = end[i] = lock_free + after
            dur[i] = e - t
        else:
            e = end[i] = t + dur[i]
        if e > k_end or (e == k_end and i > k):
            k, k_end = i, e
        for u in users[i]:
            waiting[u] -= 1
            if not waiting[u]:
                ready(u)
    return k, k_end


def apply_changes(run: PhaseRun, nodes: Nodes, changes: Changes,
                  delays_in: dict[int, list[MeasuredDelay]], async_lag_us: float,
                  assumptions: set[str], locks: list[Exclusion] | None = None) -> Nodes:
    """The durations and dependencies the changes imply (in place: build_nodes made the
    nodes for this replay). `locks`: the locks shared by the nodes (a node takes the first
    that names it)."""
    if changes.empty():
        return nodes
    sync = run.sync_thread
    locks = locks or []
    for no, excl in enumerate(locks):
        for i, iv in enumerate(nodes.ivs):
            span = excl.held.get(id(iv))
            if span is not None and i not in nodes.held:
                before = max(0.0, (span[0] - iv.start) * 1e6 - excl.wait[id(iv)])
                holding = (span[1] - span[0]) * 1e6
                # (the 4th: when it took the lock, which asked first when both asked at once;
                # the 5th: which lock)
                nodes.held[i] = [before, holding, max(0.0, (iv.end - span[1]) * 1e6),
                                 (span[0] - run.start) * 1e6, float(no)]
    for i, iv in enumerate(nodes.ivs):
        for d in delays_in.get(id(iv), ()):
            call = changes.replacement(d) if changes.replace else None
            new_ms = changes.delay_ms(d) if call is None else call[1]
            if new_ms is None:
                continue
            # per call (the importer summed the calls of the site in this callback run)
            measured = d.mean_us
            seen = changes.call_us.get(call) if call is not None else None
            if seen is not None:
                new = seen[0]
                assumptions.add(
                    f"{d.func} from {d.caller} becomes {call[0]}({_req_text(call)}, ...): "
                    f"{format_us(new)} a call, the median of the capture's {seen[1]} such "
                    "calls")
            elif d.requested_ms == d.requested_ms:
                # keep what the call took beyond its request (timer slack, jiffies rounding)
                new = max(new_ms * 1000.0, measured - (d.requested_ms - new_ms) * 1000.0)
            else:
                new = new_ms * 1000.0
                assumptions.add(f"{d.func} from {d.caller}: the request is not in the "
                                f"trace; the measured time is replaced by {new_ms:g} ms")
            saved = d.calls * max(0.0, measured - new)
            nodes.dur[i] = max(0.0, nodes.dur[i] - saved)
            nodes.cut.setdefault(i, {})[id(d)] = saved
            parts = nodes.held.get(i)
            if parts is not None:  # the part of the callback the call ran in
                span = locks[int(parts[4])].held[id(iv)]
                x = 0 if d.end <= span[0] else 2 if d.start >= span[1] else 1
                parts[x] = max(0.0, parts[x] - saved)
    # prepare and complete never run async (drivers/base/power/main.c dpm_prepare/complete)
    may_async = PHASES[run.phase].may_run_async if run.phase in PHASES else False
    if changes.make_async is not None and sync >= 0 and may_async:
        _to_async(nodes, sync, changes.make_async, async_lag_us, assumptions)
    if changes.make_sync is not None and sync >= 0 and may_async:
        _to_sync(nodes, sync, changes.make_sync, assumptions)
    if changes.ordering == "6.16" and sync >= 0 and may_async:
        # after the moves: a callback moved to async is ordered like the other async ones
        from dpmlens.traces.analysis.ordering import order_616

        order_616(run, nodes, sync, async_lag_us, assumptions)
    return nodes


def _contend(run: PhaseRun, nodes: Nodes, delays_in: dict[int, list[MeasuredDelay]],
             cpus: int, excl: list[Exclusion], sched: SchedLog | None) -> bool:
    """Give the nodes their segments for the contended replay: work de-contended from the
    capture, sleeps as measured less what the changes took off them, the lock where it was
    taken and let go."""
    from dpmlens.traces.analysis.contention import SLEEP, demands

    locks = {}
    for i, h in nodes.held.items():
        iv = nodes.ivs[i]
        lock = excl[int(h[4])]
        got, let_go = lock.held[id(iv)]
        locks[i] = ((got - run.start) * 1e6, (let_go - run.start) * 1e6, lock.wait[id(iv)])
    waits: dict[int, list[tuple[float, float]]] = {}
    if sched is not None:
        from dpmlens.traces.analysis.waits import external_waits

        for i, iv in enumerate(nodes.ivs):
            w = external_waits(sched, iv.group.files[iv.index], iv.thread, iv.start, iv.end)
            if w is not None:
                waits[i] = w
    segs = demands(run, nodes, delays_in, cpus, locks, waits)
    for i, cut in nodes.cut.items():
        segs[i] = [(kind, max(0.0, us - cut.get(id(d), 0.0))
                    if kind == SLEEP and d is not None else us, d) for kind, us, d in segs[i]]
    nodes.segments = segs  # type: ignore[assignment]
    nodes.cpus = cpus
    return bool(waits)


def _req_text(call: tuple[str, float]) -> str:
    return f"{call[1] / _unit_ms(call[0]):g}"


def _calls_measured(delays: list[MeasuredDelay], wanted: set[tuple[str, float]]
                    ) -> dict[tuple[str, float], tuple[float, int]]:
    """Per wanted (delay function, request ms): the median time of one call of it in the
    capture (usleep_range is traced as usleep_range_state: the prefix matches)."""
    out = {}
    for func, req in wanted:
        per = sorted(d.mean_us for d in delays for _ in range(d.calls)
                     if d.func.startswith(func) and d.requested_ms == req)
        if per:
            out[(func, req)] = (per[len(per) // 2], len(per))
    return out


def _to_async(nodes: Nodes, sync: int, pick: Callable[[Interval], bool], lag_us: float,
              assumptions: set[str]) -> None:
    prev_sync = -1  # the last synchronous node that stays synchronous
    moved: dict[int, int] = {}  # moved node -> the sync node before it
    for i, iv in enumerate(nodes.ivs):
        if nodes.thread[i] != sync:
            continue
        if not pick(iv):
            prev_sync = i
            continue
        moved[i] = prev_sync
        nodes.thread[i] = -2 - i  # a worker of its own
        deps = [(d, lk) for d, lk in nodes.deps[i] if lk not in ("sync thread", "async wait")]
        if not deps:
            nodes.lag[i] = lag_us  # it waited for the synchronous loop only
        if prev_sync >= 0:
            deps.append((prev_sync, "dispatched"))
            nodes.extra[i] = {prev_sync: lag_us}
        elif not deps:
            nodes.release[i] = min(nodes.release[i], lag_us)
        nodes.deps[i] = deps
    if not moved:
        return
    # who waited for a moved callback because the synchronous loop ran it (the next
    # synchronous callback, async ones it dispatched) now waits for the synchronous callback
    # before it, with the lag measured after the moved one
    for i in range(len(nodes)):
        if i in moved or not nodes.deps[i]:
            continue
        deps = []
        for d, lk in nodes.deps[i]:
            if d in moved and lk in ("sync thread", "dispatched"):
                if moved[d] < 0:
                    continue
                d = moved[d]
            deps.append((d, lk))
        if not deps:  # it waited for moved callbacks only
            nodes.release[i] = min(nodes.release[i], nodes.lag[i])
        nodes.deps[i] = deps
    assumptions.add(f"moved to async: dispatched {format_us(lag_us)} after the "
                    "synchronous callback before them (" + (
                        "assumed: the capture has no dispatched async callback to measure it"
                        if lag_us == DEFAULT_ASYNC_LAG_US else
                        "the median start-up lag of the capture's async callbacks") + ")")


def _to_sync(nodes: Nodes, sync: int, pick: Callable[[Interval], bool],
             assumptions: set[str]) -> None:
    last_sync = -1
    moved: set[int] = set()
    for i, iv in enumerate(nodes.ivs):
        if nodes.thread[i] == sync:
            if last_sync >= 0 and not any(d == last_sync for d, _ in nodes.deps[i]):
                nodes.deps[i] = [*nodes.deps[i], (last_sync, "sync thread")]
            last_sync = i
            continue
        if not pick(iv):
            continue
        moved.add(i)
        nodes.thread[i] = sync
        deps = [(d, lk) for d, lk in nodes.deps[i]
                if lk in ("parent", "child", "supplier", "consumer")]
        nodes.lag[i] = 0.0
        if last_sync >= 0:
            deps.append((last_sync, "sync thread"))
        nodes.deps[i] = deps
        last_sync = i
    if not moved:
        return
    # the worker that ran a moved callback no longer runs it
    for i in range(len(nodes)):
        if i not in moved:
            nodes.deps[i] = [(d, lk) for d, lk in nodes.deps[i]
                             if not (lk == "thread" and d in moved)]
    assumptions.add("moved to the synchronous thread: run in their measured start order, "
                    "each right after the synchronous callback before them")


def async_start_lag_us(runs: list[PhaseRun],
                       nodes_of: dict[int, Nodes] | None = None) -> float:
    """Median lag from the synchronous callback that dispatched an async one to its start,
    over the async callbacks whose last dependency was that dispatch."""
    lags = []
    for r in runs:
        nodes = (nodes_of or {}).get(id(r)) or build_nodes(r)
        ends = [iv.end for iv in nodes.ivs]
        for i, deps in enumerate(nodes.deps):
            if nodes.thread[i] == r.sync_thread or not deps:
                continue
            last = max(deps, key=lambda d: (ends[d[0]], -_RANK_OF.get(d[1], 9)))
            if last[1] == "dispatched":
                lags.append(nodes.lag[i])
    if not lags:
        return DEFAULT_ASYNC_LAG_US
    lags.sort()
    return lags[len(lags) // 2]


def matcher(names: list[str]) -> Callable[[Interval], bool] | None:
    """--async/--sync DEVICE|DRIVER|all."""
    if not names:
        return None
    if "all" in names:
        return lambda iv: True
    wanted = set(names)
    return lambda iv: iv.device in wanted or iv.driver in wanted


@dataclass
class WhatIf:
    replays: list[Replay]
    assumptions: list[str]
    not_replayed: list[str]  # changes that found nothing to change, delays outside callbacks
    evidence: Evidence | None = None
    sure: Sureness | None = None  # its band and what to capture next (traces.analysis.bands)

    def per_phase(self) -> list[tuple[str, int, float, float]]:
        """(phase, runs, measured mean us, predicted mean us) in the order of a cycle."""
        from dpmlens.traces.analysis.aggregate import _order

        agg: dict[str, list[float]] = {}
        for r in self.replays:
            a = agg.setdefault(r.run.phase, [0, 0.0, 0.0])
            a[0] += 1
            a[1] += r.measured_us
            a[2] += r.predicted_us
        return [(ph, int(a[0]), round(a[1] / a[0], 3), round(a[2] / a[0], 3))
                for ph, a in sorted(agg.items(), key=lambda kv: _order(kv[0]))]


def what_if(runs: list[PhaseRun], delays: list[MeasuredDelay], changes: Changes) -> WhatIf:
    from dpmlens.traces.analysis.delays import by_interval

    assumptions: set[str] = set()
    measured = any(d.total_us > 0 for d in delays)
    told = [] if measured else _told_from_sleeps(runs, changes, assumptions)
    kprobed, delays = delays, delays + told
    delays_in = by_interval(delays)
    replays = []
    moves = changes.make_async is not None or changes.make_sync is not None
    if changes.replace:
        changes.call_us = _calls_measured(delays, set(changes.replace.values()))
        for text, call in changes.replace.items():
            if call not in changes.call_us:
                changes.delays[text] = call[1]  # no such call measured: its request
    targeted = [d for d in delays if changes.delay_ms(d) is not None
                or (changes.replace and changes.replacement(d) is not None)]
    changed = {id(d.interval) for d in targeted if d.interval is not None}
    nodes_of: dict[int, Nodes] = {}
    for r in runs:
        # prepare and complete never run async: a move cannot touch them
        may_async = r.phase in PHASES and PHASES[r.phase].may_run_async
        movable = moves and may_async and any(
            (changes.make_async and changes.make_async(iv))
            or (changes.make_sync and changes.make_sync(iv)) for iv in r.intervals)
        reordered = changes.ordering != "legacy" and may_async
        touched = movable or reordered or any(id(iv) in changed for iv in r.intervals)
        if touched or changes.empty():
            # (an untouched run would replay to itself; the no-change replay is the check)
            nodes_of[id(r)] = build_nodes(r)
    locks: list[Exclusion] = []
    evidence = Evidence(delays=measured,
                        sched=changes.sched is not None and changes.sched.events > 0,
                        sleep_calls=sum(d.calls for d in told))
    if moves or changed or changes.ordering != "legacy":
        # (the locks from the kprobes' own calls: a told sleep is no evidence of a lock)
        locks = _locks(runs, kprobed, changes, assumptions, evidence)
    lag = (async_start_lag_us(runs, nodes_of)
           if changes.make_async is not None or changes.ordering != "legacy" else 0.0)
    contended = False
    informed = 0  # runs whose waits the scheduler's events told apart from work
    for r in runs:
        nodes = nodes_of.get(id(r))
        if nodes is None:
            replays.append(Replay(r, r.wall_us, r.wall_us, None, 0.0))
            continue
        nodes = apply_changes(r, nodes, changes, delays_in, lag, assumptions, locks)
        if changes.cpus:
            informed += _contend(r, nodes, delays_in, changes.cpus, locks, changes.sched)
            contended = True
        replays.append(replay(r, nodes))
    if changes.cpus and contended:
        assumptions.add(
            f"CPU contention: callbacks running at once share {changes.cpus} CPUs (processor "
            "sharing); a callback's time outside its measured delays"
            + (" and its waits for a device or a timer (the scheduler's events, followed "
               "through the threads it waited for)" if informed else "")
            + " is CPU work, its demand the work's time at the rate the capture's "
            "concurrency gave it")
    missing = []
    for text in changes.delays:
        t = parse_target(text)
        if t is None or not any(target_matches(t, d) for d in delays):
            if t is None:
                missing.append(f"--delay {text}: not a delay target")
            elif t[1] is None:
                missing.append(f"--delay {text}: no measured delay is called from {t[0]}")
            else:
                req = f" requesting {t[2]:g} ms" if t[2] is not None else ""
                missing.append(f"--delay {text}: no measured {t[1]}{req} is called from "
                               f"{t[0]}")
    outside = {(d.caller, d.func) for d in targeted if d.interval is None}
    for caller, func in sorted(outside):
        missing.append(f"{func} from {caller} ran outside PM callbacks (another thread): "
                       "not replayed")
    if changes.ordering != "legacy":
        from dpmlens.traces.analysis.ordering import blocked_workers_note

        note = blocked_workers_note(runs)
        if note:
            assumptions.add(note)
    evidence.waits = bool(informed)
    evidence.cpus = changes.cpus
    evidence.delays_replayed = bool(targeted)
    return WhatIf(replays, sorted(assumptions), missing, evidence,
                  sureness(_rated_kinds(changes, evidence), evidence))


def _told_from_sleeps(runs: list[PhaseRun], changes: Changes, assumptions: set[str]
                      ) -> list[MeasuredDelay]:
    """The --delay targets' calls told from the scheduler's events (a capture without delay
    kprobes): each target naming a timed sleep and its request (CALLER:msleep(50))."""
    if changes.sched is None or not (changes.delays or changes.replace):
        return []
    from dpmlens.traces.analysis.sleep_calls import TIMER_SLEEPS, sleep_calls

    wanted = []
    for text in changes.delays:
        t = parse_target(text)
        if t is not None and t[1] in TIMER_SLEEPS and t[2] is not None:
            wanted.append((t[0], t[1], t[2]))
    told = sleep_calls(runs, changes.sched, wanted, changes.clock)
    for caller, func, req in wanted:
        mine = [d for d in told if (d.caller, d.func, d.requested_ms) == (caller, func, req)]
        if not mine:
            continue
        devices = sorted({d.interval.device for d in mine if d.interval is not None})
        shown = ", ".join(devices[:6]) + (f" and {len(devices) - 6} more" if len(devices) > 6
                                         else "")
        assumptions.add(
            f"no delay kprobes: {sum(d.calls for d in mine)} sleeps of {func}({req:g})'s "
            f"length ({changes.clock.text(req)}, ended by a timer) in the callbacks of "
            f"{shown} are taken as its calls from {caller}; the scheduler's events do not say "
            "which function slept (delay kprobes would)")
    return told


def _rated_kinds(changes: Changes, evidence: Evidence) -> list[str]:
    """The change kinds as the bands rate them: a move to async that meets a lock the
    capture could not show (devices that never ran at once: handoffs.unseen_usb_locks) is
    `async-unseen`, measured apart from the informed moves (lab/band_table.py)."""
    kinds = changes.kinds()
    if "async" in kinds and any("never overlapped" in lk for lk in evidence.locks):
        kinds[kinds.index("async")] = "async-unseen"
    if "delay" in kinds and not evidence.delays_replayed:
        # nothing the change names was measured or told: not a prediction (no band)
        kinds[kinds.index("delay")] = NOT_REPLAYED
    return kinds


def _locks(runs: list[PhaseRun], delays: list[MeasuredDelay], changes: Changes,
           assumptions: set[str], evidence: Evidence) -> list[Exclusion]:
    """The locks the replay keeps: inferred from the delay kprobes (calls of one site that
    never overlap across threads: traces.analysis.exclusive), then from the scheduler's
    events (hand-overs between callbacks: traces.analysis.handoffs) for the devices the
    first left out; from another capture (--locks-from) when this one shows none."""
    from dpmlens.traces.analysis.exclusive import held_spans, infer
    from dpmlens.traces.analysis.handoffs import contention, lock_spans

    out: list[Exclusion] = []
    excl = infer(runs, delays)
    if excl is None and changes.locks is not None:
        excl = held_spans(runs, delays, changes.locks)
        assumptions.add("(from --locks-from) " + excl.describe())
        evidence.locks.append(f"from --locks-from (delay kprobes): {', '.join(excl.devices)}")
    elif excl is not None:
        assumptions.add(excl.describe())
        evidence.locks.append(f"delay kprobes (calls that never overlap): "
                              f"{', '.join(excl.devices)}")
    if excl is not None:
        out.append(excl)
    taken = set(excl.devices) if excl is not None else set()
    found = contention(runs, changes.sched) if changes.sched is not None else None
    mine = [lk for lk in (found.locks if found else []) if not taken & set(lk.devices)]
    for lk in mine:
        out.append(lock_spans(runs, lk, found))
        assumptions.add(lk.describe())
        evidence.locks.append(f"scheduler events (hand-overs) in {lk.phase}: "
                              f"{', '.join(lk.devices)}"
                              + (f" behind {lk.shared}" if lk.shared else ""))
        taken |= set(lk.devices)
    for lk, ask in changes.sched_locks:
        if taken & set(lk.devices):
            continue
        out.append(lock_spans(runs, lk, None, ask))
        assumptions.add("(from --locks-from) " + lk.describe())
        evidence.locks.append(f"from --locks-from (scheduler events) in {lk.phase}: "
                              f"{', '.join(lk.devices)}")
        taken |= set(lk.devices)
    if changes.sched is None and not changes.sched_locks:
        # no timing evidence of these locks: devices behind one controller, by their names
        from dpmlens.traces.analysis.handoffs import WHY, end_order_spans, kind_of, topology_locks

        names = topology_locks(runs, taken) or ([] if excl is not None else changes.name_locks)
        named: set[str] = set()
        for lk in names:
            if taken & set(lk.devices):
                continue
            named |= set(lk.devices)
            out.append(end_order_spans(runs, lk))
            assumptions.add(
                f"serialized as one lock in {lk.phase} by their names alone: "
                f"{', '.join(lk.devices)} behind {lk.shared} ({WHY[kind_of(lk)]}); where "
                "they overlapped, each held it from the end of the one before it; no event "
                "in the capture shows it")
            evidence.locks.append(f"topology (names) in {lk.phase}: {', '.join(lk.devices)} "
                                  f"behind {lk.shared}")
        taken |= named  # (a device may hold one lock in suspend and one in resume)
    if changes.make_async is not None or changes.ordering != "legacy":
        # devices a move may run at once for the first time: the lock they would meet
        from dpmlens.traces.analysis.handoffs import unseen_usb_locks

        for lk, ex in unseen_usb_locks(runs, delays, taken):
            out.append(ex)
            how = ("held from its first to its last port-reset delay (hub_port_init, "
                   "hub_port_reset: the delay kprobes)" if ex.sites else
                   "held for its whole callback (no delay kprobes)")
            assumptions.add(
                f"serialized as one lock in resume: {', '.join(lk.devices)} behind "
                f"{lk.shared} never ran at once in the capture, so it cannot show their "
                "contention; an xHCI that lost its state over S3 resets and re-addresses each "
                f"device under its address0_mutex (drivers/usb/core/hub.c): each {how}")
            evidence.locks.append(f"topology (names, never overlapped) in resume: "
                                  f"{', '.join(lk.devices)} behind {lk.shared}"
                                  + (" (port-reset delays)" if ex.sites else ""))
            taken |= set(lk.devices)
    return out


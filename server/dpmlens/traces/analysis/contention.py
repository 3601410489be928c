"""CPU contention in the what-if replay: callbacks running at once share the CPUs.

A callback's measured time is its sleeps (the delay kprobes: msleep, usleep_range,
schedule_timeout, ... take no CPU) and its work (the rest: its own code and the threads it
waits for, the ata ports' scsi_eh work). Work that ran while m callbacks were working at once
on C CPUs got min(1, C/m) of a CPU (processor sharing), so its demand is the integral of that
rate over the time it ran (de-contended from the capture). The replay runs the same demand at
the rate its own concurrency gives (re-contended): a callback moved to the synchronous loop
runs alone and takes its demand; callbacks moved to workers stretch each other.

Without changes the replay has the capture's concurrency, so every work segment takes what it
measured and the phase is reproduced. Not modelled: threads outside callbacks (they are part
of the measured rates, not of the replayed ones), a waiting callback that is not inside a
delay kprobe (it counts as work), and CPU speed (the host's load on the emulated CPUs is the
same on both sides of an A/B).
"""

from __future__ import annotations

import bisect
import heapq
import lzma
import math
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from dpmlens.traces.analysis.delays import MeasuredDelay
from dpmlens.traces.analysis.nodes import Nodes
from dpmlens.traces.model.timeline import PhaseRun

# ftrace's header: "# entries-in-buffer/entries-written: 29551/29551   #P:2"
_CPUS = re.compile(rb"#P:(\d+)")


def cpus_of(paths: Iterable[str | Path]) -> int | None:
    """The CPU count an ftrace capture states in its header (the largest over the files);
    None when none states it."""
    best = None
    files: list[Path] = []
    for p in paths:  # a folder: the ftrace captures in it (as the loader reads folders)
        path = Path(p)
        files += sorted(path.rglob("*ftrace*")) if path.is_dir() else [path]
    for path in files:
        try:
            if path.suffix == ".xz":
                with lzma.open(path) as f:
                    head = f.read(4096)
            elif path.suffix == ".gz":
                import gzip

                with gzip.open(path) as f:
                    head = f.read(4096)
            else:
                with open(path, "rb") as f:
                    head = f.read(4096)
        except (OSError, EOFError, lzma.LZMAError):  # the loader reports unreadable files
            continue
        m = _CPUS.search(head)
        if m is not None and int(m.group(1)) > 0:
            best = max(best or 0, int(m.group(1)))
    return best


# a node's segments in order: (kind, amount, delay): WORK (CPU demand, us), SLEEP (us; the
# delay it is, or None), ACQUIRE and RELEASE (a lock shared with other nodes; amount 0)
WORK, SLEEP, ACQUIRE, RELEASE = 0, 1, 2, 3
Segment = tuple[int, float, "MeasuredDelay | None"]
# measured: (kind, start us, end us from the phase start, delay); a lock wait is left out
Measured = tuple[int, float, float, "MeasuredDelay | None"]


def measured_segments(run: PhaseRun, nodes: Nodes,
                      delays_in: dict[int, list[MeasuredDelay]],
                      locks: dict[int, tuple[float, float, float]] | None = None,
                      waits: dict[int, list[tuple[float, float]]] | None = None
                      ) -> list[list[Measured]]:
    """Per node, its measured segments. A delay row summing several calls (the importer's
    per-site sum) is one sleep of its total time from its first call: the placement is the
    same on both sides. locks: node -> (took the lock, let it go, waited us before taking
    it), all from the phase start (traces.analysis.exclusive); the wait is cut out. waits:
    node -> the stretches (seconds) it waited for a device or a timer outside the delays
    (traces.analysis.waits): sleeps too, no delay of their own."""
    t0 = run.start
    out = []
    for i, iv in enumerate(nodes.ivs):
        s0, e0 = (iv.start - t0) * 1e6, (iv.end - t0) * 1e6
        sleeps: list[tuple[float, float, MeasuredDelay | None]] = []
        at = s0
        for d in sorted(delays_in.get(id(iv), ()), key=lambda d: d.start):
            ds = max(at, (d.start - t0) * 1e6)
            de = min(e0, ds + d.total_us)
            if de > ds:
                sleeps.append((ds, de, d))
                at = de
        if waits and waits.get(i):
            sleeps = _with_waits(sleeps, [((a - t0) * 1e6, (b - t0) * 1e6) for a, b in waits[i]],
                                 s0, e0)
        lock = locks.get(i) if locks else None
        cuts = sorted({s0, e0, *(x for s, e, _ in sleeps for x in (s, e)),
                       *((min(max(lock[0] - lock[2], s0), e0), min(max(lock[0], s0), e0),
                          min(max(lock[1], s0), e0)) if lock else ())})
        segs: list[Measured] = []
        k = 0
        for a, b in zip(cuts, cuts[1:], strict=False):
            if lock and a == min(max(lock[0], s0), e0) and not any(x[0] == ACQUIRE for x in segs):
                segs.append((ACQUIRE, a, a, None))
            if lock and a == min(max(lock[1], s0), e0) and not any(x[0] == RELEASE for x in segs):
                segs.append((RELEASE, a, a, None))
            if lock and lock[0] - lock[2] <= a and b <= lock[0] and lock[2] > 0:
                continue  # the lock wait: the replay makes its own
            while k < len(sleeps) and sleeps[k][1] <= a:
                k += 1
            if k < len(sleeps) and sleeps[k][0] <= a and b <= sleeps[k][1]:
                segs.append((SLEEP, a, b, sleeps[k][2]))
            else:
                segs.append((WORK, a, b, None))
        if lock:
            if not any(x[0] == ACQUIRE for x in segs):
                segs.append((ACQUIRE, e0, e0, None))
            if not any(x[0] == RELEASE for x in segs):
                segs.append((RELEASE, e0, e0, None))
        if not segs:
            segs.append((WORK, s0, s0, None))
        out.append(segs)
    return out


def _with_waits(sleeps: list[tuple[float, float, MeasuredDelay | None]],
                waits: list[tuple[float, float]], s0: float, e0: float
                ) -> list[tuple[float, float, MeasuredDelay | None]]:
    """The delays' sleeps, and the waits' stretches outside them (a delay is a wait with a
    name: it keeps its own segment); in order, none overlapping (the delays do not overlap
    each other, nor do the waits: traces.analysis.waits walks the time once)."""
    out = list(sleeps)
    for a, b in waits:
        a, b = max(a, s0), min(b, e0)
        for ds, de, _ in sleeps:  # cut out the delays
            if de <= a or ds >= b:
                continue
            if ds > a:
                out.append((a, ds, None))
            a = max(a, de)
        if b > a:
            out.append((a, b, None))
    out.sort(key=lambda x: x[0])
    merged: list[tuple[float, float, MeasuredDelay | None]] = []
    for seg in out:  # back-to-back waits are one
        if merged and merged[-1][2] is None and seg[2] is None and seg[0] == merged[-1][1]:
            merged[-1] = (merged[-1][0], seg[1], None)
        else:
            merged.append(seg)
    return merged


def rate_integral(segs: list[list[Measured]], cpus: int) -> Callable[[float], float]:
    """R(t): the integral of min(1, C/m(u)) du, m the number of work segments open at u
    (rate 1 where none is open: never inside a work segment)."""
    delta: dict[float, int] = {}
    for node in segs:
        for kind, s, e, _ in node:
            if kind == WORK and e > s:
                delta[s] = delta.get(s, 0) + 1
                delta[e] = delta.get(e, 0) - 1
    xs = sorted(delta)
    rs: list[float] = []
    rates: list[float] = []  # the rate from xs[k] to xs[k + 1]
    m, acc = 0, 0.0
    for k, x in enumerate(xs):
        if k:
            acc += (x - xs[k - 1]) * rates[-1]
        rs.append(acc)
        m += delta[x]
        rates.append(min(1.0, cpus / m) if m > 0 else 1.0)

    def at(t: float) -> float:
        k = bisect.bisect_right(xs, t) - 1
        if k < 0:
            return t - xs[0] if xs else t
        return rs[k] + (t - xs[k]) * rates[k]

    return at


def demands(run: PhaseRun, nodes: Nodes, delays_in: dict[int, list[MeasuredDelay]],
            cpus: int, locks: dict[int, tuple[float, float, float]] | None = None,
            waits: dict[int, list[tuple[float, float]]] | None = None
            ) -> list[list[Segment]]:
    """Per node, its segments: sleeps (and waits) as measured, work de-contended (the CPU
    time it needed alone), the lock taken and let go where it was."""
    segs = measured_segments(run, nodes, delays_in, locks, waits)
    integral = rate_integral(segs, cpus)
    out: list[list[Segment]] = []
    for node in segs:
        out.append([(kind, (e - s) if kind == SLEEP else
                     max(0.0, integral(e) - integral(s)) if kind == WORK else 0.0, d)
                    for kind, s, e, d in node])
    return out


def replay_contended(nodes: Nodes, segments: list[list[Segment]], cpus: int,
                     start_of: Callable[[int], float], start: list[float], end: list[float],
                     lock_by: dict[int, int]) -> tuple[int, float]:
    """The replay as events with processor sharing: a node starts when its dependencies are
    done (start_of), then runs its segments; the work segments open at once share the CPUs;
    the lock goes to the first to ask (the capture's order on a tie). Fills start, end and
    lock_by (node -> the holder it waited for); returns the node that ended last and its
    end."""
    n = len(nodes)
    deps = nodes.deps
    took = {i: h[3] for i, h in nodes.held.items()}
    lock_of = {i: int(h[4]) for i, h in nodes.held.items()}
    waiting = [len(d) for d in deps]
    users: list[list[int]] = [[] for _ in range(n)]
    for i, ds in enumerate(deps):
        for d, _ in ds:
            users[d].append(i)
    pending: list[tuple[float, int]] = []
    for i in range(n):
        if not waiting[i]:
            start[i] = start_of(i)
            heapq.heappush(pending, (start[i], i))
    seg_at = [0] * n
    left = [0.0] * n  # what is left of the current segment (work: demand, sleep: us)
    working: set[int] = set()
    sleeping: set[int] = set()
    # per lock: its waiters (asked, took, node), its holder, the last to let go and when
    queue: dict[int, list[tuple[float, float, int]]] = {}
    holder: dict[int, int] = {}
    asked: dict[int, float] = {}
    released: dict[int, tuple[int, float]] = {}
    now = -math.inf
    k, k_end = 0, -math.inf
    eps = 1e-6  # us

    def enter(i: int, t: float) -> None:
        """Node i goes on from its current segment at t (or ends)."""
        nonlocal k, k_end
        segs = segments[i]
        while seg_at[i] < len(segs):
            kind, amount, _ = segs[seg_at[i]]
            if kind == ACQUIRE:
                # granted by the loop, among the asks of the same microsecond
                asked[i] = t
                heapq.heappush(queue.setdefault(lock_of.get(i, 0), []),
                               (round(t), took.get(i, t), i))
                return
            if kind == RELEASE:
                lk = lock_of.get(i, 0)
                if holder.get(lk, -1) == i:
                    holder[lk] = -1
                    released[lk] = (i, t)
            elif amount > eps:
                left[i] = amount
                (sleeping if kind == SLEEP else working).add(i)
                return
            seg_at[i] += 1
        end[i] = t
        if t > k_end or (t == k_end and i > k):
            k, k_end = i, t
        for u in users[i]:
            waiting[u] -= 1
            if not waiting[u]:
                start[u] = start_of(u)
                heapq.heappush(pending, (max(start[u], t), u))

    while pending or working or sleeping or any(queue.values()):
        lk = next((x for x, q in queue.items() if q and holder.get(x, -1) < 0), None)
        if lk is not None:
            due = _next_due(working, sleeping, left, pending, cpus, now)
            if due - now > 1.0 or not (pending or working or sleeping):
                _, _, w = heapq.heappop(queue[lk])
                holder[lk] = w
                last, at = released.get(lk, (-1, -math.inf))
                if last >= 0 and at > asked[w]:
                    lock_by[w] = last
                seg_at[w] += 1
                enter(w, now)
                continue
        if not (working or sleeping):
            if not pending:  # waiters only, the lock held by a node that will not let go
                break
            t, i = heapq.heappop(pending)
            now = max(now, t)
            seg_at[i] = 0
            enter(i, now)
            continue
        rate = min(1.0, cpus / len(working)) if working else 1.0
        dt = math.inf
        if working:
            dt = min(left[i] for i in working) / rate
        if sleeping:
            dt = min(dt, min(left[i] for i in sleeping))
        if pending and pending[0][0] - now < dt:
            t, i = heapq.heappop(pending)
            _advance(working, sleeping, left, max(0.0, t - now), rate)
            now = max(now, t)
            seg_at[i] = 0
            enter(i, now)
            continue
        _advance(working, sleeping, left, dt, rate)
        now += dt
        done = [i for i in working if left[i] <= eps] + [i for i in sleeping if left[i] <= eps]
        for i in sorted(done):
            working.discard(i)
            sleeping.discard(i)
            seg_at[i] += 1
            enter(i, now)
    for q in queue.values():  # never got the lock (a holder that never let go): as asked
        for _, _, w in q:
            end[w] = max(end[w], start[w])
    return k, k_end


def _next_due(working: set[int], sleeping: set[int], left: list[float],
              pending: list[tuple[float, int]], cpus: int, now: float) -> float:
    """When the next event happens (inf: none)."""
    due = pending[0][0] if pending else math.inf
    if working:
        due = min(due, now + min(left[i] for i in working) / min(1.0, cpus / len(working)))
    if sleeping:
        due = min(due, now + min(left[i] for i in sleeping))
    return due


def _advance(working: set[int], sleeping: set[int], left: list[float], dt: float,
             rate: float) -> None:
    if dt <= 0.0 or dt == math.inf:
        return
    for i in working:
        left[i] -= dt * rate
    for i in sleeping:
        left[i] -= dt

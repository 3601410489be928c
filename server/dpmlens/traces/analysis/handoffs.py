"""Waits of one callback for another, from the scheduler's events: contention as a model fact.

A callback whose thread blocked and was woken by a thread that was running another callback
at that moment waited for that callback: a mutex its holder let go (mutex_unlock() wakes the
first waiter from the holder's thread), a completion it signalled. On an xHCI after S3 every
USB device is reset and re-addressed under the controller's `address0_mutex`
(drivers/usb/core/hub.c hub_port_init(), called from usb_reset_and_verify_device()), so the
resumes of usb 2-1, 2-2 and 3-3 on three workers run one after another: 2-2 waits ~250 ms for
2-1 and 3-3 ~450 ms for 2-2, and that wait is not the device's time. With pm_async=0 it is
gone. Read as "device or timer wait" (the waker's own sleeps), a what-if that serializes the
callbacks keeps it, and the fleet calls the device slow.

Evidence: the wake-up itself (waker thread = the other callback's thread, at a moment inside
that callback). A pair of devices seen so in at least MIN_RUNS phase runs (one run when the
capture has one) is an edge; the edges' connected components are locks, replayed like the
locks traces.analysis.exclusive infers from delay kprobes: a member takes the lock when the
wake-up hands it over (at its callback start when it never waited) and lets it go when it
hands it on (at its callback end when nobody waited). The devices' nearest common ancestor
(the shared controller, from the capture's parent names) is named beside the lock.
"""

from __future__ import annotations

import bisect
import math
import re
import statistics
from collections import defaultdict
from dataclasses import dataclass, field

from dpmlens.traces.analysis.delays import MeasuredDelay
from dpmlens.traces.analysis.exclusive import Exclusion, held_spans
from dpmlens.traces.model.sample import SampleStore
from dpmlens.traces.model.sched import BLOCKED, SchedLog
from dpmlens.traces.model.timeline import Interval, PhaseRun

MIN_WAIT_US = 1000.0  # a shorter hand-over is a wake-up in passing, not a lock to replay
MIN_RUNS = 2  # phase runs that must show a pair before it is an edge
MIN_SHARE = 0.25  # ... and this share of the phase's runs (a lock shows in most of them)


class Running:
    """Which callback each thread was running when (per capture file and thread), from the
    samples: (device, driver) keys looked up by time."""

    def __init__(self, store: SampleStore) -> None:
        spans: dict[tuple[int, int], list[tuple[float, float, str, str]]] = defaultdict(list)
        for g in store.groups.values():
            for i, t in enumerate(g.threads):
                s = g.starts[i]
                if t < 0 or s != s:
                    continue
                spans[(g.files[i], t)].append((s, s + g.durations[i] / 1e6, g.key[1],
                                               g.key[0]))
        self._starts: dict[tuple[int, int], list[float]] = {}
        self._spans = spans
        for k, v in spans.items():
            v.sort()
            self._starts[k] = [x[0] for x in v]

    def at(self, file: int, thread: int, t: float) -> tuple[str, str] | None:
        """(device, driver) of the callback `thread` ran at `t`, None when it ran none."""
        starts = self._starts.get((file, thread))
        if not starts:
            return None
        k = bisect.bisect_right(starts, t) - 1
        if k < 0:
            return None
        s, e, dev, drv = self._spans[(file, thread)][k]
        return (dev, drv) if s <= t <= e else None


@dataclass
class Wait:
    """One stretch in which callback `waiter` waited for callback `holder`."""

    waiter: Interval
    holder: Interval
    start: float  # s
    end: float  # the wake-up (s)

    @property
    def us(self) -> float:
        return (self.end - self.start) * 1e6


def run_waits(run: PhaseRun, log: SchedLog) -> list[Wait]:
    """Every stretch of the run in which a callback was blocked until another callback's
    thread woke it while running that callback."""
    by_thread: dict[int, list[Interval]] = defaultdict(list)
    for iv in run.intervals:
        if iv.thread >= 0:
            by_thread[iv.thread].append(iv)
    out = []
    for iv in run.intervals:
        if iv.thread < 0:
            continue
        f = iv.group.files[iv.index]
        for a, b, state, waker in log.states(f, iv.thread, iv.start, iv.end):
            if state != BLOCKED or waker < 0 or waker == iv.thread:
                continue
            for y in by_thread.get(waker, ()):
                if y.start <= b <= y.end and y.device != iv.device \
                        and y.group.files[y.index] == f:
                    out.append(Wait(iv, y, a, b))
                    break
    return out


@dataclass
class Edge:
    """Device `waiter` waited for device `holder` in `runs` phase runs of `phase`."""

    phase: str
    waiter: str
    holder: str
    runs: int = 0
    waits: list[float] = field(default_factory=list)  # us, one a wait

    @property
    def median_us(self) -> float:
        return statistics.median(self.waits) if self.waits else 0.0


@dataclass
class Contention:
    """What the scheduler's events say the callbacks of a capture waited for in each other."""

    waits: dict[int, list[Wait]]  # id(run) -> its waits (all, short ones too)
    edges: list[Edge]
    locks: list[SchedLock]


@dataclass
class SchedLock:
    """A lock (or a shared controller) inferred from hand-overs between the callbacks of
    `devices` in one phase."""

    phase: str
    devices: list[str]
    edges: list[Edge]
    shared: str | None  # the devices' nearest common ancestor (a controller), if any
    runs: int  # phase runs with a hand-over between them

    def describe(self) -> str:
        pairs = "; ".join(f"{e.waiter} waited for {e.holder} in {e.runs} run(s), median "
                          f"{e.median_us / 1000:.1f} ms" for e in self.edges)
        where = f" (behind one {self.shared})" if self.shared else ""
        return (f"serialized as one lock in {self.phase}: {', '.join(self.devices)}{where}: "
                f"woken by each other's callback threads ({pairs}); the waits are not "
                "device time")


def contention(runs: list[PhaseRun], log: SchedLog | None) -> Contention | None:
    """The waits, edges and locks of the capture; None without scheduler events."""
    if log is None:
        return None
    waits: dict[int, list[Wait]] = {}
    edges: dict[tuple[str, str, str], Edge] = {}
    phase_runs: dict[str, int] = defaultdict(int)
    for r in runs:
        w = run_waits(r, log)
        waits[id(r)] = w
        phase_runs[r.phase] += 1
        seen = set()
        for x in w:
            if x.us < MIN_WAIT_US:
                continue
            key = (r.phase, x.waiter.device, x.holder.device)
            e = edges.get(key)
            if e is None:
                e = edges[key] = Edge(*key)
            e.waits.append(x.us)
            if key not in seen:
                seen.add(key)
                e.runs += 1
    # a pair (either way round) needs MIN_RUNS runs (every run of a capture with fewer) and
    # MIN_SHARE of the phase's runs
    pair_runs: dict[tuple[str, frozenset[str]], int] = defaultdict(int)
    for e in edges.values():
        pair_runs[(e.phase, frozenset((e.waiter, e.holder)))] += e.runs
    kept = [e for e in edges.values()
            if pair_runs[(e.phase, frozenset((e.waiter, e.holder)))]
            >= max(min(MIN_RUNS, phase_runs[e.phase]),
                   math.ceil(MIN_SHARE * phase_runs[e.phase]))]
    ancestry = next((r.ancestry for r in runs if r.ancestry), None) or {}
    locks = []
    for phase in sorted({e.phase for e in kept}):
        mine = [e for e in kept if e.phase == phase]
        for comp in _components(mine):
            ce = sorted((e for e in mine if e.waiter in comp),
                        key=lambda e: (e.waiter, e.holder))
            nruns = sum(1 for r in runs if r.phase == phase and any(
                x.us >= MIN_WAIT_US and x.waiter.device in comp and x.holder.device in comp
                for x in waits[id(r)]))
            locks.append(SchedLock(phase, sorted(comp), ce, _common_ancestor(comp, ancestry),
                                   nruns))
    return Contention(waits, sorted(edges.values(), key=lambda e: (e.phase, e.waiter,
                                                                   e.holder)), locks)


def _components(edges: list[Edge]) -> list[set[str]]:
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for e in edges:
        parent[find(e.waiter)] = find(e.holder)
    comps: dict[str, set[str]] = defaultdict(set)
    for x in list(parent):
        comps[find(x)].add(x)
    return sorted(comps.values(), key=lambda c: sorted(c))


def _common_ancestor(devices: set[str], ancestry: dict[str, str]) -> str | None:
    def chain(d: str) -> list[str]:
        out, seen = [], {d}
        while d in ancestry and ancestry[d] not in seen:
            d = ancestry[d]
            seen.add(d)
            out.append(d)
        return out

    chains = [chain(d) for d in sorted(devices)]
    if not chains or not chains[0]:
        return None
    common = set(chains[0]).intersection(*map(set, chains[1:]))
    for d in chains[0]:  # the nearest
        if d in common:
            return d
    return None


def lock_spans(runs: list[PhaseRun], lock: SchedLock, found: Contention | None,
               ask: dict[str, float] | None = None) -> Exclusion:
    """The lock as the replay takes it (traces.analysis.exclusive's held spans and waits):
    per member callback, when it took the lock (the hand-over that woke it; else its start,
    or `ask` us after it: when that device asked in the capture the lock came from) and when
    it let it go (the hand-over it made; else its end). `found`: this capture's waits (None:
    the lock comes from another capture, --locks-from)."""
    members = set(lock.devices)
    out = Exclusion([], lock.devices, lock.runs)
    for r in runs:
        if r.phase != lock.phase:
            continue
        waits = [w for w in (found.waits.get(id(r), []) if found else [])
                 if w.us >= MIN_WAIT_US and w.waiter.device in members
                 and w.holder.device in members]
        got: dict[int, tuple[float, float]] = {}  # id(iv) -> (wake-up, wait us)
        let_go: dict[int, float] = {}
        for w in waits:
            if id(w.waiter) not in got or w.end > got[id(w.waiter)][0]:
                got[id(w.waiter)] = (w.end, w.us)
            let_go[id(w.holder)] = min(let_go.get(id(w.holder), w.end), w.end)
        asked = [w.start for w in waits]
        for iv in r.intervals:
            if iv.device not in members:
                continue
            if id(iv) in got:
                took, wait = got[id(iv)]
            else:
                took = iv.start + (ask or {}).get(iv.device, 0.0) / 1e6
                # it held the lock when the others asked for it
                before = [a for a in asked if a >= iv.start]
                took, wait = min([took, *before, iv.end]), 0.0
            out.held[id(iv)] = (took, max(took, let_go.get(id(iv), iv.end)))
            out.wait[id(iv)] = wait
    return out


def ask_offsets(runs: list[PhaseRun], lock: SchedLock, found: Contention) -> dict[str, float]:
    """Per member device, the median time (us) from its callback's start to its ask for the
    lock, over the waits this capture shows: where another capture's callbacks take it."""
    members = set(lock.devices)
    per: dict[str, list[float]] = defaultdict(list)
    for r in runs:
        if r.phase != lock.phase:
            continue
        for w in found.waits.get(id(r), []):
            if w.us >= MIN_WAIT_US and w.waiter.device in members \
                    and w.holder.device in members:
                per[w.waiter.device].append((w.start - w.waiter.start) * 1e6)
    return {d: statistics.median(v) for d, v in per.items()}


# USB devices by name (2-1, 1-1.4) and root hubs (usb2): the controller is the first ancestor
# that is neither
_USB_DEVICE = re.compile(r"^\d+-[\d.]+$")
_ROOT_HUB = re.compile(r"^usb\d+$")
# libata's ports (ata3): their parent is the host controller; the error handling their
# suspend and resume callbacks schedule and wait for (ata_port_request_pm) runs under the
# host's eh_mutex, one port at a time (drivers/ata/libata-eh.c ata_eh_acquire())
_ATA_PORT = re.compile(r"^ata\d+$")
# why devices behind one controller take turns, by kind (what the assumption says)
WHY = {
    "usb": "an xHCI that lost its state over S3 resets and re-addresses each device under "
           "its address0_mutex (drivers/usb/core/hub.c)",
    "ata": "libata runs the error handling of a host's ports one at a time under its "
           "eh_mutex (drivers/ata/libata-eh.c ata_eh_acquire())",
}


def kind_of(lock: SchedLock) -> str:
    return "ata" if all(_ATA_PORT.match(d) for d in lock.devices) else "usb"


def topology_locks(runs: list[PhaseRun], skip: set[str] | None = None) -> list[SchedLock]:
    """Locks from the device names alone, for devices without timing evidence of theirs:
    the USB devices behind one host controller whose resume callbacks ran at the same time
    on different threads (after S3 a controller that lost its state resets and re-addresses
    every device under its address0_mutex; one that kept it does not, and then this is
    wrong: the what-if says it rests on names only), and the ATA ports of one host whose
    suspend or resume callbacks did (their error handling takes the host's eh_mutex)."""
    ancestry = next((r.ancestry for r in runs if r.ancestry), None) or {}
    by_ctrl: dict[tuple[str, str], set[str]] = defaultdict(set)
    nruns: dict[str, int] = defaultdict(int)
    for r in runs:
        if r.phase not in ("suspend", "resume"):
            continue
        nruns[r.phase] += 1
        members = []
        for iv in r.intervals:
            if skip and iv.device in skip:
                continue
            if _ATA_PORT.match(iv.device):
                c = ancestry.get(iv.device)
            elif r.phase == "resume" and _USB_DEVICE.match(iv.device):
                c = _controller(iv.device, ancestry)
            else:
                continue
            if c is not None:
                members.append((iv, c))
        for k, (x, cx) in enumerate(members):
            for y, cy in members[k + 1:]:
                if cx == cy and x.thread != y.thread and y.start < x.end and x.start < y.end:
                    by_ctrl[(r.phase, cx)] |= {x.device, y.device}
    return [SchedLock(phase, sorted(devs), [], ctrl, nruns[phase])
            for (phase, ctrl), devs in sorted(by_ctrl.items()) if len(devs) >= 2]


def _controller(device: str, ancestry: dict[str, str]) -> str | None:
    seen = {device}
    d = device
    while d in ancestry and ancestry[d] not in seen:
        d = ancestry[d]
        seen.add(d)
        if not (_USB_DEVICE.match(d) or _ROOT_HUB.match(d)):
            return d
    return None


def end_order_spans(runs: list[PhaseRun], lock: SchedLock) -> Exclusion:
    """Held spans without timing evidence: the members of a run held the lock one after
    another in the order their callbacks ended, each from the previous one's end (or its own
    start) to its own end, and waited from its start for the one before it."""
    members = set(lock.devices)
    out = Exclusion([], lock.devices, lock.runs)
    for r in runs:
        if r.phase != lock.phase:
            continue
        prev_end = -math.inf
        for iv in sorted((iv for iv in r.intervals if iv.device in members),
                         key=lambda iv: iv.end):
            took = max(iv.start, min(prev_end, iv.end))
            out.held[id(iv)] = (took, iv.end)
            out.wait[id(iv)] = (took - iv.start) * 1e6
            prev_end = iv.end
    return out


# The delays hcd->address0_mutex is held across: usb_reset_and_verify_device() takes it around
# hub_port_init(), which resets the port (hub_port_reset) and waits for its recovery
# (drivers/usb/core/hub.c, 6.1 and 6.12); the USB2 and USB3 root hubs of one xHCI share it
ADDRESS0_CALLERS = frozenset({"hub_port_init", "hub_port_reset"})


def unseen_usb_locks(runs: list[PhaseRun], delays: list[MeasuredDelay], taken: set[str]
                     ) -> list[tuple[SchedLock, Exclusion]]:
    """The USB devices behind one controller whose resume callbacks never overlapped in the
    capture (pm_async=0, or the synchronous loop ran them): a lock the capture cannot show
    and a move to async would meet. With delay kprobes, only devices that reset their port
    in the callback, each holding the lock from its first to its last such delay; without
    them, by the names alone, each holding it for its whole callback."""
    ancestry = next((r.ancestry for r in runs if r.ancestry), None) or {}
    by_ctrl: dict[str, set[str]] = defaultdict(set)
    overlapped: set[str] = set()
    for r in runs:
        if r.phase != "resume":
            continue
        usb = [(iv, c) for iv in r.intervals if _USB_DEVICE.match(iv.device)
               and iv.device not in taken
               for c in [_controller(iv.device, ancestry)] if c is not None]
        for iv, c in usb:
            by_ctrl[c].add(iv.device)
        for k, (x, _) in enumerate(usb):
            for y, _ in usb[k + 1:]:
                if x.thread != y.thread and y.start < x.end and x.start < y.end:
                    overlapped |= {x.device, y.device}
    measured = [d for d in delays if d.total_us > 0]
    resets: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for d in measured:
        if d.interval is not None and d.interval.phase == "resume" \
                and d.caller in ADDRESS0_CALLERS:
            resets[d.interval.device].add((d.caller, d.func))
    out = []
    for ctrl, devs in sorted(by_ctrl.items()):
        if devs & overlapped:
            continue  # they ran at once: the capture's own evidence (or its lack) stands
        if measured:
            devs = {d for d in devs if resets.get(d)}
        if len(devs) < 2:
            continue
        nruns = sum(1 for r in runs if r.phase == "resume")
        lock = SchedLock("resume", sorted(devs), [], ctrl, nruns)
        if measured:
            sites = sorted(set().union(*(resets[d] for d in devs)))
            excl = held_spans(runs, delays, Exclusion(sites, lock.devices, 0))
        else:
            excl = end_order_spans(runs, lock)
        out.append((lock, excl))
    return out

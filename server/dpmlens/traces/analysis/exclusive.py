"""Mutual exclusion the capture shows: delay sites that never run at the same time on two
threads, although the callbacks around them do.

A lock held across a delay serializes the callbacks that take it whatever thread runs them:
on an xhci, the USB2 and USB3 root hubs' devices share `address0_mutex`, held across
hub_port_init() and its port-reset sleeps (drivers/usb/core/hub.c), so three USB device
resumes on three workers still reset one after another, and one that waits for the lock
has the wait inside its callback time. A what-if that moves such callbacks to other threads
must keep them serialized, and must not count the lock wait as work.

A delay site (calling function, delay function) is exclusive when its calls were measured in
callbacks of at least two devices, those callbacks ran at the same time on different threads
in at least MIN_PAIRS pairs, and the calls of one never overlapped the calls of the other. A
callback's held span runs from its first to its last call of an exclusive site; the time
before that span during which another callback held it is its lock wait.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from dpmlens.traces.analysis.delays import MeasuredDelay
from dpmlens.traces.model.timeline import Interval, PhaseRun

MIN_PAIRS = 3  # concurrent callback pairs needed before non-overlap means anything


@dataclass
class Exclusion:
    sites: list[tuple[str, str]]  # (caller, delay function), sorted
    devices: list[str]  # the devices whose callbacks hold it
    pairs: int  # concurrent callback pairs on different threads checked
    # id(iv) -> (took the lock, let it go) (s): its first to its last exclusive delay, from
    # the previous holder's release when it waited
    held: dict[int, tuple[float, float]] = field(default_factory=dict)
    wait: dict[int, float] = field(default_factory=dict)  # id(iv) -> lock wait (us)

    def describe(self) -> str:
        names = ", ".join(f"{f} from {c}" for c, f in self.sites)
        return (f"serialized as one lock: {', '.join(self.devices)} (their {names} calls "
                f"never overlapped in {self.pairs} pairs of callbacks running at the same "
                "time on different threads); the measured lock waits are not work")


def infer(runs: list[PhaseRun], delays: list[MeasuredDelay]) -> Exclusion | None:
    by_iv: dict[int, list[MeasuredDelay]] = defaultdict(list)
    for d in delays:
        if d.interval is not None:
            by_iv[id(d.interval)].append(d)
    if not by_iv:
        return None
    checked: dict[tuple[str, str], int] = defaultdict(int)
    overlapped: dict[tuple[str, str], int] = defaultdict(int)
    devices: dict[tuple[str, str], set[str]] = defaultdict(set)
    for r in runs:
        ivs = [iv for iv in r.intervals if id(iv) in by_iv]
        for iv in ivs:
            for d in by_iv[id(iv)]:
                devices[(d.caller, d.func)].add(iv.device)
        for a, x in enumerate(ivs):
            for y in ivs[a + 1:]:
                if y.start >= x.end:
                    continue
                if x.thread == y.thread or x.device == y.device:
                    continue
                sx, sy = _spans(by_iv[id(x)]), _spans(by_iv[id(y)])
                for site in sx.keys() & sy.keys():
                    checked[site] += 1
                    (s1, e1), (s2, e2) = sx[site], sy[site]
                    if s1 < e2 and s2 < e1:
                        overlapped[site] += 1
    sites = sorted(s for s, n in checked.items()
                   if n >= MIN_PAIRS and not overlapped[s] and len(devices[s]) >= 2)
    if not sites:
        return None
    return held_spans(runs, delays, Exclusion(
        sites, sorted(set().union(*(devices[s] for s in sites))),
        max(checked[s] for s in sites)))


def held_spans(runs: list[PhaseRun], delays: list[MeasuredDelay], out: Exclusion,
               ) -> Exclusion:
    """Each callback's held span and lock wait for the exclusive sites of `out` (inferred
    from these runs, or from another capture of the same machine: --locks-from)."""
    by_iv: dict[int, list[MeasuredDelay]] = defaultdict(list)
    for d in delays:
        if d.interval is not None:
            by_iv[id(d.interval)].append(d)
    wanted = set(out.sites)
    out.held, out.wait = {}, {}
    for r in runs:
        members: list[Interval] = []
        for iv in r.intervals:
            rows = [d for d in by_iv.get(id(iv), ()) if (d.caller, d.func) in wanted]
            if rows:
                out.held[id(iv)] = (min(d.start for d in rows), max(d.end for d in rows))
                members.append(iv)
        taken: dict[int, tuple[float, float]] = {}
        for iv in members:
            hs, he = out.held[id(iv)]
            wait, got = 0.0, -1.0
            for other in members:
                if other is iv:
                    continue
                os_, oe = out.held[id(other)]
                wait += max(0.0, min(oe, hs) - max(os_, iv.start))
                if iv.start < oe <= hs:  # handed the lock when the last of these let go
                    got = max(got, oe)
            got = hs if got < 0 else got
            out.wait[id(iv)] = min(wait, max(0.0, got - iv.start)) * 1e6
            # the work between taking the lock and the first delay is held too
            taken[id(iv)] = (got, he)
        out.held.update(taken)
    return out


def _spans(rows: list[MeasuredDelay]) -> dict[tuple[str, str], tuple[float, float]]:
    out: dict[tuple[str, str], tuple[float, float]] = {}
    for d in rows:
        k = (d.caller, d.func)
        s, e = out.get(k, (d.start, d.end))
        out[k] = (min(s, d.start), max(e, d.end))
    return out

"""What to change first (`dpmlens trace advise`): candidate changes read off a capture, each
replayed with the what-if (traces.analysis.whatif) and ranked by the time it saves per cycle.

Candidates:
  async      a callback that ran on the synchronous thread and lies on a phase's critical path:
             its device made async (the sysfs knob `power/async` now, a probe-time
             device_enable_async_suspend() as the patch); with pm_async=0 (nothing ran async)
             the first candidate is pm_async=1 itself
  spec       a measured delay whose call site implements a spec quantity (--source; the
             static side's spec table) waits its minimum
  usb-fast   hub_port_reset's reset recovery msleep(50) becomes usleep_range(10000, 12000),
             what USB_PORT_QUIRK_FAST_ENUM does (drivers/usb/core/hub.c; the port's `quirks`
             knob now)
  busy-wait  udelay/mdelay time inside callbacks: listed with the time it keeps a CPU busy
             (the replay cannot turn a busy-wait into a sleep: no saving is predicted)

The saving is the replay of the capture unchanged minus the replay with the change (the same
model on both sides: the contention and the locks the capture shows), per cycle, for each
phase it touches; the band is the lab's measured error of that kind of change with the
capture's evidence (`band_pct`), applied to the predicted phase time.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass, field

from dpmlens.model.phases import PHASES
from dpmlens.traces.analysis.critical import critical_path
from dpmlens.traces.analysis.delays import MeasuredDelay
from dpmlens.traces.analysis.whatif import Changes, matcher, what_if
from dpmlens.traces.model.timeline import PhaseRun

MIN_ON_PATH_US = 1000.0  # a callback shorter than this on the path is not worth a row
MAX_ASYNC_CANDIDATES = 8
FAST_ENUM = ("hub_port_reset", "msleep", 50.0)  # caller, delay, requested ms
FAST_ENUM_CALL = ("usleep_range", 10.0)  # USB_PORT_QUIRK_FAST_ENUM: usleep_range(10000, 12000)


@dataclass(frozen=True)
class Evidence:
    delays: bool  # delay kprobes with their returns (each delay has a duration)
    sched: bool  # sched_switch/sched_waking (waits told from work)
    links: bool  # device links given or captured

    def words(self) -> list[str]:
        return [w for w, on in (("delay kprobes", self.delays), ("scheduler events", self.sched),
                                ("device links", self.links)) if on]


# The measured phase time lay within [predicted * (1 - minus), predicted * (1 + plus)] in the
# lab, by kind of change and evidence, for suspend-side ("down") and resume-side ("up")
# phases: each boot of one configuration of the 48-cycle A/B experiments
# (test-fixtures/lab/ab-sched, 6.1 and 6.12, boots with the same device set: no HDA codec)
# advised, against the other configuration's median (tests/test_trace_advise.py re-makes it).
Band = tuple[float, float]  # (minus %, plus %)


@dataclass(frozen=True)
class Bands:
    down: Band
    up: Band
    source: str

    def of(self, phase: str) -> Band:
        ph = PHASES.get(phase)
        return self.up if ph is not None and ph.direction == "up" else self.down


BANDS: dict[str, Bands] = {
    # resume with usleep_range(10000, 12000) for hub_port_reset's msleep(50): 10 boots, -5.5%
    # to +3.5% (issue 28's fresh boots: --delay ...=12, -4.5%); suspend is not touched
    "delay": Bands((6.0, 6.0), (6.0, 5.0), "lab, 10 boots of 6.1/6.12: USB fast enumeration "
                   "predicted from pm_async=1 boots, resume -5.5%..+3.5%"),
    # pm_async 0 -> 1 (--async all) from a boot where nothing ran async, against the
    # pm_async=1 boots' median (9 boots of ab-sched 6.1/6.12: tests/test_trace_advise.py):
    # resume -6.3%..+1.0% since the USB devices behind one xHCI are replayed under its
    # address0_mutex although the capture never showed them overlap (handoffs.
    # unseen_usb_locks; +80%..+100% without); suspend -7.7%..+1.8%, one boot +80.8% (6.1
    # async0 part1, whose own suspend was 242 ms against the others' 162 ms)
    "pm_async": Bands((40.0, 10.0), (5.0, 10.0), "lab, 9 boots of 6.1/6.12: --async all from "
                      "pm_async=0 boots, resume -6%..+1%, suspend -8%..+2% (one boot +81%)"),
    # the same 9 boots predicted without the scheduler's events (with and without the delay
    # kprobes): resume -6.3%..+11.5%, suspend -10.7%..+22.8%
    "pm_async_nosched": Bands((20.0, 15.0), (12.0, 8.0), "lab, 9 boots of 6.1/6.12 without "
                              "scheduler events: --async all from pm_async=0 boots, resume "
                              "-6%..+12%, suspend -11%..+23%"),
    # one device moved, kprobes and scheduler events: the informed --async rows of issue 28
    # (-0.1% resume, -20% suspend); single-device moves are not measured
    "async": Bands((20.0, 20.0), (20.0, 20.0), "issue 28: informed --async with kprobes and "
                   "sched events, -0.1%..-20%; single-device moves not measured"),
    "unsupported": Bands((66.0, 66.0), (66.0, 66.0), "issue 28: --sync all without delay "
                         "kprobes' returns, +66%"),
}


def _lab_bands(change: str, evidence: str) -> Bands | None:
    """The what-if's own lab band (traces.analysis.bands, bands.yaml) of a cell, as the
    (minus %, plus %) of the measured value around the prediction."""
    from dpmlens.traces.analysis.bands import table

    rows = table()
    out = []
    for ph in ("suspend", "resume"):
        b = rows.get((change, evidence, ph))
        if b is None:
            return None
        lo, hi = b.measured_range(100.0)
        out.append((round(100.0 - lo, 1), round(hi - 100.0, 1)))
    return Bands(out[0], out[1], f"lab: the what-if's {change} band with {evidence} "
                 f"({b.basis})")


def band_of(kind: str, ev: Evidence) -> Bands:
    """The bands for a kind of change with the capture's evidence."""
    if kind == "usb-fast" and (ev.delays or ev.sched):
        # the what-if's own lab band for this delay change (without kprobes its calls are
        # told from the scheduler's events: traces.analysis.sleep_calls)
        evidence = ("kprobes+sched" if ev.delays and ev.sched else
                    "kprobes" if ev.delays else "sched")
        return _lab_bands("delay", evidence) or BANDS["delay" if ev.delays else "unsupported"]
    if kind in ("spec", "usb-fast"):
        return BANDS["delay" if ev.delays else "unsupported"]
    if kind == "pm_async":
        return BANDS["pm_async" if ev.delays and ev.sched
                     else "pm_async_nosched" if not ev.sched else "unsupported"]
    if kind == "async":
        return BANDS["async" if ev.delays and ev.sched else "unsupported"]
    return BANDS["unsupported"]


@dataclass
class PhaseSaving:
    phase: str
    runs: int
    predicted_before_us: float  # the unchanged replay (mean per run)
    predicted_after_us: float

    @property
    def saving_us(self) -> float:
        return round(self.predicted_before_us - self.predicted_after_us, 3)


@dataclass
class Advice:
    kind: str  # async, pm_async, spec, usb-fast, busy-wait
    title: str  # what to change, in a line
    targets: list[str]  # devices or call sites
    whatif: list[str]  # the same change as `dpmlens trace whatif` options
    knob: list[str] = field(default_factory=list)  # shell lines to try it now (as root)
    patch: str | None = None  # the source change
    phases: list[PhaseSaving] = field(default_factory=list)
    band: Bands | None = None  # band_of (None: busy-wait, nothing predicted)
    evidence: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    busy_us: float = 0.0  # busy-wait: CPU time per cycle it holds (no saving predicted)
    drivers: list[str] = field(default_factory=list)  # async: the drivers of the device
    parent: str = ""  # async: the device's parent (which bus it is on)

    @property
    def saving_us(self) -> float:
        """Per cycle, over the phases it touches."""
        return round(sum(p.saving_us for p in self.phases), 3)

    @property
    def saving_range_us(self) -> tuple[float, float]:
        """(least, most) saving per cycle: each touched phase's predicted time anywhere in
        its band."""
        lo = hi = 0.0
        for p in self.phases:
            minus, plus = self.band.of(p.phase) if self.band else (0.0, 0.0)
            lo += p.predicted_before_us - p.predicted_after_us * (1 + plus / 100)
            hi += p.predicted_before_us - p.predicted_after_us * (1 - minus / 100)
        return round(lo, 3), round(hi, 3)


@dataclass
class SiteMinimum:
    """A measured delay site joined to its source line with a spec minimum (traces.source)."""

    key: tuple[str, str, float]  # (caller, func, requested ms or -1): Changes.site_ms
    min_ms: float
    value_ms: float
    call: str  # msleep(50)
    path: str
    line: int
    spec: str

    @property
    def call_value(self) -> float:
        """The requested value in the delay function's unit (what --delay F:msleep(V) names)."""
        req = self.key[2]
        return req * 1000 if self.key[1].startswith(("usleep", "udelay", "fsleep")) else req


@dataclass
class Advised:
    items: list[Advice]
    baseline: dict[str, PhaseSaving]  # phase -> the unchanged replay against the measured
    measured_us: dict[str, float]
    evidence: Evidence
    cycles: int
    pm_async_off: bool
    notes: list[str] = field(default_factory=list)


def _material(phase_us: float) -> float:
    """A change of a phase's replayed time smaller than this is replay noise, not a saving."""
    return max(100.0, phase_us * 0.001)


def _replay(runs: list[PhaseRun], delays: list[MeasuredDelay],
            changes: Changes) -> dict[str, tuple[int, float, float]]:
    return {ph: (n, m, p) for ph, n, m, p in what_if(runs, delays, changes).per_phase()}


def _on_path_sync(runs: list[PhaseRun]) -> dict[str, float]:
    """device -> its callbacks' time on the critical paths while on the synchronous thread,
    in phases that may run async (per cycle)."""
    out: dict[str, float] = defaultdict(float)
    cycles = {r.cycle for r in runs} or {0}
    for r in runs:
        ph = PHASES.get(r.phase)
        if ph is None or not ph.may_run_async or r.sync_thread < 0:
            continue
        for link in critical_path(r).chain:
            iv = link.interval
            if iv.thread == r.sync_thread:
                out[iv.device] += iv.duration_us / len(cycles)
    return out


def _ran_async(runs: list[PhaseRun]) -> bool:
    for r in runs:
        ph = PHASES.get(r.phase)
        if ph is not None and ph.may_run_async and r.sync_thread >= 0 and any(
                iv.thread != r.sync_thread for iv in r.intervals):
            return True
    return False


def _usb_port_quirks(devices: list[str]) -> list[str]:
    """`echo 2 > .../quirks` for the hub port each USB device hangs on (2-1 -> usb2-port1 of
    hub 2-0:1.0; 1-1.4 -> 1-1-port4 of hub 1-1:1.0)."""
    lines = []
    for dev in sorted(set(devices)):
        bus, _, path = dev.partition("-")
        if not bus.isdigit() or not path:
            continue
        hub_path, _, port = path.rpartition(".")
        hub = f"{bus}-{hub_path}" if hub_path else f"{bus}-0"
        port_name = f"{bus}-{hub_path}-port{port}" if hub_path else f"usb{bus}-port{port}"
        lines.append(f"echo 2 > /sys/bus/usb/devices/{hub}:1.0/{port_name}/quirks")
    return lines


def _link_candidates(runs: list[PhaseRun], ev: Evidence) -> list[Advice]:
    """A device link a critical path runs through (a consumer waiting for its supplier on
    resume, a supplier for its consumers on suspend). Listed, not replayed: the what-if keeps
    each callback's measured lag after what it waited for, so a replay without the link would
    keep the wait as lag (it needs a change that drops the edge from the capture's graph)."""
    pairs: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    n_runs: dict[str, int] = defaultdict(int)
    for r in runs:
        if r.links is None:
            continue
        n_runs[r.phase] += 1
        chain = critical_path(r).chain
        for prev, cur in zip(chain, chain[1:], strict=False):
            if cur.link == "supplier":
                pairs[(prev.interval.device, cur.interval.device)][0] += 1
            elif cur.link == "consumer":
                pairs[(cur.interval.device, prev.interval.device)][1] += 1
    out = []
    for (supplier, consumer), (up, down) in sorted(pairs.items(), key=lambda kv: -sum(kv[1])):
        where = ", ".join(f"{k} of {n_runs[ph]} {ph} runs" for k, ph in (
            (up, "resume"), (down, "suspend")) if k)
        out.append(Advice(
            "link", f"the device link {supplier} -> {consumer} is on the critical path ({where})",
            [supplier, consumer], [],
            ["fw_devlink=permissive on the kernel command line (a test: links from firmware "
             "no longer order suspend/resume)"],
            patch=f"drop or relax the link {supplier} -> {consumer} (the driver's "
                  "device_link_add() flags, or the firmware's dependency)",
            notes=["not replayed: the what-if cannot yet drop a link from the capture's "
                   "dependency graph (it would keep the wait as the consumer's start lag)",
                   "a link orders the two for correctness: check that the consumer works "
                   "without its supplier resumed first"], evidence=ev.words()))
    return out


def advise(runs: list[PhaseRun], delays: list[MeasuredDelay], base: Changes, ev: Evidence,
           *, async_paths: dict[str, tuple[str, str]] | None = None,
           minimums: list[SiteMinimum] | None = None, top: int = 10) -> Advised:
    """Ranked changes. `base` carries what every replay shares (cpus, sched, locks, ordering);
    `async_paths`: device -> (power/async value, sysfs path) from the capture (power-async.txt);
    `minimums`: delay sites with a spec minimum (needs the source)."""
    cycles = len({r.cycle for r in runs})
    before = _replay(runs, delays, dataclasses.replace(base))
    measured = {ph: m for ph, (_, m, _) in before.items()}
    baseline = {ph: PhaseSaving(ph, n, m, p) for ph, (n, m, p) in before.items()}
    candidates: list[Advice] = []
    off = not _ran_async(runs)
    if off:
        candidates.append(Advice(
            "pm_async", "turn asynchronous suspend/resume on (pm_async=1)", ["all"],
            ["--async all"], ["echo 1 > /sys/power/pm_async"],
            notes=["nothing ran async in this capture (pm_async was 0, or no device has "
                   "power/async enabled): the waits of siblings that only appear when they "
                   "run at once cannot be seen; those behind one controller are replayed as "
                   "one lock (below), others may make the saving smaller; capture once with "
                   "it on and run advise on that capture"]))
    on_path = _on_path_sync(runs)
    ranked = sorted(((us, d) for d, us in on_path.items() if us >= MIN_ON_PATH_US),
                    reverse=True)[:MAX_ASYNC_CANDIDATES]
    for us, dev in ranked:
        known = (async_paths or {}).get(dev)
        if known is not None:
            knob = [f"echo enabled > {known[1]}/power/async"]
        else:
            knob = [f"for d in /sys/bus/*/devices/{dev}; do echo enabled > $d/power/async; "
                    "done"]
        if off:
            knob.insert(0, "echo 1 > /sys/power/pm_async")
        drivers = sorted({iv.driver for r in runs for iv in r.intervals
                          if iv.device == dev and iv.driver and iv.driver != "-"})
        who = f"{'/'.join(drivers)}'s probe" if drivers else "its driver's probe"
        a = Advice("async", f"make {dev} async", [dev], [f"--async {dev}"], knob,
                   patch=f"device_enable_async_suspend(dev) in {who}", drivers=drivers,
                   parent=next((iv.parent for r in runs for iv in r.intervals
                                if iv.device == dev), ""),
                   notes=[f"{us / 1000:.1f} ms a cycle on the critical path on the "
                          "synchronous thread"])
        if known is not None and known[0] == "enabled":
            a.notes.append("power/async is already enabled: it ran synchronously because "
                           "pm_async was 0")
        candidates.append(a)
    for m in minimums or []:
        caller, func, req = m.key
        new = (f"{func}({m.min_ms * 1000:g}, ...)" if func.startswith("usleep")
               else f"{func}({m.min_ms:g})")
        candidates.append(Advice(
            "spec", f"{m.call} in {caller} at its {m.spec} minimum", [f"{caller}:{m.call}"],
            [f"--delay {caller}:{func}" + (f"({m.call_value:g})" if req >= 0 else "")
             + f"={m.min_ms:g}"],
            patch=f"{m.path}:{m.line}: {m.call} -> {new} ({m.spec} minimum "
                  f"{m.min_ms:g} ms instead of {m.value_ms:g} ms)"))
    fast = [d for d in delays if (d.caller, d.func) == FAST_ENUM[:2]
            and abs(d.requested_ms - FAST_ENUM[2]) < 1e-9 and d.interval is not None]
    if not delays and base.sched is not None:
        # no delay kprobes: its calls told from the scheduler's events by their length
        from dpmlens.traces.analysis.sleep_calls import sleep_calls

        fast = sleep_calls(runs, base.sched, [FAST_ENUM], base.clock)
    if fast:
        devs = sorted({d.interval.device for d in fast if d.interval is not None})
        candidates.append(Advice(
            "usb-fast", "USB fast enumeration (reset recovery 10-12 ms instead of 50 ms)",
            devs, ["--delay hub_port_reset:msleep(50)=usleep_range(10000)"],
            _usb_port_quirks(devs),
            patch="USB_PORT_QUIRK_FAST_ENUM on these ports: hub_port_reset() then sleeps "
                  "usleep_range(10000, 12000) instead of msleep(10 + 40) "
                  "(drivers/usb/core/hub.c)"))
    for a in candidates:
        changes = dataclasses.replace(base, delays=dict(base.delays),
                                      replace=dict(base.replace), call_us={})
        if a.kind in ("async", "pm_async"):
            changes.make_async = matcher(a.targets)
        elif a.kind == "spec":
            m = next(x for x in minimums or [] if f"{x.key[0]}:{x.call}" == a.targets[0])
            changes.site_ms = {m.key: m.min_ms}
        elif a.kind == "usb-fast":
            changes.replace = {"hub_port_reset:msleep(50)": FAST_ENUM_CALL}
            changes.delays = {"hub_port_reset:msleep(50)": FAST_ENUM_CALL[1]}
        w = what_if(runs, delays, changes)
        after = {ph: (n, m, p) for ph, n, m, p in w.per_phase()}
        if w.evidence is not None:  # locks the capture could not show, replayed anyway
            a.notes += [f"replayed as one lock: {lk}" for lk in w.evidence.locks
                        if "never overlapped" in lk]
        a.phases = [PhaseSaving(ph, n, before[ph][2], p) for ph, (n, _, p) in after.items()
                    if ph in before and abs(before[ph][2] - p) >= _material(before[ph][2])]
        a.band = band_of(a.kind, ev)
        a.evidence = ev.words()
    busy: dict[tuple[str, str], float] = defaultdict(float)
    path_ivs = {id(x.interval) for r in runs for x in critical_path(r).chain}
    for d in delays:
        if d.func in ("udelay", "mdelay") and d.interval is not None \
                and id(d.interval) in path_ivs:
            busy[(d.caller, d.func)] += d.total_us / max(cycles, 1)
    for (caller, func), us in sorted(busy.items(), key=lambda kv: -kv[1]):
        if us >= MIN_ON_PATH_US:
            candidates.append(Advice(
                "busy-wait", f"{func} busy-waits in {caller}", [caller], [],
                patch=f"in {caller}: a sleep (usleep_range/fsleep) instead of {func} where "
                      "the context may sleep", busy_us=round(us, 3),
                notes=["inside callbacks on the critical path; a busy-wait holds a CPU: the "
                       "replay keeps its time (no saving predicted on the path), a sleep frees "
                       "the CPU for the callbacks beside it"],
                evidence=ev.words()))
    candidates += _link_candidates(runs, ev)
    listed = ("busy-wait", "link")  # shown without a predicted saving
    useful = [a for a in candidates if a.kind in listed or a.saving_us > 0]
    dropped = len(candidates) - len(useful)
    useful.sort(key=lambda a: (a.kind in listed, -a.saving_us, -a.busy_us, a.title))
    fast_row = next((a for a in useful if a.kind == "usb-fast"), None)
    for a in useful:
        if fast_row is not None and a.kind == "spec" and a.targets[0].startswith(
                f"{FAST_ENUM[0]}:"):
            a.notes.append("the same reset-recovery sleep as USB fast enumeration: the "
                           "savings do not add up, take one")
    out = Advised(useful[:top], baseline, measured, ev, cycles, off)
    if dropped:
        out.notes.append(f"{dropped} candidate(s) replayed with no saving (their time is "
                         "not on the path once they move, or another path takes over)")
    if not ev.delays and ev.sched:
        out.notes.append("no delay kprobes with returns: delays are not measured; USB fast "
                         "enumeration's reset-recovery msleep(50) calls are told from the "
                         "scheduler's events by their length, and no other delay change is "
                         "advised (capture with `dpmlens capture`)")
    elif not ev.delays:
        out.notes.append("no delay kprobes with returns: delays are not measured, so no "
                         "delay change is advised (capture with `dpmlens capture`)")
    if not ev.sched:
        out.notes.append("no scheduler events: waits count as work in the replay; the bands "
                         "are wide (capture with `dpmlens capture`)")
    if minimums is None:
        out.notes.append("without --source TREE no delay is checked against its spec minimum")
    return out

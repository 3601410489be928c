"""Kernel steps and where each cycle's suspend-to-resume time goes.

A cycle's wall time on the trace clock runs from its first event to its last (steps such as
`suspend_enter`/`sync_filesystems` open it, `thaw_processes` closes it). It is split into:
device phases (the dpm_* windows, or the callback spans without markers), kernel steps outside
them (freeze, CPU_OFF/CPU_ON, syscore, machine_suspend, ...; nested steps are counted once),
and the gaps between all of these. Firmware time (sleepgraph's `# fwsuspend/fwresume`, from
the ACPI FPDT) passes while the trace clock stands still, so it is added on top.
`machine_suspend` is the platform's sleep itself (for s2idle the trace clock runs through the
whole time asleep): it is reported as `asleep_us` and left out of the total.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from dpmlens.traces.model.sample import Step
from dpmlens.traces.model.traceset import TraceSet

# kernel/power/suspend.c suspend_enter(): trace_suspend_resume(TPS("machine_suspend"), ...)
# around suspend_ops->enter() / s2idle_loop(): the time the machine is asleep.
ASLEEP_STEP = "machine_suspend"


@dataclass(frozen=True)
class CycleAccount:
    cycle: int
    start: float  # seconds on the trace clock
    end: float
    devices_us: float  # the phases' wall times
    steps_us: float  # kernel steps outside the phases
    gaps_us: float  # neither
    firmware_us: float  # outside the trace clock
    phases: int
    steps: int
    asleep_us: float = 0.0  # machine_suspend: in the span, not in the total

    @property
    def span_us(self) -> float:
        return round((self.end - self.start) * 1e6, 3)

    @property
    def total_us(self) -> float:
        return round(self.span_us - self.asleep_us + self.firmware_us, 3)


@dataclass(frozen=True)
class StepRow:
    """One step of one cycle, with its nesting depth among the cycle's steps."""

    step: Step
    depth: int
    phase: str = ""  # the device phase it ran in (step_phase)

    @property
    def duration_us(self) -> float:
        return round((self.step.end - self.step.start) * 1e6, 3)


def _union(intervals: list[tuple[float, float]]) -> float:
    total = 0.0
    cur_s = cur_e = -math.inf
    for s, e in sorted(intervals):
        if s > cur_e:
            if cur_e > cur_s:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        elif e > cur_e:
            cur_e = e
    if cur_e > cur_s:
        total += cur_e - cur_s
    return total


def phase_windows(traces: TraceSet) -> dict[int, list[tuple[str, float, float]]]:
    """cycle -> [(phase, start, end)] for the phases with a known start; a marker wins over a
    callback span, as in phase_stats."""
    best: dict[tuple[int, str], tuple[bool, float, float]] = {}
    for pt in traces.phase_times:
        if pt.start != pt.start:
            continue
        old = best.get((pt.cycle, pt.phase))
        if old is None or (pt.measured and not old[0]):
            best[(pt.cycle, pt.phase)] = (pt.measured, pt.start, pt.start + pt.wall_us / 1e6)
    out: dict[int, list[tuple[str, float, float]]] = defaultdict(list)
    for (cycle, phase), (_, s, e) in best.items():
        out[cycle].append((phase, s, e))
    for v in out.values():
        v.sort(key=lambda x: x[1])
    return out


def step_phase(step: Step, windows: list[tuple[str, float, float]]) -> str:
    """The phase whose window holds the step's start (async_synchronize_full at the end of
    dpm_resume, cpufreq_suspend at the start of dpm_suspend); before the cycle's first phase,
    that phase (sync and freeze come before dpm_prepare); after its last, the last (thaw);
    between two phases "" (the machine's own steps: syscore, CPU_OFF, machine_suspend)."""
    if not windows:
        return ""
    for phase, s, e in windows:
        if s <= step.start <= e:
            return phase
    if step.start < windows[0][1]:
        return windows[0][0]
    if step.start > max(e for _, _, e in windows):
        return windows[-1][0]
    return ""


def step_rows(traces: TraceSet) -> list[StepRow]:
    """Every step in time order with its depth (a step inside another of its cycle: 1, ...)
    and its phase."""
    out: list[StepRow] = []
    windows = phase_windows(traces)
    by_cycle: dict[int, list[Step]] = defaultdict(list)
    for st in traces.store.steps:
        by_cycle[st.cycle].append(st)
    for cycle in sorted(by_cycle):
        open_ends: list[float] = []
        win = windows.get(cycle, [])
        for st in sorted(by_cycle[cycle], key=lambda x: (x.start, -x.end)):
            while open_ends and open_ends[-1] <= st.start:
                open_ends.pop()
            out.append(StepRow(st, len(open_ends), step_phase(st, win)))
            open_ends.append(st.end)
    return out


@dataclass(frozen=True)
class ThreadRow:
    """A thread that ran no device callback in a cycle but made sleepgraph -dev kprobe calls
    (delays, ata_eh_recover, mutex_lock_slowpath, ...): sleepgraph's "kernel thread" row."""

    cycle: int
    thread: str  # "task-pid"
    phase: str  # where sleepgraph files the row
    start: float  # seconds: the first call's start
    end: float  # the last call's end
    calls: int
    functions: tuple[str, ...]

    @property
    def duration_us(self) -> float:
        return round((self.end - self.start) * 1e6, 3)


def source_phase(t: float, windows: list[tuple[str, float, float]]) -> str:
    """sleepgraph.py Data.sourcePhase: the first phase that ends at or after `t`, each
    phase's end moved up to the next one's start (its "no gaps" step; the machine phases,
    which it skips, sit between suspend_noirq and resume_noirq); after them all, the last."""
    for i, (phase, _, e) in enumerate(windows):
        end = e if phase == "suspend_noirq" or i + 1 == len(windows) else windows[i + 1][1]
        if t <= end:
            return phase
    return windows[-1][0] if windows else ""


def thread_rows(traces: TraceSet) -> list[ThreadRow]:
    """sleepgraph's kernel-thread rows (sleepgraph.py addDeviceFunctionCall): per cycle, a
    thread with -dev kprobe calls outside callbacks, no callback and no kernel-function kprobe
    of its own in the cycle (those are its `devpids`, whose other calls it drops), spans its
    first to its last call. The row is filed in the phase of the first call of the probe that
    sorts first by name (sleepgraph walks its calls sorted by probe name, then pid)."""
    act = traces.store.activity
    if not act.spans:
        return []
    busy = set(act.kprobe_threads)
    for g in traces.store.groups.values():
        busy.update(zip(g.cycles, g.threads, strict=True))
    names = traces.store.delays.names
    per: dict[tuple[int, int], list[tuple[str, float, float, int]]] = defaultdict(list)
    for (cycle, thread, func), (s, e, n) in act.spans.items():
        if thread >= 0 and (cycle, thread) not in busy:
            per[(cycle, thread)].append((names[func], s, e, int(n)))
    windows = phase_windows(traces)
    threads = traces.store.threads
    out = []
    for (cycle, thread), funcs in per.items():
        funcs.sort()
        out.append(ThreadRow(
            cycle, threads[thread], source_phase(funcs[0][1], windows.get(cycle, [])),
            min(f[1] for f in funcs), max(f[2] for f in funcs), sum(f[3] for f in funcs),
            tuple(f[0] for f in funcs)))
    out.sort(key=lambda r: (r.cycle, r.start))
    return out


def accounts(traces: TraceSet) -> list[CycleAccount]:
    """Per cycle with timestamps: devices + steps + gaps = the span; + firmware = total."""
    windows = phase_windows(traces)
    steps: dict[int, list[Step]] = defaultdict(list)
    for st in traces.store.steps:
        steps[st.cycle].append(st)
    fw: dict[int, float] = defaultdict(float)
    for f in traces.store.firmware:
        fw[f.cycle] += f.suspend_us + f.resume_us
    out = []
    for cycle in sorted(set(windows) | set(steps)):
        ph = [(s, e) for _, s, e in windows.get(cycle, [])]
        st = [(x.start, x.end) for x in steps.get(cycle, [])]
        sleep = [(x.start, x.end) for x in steps.get(cycle, []) if x.name == ASLEEP_STEP]
        everything = ph + st
        if not everything:
            continue
        start = min(s for s, _ in everything)
        end = max(e for _, e in everything)
        dev = _union(ph)
        asleep = _union(sleep)
        both = _union(everything)
        out.append(CycleAccount(
            cycle=cycle, start=start, end=end, devices_us=round(dev * 1e6, 3),
            steps_us=round((both - dev - asleep) * 1e6, 3),
            gaps_us=round(((end - start) - both) * 1e6, 3),
            firmware_us=round(fw.get(cycle, 0.0), 3), phases=len(ph), steps=len(st),
            asleep_us=round(asleep * 1e6, 3)))
    return out


def step_summary(rows: list[StepRow]) -> list[tuple[str, int, int, float, float]]:
    """(label, depth, n, mean_us, max_us) per step label, in the order of a cycle (by the
    median position of the step among its cycle's steps)."""
    agg: dict[str, list] = {}
    pos: dict[int, int] = defaultdict(int)
    count: dict[int, int] = defaultdict(int)
    for r in rows:
        count[r.step.cycle] += 1
    for r in rows:
        a = agg.setdefault(r.step.label, [[], [], []])
        a[0].append(r.depth)
        a[1].append(r.duration_us)
        a[2].append(pos[r.step.cycle] / count[r.step.cycle])
        pos[r.step.cycle] += 1
    order = sorted(agg, key=lambda k: sorted(agg[k][2])[len(agg[k][2]) // 2])
    return [(label, max(set(agg[label][0]), key=agg[label][0].count), len(agg[label][1]),
             round(math.fsum(agg[label][1]) / len(agg[label][1]), 3), max(agg[label][1]))
            for label in order]

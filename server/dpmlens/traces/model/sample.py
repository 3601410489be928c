"""What every importer produces: callback samples, phase wall times, and a per-file report.

Samples are kept column-wise per callback (driver, device, parent, phase, layer) in `array`s,
so a capture of 100 cycles x 600 devices costs a few MB, not one Python object per sample.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from dpmlens.model.phases import PHASES
from dpmlens.traces.model.sched import SchedLog

GroupKey = tuple[str, str, str, str, str]  # driver, device, parent, phase, layer


@dataclass(frozen=True, slots=True)
class CallbackSample:
    driver: str  # dev_driver_string(): the driver, else the bus or class name, else ""
    device: str
    parent: str  # "none" for a root device, "" when the trace does not say
    phase: str  # a dev_pm_ops member name (model.phases.MEMBERS)
    layer: str  # "bus", "type", "class", "power domain", "driver", "legacy bus", "" if unknown
    start: float  # seconds on the trace clock; nan when the trace has no timestamps
    duration_us: float
    error: int
    cycle: int  # global cycle index within the TraceSet (0-based)
    source_file: str
    symbol: str | None = None  # the callback symbol, when the trace names it (dmesg)
    thread: str = ""  # the task that ran it ("kworker/u8:3-193", "pid 100"), "" unknown


@dataclass(frozen=True, slots=True)
class PhaseTime:
    phase: str
    cycle: int
    wall_us: float
    source_file: str
    measured: bool  # True: from a phase marker; False: first start .. last end of its samples
    start: float = float("nan")  # seconds on the trace clock (the begin marker)
    thread: int = -1  # SampleStore.threads index of the thread that emitted the markers


@dataclass(frozen=True, slots=True)
class Step:
    """A kernel step outside the device callbacks: a `suspend_resume` event pair other than
    the dpm_* phase bounds (sync_filesystems, freeze_processes, CPU_OFF[1], syscore_suspend,
    machine_suspend, thaw_processes, ...)."""

    cycle: int
    name: str
    val: int  # the event's value: a CPU number for CPU_ON/OFF, the PM state, ...
    start: float  # seconds on the trace clock
    end: float
    thread: int
    source_file: str

    @property
    def label(self) -> str:
        return f"{self.name}[{self.val}]" if self.name.startswith("CPU_") else self.name


@dataclass(frozen=True, slots=True)
class Firmware:
    """sleepgraph's `# fwsuspend N fwresume M` (ns, from the ACPI FPDT): time in firmware,
    outside the trace clock."""

    cycle: int
    suspend_us: float
    resume_us: float


@dataclass
class FileReport:
    path: str
    format: str = "unknown"
    samples: int = 0
    cycles: int = 0
    skipped_lines: int = 0
    incomplete: int = 0  # a callback start with no end
    unmatched_ends: int = 0  # an end with no start (capture began mid-callback)
    error: str | None = None  # the file could not be read (fully); message names the problem
    notes: list[str] = field(default_factory=list)
    skip_reasons: Counter[str] = field(default_factory=Counter)
    rpm_events: int = 0  # runtime PM tracepoints read (traces.rpm_events)
    kernel_version: tuple[int, int] | None = None  # "Linux version X.Y" when the file says


class Group:
    """All samples of one callback (driver, device, parent, phase, layer)."""

    __slots__ = ("key", "durations", "starts", "cycles", "files", "errors", "symbol",
                 "threads", "raw_head")

    def __init__(self, key: GroupKey) -> None:
        self.key = key
        self.durations = array("d")
        self.starts = array("d")
        self.cycles = array("l")
        self.files = array("l")
        self.errors: dict[int, int] = {}  # sample index -> error, only non-zero ones
        self.symbol: str | None = None
        self.threads = array("l")  # SampleStore.threads index per sample, -1 unknown
        self.raw_head: str | None = None  # "<driver> <device>" when it had several spaces


class SampleStore:
    def __init__(self) -> None:
        self.groups: dict[GroupKey, Group] = {}
        self.files: list[str] = []
        self.phase_times: list[PhaseTime] = []
        self.threads: list[str] = []  # "task-pid" as the trace prints it
        self._thread_ids: dict[str, int] = {}
        self._pid_threads: dict[str, int] = {}  # pid -> thread (task_thread)
        self.steps: list[Step] = []
        self.firmware: list[Firmware] = []
        self.delays = DelayColumns()
        self.activity = ThreadActivity()
        self.ambiguous: list[Group] = []  # groups whose driver/device split is a guess
        self.device_names: set[str] = set()  # device names a capture states on their own
        self.rpm: Any = None  # traces.rpm_events.RpmLog, only when a capture has rpm_* events
        self.sched: SchedLog | None = None  # only when a capture has sched_switch events

    def sched_log(self) -> SchedLog:
        """The scheduler's events, made on the first one a reader finds."""
        if self.sched is None:
            self.sched = SchedLog()
        return self.sched

    def thread_id(self, name: str) -> int:
        i = self._thread_ids.get(name)
        if i is None:
            i = self._thread_ids[name] = len(self.threads)
            self.threads.append(name)
        return i

    def task_thread(self, task: str) -> int:
        """The thread of an ftrace task field "comm-pid": one per pid, whatever comm a line
        shows. A thread that slept on one CPU and woke on another is the same; ftrace prints
        "<...>" for the comm when its comm cache lost the pid, and the function_graph tracer
        cuts comms short. pid 0 is each CPU's idle task: kept apart by name."""
        comm, sep, pid = task.rpartition("-")
        if not sep or not pid.isdigit() or int(pid) == 0:
            return self.thread_id(task)
        i = self._pid_threads.get(pid)
        if i is None:
            i = self._pid_threads[pid] = self.thread_id(task)
        elif comm != "<...>" and self.threads[i].startswith("<...>-"):
            self.threads[i] = task  # the name a later line gives
        return i

    def samples(self) -> Iterator[CallbackSample]:
        for g in self.groups.values():
            drv, dev, parent, phase, layer = g.key
            for i, dur in enumerate(g.durations):
                yield CallbackSample(
                    drv,
                    dev,
                    parent,
                    phase,
                    layer,
                    g.starts[i],
                    round(dur, 3),
                    g.errors.get(i, 0),
                    g.cycles[i],
                    self.files[g.files[i]],
                    g.symbol,
                    self.threads[g.threads[i]] if g.threads[i] >= 0 else "",
                )

    def __len__(self) -> int:
        return sum(len(g.durations) for g in self.groups.values())


class DelayColumns:
    """Measured delay calls (sleepgraph kprobes msleep_cal/msleep_ret, ...), column-wise and
    summed per callback sample and delay site as they are read: a capture with millions of
    kprobe lines costs a row per (callback run, site), not per call."""

    __slots__ = ("owners", "samples", "threads", "cycles", "funcs", "callers", "requested",
                 "calls", "totals", "firsts", "lasts", "names", "_ids")

    def __init__(self) -> None:
        self.owners: list[Group | None] = []  # the callback's group, None outside callbacks
        self.samples = array("l")  # its sample index in the group, -1 outside callbacks
        self.threads = array("l")
        self.cycles = array("l")
        self.funcs = array("l")  # names index: msleep, usleep_range, udelay, ...
        self.callers = array("l")  # names index: "hub_port_reset" (module dropped)
        self.requested = array("d")  # the argument (msleep time=, usleep_range min=) in ms, nan
        self.calls = array("l")
        self.totals = array("d")  # us, summed over the calls
        self.firsts = array("d")  # the first call's start, seconds
        self.lasts = array("d")  # the last call's end
        self.names: list[str] = []
        self._ids: dict[str, int] = {}

    def name_id(self, name: str) -> int:
        i = self._ids.get(name)
        if i is None:
            i = self._ids[name] = len(self.names)
            self.names.append(name)
        return i

    def add(self, owner: Group | None, sample: int, thread: int, cycle: int,
            key: tuple[int, int, float], acc: list) -> None:
        """`key` (func id, caller id, requested ms), `acc` [calls, total us, first, last]."""
        self.owners.append(owner)
        self.samples.append(sample)
        self.threads.append(thread)
        self.cycles.append(cycle)
        self.funcs.append(key[0])
        self.callers.append(key[1])
        self.requested.append(key[2])
        self.calls.append(acc[0])
        self.totals.append(acc[1])
        self.firsts.append(acc[2])
        self.lasts.append(acc[3])

    def __len__(self) -> int:
        return len(self.samples)


class ThreadActivity:
    """sleepgraph's -dev kprobe calls outside device callbacks, per thread: what its "kernel
    thread" rows are made of (sleepgraph.py addDeviceFunctionCall: a thread that runs no
    callback gets a row from its first to its last call of the test). Only first start, last
    end and count per (cycle, thread, function) are kept: a row per thread, not per call."""

    __slots__ = ("spans", "kprobe_threads", "seen", "top")

    def __init__(self) -> None:
        # (cycle, thread, function: DelayColumns.names index) -> [first start, last end, calls]
        self.spans: dict[tuple[int, int, int], list[float]] = {}
        # the largest cycle among the first `seen` keys of spans (insertion order), for
        # drop_from: kept while keys are only dropped past them
        self.seen = 0
        self.top = -math.inf
        # (cycle, thread) of sleepgraph's kernel-function kprobes (ksys_sync, ...): sleepgraph
        # counts their threads as device threads (its devpids) and draws no thread row for them
        self.kprobe_threads: set[tuple[int, int]] = set()

    def drop_from(self, base: int, start: int) -> None:
        """Drop the spans of cycles >= base (what a file recorded before its first test:
        sleepgraph keeps none). `start`: len(spans) when the file's reading began. The keys
        past it are the ones added since (a dict keeps insertion order); when no key before
        it has a cycle >= base (`top`, updated by folding in the keys added since the last
        call) only those are looked at, not every file's (that was quadratic in the files of
        a load: 4-8% of reading the multitest)."""
        spans = self.spans
        n = len(spans)
        if self.seen > start or start > n:  # keys before `start` were dropped: fold afresh
            self.seen, self.top = 0, -math.inf
        if self.seen < start <= n:
            older = islice(reversed(spans), n - start, n - self.seen)
            self.top = max(self.top, max(k[0] for k in older))
            self.seen = start
        if self.seen == start and self.top < base:
            doomed = [k for k in islice(reversed(spans), n - start) if k[0] >= base]
        else:  # every key
            doomed = [k for k in spans if k[0] >= base]
            self.seen, self.top = 0, -math.inf
        for key in doomed:
            del spans[key]

    def add(self, cycle: int, thread: int, func: int, start: float, end: float) -> None:
        row = self.spans.get((cycle, thread, func))
        if row is None:
            self.spans[(cycle, thread, func)] = [start, end, 1]
            return
        if start < row[0]:
            row[0] = start
        if end > row[1]:
            row[1] = end
        row[2] += 1


class Collector:
    """What one importer writes into while reading one file (cycles are file-local here)."""

    def __init__(self, report: FileReport, store: SampleStore, cycle_base: int) -> None:
        self.report = report
        self.store = store
        self.cycle_base = cycle_base
        self.file_id = len(store.files)
        store.files.append(report.path)
        self._max_cycle = -1
        self._explicit: set[tuple[int, str]] = set()
        self._spans: dict[tuple[int, str], list[float]] = {}  # (cycle, phase) -> [first, last]

    def add(
        self,
        driver: str,
        device: str,
        parent: str,
        phase: str,
        layer: str,
        start: float,
        dur_us: float,
        err: int,
        cycle: int,
        symbol: str | None = None,
        thread: str | None = None,
        raw_head: str | None = None,
    ) -> None:
        g = self.group(driver, device, parent, phase, layer)
        if raw_head is not None and g.raw_head is None:
            g.raw_head = raw_head  # traces.names decides the split later
            self.store.ambiguous.append(g)
        if symbol:
            g.symbol = symbol
        self.add_to(g, phase, start, dur_us, err, cycle, track_span=start == start)  # nan: no span
        if thread is not None:
            g.threads[-1] = self.store.thread_id(thread)

    def group(self, driver: str, device: str, parent: str, phase: str, layer: str) -> Group:
        key = (driver, device, parent, phase, layer)
        g = self.store.groups.get(key)
        if g is None:
            g = self.store.groups[key] = Group(key)
        return g

    def add_to(self, g: Group, phase: str, start: float, dur_us: float, err: int,
               cycle: int, track_span: bool = True, thread: int = -1) -> None:
        """`add` for a group the importer already holds (the ftrace/Perfetto hot path)."""
        if err:
            g.errors[len(g.durations)] = err
        g.threads.append(thread)
        g.durations.append(dur_us)
        g.starts.append(start)
        g.cycles.append(self.cycle_base + cycle)
        g.files.append(self.file_id)
        self.report.samples += 1
        if cycle > self._max_cycle:
            self._max_cycle = cycle
        if not track_span:
            return
        span = self._spans.get((cycle, phase))
        end = start + dur_us / 1e6
        if span is None:
            self._spans[(cycle, phase)] = [start, end]
        else:
            if start < span[0]:
                span[0] = start
            if end > span[1]:
                span[1] = end

    def counted(self, samples: int, max_cycle: int) -> None:
        """Samples an importer appended to groups itself (ftrace.py's inlined end)."""
        self.report.samples += samples
        if max_cycle > self._max_cycle:
            self._max_cycle = max_cycle

    def phase_time(self, cycle: int, phase: str, wall_us: float, start: float = float("nan"),
                   thread: int = -1) -> None:
        if phase not in PHASES or wall_us < 0:
            return
        self._explicit.add((cycle, phase))
        if cycle > self._max_cycle:
            self._max_cycle = cycle
        self.store.phase_times.append(
            PhaseTime(phase, self.cycle_base + cycle, round(wall_us, 3), self.report.path, True,
                      start, thread)
        )

    def step(self, cycle: int, name: str, val: int, start: float, end: float,
             thread: int) -> None:
        self.store.steps.append(
            Step(self.cycle_base + cycle, name, val, start, end, thread, self.report.path))

    def firmware(self, cycle: int, suspend_us: float, resume_us: float) -> None:
        self.store.firmware.append(Firmware(self.cycle_base + cycle, suspend_us, resume_us))

    def skip(self, reason: str) -> None:
        self.report.skipped_lines += 1
        self.report.skip_reasons[reason] += 1

    def skip_many(self, reason: str, n: int) -> None:
        """skip(reason) n times (the C pairing's lost delay calls, counted per stretch)."""
        self.report.skipped_lines += n
        self.report.skip_reasons[reason] += n

    def finish(self) -> int:
        """Fill in phase times the trace did not measure; return the number of cycles."""
        for (cycle, phase), (first, last) in sorted(self._spans.items()):
            if (cycle, phase) not in self._explicit:
                self.store.phase_times.append(
                    PhaseTime(
                        phase,
                        self.cycle_base + cycle,
                        round((last - first) * 1e6, 3),
                        self.report.path,
                        False,
                        first,
                    )
                )
        self.report.cycles = self._max_cycle + 1
        return self.report.cycles


class CycleTracker:
    """Segments suspend/resume cycles: a 'down' phase after an 'up' phase starts a new one."""

    __slots__ = ("cycle", "_seen_up", "_seen_any")

    def __init__(self) -> None:
        self.cycle = 0
        self._seen_up = False
        self._seen_any = False

    def observe(self, phase: str) -> int:
        p = PHASES.get(phase)
        if p is not None:
            if p.direction == "down":
                if self._seen_up:
                    self.cycle += 1
                    self._seen_up = False
            else:
                self._seen_up = True
        self._seen_any = True
        return self.cycle

    def after_up(self) -> bool:
        return self._seen_up

    def boundary(self) -> None:
        """An explicit marker (sleepgraph stamp, `PM: suspend entry`) starts a new cycle."""
        if self._seen_any:
            self.cycle += 1
            self._seen_up = False
            self._seen_any = False

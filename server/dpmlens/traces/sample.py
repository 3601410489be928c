"""What every importer produces: callback samples, phase wall times, and a per-file report.

Samples are kept column-wise per callback (driver, device, parent, phase, layer) in `array`s,
so a capture of 100 cycles x 600 devices costs a few MB, not one Python object per sample.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from dpmlens.model.phases import PHASES

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


@dataclass(frozen=True, slots=True)
class PhaseTime:
    phase: str
    cycle: int
    wall_us: float
    source_file: str
    measured: bool  # True: from a phase marker; False: first start .. last end of its samples


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


class Group:
    """All samples of one callback (driver, device, parent, phase, layer)."""

    __slots__ = ("key", "durations", "starts", "cycles", "files", "errors", "symbol")

    def __init__(self, key: GroupKey) -> None:
        self.key = key
        self.durations = array("d")
        self.starts = array("d")
        self.cycles = array("l")
        self.files = array("l")
        self.errors: dict[int, int] = {}  # sample index -> error, only non-zero ones
        self.symbol: str | None = None


class SampleStore:
    def __init__(self) -> None:
        self.groups: dict[GroupKey, Group] = {}
        self.files: list[str] = []
        self.phase_times: list[PhaseTime] = []

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
                )

    def __len__(self) -> int:
        return sum(len(g.durations) for g in self.groups.values())


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
    ) -> None:
        g = self.group(driver, device, parent, phase, layer)
        if symbol:
            g.symbol = symbol
        self.add_to(g, phase, start, dur_us, err, cycle, track_span=start == start)  # nan: no span

    def group(self, driver: str, device: str, parent: str, phase: str, layer: str) -> Group:
        key = (driver, device, parent, phase, layer)
        g = self.store.groups.get(key)
        if g is None:
            g = self.store.groups[key] = Group(key)
        return g

    def add_to(self, g: Group, phase: str, start: float, dur_us: float, err: int,
               cycle: int, track_span: bool = True) -> None:
        """`add` for a group the importer already holds (the ftrace/Perfetto hot path)."""
        if err:
            g.errors[len(g.durations)] = err
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

    def phase_time(self, cycle: int, phase: str, wall_us: float) -> None:
        if phase not in PHASES or wall_us < 0:
            return
        self._explicit.add((cycle, phase))
        if cycle > self._max_cycle:
            self._max_cycle = cycle
        self.store.phase_times.append(
            PhaseTime(phase, self.cycle_base + cycle, round(wall_us, 3), self.report.path, True)
        )

    def skip(self, reason: str) -> None:
        self.report.skipped_lines += 1
        self.report.skip_reasons[reason] += 1

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

    def boundary(self) -> None:
        """An explicit marker (sleepgraph stamp, `PM: suspend entry`) starts a new cycle."""
        if self._seen_any:
            self.cycle += 1
            self._seen_up = False
            self._seen_any = False

"""The dependency graph of one phase run that the what-if replays (built by traces.analysis.whatif,
reordered by traces.analysis.ordering)."""

from __future__ import annotations

import math

from dpmlens.traces.model.timeline import Interval


class Nodes:
    """A phase run's dependency graph, column-wise (a replay of 100 cycles has ~200,000)."""

    __slots__ = ("ivs", "dur", "release", "deps", "thread", "lag", "extra", "measured_us",
                 "last_end", "held", "cut", "segments", "cpus")

    def __init__(self, ivs: list[Interval], dur: list[float], release: list[float],
                 deps: list[list[tuple[int, str]]], thread: list[int], lag: list[float],
                 last_end: float) -> None:
        self.ivs = ivs
        self.measured_us = math.fsum(dur)  # the callbacks' time before any change
        self.last_end = last_end  # the last measured callback end (s)
        self.dur = dur  # us, after the changes
        self.release = release  # start offset (us) when nothing is waited for
        self.deps = deps  # (node index, link), pointing backwards
        self.thread = thread
        self.lag = lag  # us after the last dependency ends
        self.extra: dict[int, dict[int, float]] = {}  # node -> {dep: its own lag} (dispatch)
        # node -> [before, holding, after, took] (us): its callback around a lock shared with
        # the other nodes here (traces.analysis.exclusive), the measured lock wait left out;
        # when it took the lock in the capture (from the phase start)
        self.held: dict[int, list[float]] = {}
        # node -> {id(delay): us the changes took off that delay's calls}
        self.cut: dict[int, dict[int, float]] = {}
        # with CPU contention (traces.analysis.contention): per node its segments
        # (sleep?, us, delay), the work de-contended; replayed over `cpus` CPUs
        self.segments: list[list[tuple[int, float, object]]] | None = None
        self.cpus = 0

    def __len__(self) -> int:
        return len(self.ivs)

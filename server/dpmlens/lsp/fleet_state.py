"""The fleet figures the server shows (fleet/code_figures.py), mapped onto the workspace.

Callbacks map as the loaded traces' do (traces/source/mapping.py: driver name -> its `.pm`
table -> the member for the phase -> the function; a callback measured at the bus or another
layer is its driver's member, `via` that layer); delay sites are matched to their call in a
document by the delay rules' own analysis of it (traces/source/delay_sites.py), as the traces'
delay lenses are. Computed in a thread; `install()` swaps a result in on the loop.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dpmlens.model.types import FileModel

if TYPE_CHECKING:  # the fleet modules import duckdb: loaded once a store is configured
    from dpmlens.fleet.code_figures import CallbackFigures, DelayFigures, Figures


@dataclass(frozen=True)
class MappedCallback:
    figures: CallbackFigures
    path: str
    function: str
    via: str | None  # the layer it was measured at, when not the driver's own callback


@dataclass(frozen=True)
class FleetDelay:
    """A fleet delay site matched to its call in a document."""

    line: int  # 1-based
    call: str  # msleep(200), as written
    figures: DelayFigures

    @property
    def title(self) -> str:
        """`msleep(200) · resume · p50 203 ms · p95 204 ms per cycle · 2 cycles on 1 machine
        (6.12) · on the critical path in 2 of 2 cycles`"""
        f = self.figures
        parts = [self.call, f.phase or "cycle", f.figure.summary(" per cycle")]
        if f.figure.cycles_on_path:
            parts.append(f"on the critical path in {f.figure.cycles_on_path:,} of "
                         f"{f.figure.cycles:,} cycles")
        return " · ".join(parts)


@dataclass
class FleetResult:
    figures: Figures
    callbacks: list[MappedCallback]
    unmapped: int  # callbacks of the workspace's drivers that did not map
    drivers: frozenset[str]  # the workspace's drivers the figures were queried for


@dataclass
class FleetState:
    store: str = ""  # the store in use ("": none configured)
    result: FleetResult | None = None
    _by_function: dict[tuple[str, str], list[MappedCallback]] = field(default_factory=dict)
    _by_name: dict[str, list[MappedCallback]] = field(default_factory=dict)
    _delays: dict[tuple[str, int | None], list[FleetDelay]] = field(default_factory=dict)

    @property
    def loaded(self) -> bool:
        return self.result is not None

    def install(self, result: FleetResult | None) -> None:
        by_fn: dict[tuple[str, str], list[MappedCallback]] = defaultdict(list)
        by_name: dict[str, list[MappedCallback]] = defaultdict(list)
        for cb in result.callbacks if result is not None else ():
            by_fn[(os.path.realpath(cb.path), cb.function)].append(cb)
            by_name[cb.function].append(cb)
        self.result = result
        self._by_function = dict(by_fn)
        self._by_name = dict(by_name)
        self._delays = {}

    def callbacks_for(self, path: str, function: str) -> list[MappedCallback]:
        return self._by_function.get((os.path.realpath(path), function), [])

    def callbacks_named(self, function: str) -> list[MappedCallback]:
        return self._by_name.get(function, [])

    def delays_in(self, uri: str, version: int | None, model: FileModel) -> list[FleetDelay]:
        """The fleet's delay sites called in this document (cached per version)."""
        if self.result is None:
            return []
        key = (uri, version)
        hit = self._delays.get(key)
        if hit is None:
            hit = match_delays(self.result.figures.delays, model)
            self._delays = {k: v for k, v in self._delays.items() if k[0] != uri}
            self._delays[key] = hit
        return hit


def match_delays(delays: list[DelayFigures], model: FileModel) -> list[FleetDelay]:
    from dpmlens.lsp.delay_lens import matched_sites

    return [
        FleetDelay(int(static["line"]), str(static["call"]), d)  # type: ignore[call-overload]
        for d, static in matched_sites(delays, model)
    ]


def compute(store: str, models: list[FileModel], map_path: Callable[[str], str],
            previous: FleetResult | None = None) -> FleetResult:
    """Query the store for the workspace's drivers and map each callback onto the function
    of the workspace it ran. In a thread. `previous`: the result of the same (unchanged)
    store; its figures are mapped again unless the workspace has drivers it was not
    queried for."""
    from dpmlens.fleet.code_figures import load
    from dpmlens.traces.analysis.aggregate import CallbackStats
    from dpmlens.traces.source.mapping import SourceIndex, map_callback

    index = SourceIndex(root="workspace")
    for m in models:
        index.add_model(m)
    drivers = frozenset(index.drivers)
    if previous is not None and drivers <= previous.drivers:
        figures, drivers = previous.figures, previous.drivers
    else:
        figures = load(store, drivers)
    out, unmapped = [], 0
    for cb in figures.callbacks:
        if cb.driver not in index.drivers:
            continue
        f = cb.figure
        stats = CallbackStats(cb.driver, "", "", cb.phase, cb.layer, f.runs, 0.0, f.p50_us,
                              f.p50_us, f.p95_us, f.p95_us, 0.0, f.cycles, cb.failures)
        ref = map_callback(stats, index).source
        if ref is None:
            unmapped += 1
            continue
        out.append(MappedCallback(cb, map_path(ref.path), ref.function, ref.via))
    return FleetResult(figures, out, unmapped, drivers)

"""Traces -> the JSON shapes of docs/lsp-protocol.md, mapped onto workspace models.

`parse_traces` (slow: reads the captures) and `map_traces` (fast: driver name -> .pm table ->
callback) are separate so that a finished workspace index re-maps without re-reading files.
Both run off the event loop.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dpmlens.model.types import FileModel
from dpmlens.traces.analysis.aggregate import (
    CallbackStats,
    PhaseStats,
    _order,
    aggregate,
    phase_stats,
)
from dpmlens.traces.analysis.critical import (
    CriticalPath,
    DeviceOnPath,
    across_cycles,
    critical_path,
)
from dpmlens.traces.analysis.delays import DelaySite, MeasuredDelay, delay_sites, measured_delays
from dpmlens.traces.analysis.rpm_stats import RpmReport, runtime_stats
from dpmlens.traces.analysis.whatif import Changes, what_if
from dpmlens.traces.model.links import DeviceLinks
from dpmlens.traces.model.timeline import PhaseRun, build_timeline
from dpmlens.traces.model.traceset import TraceSet
from dpmlens.traces.read.load import load_traces
from dpmlens.traces.report.output import callback_json, phase_json
from dpmlens.traces.report.rpm_output import runtime_rows
from dpmlens.traces.source.mapping import SourceIndex, map_to_source
from dpmlens.traces.source.rpm_source import map_runtime


@dataclass(frozen=True)
class MeasuredSite:
    """A delay site the kprobes measured (traces/delays.py DelaySite), without the timeline:
    what the editor shows over the call."""

    func: str  # msleep, usleep_range, udelay...
    caller: str
    requested_ms: float  # nan when the probe gives no value (udelay)
    calls: int
    cycles: int
    mean_us: float
    total_us: float
    on_path: int  # calls inside a callback on a phase's critical path
    phases: tuple[str, ...]  # the phases of the callbacks it ran in, most calls first

    @staticmethod
    def of(site: DelaySite) -> MeasuredSite:
        by_phase = Counter[str]()
        for (_drv, _dev, phase), n in site.callbacks().items():
            by_phase[phase] += n
        return MeasuredSite(site.func, site.caller, site.requested_ms, site.calls,
                            site.cycles(), site.mean_us, site.total_us, site.on_path,
                            tuple(p for p, _n in by_phase.most_common()))


@dataclass
class ParsedTraces:
    paths: list[str]
    stats: list[CallbackStats]
    phases: list[PhaseStats]
    files: int
    samples: int
    cycles: int
    errors: list[str]
    runtime: RpmReport | None = None  # None: no rpm_* events in the captures
    # (driver, device, phase) -> how often on the phase's critical path (traces/critical.py)
    critical: dict[tuple[str, str, str], DeviceOnPath] = field(default_factory=dict)
    delay_sites: list[MeasuredSite] = field(default_factory=list)  # measured delays
    # per phase: its wall time, the devices on its critical path, what-if savings (protocol:
    # slowestCallbacks "critical")
    critical_phases: list[dict[str, Any]] = field(default_factory=list)
    # (driver, device, phase, layer) -> where its time went (sched_switch/sched_waking events;
    # traces/analysis/waits.py), empty without them
    splits: dict[tuple[str, str, str, str], dict[str, Any]] = field(default_factory=dict)


def parse_traces(
    paths: list[str],
    cancelled: Callable[[], bool] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    links: DeviceLinks | None = None,
) -> ParsedTraces:
    ts = load_traces(list(paths), progress=progress, cancelled=cancelled)
    ts.device_links = links  # supplier/consumer order for the critical paths and what-ifs
    runs = build_timeline(ts)
    paths_ = [critical_path(r) for r in runs]
    measured = measured_delays(ts, runs)
    sites = [MeasuredSite.of(s) for s in delay_sites(measured, paths_)]
    shared = {r.phase for r in runs if len({iv.device for iv in r.intervals}) > 1}
    return ParsedTraces(
        paths=list(paths),
        stats=aggregate(ts),
        phases=phase_stats(ts),
        files=len(ts.files),
        samples=ts.sample_count,
        cycles=ts.cycles,
        errors=list(ts.errors),
        runtime=runtime_stats(ts),
        # (a device alone in its phase is on its critical path trivially: not news)
        critical={(d.driver, d.device, d.phase): d for d in across_cycles(paths_)
                  if d.phase in shared},
        delay_sites=sites,
        critical_phases=critical_phases(runs, paths_, measured, ts.store.sched is not None),
        splits=_splits(ts),
    )


def _splits(ts: TraceSet) -> dict[tuple[str, str, str, str], dict[str, Any]]:
    from dpmlens.traces.analysis.waits import group_splits
    from dpmlens.traces.report.sched_output import splits_json

    rows = splits_json(group_splits(ts.store, len(ts.store.groups))) or []
    return {(r["driver"], r["device"], r["phase"], r["layer"]): r for r in rows}


# Replaying every run twice for the what-ifs costs ~4 ms per 100 runs; past this many runs
# the section names the devices on the path but replays nothing
_MAX_WHATIF_RUNS = 5000
_WHATIFS = (("every device async", Changes(make_async=lambda _iv: True)),
            ("the async ordering of Linux 6.16", Changes(ordering="6.16")))


def critical_phases(runs: list[PhaseRun], paths: list[CriticalPath],
                    delays: list[MeasuredDelay], sched_in_capture: bool = False,
                    ) -> list[dict[str, Any]]:
    """Per phase (cycle order): mean wall time, the devices on its critical path (most time
    on it first), and what two what-ifs would win back (traces/whatif.py)."""
    walls: dict[str, list[float]] = {}
    for r in runs:
        walls.setdefault(r.phase, []).append(r.wall_us)
    on = across_cycles(paths)
    savings: dict[str, list[dict[str, Any]]] = {}
    if len(runs) <= _MAX_WHATIF_RUNS:
        for label, changes in _WHATIFS:
            res = what_if(runs, delays, changes)
            sure = res.sure
            nxt = sure.capture_next if sure is not None else None
            if sched_in_capture and nxt is not None and "scheduler" in nxt:
                # the editor's replay leaves the events out (no contention model): say where
                # they are used rather than ask for what the capture already has
                nxt = ("the capture's scheduler events are used by `dpmlens trace whatif` "
                       "(its contention model), not by this replay")
            for phase, _n, measured, predicted in res.per_phase():
                if measured - predicted > 0.005 * measured:  # below the replay's own error
                    # the lab's error band for this change with this capture's evidence
                    # (traces/analysis/bands.py; null: not measured for the cell)
                    band = sure.bands.get(phase) if sure is not None else None
                    savings.setdefault(phase, []).append({
                        "change": label, "predicted_us": predicted,
                        "saving_us": round(measured - predicted, 3),
                        "evidence": sure.evidence if sure is not None else "",
                        "band": None if band is None else {
                            "low_pct": band.low_pct, "high_pct": band.high_pct},
                        "capture_next": nxt})
    out = []
    for phase in sorted(walls, key=_order):
        devices = [{"driver": d.driver, "device": d.device, "on_path": d.on_path,
                    "runs": d.runs, "contribution_us": d.contribution_us}
                   for d in on if d.phase == phase][:5]
        if not devices:
            continue
        out.append({"phase": phase, "runs": len(walls[phase]),
                    "wall_us": round(sum(walls[phase]) / len(walls[phase]), 3),
                    "devices": devices, "whatif": savings.get(phase, []),
                    "replayed": len(runs) <= _MAX_WHATIF_RUNS})
    return out


def sample_key(cb: dict[str, Any]) -> tuple[str, str, str, str]:
    """Key of a Callback dict (and of its CallbackStats) for looking up its durations."""
    return cb["driver"], cb["device"], cb["phase"], cb["layer"]


def durations(parsed: ParsedTraces) -> dict[tuple[str, str, str, str], tuple[float, ...]]:
    out = {(s.driver, s.device, s.phase, s.layer): s.values for s in parsed.stats}
    for d in parsed.runtime.devices if parsed.runtime else ():
        for member, dist in (("runtime_suspend", d.suspend), ("runtime_resume", d.resume)):
            if dist is not None:
                out[(d.driver, d.device, member, "")] = dist.values
    return out


def map_traces(
    parsed: ParsedTraces, models: list[FileModel], map_path: Callable[[str], str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any], list[dict[str, Any]]]:
    """(callbacks, phases, status, runtime) as the protocol documents them."""
    from pygls.uris import from_fs_path

    index = SourceIndex(root="workspace")
    for m in models:
        index.add_model(m)
    report = map_to_source(parsed.stats, index)

    def located(cb: dict[str, Any]) -> dict[str, Any]:
        src = cb["source"]
        if src is not None:
            path = map_path(src["path"])
            src["path"] = path
            src["uri"] = from_fs_path(path) or path
        return cb

    # the CLI's JSON shape, and how often the callback's device was on the critical path
    callbacks = []
    for s in parsed.stats:
        cb = located(callback_json(s, report.mappings.get(s.key)))
        on = parsed.critical.get((s.driver, s.device, s.phase))
        cb["critical"] = None if on is None else {
            "on_path": on.on_path, "runs": on.runs, "contribution_us": on.contribution_us}
        split = parsed.splits.get((s.driver, s.device, s.phase, s.layer))
        cb["time_split"] = None if split is None else {
            k: v for k, v in split.items()
            if (k.endswith("_us") and k != "median_us") or k == "waited_for"}
        callbacks.append(cb)
    runtime: list[dict[str, Any]] = []
    if parsed.runtime is not None:
        rows = runtime_rows(parsed.runtime, map_runtime(parsed.runtime, index))
        runtime = [located(r) for r in rows]
    phases = [phase_json(p) for p in parsed.phases]
    status = {
        "files": parsed.files,
        "samples": parsed.samples,
        "cycles": parsed.cycles,
        "callbacks_mapped": report.mapped_callbacks,
        "callbacks_unmapped": report.unmapped_callbacks,
        "unmapped_reasons": dict(report.unmapped_reasons),
        "errors": list(parsed.errors),
        "runtime_devices": len(parsed.runtime.devices) if parsed.runtime else 0,
        "runtime_mapped": sum(1 for r in runtime if r["source"] is not None),
    }
    return callbacks, phases, status, runtime


def timeline_html(paths: list[str], models: list[FileModel]) -> str:
    """The HTML timeline of `trace report --format html` for the loaded captures, with bars
    linked to the workspace's callbacks. Reads the captures again (the loaded state keeps
    statistics, not every interval). ValueError when they have no callback timestamps."""
    from dpmlens.traces.report.html import timeline_page

    ts = load_traces(list(paths))
    index = SourceIndex(root="workspace")
    for m in models:
        index.add_model(m)
    return timeline_page(ts, map_to_source(aggregate(ts), index), paths)

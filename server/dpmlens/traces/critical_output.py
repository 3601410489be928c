"""JSON and text of the critical paths (`dpmlens trace report`)."""

from __future__ import annotations

import math
from typing import Any

from dpmlens.traces.critical import CriticalPath, DeviceOnPath, across_cycles, critical_path
from dpmlens.traces.durations import format_us
from dpmlens.traces.mapping import MappedReport
from dpmlens.traces.timeline import PhaseRun, build_timeline
from dpmlens.traces.traceset import TraceSet


def all_paths(traces: TraceSet, runs: list[PhaseRun] | None = None) -> list[CriticalPath]:
    return [critical_path(r) for r in (runs if runs is not None else build_timeline(traces))]


def _source(mapped: MappedReport | None, driver: str, device: str, phase: str) -> Any:
    if mapped is None:
        return None
    m = mapped.mappings.get((driver, device, phase))
    if m is None or m.source is None:
        return None
    return {"path": m.source.path, "line": m.source.line, "function": m.source.function}


def path_json(traces: TraceSet, p: CriticalPath, mapped: MappedReport | None) -> dict[str, Any]:
    names = traces.store.threads
    r = p.run
    return {
        "cycle": r.cycle, "phase": r.phase, "wall_us": r.wall_us, "measured": r.measured,
        "callbacks_us": p.callbacks_us, "waits_us": p.waits_us, "tail_us": p.tail_us,
        "accounted_us": p.accounted_us, "error_pct": p.error_pct,
        "chain": [{
            "driver": x.interval.driver, "device": x.interval.device,
            "parent": x.interval.parent, "layer": x.interval.layer,
            "thread": names[x.interval.thread] if x.interval.thread >= 0 else None,
            "start_us": round((x.interval.start - r.start) * 1e6, 3),
            "duration_us": x.interval.duration_us, "wait_us": x.wait_us, "link": x.link,
            "source": _source(mapped, x.interval.driver, x.interval.device, r.phase),
        } for x in p.chain],
    }


def devices_json(devs: list[DeviceOnPath]) -> list[dict[str, Any]]:
    return [{"driver": d.driver, "device": d.device, "phase": d.phase, "on_path": d.on_path,
             "runs": d.runs, "contribution_us": d.contribution_us,
             "mean_us": round(d.contribution_us / d.on_path, 3)} for d in devs]


def representative(paths: list[CriticalPath]) -> list[CriticalPath]:
    """Per phase, the cycle whose wall time is the median (the lower one for an even count)."""
    by_phase: dict[str, list[CriticalPath]] = {}
    for p in paths:
        by_phase.setdefault(p.run.phase, []).append(p)
    out = []
    for lst in by_phase.values():
        lst.sort(key=lambda p: p.run.wall_us)
        out.append(lst[(len(lst) - 1) // 2])
    out.sort(key=lambda p: p.run.start)
    return out


def paths_text(traces: TraceSet, paths: list[CriticalPath], top: int,
               delays_on: dict[int, list[str]] | None = None) -> list[str]:
    """The chain of each phase (its median cycle), then the devices most often on the path.
    `delays_on`: id(interval) -> measured delay notes to print under the step."""
    if not paths:
        return []
    names = traces.store.threads
    n_cycles = len({p.run.cycle for p in paths})
    parts = [f"\nCritical path per phase (the cycle with the median wall time of {n_cycles}):"]
    for p in representative(paths):
        r = p.run
        if not p.chain:
            continue
        parts.append(f"  {r.phase} (cycle {r.cycle}): {format_us(r.wall_us)} = "
                     f"{format_us(p.callbacks_us)} in callbacks + {format_us(p.waits_us)} "
                     f"waiting ({len(p.chain)} steps)")
        floor = max(r.wall_us * 0.01, 100.0)
        hidden, hidden_us = 0, 0.0
        for x in p.chain:
            iv = x.interval
            if iv.duration_us < floor and x.wait_us < floor:
                hidden += 1
                hidden_us += iv.duration_us + x.wait_us
                continue
            if hidden:
                parts.append(f"      ... {hidden} short step(s), {format_us(hidden_us)}")
                hidden, hidden_us = 0, 0.0
            thread = names[iv.thread] if iv.thread >= 0 else "?"
            wait = f"after {format_us(x.wait_us)} ({x.link})" if x.link != "phase start" else \
                f"{format_us(x.wait_us)} after the phase start"
            parts.append(f"    {format_us((iv.start - r.start) * 1e6):>10}  "
                         f"{iv.driver or '-'} {iv.device}  {format_us(iv.duration_us)}  "
                         f"[{thread}]  {wait}")
            for note in (delays_on or {}).get(id(iv), []):
                parts.append(f"                {note}")
        if hidden:
            parts.append(f"      ... {hidden} short step(s), {format_us(hidden_us)}")
        if p.tail_us >= floor:
            parts.append(f"    then {format_us(p.tail_us)} to the phase end")
    devs = across_cycles(paths)
    if devs:
        rows = [["driver", "device", "phase", "on path", "time on path", "mean"]]
        for d in devs[:top]:
            rows.append([d.driver or "-", d.device, d.phase, f"{d.on_path}/{d.runs}",
                         format_us(d.contribution_us),
                         format_us(d.contribution_us / d.on_path if d.on_path else math.nan)])
        from dpmlens.traces.output import _table

        parts += ["\nOn the critical path across cycles (by time contributed):",
                  _table(rows, {3, 4, 5})]
    return parts

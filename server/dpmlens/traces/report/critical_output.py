"""JSON and text of the critical paths (`dpmlens trace report`)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from dpmlens.traces.analysis.aggregate import _order
from dpmlens.traces.analysis.critical import (
    CriticalPath,
    DeviceOnPath,
    Link,
    across_cycles,
    critical_path,
)
from dpmlens.traces.analysis.delays import DelaySite, MeasuredDelay, by_interval, call_text
from dpmlens.traces.model.durations import format_us
from dpmlens.traces.model.timeline import PhaseRun, build_timeline
from dpmlens.traces.model.traceset import TraceSet
from dpmlens.traces.report.table import table

if TYPE_CHECKING:  # source mapping (tree-sitter) only with --source: not imported
    from dpmlens.traces.source.mapping import MappedReport


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
    r = p.run
    return {
        "cycle": r.cycle, "phase": r.phase, "wall_us": r.wall_us, "measured": r.measured,
        "callbacks_us": p.callbacks_us, "waits_us": p.waits_us, "tail_us": p.tail_us,
        "accounted_us": p.accounted_us, "error_pct": p.error_pct,
        "chain": [_link_json(traces.store.threads, r, x, mapped) for x in p.chain],
    }


def _link_json(names: list[str], r: PhaseRun, x: Link, mapped: MappedReport | None,
               ) -> dict[str, Any]:
    iv = x.interval
    key = iv.group.key  # Interval.driver, .device, .parent, .layer: its group's key
    return {
        "driver": key[0], "device": key[1], "parent": key[2], "layer": key[4],
        "thread": names[iv.thread] if iv.thread >= 0 else None,
        "start_us": round((iv.start - r.start) * 1e6, 3),
        "duration_us": iv.duration_us, "wait_us": x.wait_us, "link": x.link,
        "source": None if mapped is None else _source(mapped, key[0], key[1], r.phase),
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
    out.sort(key=lambda p: (_order(p.run.phase), p.run.start))
    return out


def paths_text(traces: TraceSet, paths: list[CriticalPath], top: int,
               delays_on: dict[int, list[str]] | None = None,
               mapped: MappedReport | None = None) -> list[str]:
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
            src = _source(mapped, iv.driver, iv.device, r.phase)
            if src is not None:
                parts.append(f"                {src['path']}:{src['line']} {src['function']}()")
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

        parts += ["\nOn the critical path across cycles (by time contributed):",
                  table(rows, {3, 4, 5})]
    return parts


def delays_json(sites: list[DelaySite], n_cycles: int) -> list[dict[str, Any]]:
    return [_delay_json(s, n_cycles) for s in sites]


def _delay_json(s: DelaySite, n_cycles: int) -> dict[str, Any]:
    # the site's sums once (its properties sum every row each time they are read)
    calls, total_us = s.calls, s.total_us
    return {
        "function": s.func, "caller": s.caller,
        "requested_ms": None if s.requested_ms != s.requested_ms else s.requested_ms,
        "calls": calls, "cycles": s.cycles(),
        "calls_per_cycle": round(calls / max(n_cycles, 1), 3),
        "measured_us": total_us, "mean_us": round(total_us / calls, 3),  # DelaySite.mean_us
        "on_critical_path_calls": s.on_path, "on_critical_path_us": round(s.on_path_us, 3),
        "callbacks": [{"driver": k[0], "device": k[1], "phase": k[2], "calls": n}
                      for k, n in s.callbacks().most_common()],
        "static": s.static,
    }


def delays_text(sites: list[DelaySite], n_cycles: int, top: int) -> list[str]:
    if not sites:
        return []
    rows = [["caller", "delay", "calls/cycle", "mean", "per cycle", "on crit. path", "in",
             "source"]]
    for s in sites[:top]:
        cbs = s.callbacks()
        where = ", ".join(f"{dev} {ph}" for (_, dev, ph), _ in cbs.most_common(2))
        if len(cbs) > 2:
            where += f", +{len(cbs) - 2}"
        st = s.static
        src = "" if not st else f"{st['path']}:{st['line']}" + (
            f" ({st['spec']} >= {st['min_ms']:g} ms)" if st.get("spec") else "")
        rows.append([s.caller, call_text(s), f"{s.calls / max(n_cycles, 1):g}",
                     format_us(s.mean_us), format_us(s.total_us / max(n_cycles, 1)),
                     f"{s.on_path}/{s.calls}", where or "(outside callbacks)", src])

    out = ["\nMeasured delays (sleepgraph kprobes or function graph; per delay site, largest "
           "total first):",
           table(rows, {2, 3, 4, 5})]
    if len(sites) > top:
        out.append(f"... {len(sites) - top} more")
    return out


def delay_notes(delays: list[MeasuredDelay]) -> dict[int, list[str]]:
    """id(interval) -> "msleep(40) from usb_port_resume: 41.00 ms" lines for the chain."""
    notes: dict[int, list[str]] = {}
    for key, lst in by_interval(delays).items():
        agg: dict[tuple[str, str], list[float]] = {}
        for d in lst:
            a = agg.setdefault((call_text(d), d.caller), [0, 0.0])
            a[0] += d.calls
            a[1] += d.total_us
        notes[key] = [f"{call} from {caller}: " + (
            format_us(round(t, 3)) if n == 1 else f"{n} x {format_us(round(t / n, 3))}")
            for (call, caller), (n, t) in sorted(agg.items(), key=lambda kv: -kv[1][1])]
    return notes

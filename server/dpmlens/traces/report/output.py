"""The JSON shapes shared by `dpmlens trace report --format json` and the language server,
plus the text table and CSV of the CLI. Data is in microseconds; text uses human units."""

from __future__ import annotations

import csv
import io
from typing import TYPE_CHECKING, Any

from dpmlens.traces.analysis.aggregate import CallbackStats, PhaseStats, _order
from dpmlens.traces.analysis.steps import accounts, step_rows, step_summary
from dpmlens.traces.model.durations import format_us
from dpmlens.traces.model.traceset import TraceSet
from dpmlens.traces.report import json_text
from dpmlens.traces.report.table import table

if TYPE_CHECKING:  # source mapping (tree-sitter) only with --source: not imported
    from dpmlens.traces.source.mapping import MappedReport, Mapping

NO_SOURCE_REASON = "no --source given"


def callback_json(s: CallbackStats, mapping: Mapping | None) -> dict[str, Any]:
    if mapping is None:
        source, reason = None, NO_SOURCE_REASON
    elif mapping.source is None:
        source, reason = None, mapping.reason
    else:
        src = mapping.source
        source = {"path": src.path, "line": src.line, "function": src.function, "via": src.via}
        reason = None
    return {
        "driver": s.driver, "device": s.device, "parent": s.parent, "phase": s.phase,
        "layer": s.layer, "n": s.n, "min_us": s.min_us, "median_us": s.median_us,
        "mean_us": s.mean_us, "p95_us": s.p95_us, "max_us": s.max_us, "total_us": s.total_us,
        "source": source, "unmapped_reason": reason,
    }


def phase_json(p: PhaseStats) -> dict[str, Any]:
    return {"phase": p.phase, "cycles": p.cycles, "mean_us": p.mean_us, "sd_us": p.sd_us}


# docs/traces.md "JSON": 2 added steps, accounting, name_splits, critical_path,
# critical_devices, delays (and timeline with --timeline); 3 added runtime_pm;
# 4 added device_links; 5: critical_path holds the median cycle's path per phase (every
# cycle's in critical_path_per_cycle with --per-cycle)
JSON_VERSION = 5


def steps_json(traces: TraceSet) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(steps, accounting): every kernel step, and per cycle where its time went."""
    acc = accounts(traces)
    starts = {a.cycle: a.start for a in acc}
    steps = [{"cycle": r.step.cycle, "name": r.step.name, "val": r.step.val,
              "start_us": round((r.step.start - starts.get(r.step.cycle, r.step.start)) * 1e6, 3),
              "duration_us": r.duration_us, "depth": r.depth, "phase": r.phase}
             for r in step_rows(traces)]
    accounting = [{"cycle": a.cycle, "span_us": a.span_us, "devices_us": a.devices_us,
                   "steps_us": a.steps_us, "gaps_us": a.gaps_us, "firmware_us": a.firmware_us,
                   "asleep_us": a.asleep_us, "total_us": a.total_us} for a in acc]
    return steps, accounting


def report_json(traces: TraceSet, stats: list[CallbackStats], phases: list[PhaseStats],
                mapped: MappedReport | None, top: int | None = None,
                timeline: bool = False, static: Any = None,
                runtime: dict[str, Any] | None = None,
                per_cycle: bool = False) -> dict[str, Any]:
    """`static(sites)`: fills DelaySite.static from a source tree (traces.delay_sites);
    `runtime`: the runtime PM section (traces.rpm_output.runtime_json), null without rpm_*
    events. The critical path is summarized across cycles (the median cycle's path per
    phase, how often each device is on the path); `per_cycle` adds every cycle's path, as
    `timeline` adds every cycle's intervals: both grow with the number of cycles."""
    from dpmlens.traces.analysis.critical import across_cycles, summarize_paths
    from dpmlens.traces.analysis.delays import delay_sites, measured_delays
    from dpmlens.traces.analysis.waits import group_splits
    from dpmlens.traces.model.timeline import build_timeline, timeline_json
    from dpmlens.traces.report.critical_output import (
        all_paths,
        delays_json,
        devices_json,
        path_json,
        representative,
    )
    from dpmlens.traces.report.links_output import links_json
    from dpmlens.traces.report.sched_output import splits_json

    shown = stats if top is None else stats[:top]
    steps, accounting = steps_json(traces)
    runs = build_timeline(traces)
    delays = measured_delays(traces, runs)
    if per_cycle:
        paths = all_paths(traces, runs)
        median, devices = representative(paths), across_cycles(paths)
        sites = delay_sites(delays, paths)
        runs_of: dict[str, int] = {}
        for p in paths:
            runs_of[p.run.phase] = runs_of.get(p.run.phase, 0) + 1
    else:  # each cycle's path folded as it is found: memory does not grow with the cycles
        summary = summarize_paths(runs, {id(d.interval) for d in delays if d.interval})
        median, devices, runs_of = summary.median, summary.devices, summary.runs_of
        median.sort(key=lambda p: (_order(p.run.phase), p.run.start))
        sites = delay_sites(delays, [], summary.on_path)
    if static is not None:
        static(sites)
    out = {
        "version": JSON_VERSION,
        "cycles": traces.cycles,
        "callbacks": [callback_json(s, mapped.mappings.get(s.key) if mapped else None)
                      for s in shown],
        "phases": [phase_json(p) for p in phases],
        "skipped_lines": traces.skipped_lines,
        "steps": steps,
        "accounting": accounting,
        "name_splits": [{"raw": raw, "driver": d, "device": v, "how": how}
                        for raw, how in sorted(traces.name_splits.items())
                        for d, v, _ in [split_from(traces, raw)]],
        "critical_path": [{**path_json(traces, p, mapped), "runs": runs_of.get(p.run.phase, 0)}
                          for p in median],
        "critical_devices": devices_json(devices),
        "delays": delays_json(sites, traces.cycles),
        "runtime_pm": runtime,
        "device_links": links_json(traces.device_links, runs),
        "time_split": splits_json(group_splits(traces.store, top or 15)),
    }
    if per_cycle:
        out["critical_path_per_cycle"] = [path_json(traces, p, mapped) for p in paths]
    if timeline:
        out["timeline"] = timeline_json(traces, runs)
    return out


def split_from(traces: TraceSet, raw: str) -> tuple[str, str, None]:
    for g in traces.store.ambiguous:
        if g.raw_head == raw:
            return g.key[0], g.key[1], None
    drv, _, dev = raw.partition(" ")
    return drv, dev, None


def trace_status(traces: TraceSet | None, mapped: MappedReport | None,
                 n_callbacks: int = 0) -> dict[str, Any]:
    """The language server's TraceStatus (docs/lsp-protocol.md)."""
    if traces is None:
        return {"files": 0, "samples": 0, "cycles": 0, "callbacks_mapped": 0,
                "callbacks_unmapped": 0, "unmapped_reasons": {}, "errors": []}
    return {
        "files": len(traces.files),
        "samples": traces.sample_count,
        "cycles": traces.cycles,
        "callbacks_mapped": mapped.mapped_callbacks if mapped else 0,
        "callbacks_unmapped": mapped.unmapped_callbacks if mapped else n_callbacks,
        "unmapped_reasons": dict(mapped.unmapped_reasons) if mapped else (
            {NO_SOURCE_REASON: n_callbacks} if n_callbacks else {}),
        "errors": list(traces.errors),
    }


human_us = format_us  # the name the language server and older callers import


def report_text(traces: TraceSet, stats: list[CallbackStats], phases: list[PhaseStats],
                mapped: MappedReport | None, top: int, static: Any = None,
                runtime: list[str] | None = None) -> str:
    parts = []
    n_files = sum(1 for f in traces.files if f.samples)
    parts.append(f"{traces.sample_count} samples, {traces.cycles} cycle(s), "
                 f"{len(stats)} callbacks from {n_files} file(s)")
    rows = [["driver", "device", "phase", "layer", "n", "median", "p95", "max", "total",
             "source"]]
    for s in stats[:top]:
        m = mapped.mappings.get(s.key) if mapped else None
        if m is None:
            where = ""
        elif m.source is not None:
            where = f"{m.source.path}:{m.source.line} {m.source.function}()"
            if m.source.via:
                where += f" [via {m.source.via}]"
        else:
            where = f"unmapped: {m.reason}"
        rows.append([s.driver or "-", s.device, s.phase, s.layer or "-", str(s.n),
                     human_us(s.median_us), human_us(s.p95_us), human_us(s.max_us),
                     human_us(s.total_us), where])
    if stats:
        parts.append("\nSlowest callbacks (by total time across cycles):")
        parts.append(table(rows, {4, 5, 6, 7, 8}))
    else:  # a runtime-PM-only log (no system sleep) is a normal input
        parts.append("\nNo system suspend/resume callbacks in the capture(s).")
    if len(stats) > top:
        parts.append(f"... {len(stats) - top} more (--top N)")
    if phases:
        prow = [["phase", "cycles", "wall time (mean +/- sd)", "min", "max"]]
        for p in phases:
            est = "" if p.measured else "  (from callback spans)"
            prow.append([p.phase, str(p.cycles), f"{human_us(p.mean_us)} +/- {human_us(p.sd_us)}"
                         + est, human_us(p.min_us), human_us(p.max_us)])
        parts.append("\nPhases:")
        parts.append(table(prow, {1, 3, 4}))
    parts.extend(_steps_text(traces))
    from dpmlens.traces.analysis.delays import delay_sites, measured_delays
    from dpmlens.traces.model.timeline import build_timeline
    from dpmlens.traces.report.critical_output import (
        all_paths,
        delay_notes,
        delays_text,
        paths_text,
    )

    runs = build_timeline(traces)
    paths = all_paths(traces, runs)
    delays = measured_delays(traces, runs)
    sites = delay_sites(delays, paths)
    if static is not None:
        static(sites)
    parts.extend(paths_text(traces, paths, min(top, 15), delay_notes(delays), mapped))
    parts.extend(delays_text(sites, traces.cycles, min(top, 15)))
    from dpmlens.traces.analysis.waits import group_splits
    from dpmlens.traces.report.sched_output import splits_text

    parts.extend(splits_text(group_splits(traces.store, min(top, 15))))
    parts.extend(runtime or [])
    from dpmlens.traces.report.links_output import links_text

    parts.extend(links_text(traces.device_links, runs))
    if mapped is not None:
        parts.append(
            f"\nMapped to source: {mapped.mapped_callbacks} of "
            f"{mapped.mapped_callbacks + mapped.unmapped_callbacks} callbacks, "
            f"{mapped.mapped_samples} of {mapped.total_samples} samples, "
            f"{human_us(mapped.mapped_us)} of {human_us(mapped.total_us)} measured time")
        if mapped.unmapped_reasons:
            parts.append("Unmapped:")
            for reason, n in mapped.unmapped_reasons.most_common():
                parts.append(f"  {n:5d}  {reason}")
    parts.append(_file_summary(traces))
    return "\n".join(parts) + "\n"


def _steps_text(traces: TraceSet) -> list[str]:
    rows = step_summary(step_rows(traces))
    acc = accounts(traces)
    parts: list[str] = []
    if rows:
        t = [["kernel step", "n", "mean", "max"]]
        for label, depth, n, mean, mx in rows:
            t.append(["  " * depth + label, str(n), human_us(mean), human_us(mx)])
        parts += ["\nKernel steps (suspend_resume events outside the device phases):",
                  table(t, {1, 2, 3})]
    if acc:
        t = [["cycle", "devices", "steps", "gaps", "firmware", "total", "asleep (not in total)"]]
        for a in acc:
            t.append([str(a.cycle), human_us(a.devices_us), human_us(a.steps_us),
                      human_us(a.gaps_us), human_us(a.firmware_us) if a.firmware_us else "-",
                      human_us(a.total_us), human_us(a.asleep_us)])
        parts += ["\nSuspend-to-resume time per cycle (devices + steps + gaps on the trace "
                  "clock + firmware = total):", table(t, {1, 2, 3, 4, 5, 6})]
    if traces.name_splits:
        parts.append("\nNames with spaces:")
        for raw, how in sorted(traces.name_splits.items()):
            drv, dev, _ = split_from(traces, raw)
            parts.append(f"  '{raw}': driver '{drv}', device '{dev}' ({how})")
    return parts


def _file_summary(traces: TraceSet) -> str:
    lines = ["\nFiles:"]
    for f in traces.files:
        bits = [f"{f.format}", f"{f.samples} samples", f"{f.cycles} cycle(s)"]
        if f.rpm_events:
            bits.append(f"{f.rpm_events} runtime PM events")
        if f.skipped_lines:
            reasons = ", ".join(f"{n} {r}" for r, n in f.skip_reasons.most_common())
            bits.append(f"{f.skipped_lines} skipped ({reasons})")
        if f.incomplete:
            bits.append(f"{f.incomplete} incomplete (start with no end)")
        if f.unmatched_ends:
            bits.append(f"{f.unmatched_ends} ends with no start")
        lines.append(f"  {f.path}: " + ", ".join(bits))
        for note in f.notes:
            lines.append(f"    note: {note}")
        if f.error:
            lines.append(f"    error: {f.error}")
    for e in traces.errors:
        if not any(e.startswith(f.path + ":") for f in traces.files):
            lines.append(f"  error: {e}")
    if traces.ignored:
        shown = ", ".join(traces.ignored[:3]) + (", ..." if len(traces.ignored) > 3 else "")
        lines.append(f"  ignored {len(traces.ignored)} file(s) found in directories that are "
                     f"not traces: {shown}")
    return "\n".join(lines)


# The callback_json keys that are csv columns as they are (the source columns follow them).
_CSV_STATS = ("driver", "device", "parent", "phase", "layer", "n", "min_us", "median_us",
              "mean_us", "p95_us", "max_us", "total_us")


def report_csv(stats: list[CallbackStats], mapped: MappedReport | None, top: int | None) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([*_CSV_STATS, "path", "line", "function", "via", "unmapped_reason"])
    for s in stats if top is None else stats[:top]:
        d = callback_json(s, mapped.mappings.get(s.key) if mapped else None)
        src = d["source"] or {}
        w.writerow([d[k] for k in _CSV_STATS]
                   + [src.get("path", ""), src.get("line", ""), src.get("function", ""),
                      src.get("via") or "", d["unmapped_reason"] or ""])
    return buf.getvalue()


def dumps(obj: Any) -> str:
    return json_text.dumps(obj) + "\n"  # = jsonsafe.dumps(obj, indent=2), faster

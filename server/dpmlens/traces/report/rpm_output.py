"""The runtime PM section of `dpmlens trace report` (JSON `runtime_pm`, the text table) and
the rows the language server shows over runtime callbacks. Data in microseconds."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dpmlens.traces.analysis.rpm_stats import DeviceRpm, Dist, RpmReport, by_driver
from dpmlens.traces.model.durations import format_us
from dpmlens.traces.report.table import table

if TYPE_CHECKING:  # source mapping (tree-sitter) only with --source: not imported
    from dpmlens.traces.source.mapping import Mapping
    from dpmlens.traces.source.rpm_source import RuleLink

NO_SOURCE = "no --source given"
def _members() -> tuple[str, ...]:
    # imported when a capture has rpm_* events: rpm_source pulls in the source mapping
    from dpmlens.traces.source.rpm_source import MEMBERS

    return MEMBERS


_MEMBER_DIST = {"runtime_suspend": "suspend", "runtime_resume": "resume"}


def dist_json(d: Dist | None) -> dict[str, Any] | None:
    if d is None:
        return None
    return {"n": d.n, "min_us": d.min_us, "median_us": d.median_us, "p95_us": d.p95_us,
            "max_us": d.max_us}


def _source(m: Mapping | None) -> tuple[dict[str, Any] | None, str | None]:
    if m is None:
        return None, NO_SOURCE
    if m.source is None:
        return None, m.reason
    s = m.source
    return {"path": s.path, "line": s.line, "function": s.function, "via": s.via}, None


def device_json(d: DeviceRpm, mappings: dict[tuple[str, str], Mapping] | None,
                links: dict[tuple[str, str, int], RuleLink] | None) -> dict[str, Any]:
    source: dict[str, Any] = {}
    reasons: dict[str, Any] = {}
    for member in _members():
        source[member], reasons[member] = _source(
            mappings.get((d.device, member)) if mappings is not None else None)
    errors = []
    for e in d.errors:
        cls, why = e.meaning
        link = (links or {}).get((d.device, e.call, e.code))
        errors.append({
            "call": e.call, "code": e.code, "name": e.name, "count": e.count, "class": cls,
            "meaning": why, "in_system_sleep": e.in_system_sleep,
            "while_disabled": e.in_disabled, "callbacks": dict(e.callbacks), "rule": e.rule,
            "returned_by": dict(e.returned_by), "after": dict(e.after),
            "finding": None if link is None else {
                "path": link.path, "line": link.line, "function": link.function,
                "phase": link.phase, "message": link.message},
        })
    share = d.short_share
    return {
        "device": d.device, "driver": d.driver or None,
        "states": "rpm_status" if d.exact else "inferred from calls",
        "suspends": d.suspends, "resumes": d.resumes, "idles": d.idles, "calls": d.calls,
        "suspend": dist_json(d.suspend), "resume": dist_json(d.resume),
        "resume_nested_median_us": d.resume_nested_us,
        "active_us": d.active_us, "suspended_us": d.suspended_us,
        "transition_us": d.transition_us,
        "suspended_periods": len(d.periods), "break_even_us": d.break_even_us,
        "short_periods": d.short_periods,
        "short_share": None if share is None else round(share, 4),
        "autosuspend": dist_json(d.autosuspend), "autosuspend_unconfirmed": d.unconfirmed,
        "errors": errors, "source": source, "unmapped_reason": reasons,
    }


# docs/traces.md "Runtime PM": the shape of `runtime_pm` (version of the section itself)
RUNTIME_JSON_VERSION = 1


def runtime_json(report: RpmReport | None, mappings: dict[tuple[str, str], Mapping] | None,
                 links: dict[tuple[str, str, int], RuleLink] | None) -> dict[str, Any] | None:
    if report is None:
        return None
    return {
        "version": RUNTIME_JSON_VERSION,
        "events": report.events, "calls": report.calls, "status_events": report.status_events,
        "unmatched_returns": report.unmatched_returns, "unreturned": report.unreturned,
        "formats_from_capture": report.formats_from_capture,
        "devices": [device_json(d, mappings, links) for d in report.devices],
        "drivers": by_driver(report.devices),
    }


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def _md(d: Dist | None) -> str:
    return "-" if d is None else f"{format_us(d.median_us)} / {format_us(d.p95_us)}"


def runtime_text(report: RpmReport | None, mappings: dict[tuple[str, str], Mapping] | None,
                 links: dict[tuple[str, str, int], RuleLink] | None, top: int) -> list[str]:
    """The table section (nothing at all when the captures have no rpm_* events)."""
    if report is None:
        return []

    exact = all(d.exact for d in report.devices)
    how = "states from rpm_status" if exact else "states inferred from the calls where " \
        "the kernel has no rpm_status event"
    parts = [f"\nRuntime PM ({report.calls} calls of {len(report.devices)} device(s); {how}; "
             "latency = event to rpm_return_int):"]
    rows = [["device", "driver", "suspends", "resumes", "suspend med/p95", "resume med/p95",
             "suspended", "active", "< break-even", "autosuspend", "errors"]]
    for d in report.devices[:top]:
        rows.append([
            d.device, d.driver or "?", str(d.suspends), str(d.resumes), _md(d.suspend),
            _md(d.resume), format_us(d.suspended_us), format_us(d.active_us),
            "-" if d.short_share is None else
            f"{_pct(d.short_share)} of {len(d.periods)} (< {format_us(d.break_even_us or 0)})",
            "-" if d.autosuspend is None else format_us(d.autosuspend.median_us),
            str(sum(e.count for e in d.errors)) if d.errors else "-",
        ])
    parts.append(table(rows, {2, 3, 9, 10}))
    if len(report.devices) > top:
        parts.append(f"... {len(report.devices) - top} more devices (--top N)")
    drivers = [d for d in by_driver(report.devices) if d["driver"]]  # unknown ones apart
    if any(d["devices"] > 1 for d in drivers):
        drows = [["driver", "devices", "suspends", "resumes", "suspend median",
                  "resume median", "errors"]]
        for d in drivers[:top]:
            drows.append([d["driver"] or "?", str(d["devices"]), str(d["suspends"]),
                          str(d["resumes"]),
                          "-" if d["suspend_median_us"] is None
                          else format_us(d["suspend_median_us"]),
                          "-" if d["resume_median_us"] is None
                          else format_us(d["resume_median_us"]),
                          str(d["errors"]) if d["errors"] else "-"])
        parts.append("Per driver (all its devices' transitions):")
        parts.append(table(drows, {1, 2, 3, 4, 5, 6}))
    notes: list[str] = []
    for d in report.devices[:top]:
        if d.resume_nested_us:
            notes.append(f"  {d.device}: a resume spends {format_us(d.resume_nested_us)} "
                         "(median) resuming others first (its parent)")
        if d.unconfirmed:
            notes.append(f"  {d.device}: {d.unconfirmed} autosuspend call(s) returned 0 with "
                         "no later proof that the device suspended (not counted)")
        for e in d.errors:
            cls, why = e.meaning
            where = ""
            if e.callbacks:
                where = " inside its " + ", ".join(f"{p} callback" for p in sorted(e.callbacks))
            elif e.in_system_sleep:
                where = " during a system suspend/resume"
            line = f"  {d.device}: {e.call} {e.name} x{e.count} ({cls}: {why}){where}"
            if e.after:
                line += "; left by the earlier " + ", ".join(sorted(e.after))
            if e.returned_by:
                line += ("\n      -> a call trace in the log shows the callback running: "
                         + ", ".join(sorted(e.returned_by)))
            link = (links or {}).get((d.device, e.call, e.code))
            if link is not None:
                line += (f"\n      -> [{link.rule}] {link.path}:{link.line} "
                         f"{link.function or ''}(): the static finding for this")
            elif e.rule and mappings is None:
                line += f"\n      -> matches rule {e.rule} (give --source to find the call)"
            elif e.rule:
                line += (f"\n      -> matches rule {e.rule}; no finding of it in the source "
                         "of the device's driver")
            notes.append(line)
        if mappings is not None:
            for member in _members():
                m = mappings.get((d.device, member))
                if m is None:
                    continue
                if m.source is not None:
                    notes.append(f"  {d.device} {member}: {m.source.path}:{m.source.line} "
                                 f"{m.source.function}()")
                else:
                    notes.append(f"  {d.device} {member}: unmapped: {m.reason}")
    if notes:
        parts.append("Runtime PM notes:")
        parts.extend(notes)
    return parts


def runtime_rows(report: RpmReport | None,
                 mappings: dict[tuple[str, str], Mapping]) -> list[dict[str, Any]]:
    """One row per (device, runtime member) that maps to source, for CodeLens and hover:
    the callback JSON keys plus the runtime facts."""
    out: list[dict[str, Any]] = []
    if report is None:
        return out
    for d in report.devices:
        for member in _members():
            dist = getattr(d, _MEMBER_DIST[member])
            if dist is None:
                continue
            src, reason = _source(mappings.get((d.device, member)))
            out.append({
                "driver": d.driver, "device": d.device, "parent": "", "phase": member,
                "layer": "", "n": dist.n, "min_us": dist.min_us, "median_us": dist.median_us,
                "mean_us": round(sum(dist.values) / dist.n, 3), "p95_us": dist.p95_us,
                "max_us": dist.max_us, "total_us": round(sum(dist.values), 3),
                "source": src, "unmapped_reason": reason,
                "runtime": {
                    "break_even_us": d.break_even_us, "short_share": d.short_share,
                    "suspended_periods": len(d.periods), "short_periods": d.short_periods,
                    "suspended_us": d.suspended_us, "active_us": d.active_us,
                    "autosuspend_median_us": d.autosuspend.median_us if d.autosuspend else None,
                    "errors": [{"call": e.call, "name": e.name, "count": e.count}
                               for e in d.errors],
                    "nested_median_us": d.resume_nested_us if member == "runtime_resume"
                    else 0.0,
                    "states": "rpm_status" if d.exact else "inferred from calls",
                },
            })
    return out


__all__ = ["RUNTIME_JSON_VERSION", "device_json", "dist_json", "runtime_json", "runtime_rows",
           "runtime_text"]

"""Facts from outside the C file that change what a check run's findings are worth:

- `mark_dead`: the file's driver is one no real build enables (kbuild/dead.py);
- `join_traces`: the delay site was measured in a suspend/resume capture (`--traces`);
- `join_fleet`: the delay site or callback was measured across a fleet (`--fleet STORE`).

Both decide through `rules/severity_policy.py`; `commands/check_cmd.py` calls them after the
run (and after the result cache: neither fact is part of a file's own analysis).
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpmlens.core.findings import Finding, FleetCost, Measured
from dpmlens.rules import severity_policy

# the rules whose findings sit at a delay call (what a capture's delay probes measure)
DELAY_RULES = frozenset({"msleep-under-20ms", "busy-wait-in-pm-callback", "delay-beyond-spec"})
# sleepgraph's udelay probe is __const_udelay, which udelay() and mdelay() both reach
_PROBE = {"udelay": {"udelay", "mdelay", "ndelay"}, "msleep": {"msleep", "msleep_interruptible"},
          "usleep_range": {"usleep_range", "usleep_range_state", "fsleep"}}  # fmt: skip
_TO_MS = {"msleep": 1.0, "msleep_interruptible": 1.0, "mdelay": 1.0, "udelay": 1e-3,
          "ndelay": 1e-6, "usleep_range": 1e-3, "fsleep": 1e-3}  # fmt: skip


def mark_dead(findings: list[Finding], cache_dir: Path | None) -> tuple[list[Finding], int]:
    """The findings with those in dead drivers lowered and tagged; how many were."""
    from dpmlens.kbuild import dead

    trees: dict[Path, dead.DeadDrivers] = {}
    no_tree: set[str] = set()  # directories in no kernel tree
    out, marked = [], 0
    tops: list[tuple[Finding, Path, Path | None]] = []
    for f in findings:
        full = Path(os.path.abspath(f.path))
        top = next((t for t in trees if t in full.parents), None)
        if top is None and str(full.parent) not in no_tree:
            top = dead.find_top(str(full.parent))
            if top is None:
                no_tree.add(str(full.parent))
            else:
                trees[top] = dead.load(top, cache_dir, severity_policy.policy().legacy_symbols)
        tops.append((f, full, top))
    for top, facts in trees.items():  # one search of arch/ for every name-only driver
        facts.prepare(sorted({str(full) for _f, full, t in tops if t == top}))
    for f, full, top in tops:
        reason = trees[top].reason(str(full)) if top is not None else None
        if reason is None:
            out.append(f)
        else:
            legacy = reason.startswith(dead.LEGACY_PREFIX)
            out.append(severity_policy.dead_driver(f, reason, legacy))
            marked += 1
    return out, marked


@dataclass
class TraceJoin:
    findings: list[Finding]
    sites: int = 0  # measured delay sites in the captures
    joined: int = 0  # findings given a measurement
    errors: list[str] = field(default_factory=list)


def load_sites(captures: list[str]) -> tuple[list[dict[str, Any]], int, list[str]]:
    """The captures' measured delay sites (the `delays` of `dpmlens trace report --format
    json`), their cycle count, and the errors of files that could not be read."""
    from dpmlens.traces import aggregate, load_traces, phase_stats, report_json

    traces = load_traces(list(captures))
    doc = report_json(traces, aggregate(traces), phase_stats(traces), None)
    return list(doc.get("delays") or ()), int(doc.get("cycles") or 0), list(traces.errors)


def join_traces(findings: list[Finding], captures: list[str]) -> TraceJoin:
    """Each delay finding whose call a capture measured (same calling function, the probe's
    delay family, the same requested value when both are known) gets the measurement."""
    sites, cycles, errors = load_sites(captures)
    result = TraceJoin(findings=[], sites=len(sites), errors=errors)
    by_caller: dict[str, list[dict[str, Any]]] = {}
    for s in sites:
        by_caller.setdefault(str(s.get("caller")), []).append(s)
    name = ", ".join(os.path.basename(c.rstrip("/")) for c in captures)
    texts: dict[str, list[str]] = {}
    for f in findings:
        site = None
        if f.rule in DELAY_RULES and f.function in by_caller:
            call = _call_at(f, texts)
            if call is not None:
                site = _site_for(call, by_caller[f.function or ""])
        if site is None:
            result.findings.append(f)
            continue
        m = Measured(
            function=str(site["function"]),
            caller=str(site["caller"]),
            requested_ms=site.get("requested_ms"),
            calls=int(site.get("calls", 0)),
            cycles=max(cycles, 1),  # the capture's: per-cycle costs divide by it
            measured_us=float(site.get("measured_us", 0.0)),
            mean_us=float(site.get("mean_us", 0.0)),
            on_critical_path_calls=int(site.get("on_critical_path_calls", 0)),
            on_critical_path_us=float(site.get("on_critical_path_us", 0.0)),
            phases=tuple(dict.fromkeys(str(c["phase"]) for c in site.get("callbacks") or ())),
            capture=name,
        )
        result.findings.append(severity_policy.measured(f, m))
        result.joined += 1
    return result


_CALL = re.compile(r"([A-Za-z_]\w*)\s*\(\s*([^,)]*)")


def _call_at(f: Finding, texts: dict[str, list[str]]) -> tuple[str, float | None] | None:
    """(callee, requested ms when the argument is a number) of the call at the finding."""
    lines = texts.get(f.path)
    if lines is None:
        try:
            lines = Path(f.path).read_text("utf-8", "replace").split("\n")
        except OSError:
            lines = []
        texts[f.path] = lines
    if not 0 < f.span.line <= len(lines):
        return None
    m = _CALL.match(lines[f.span.line - 1][f.span.column - 1 :])
    if m is None:
        return None
    callee, arg = m.group(1), m.group(2).strip()
    value = None
    if re.fullmatch(r"\d+", arg) and callee in _TO_MS:
        value = int(arg) * _TO_MS[callee]
    return callee, value


def _site_for(call: tuple[str, float | None], sites: list[dict[str, Any]]) -> dict[str, Any] | None:
    callee, value = call
    for s in sites:
        if callee not in _PROBE.get(str(s.get("function")), {str(s.get("function"))}):
            continue
        req = s.get("requested_ms")
        if (
            value is not None
            and isinstance(req, (int, float))
            and not math.isclose(float(req), value, rel_tol=0.01, abs_tol=1e-6)
            and str(s.get("function")) != "udelay"
        ):
            continue  # (the udelay probe sees mdelay(n) as n calls of udelay(1000))
        return s
    return None


@dataclass
class FleetJoin:
    findings: list[Finding]
    sites: int = 0  # delay sites in the store
    callbacks: int = 0  # callbacks of the store mapped onto the checked files' functions
    joined: int = 0  # findings given the fleet's figures


def join_fleet(findings: list[Finding], store: str) -> FleetJoin:
    """Each delay finding whose call the fleet measured (matched as `join_traces` matches a
    capture's sites), and each other latency finding inside a callback the fleet measured
    (mapped as the traces map theirs: driver -> .pm table -> member -> function), gets the
    fleet's figures through `severity_policy.fleet`. Raises what the store raises (StoreError,
    duckdb.Error) when it cannot be read."""
    from dpmlens.fleet.code_figures import load

    figures = load(store)
    by_caller: dict[str, list[dict[str, Any]]] = {}
    for d in figures.delays:
        req = None if math.isnan(d.requested_ms) else d.requested_ms
        by_caller.setdefault(d.caller, []).append(
            {"function": d.func, "requested_ms": req, "figures": d})
    latency = severity_policy.policy().latency_rules
    callbacks = _fleet_callbacks(figures, [f for f in findings if f.rule in latency])
    result = FleetJoin(findings=[], sites=len(figures.delays),
                       callbacks=sum(len(v) for v in callbacks.values()))
    texts: dict[str, list[str]] = {}
    for f in findings:
        joined = None
        if f.rule in DELAY_RULES and f.function in by_caller:
            call = _call_at(f, texts)
            site = _site_for(call, by_caller[f.function or ""]) if call is not None else None
            if site is not None:
                d = site["figures"]
                cost = _cost("delay site", f"{d.func}() in {d.caller}()", d.phase, d.figure,
                             store)
                joined = severity_policy.fleet(f, cost, d.figure.summary(" per cycle"))
        if joined is None and f.rule in latency and f.function:
            cbs = callbacks.get((os.path.realpath(f.path), f.function), [])
            here = [c for c in cbs if c[0].phase == f.phase] or cbs
            if here:  # the phase of the finding, else the callback's costliest on the path
                cb, via = max(here, key=lambda c: c[0].figure.path_p50_us)
                what = f"{f.function}() ({cb.phase}{' via ' + via if via else ''})"
                cost = _cost("callback", what, cb.phase, cb.figure, store)
                joined = severity_policy.fleet(f, cost, cb.figure.summary(), lower=False)
        if joined is None:
            result.findings.append(f)
        else:
            result.findings.append(joined)
            result.joined += 1
    return result


def _cost(kind: str, what: str, phase: str, fig: Any, store: str) -> FleetCost:
    return FleetCost(
        kind=kind, what=what, phase=phase, kernel=fig.kernel, cycles=fig.cycles,
        machines=fig.machines, runs=fig.runs, p50_us=fig.p50_us, p95_us=fig.p95_us,
        critical_path_p50_us=fig.path_p50_us, cycles_on_critical_path=fig.cycles_on_path,
        previous_kernel=fig.prev_kernel, previous_p50_us=fig.prev_p50_us, store=store)


def _fleet_callbacks(figures: Any, findings: list[Finding]
                     ) -> dict[tuple[str, str], list[tuple[Any, str | None]]]:
    """(file, function) -> the fleet's callbacks (and the layer they ran under) that map to
    it, over the directories of `findings` (only files that can register a fleet driver are
    parsed)."""
    from dpmlens.traces.analysis.aggregate import CallbackStats
    from dpmlens.traces.source.mapping import build_index, map_callback

    out: dict[tuple[str, str], list[tuple[Any, str | None]]] = {}
    if not findings or not figures.callbacks:
        return out
    names = {cb.driver for cb in figures.callbacks}
    for directory in sorted({os.path.dirname(os.path.abspath(f.path)) for f in findings}):
        index = build_index(directory, names)
        for cb in figures.callbacks:
            if cb.driver not in index.drivers:
                continue
            fig = cb.figure
            stats = CallbackStats(cb.driver, "", "", cb.phase, cb.layer, fig.runs, 0.0,
                                  fig.p50_us, fig.p50_us, fig.p95_us, fig.p95_us, 0.0,
                                  fig.cycles, cb.failures)
            ref = map_callback(stats, index).source
            if ref is not None:
                out.setdefault((os.path.realpath(ref.path), ref.function), []).append(
                    (cb, ref.via))
    return out

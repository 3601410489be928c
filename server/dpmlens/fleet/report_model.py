"""Report stage, model: everything `fleet report` says, as one JSON-able document.

The document is the versioned contract (`"version": 1`, docs/fleet.md); the table and HTML
printers render it and compute nothing of their own.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict
from typing import Any

import duckdb

from dpmlens.fleet import hist_stats, regress, stats

VERSION = 1


PERCENTILE = {
    "exact": "linear interpolation between closest ranks, position (n-1)q (Hyndman-Fan type "
             "7; DuckDB quantile_cont, Spark percentile)",
    "histogram": "linear interpolation between closest ranks, position (n-1)q (Hyndman-Fan "
                 "type 7) over the callback_hist buckets: within 1/256 (0.39%) of the upper "
                 "of the two closest ranks, exact below 256 us (--exact: from the raw rows)",
}


def build(con: duckdb.DuckDBPyConnection, scope: stats.Scope, settings: dict[str, Any],
          store: str, baseline: str | None = None, histograms: bool = False,
          derived: bool | None = None) -> dict[str, Any]:
    """`histograms`: percentiles and tests from `callback_hist` (needs --by kernel and a
    format-2 store); else exact, from the raw rows. `derived`: the store has the derived
    tables (format 2; default: as `histograms`)."""
    if derived is None:
        derived = histograms
    t0 = time.perf_counter()
    groups = stats.groups(con, scope)
    if baseline is not None and baseline not in groups:
        from dpmlens.core.errors import UsageError
        raise UsageError(f"--baseline {baseline!r}: no such {scope.by} in the store "
                         f"(have: {', '.join(groups) or 'none'})")
    binned = None
    if histograms:
        rows, binned = hist_stats.callback_stats(con, scope)
    else:
        rows = stats.callback_stats(con, scope)
    cfg = regress.Settings(alpha=settings["alpha"], min_effect_ms=settings["min_effect_ms"],
                           min_runs=int(settings.get("min_runs", regress.MIN_RUNS)))
    reg = regress.find(con, scope, groups, baseline, cfg, per_device=rows, hist=binned)
    doc: dict[str, Any] = {
        "version": VERSION,
        "store": store,
        "by": scope.by,
        "since": scope.since,
        "driver": scope.driver,
        "groups": groups,
        "method": "histogram" if histograms else "exact",
        "percentile": PERCENTILE["histogram" if histograms else "exact"],
        "settings": settings,
        "health": sorted(stats.health(con, scope, settings),
                         key=lambda h: groups.index(h["grp"]) if h["grp"] in groups else 0),
        "regressions": {
            "pairs": [list(p) for p in reg.pairs],
            "tested": reg.tested,
            "tested_failures": reg.tested_failures,
            "alpha": cfg.alpha,
            "min_effect_ms": cfg.min_effect_ms,
            "sample_cycles": None if histograms else regress.SAMPLE,
            "min_runs": cfg.min_runs,
            "methods": dict(sorted(reg.methods.items())),
            "changes": [_change(c) for c in reg.changes],
            # every callback of a pair that was not tested, and why (too few runs, one side)
            "not_tested": [asdict(s) for s in reg.skipped],
            "not_compared": [{"group": g, "reason": _uncompared(g, scope.by, baseline)}
                             for g in reg.uncompared],
        },
        "drivers": [r for r in rows if r["device"] == "*"],
        "devices": [r for r in rows if r["device"] != "*"],
        "worst_devices": stats.worst_devices(con, scope, derived=derived),
        "issues": stats.issues(con, scope),
    }
    for r in doc["drivers"]:
        del r["device"]
    doc["elapsed_seconds"] = round(time.perf_counter() - t0, 3)
    clean: dict[str, Any] = _clean(doc)
    return clean


def _uncompared(group: str, by: str, baseline: str | None) -> str:
    if group.startswith("unknown ") and baseline is None:
        return (f"its captures do not say their {by}: not placed between the others (give "
                f"--baseline, or ingest with --meta {by}=...)")
    return "the only group: nothing to compare with"


def _change(c: regress.Change) -> dict[str, Any]:
    d = asdict(c)
    d["ci_ms"] = list(c.ci_ms) if c.ci_ms else None
    return d


def _clean(v: Any) -> Any:
    """JSON-safe: no NaN/inf (null), dates as ISO strings, tuples as lists."""
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return None
        # six decimals, but six significant digits below 0.001: a p of 1.1e-5 stays one
        return round(v, 6) if abs(v) >= 1e-3 or v == 0 else float(f"{v:.6g}")
    if isinstance(v, (str, int, bool)) or v is None:
        return v
    return str(v)

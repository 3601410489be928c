"""Query stage for the code: the fleet's figures per callback and per delay site.

What the editor shows over a callback or a delay call, and what `dpmlens check --fleet` joins
to findings: for the newest kernel (version order) that ran it, the p50/p95 (of a callback's
runs; of a delay site's time per cycle), the cycles and machines (distinct hosts) it ran on,
the p50 per cycle of its time on its phase's critical path, and the change of its p50 from the
kernel before. Percentiles as in stats.py (type 7, rounded to 0.001 us).

    callback  (driver, phase, layer): mapped to source as traces map a capture's callbacks
    delay     (caller, func, requested_us): matched to its call by the delay rules' analysis
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from dpmlens.fleet.stats import version_key
from dpmlens.traces.model.durations import format_us


@dataclass(frozen=True)
class Figure:
    kernel: str
    runs: int  # callback runs, or delay calls
    cycles: int
    machines: int  # distinct hosts
    p50_us: float
    p95_us: float
    path_p50_us: float  # per cycle: its time on the phase's critical path (0 when off it)
    cycles_on_path: int
    prev_kernel: str | None = None  # the kernel before `kernel` that ran it
    prev_p50_us: float | None = None

    @property
    def change_us(self) -> float | None:
        return None if self.prev_p50_us is None else self.p50_us - self.prev_p50_us

    def summary(self, per: str = "") -> str:
        """`p50 38.0 ms · p95 120 ms · 3,214 cycles on 41 machines (6.12) · +22.0 ms vs 6.11`
        (`per`: " per cycle" after the p95, for a delay site's time per cycle)."""
        text = (f"p50 {format_us(self.p50_us)} · p95 {format_us(self.p95_us)}{per} · "
                f"{self.cycles:,} cycle{'s' if self.cycles != 1 else ''} on {self.machines:,} "
                f"machine{'s' if self.machines != 1 else ''} ({self.kernel})")
        change = self.change_us
        if change is not None:
            sign = "+" if change >= 0 else "-"
            text += f" · {sign}{format_us(abs(change))} vs {self.prev_kernel}"
        return text

    def path_text(self) -> str:
        """`on the critical path in 12 of 40 cycles (p50 2.10 ms per cycle)`, or ''."""
        if not self.cycles_on_path:
            return ""
        return (f"on the critical path in {self.cycles_on_path:,} of {self.cycles:,} cycles "
                f"(p50 {format_us(self.path_p50_us)} per cycle)")


@dataclass(frozen=True)
class CallbackFigures:
    driver: str
    phase: str
    layer: str  # "" | driver | bus | type | class | power domain | legacy ...
    devices: int
    failures: int
    figure: Figure


@dataclass(frozen=True)
class DelayFigures:
    func: str  # msleep, usleep_range, udelay (the probe)
    caller: str
    requested_ms: float  # nan when the probe gives no value (udelay)
    phase: str  # the phase it costs most in
    figure: Figure


@dataclass
class Figures:
    store: str
    callbacks: list[CallbackFigures] = field(default_factory=list)
    delays: list[DelayFigures] = field(default_factory=list)
    cycles: int = 0
    kernels: list[str] = field(default_factory=list)


def load(store: str, drivers: Iterable[str] | None = None) -> Figures:
    """The figures of a store (StoreError when it cannot be used; duckdb.Error when a file of
    it cannot be read). `drivers`: only those callbacks (None: all)."""
    from dpmlens.fleet.store import Store

    con = Store(store).connect(threads=1)  # a background reader: leave the cores to the user
    try:
        cycles, kernels = _overview(con)
        return Figures(store, callback_figures(con, drivers), delay_figures(con), cycles,
                       kernels)
    finally:
        con.close()


def _overview(con: Any) -> tuple[int, list[str]]:
    row = con.execute("SELECT count(*) FROM captures").fetchone()
    ks = [r[0] for r in con.execute(
        "SELECT DISTINCT coalesce(kernel, '') FROM captures").fetchall()]
    return int(row[0]) if row else 0, sorted(ks, key=version_key)


def callback_figures(con: Any, drivers: Iterable[str] | None = None) -> list[CallbackFigures]:
    where, params = "driver IS NOT NULL AND driver <> ''", []
    if drivers is not None:
        names = sorted(set(drivers))
        if not names:
            return []
        where += " AND list_contains(?, driver)"
        params.append(names)
    rows = _dicts(con.execute(f"""
      WITH runs AS (
        SELECT coalesce(kernel, '') AS kernel, driver, phase, coalesce(layer, '') AS layer,
               capture_id, cycle, host, device, duration_us, on_critical_path, error
        FROM callbacks WHERE {where}),
      per_cycle AS (
        SELECT kernel, driver, phase, layer, capture_id, cycle,
               coalesce(sum(duration_us) FILTER (WHERE on_critical_path), 0) AS path_us
        FROM runs GROUP BY ALL),
      path AS (
        SELECT kernel, driver, phase, layer, count(*) AS cycles,
               round(quantile_cont(path_us, 0.5), 3) AS path_p50_us,
               count(*) FILTER (WHERE path_us > 0) AS cycles_on_path
        FROM per_cycle GROUP BY ALL),
      s AS (
        SELECT kernel, driver, phase, layer, count(*) AS runs,
               count(DISTINCT host) AS machines, count(DISTINCT device) AS devices,
               list_transform(quantile_cont(duration_us, [0.5, 0.95]),
                              lambda x: round(x, 3)) AS q,
               count(*) FILTER (WHERE error <> 0) AS failures
        FROM runs GROUP BY ALL)
      SELECT * FROM s JOIN path USING (kernel, driver, phase, layer)""", params))
    out = []
    for key, (r, prev) in _newest(rows, ("driver", "phase", "layer")).items():
        out.append(CallbackFigures(key[0], key[1], key[2], int(r["devices"]),
                                   int(r["failures"]), _figure(r, prev)))
    return out


def delay_figures(con: Any) -> list[DelayFigures]:
    rows = _dicts(con.execute("""
      WITH per_cycle AS (
        SELECT coalesce(kernel, '') AS kernel, caller, func, requested_us, capture_id, cycle,
               host, sum(calls) AS calls, sum(total_us) AS total_us,
               coalesce(sum(total_us) FILTER (WHERE on_critical_path), 0) AS path_us,
               arg_max(phase, total_us) AS main_phase
        FROM delays WHERE caller IS NOT NULL AND caller <> '' GROUP BY ALL)
      SELECT kernel, caller, func, requested_us, count(*) AS cycles,
             count(DISTINCT host) AS machines, sum(calls) AS runs,
             list_transform(quantile_cont(total_us, [0.5, 0.95]), lambda x: round(x, 3)) AS q,
             round(quantile_cont(path_us, 0.5), 3) AS path_p50_us,
             count(*) FILTER (WHERE path_us > 0) AS cycles_on_path,
             mode(main_phase) AS phase
      FROM per_cycle GROUP BY ALL"""))
    out = []
    for key, (r, prev) in _newest(rows, ("caller", "func", "requested_us")).items():
        req = key[2]
        out.append(DelayFigures(str(key[1]), str(key[0]),
                                math.nan if req is None else float(req) / 1000,
                                str(r["phase"] or ""), _figure(r, prev)))
    return out


def _newest(rows: list[dict[str, Any]], key: tuple[str, ...]
            ) -> dict[tuple[Any, ...], tuple[dict[str, Any], dict[str, Any] | None]]:
    """Per key: the row of the newest kernel, and the one of the kernel before it (if any)."""
    by: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in rows:
        by.setdefault(tuple(r[k] for k in key), []).append(r)
    out = {}
    for k, rs in by.items():
        rs.sort(key=lambda r: version_key(r["kernel"]))
        out[k] = (rs[-1], rs[-2] if len(rs) > 1 else None)
    return out


def _figure(r: dict[str, Any], prev: dict[str, Any] | None) -> Figure:
    return Figure(
        kernel=r["kernel"], runs=int(r["runs"]), cycles=int(r["cycles"]),
        machines=int(r["machines"]), p50_us=float(r["q"][0]), p95_us=float(r["q"][1]),
        path_p50_us=float(r["path_p50_us"]), cycles_on_path=int(r["cycles_on_path"]),
        prev_kernel=None if prev is None else prev["kernel"],
        prev_p50_us=None if prev is None else float(prev["q"][0]),
    )


def _dicts(rel: Any) -> list[dict[str, Any]]:
    cols = [d[0] for d in rel.description or []]
    return [dict(zip(cols, r, strict=True)) for r in rel.fetchall()]

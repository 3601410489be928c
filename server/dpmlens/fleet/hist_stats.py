"""Query stage: per-group callback figures from the `callback_hist` buckets (--by kernel).

The same rows as `stats.callback_stats` (per (kernel, driver, phase) and per (kernel, driver,
device, phase)): counts, failures, critical-path figures and means are exact (sums kept per
bucket); p50/p95/p99 are from the buckets, within the bound of dpmlens.fleet.binned. The
buckets of every ingest and day are summed in DuckDB first, so the work is
O(histogram rows), not O(runs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np

from dpmlens.fleet import binned
from dpmlens.fleet.stats import Scope, group_expr

QS = (0.5, 0.95, 0.99)
Key = tuple[str, str, str, str]  # group, driver, device, phase


@dataclass
class Binned:
    """Per (group, driver, device, phase): the bucket representatives and counts."""
    reps: np.ndarray = field(default_factory=lambda: np.empty(0))
    counts: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    where: dict[Key, tuple[int, int]] = field(default_factory=dict)

    def get(self, key: Key) -> tuple[np.ndarray, np.ndarray] | None:
        span = self.where.get(key)
        if span is None:
            return None
        return self.reps[span[0]:span[1]], self.counts[span[0]:span[1]]


def callback_stats(con: duckdb.DuckDBPyConnection,
                   scope: Scope) -> tuple[list[dict[str, Any]], Binned]:
    """Rows per driver (device "*") and per device, and the per-device buckets."""
    if scope.by != "kernel":
        raise ValueError("histograms are kept per kernel; use the raw rows for --by "
                         f"{scope.by}")
    where, params = scope.where()
    con.execute(f"""
      CREATE OR REPLACE TEMP TABLE h AS
      SELECT {group_expr('kernel')} AS grp, driver, device, phase, bucket_us,
             any_value(width_us) AS width_us, sum(n)::BIGINT AS n,
             sum(failures)::BIGINT AS failures, sum(on_path)::BIGINT AS on_path,
             sum(path_us)::BIGINT AS path_us, sum(sum_us)::BIGINT AS sum_us
      FROM callback_hist WHERE {where} GROUP BY ALL""", params)
    cwhere, cparams = Scope(scope.by, scope.since).where()
    cycles = dict(con.execute(
        f"SELECT {group_expr('kernel')}, count(*) FROM captures WHERE {cwhere} GROUP BY ALL",
        cparams).fetchall())
    per_driver = _rows(con, """
      SELECT grp, driver, '*' AS device, phase, bucket_us, any_value(width_us) AS width_us,
             sum(n)::BIGINT AS n, sum(failures)::BIGINT AS failures,
             sum(on_path)::BIGINT AS on_path, sum(path_us)::BIGINT AS path_us,
             sum(sum_us)::BIGINT AS sum_us
      FROM h GROUP BY ALL ORDER BY grp, driver, phase, bucket_us""", cycles)[0]
    per_device, data = _rows(con, "SELECT * FROM h ORDER BY grp, driver, device, phase, "
                             "bucket_us", cycles)
    con.execute("DROP TABLE h")
    out = per_driver + per_device
    out.sort(key=lambda r: (r["driver"], r["phase"], r["device"], r["grp"]))
    return out, data


def _rows(con: duckdb.DuckDBPyConnection, sql: str,
          cycles: dict[str, int]) -> tuple[list[dict[str, Any]], Binned]:
    a = con.execute(sql).fetchnumpy()
    n = np.asarray(a["n"], dtype=np.int64)
    if len(n) == 0:
        return [], Binned()
    grp, drv, dev, ph = (np.asarray(a[c], dtype=object) for c in
                         ("grp", "driver", "device", "phase"))
    new = np.ones(len(n), dtype=bool)
    new[1:] = (grp[1:] != grp[:-1]) | (drv[1:] != drv[:-1]) | (dev[1:] != dev[:-1]) \
        | (ph[1:] != ph[:-1])
    starts = np.flatnonzero(new)
    reps = binned.representative(np.asarray(a["bucket_us"]), np.asarray(a["width_us"]))
    q = np.round(binned.quantiles(reps, n, starts, QS), 3)
    sums = {c: np.add.reduceat(np.asarray(a[c], dtype=np.int64), starts)
            for c in ("n", "failures", "on_path", "path_us", "sum_us")}
    ends = np.append(starts[1:], len(n))
    rows: list[dict[str, Any]] = []
    data = Binned(reps, n)
    for i, s in enumerate(starts):
        runs = int(sums["n"][i])
        key = (str(grp[s]), str(drv[s]), str(dev[s]), str(ph[s]))
        data.where[key] = (int(s), int(ends[i]))
        rows.append({
            "grp": key[0], "driver": key[1], "device": key[2], "phase": key[3], "n": runs,
            "cycles": cycles.get(key[0]), "p50_us": float(q[i, 0]), "p95_us": float(q[i, 1]),
            "p99_us": float(q[i, 2]), "mean_us": int(sums["sum_us"][i]) / runs,
            "failures": int(sums["failures"][i]),
            "failure_rate": int(sums["failures"][i]) / runs,
            "critical_share": int(sums["on_path"][i]) / runs,
            "critical_us_per_run": int(sums["path_us"][i]) / runs})
    return rows, data

"""Query stage: per-group figures over the store, all in SQL (DuckDB does the work).

Percentiles are linear interpolation between closest ranks (Hyndman-Fan type 7: position
(n-1)q of the sorted values): DuckDB's `quantile_cont`, Spark's `percentile`, numpy's default,
rounded to 0.001 us. Durations are whole microseconds and q has two decimals, so the exact
value has at most two decimals: the rounding removes only the last-bit differences of the
engines' interpolation formulas (lo + (hi-lo)f vs (1-f)lo + f hi), never a real digit.
Durations are microseconds; a group is a kernel, host or machine (`--by`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import duckdb

BY = {"kernel": "kernel", "host": "host", "machine": "machine"}


def group_expr(col: str) -> str:
    """The group of a row in SQL: captures that do not say their kernel (host, machine) are
    one named group, "unknown kernel", never an empty name."""
    return f"coalesce(nullif({col}, ''), 'unknown {col}')"


@dataclass(frozen=True)
class Scope:
    by: str = "kernel"
    since: str | None = None  # YYYY-MM-DD
    driver: str | None = None

    def where(self, alias: str = "") -> tuple[str, list[Any]]:
        a = f"{alias}." if alias else ""
        conds, params = ["TRUE"], []
        if self.since:
            conds.append(f"{a}capture_date >= CAST(? AS DATE)")
            params.append(self.since)
        if self.driver:
            conds.append(f"{a}driver = ?")
            params.append(self.driver)
        return " AND ".join(conds), params


def version_key(v: str) -> tuple[Any, ...]:
    """6.9 < 6.10 < 6.10.1 < 6.11-rc1 ordering for kernel releases (numbers as numbers)."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"[.\-+_~]", v))


def groups(con: duckdb.DuckDBPyConnection, scope: Scope) -> list[str]:
    col = BY[scope.by]
    where, params = scope.where()
    where = where.replace("driver = ?", "TRUE") if scope.driver else where
    if scope.driver:
        params = params[:-1]
    rows = con.execute(f"SELECT DISTINCT {group_expr(col)} FROM captures WHERE {where}",
                       params).fetchall()
    vals = [r[0] for r in rows]
    return sorted(vals, key=version_key) if scope.by == "kernel" else sorted(vals)


def callback_stats(con: duckdb.DuckDBPyConnection, scope: Scope) -> list[dict[str, Any]]:
    """Per (group, driver, phase) (device "*") and per (group, driver, device, phase).
    `cycles`: the group's cycles (from `captures`), so `n / cycles` is runs per cycle of the
    group. Two aggregations, not GROUPING SETS: DuckDB keeps every value of every set at
    once for the quantiles of GROUPING SETS (ten times the memory, several times the time)."""
    return _stats(con, scope, "'*'") + _stats(con, scope, "device")


def _stats(con: duckdb.DuckDBPyConnection, scope: Scope, device: str) -> list[dict[str, Any]]:
    col = BY[scope.by]
    where, params = scope.where()
    cwhere, cparams = Scope(scope.by, scope.since).where()
    sql = f"""
      WITH g AS (SELECT {group_expr(col)} AS grp, count(*) AS cycles FROM captures
                 WHERE {cwhere} GROUP BY ALL)
      SELECT s.grp, driver, device, phase, n, g.cycles, q[1] AS p50_us, q[2] AS p95_us,
             q[3] AS p99_us, mean_us, failures, failures / n AS failure_rate,
             on_path / n AS critical_share, path_us / n AS critical_us_per_run
      FROM (
        SELECT {group_expr(col)} AS grp, driver, {device} AS device, phase, count(*) AS n,
               list_transform(quantile_cont(duration_us, [0.5, 0.95, 0.99]),
                              lambda x: round(x, 3)) AS q,
               avg(duration_us) AS mean_us,
               count(*) FILTER (WHERE error <> 0) AS failures,
               count(*) FILTER (WHERE on_critical_path) AS on_path,
               coalesce(sum(duration_us) FILTER (WHERE on_critical_path), 0) AS path_us
        FROM callbacks WHERE {where} GROUP BY ALL
      ) s LEFT JOIN g USING (grp)
      ORDER BY driver, phase, device, s.grp"""
    return _dicts(con.execute(sql, cparams + params))


def worst_devices(con: duckdb.DuckDBPyConnection, scope: Scope, top: int = 5,
                  derived: bool = False) -> list[dict[str, Any]]:
    """pm-graph's "worst device", per phase and group: how many cycles each device was the
    slowest of its phase (per phase, not summed over phases). `derived`: from `phase_worst`
    (one row per cycle and phase, format 2), else from every run; with --driver always from
    the runs (the slowest of that driver's devices). A tie goes to the greatest (driver,
    device), so both ways give the same answer."""
    col = BY[scope.by]
    where, params = scope.where()
    if derived and not scope.driver:
        w = f"""SELECT {group_expr(col)} AS grp, phase, driver AS drv, device AS dev
                FROM phase_worst WHERE {where}"""
    else:
        w = f"""SELECT grp, phase, x.d AS drv, x.v AS dev FROM (
                  SELECT {group_expr(col)} AS grp, phase,
                         max({{'u': duration_us, 'd': driver, 'v': device}}) AS x
                  FROM callbacks WHERE {where} AND duration_us IS NOT NULL
                  GROUP BY capture_id, cycle, {col}, phase)"""
    sql = f"""
      WITH w AS ({w}),
      c AS (SELECT grp, phase, drv || ' ' || dev AS dev, count(*) AS cycles,
                   row_number() OVER (PARTITION BY grp, phase ORDER BY count(*) DESC,
                                      drv || ' ' || dev) AS r
            FROM w GROUP BY grp, phase, drv, dev)
      SELECT coalesce(grp, '') AS grp, phase, dev AS device, cycles FROM c WHERE r <= {int(top)}
      ORDER BY phase, grp, cycles DESC, device"""
    return _dicts(con.execute(sql, params))


def issues(con: duckdb.DuckDBPyConnection, scope: Scope, top: int = 20) -> list[dict[str, Any]]:
    col = BY[scope.by]
    where, params = scope.where()
    where = where.replace("driver = ?", "TRUE")
    if scope.driver:
        params = params[:-1]
    sql = f"""
      SELECT pattern, any_value(example) AS example, sum(count) AS lines,
             count(DISTINCT capture_id) AS captures, count(DISTINCT host) AS hosts,
             list(DISTINCT {group_expr(col)} ORDER BY {group_expr(col)}) AS groups
      FROM issues WHERE {where} GROUP BY pattern ORDER BY captures DESC, lines DESC
      LIMIT {int(top)}"""
    return _dicts(con.execute(sql, params))


def health(con: duckdb.DuckDBPyConnection, scope: Scope,
           thresholds: dict[str, float]) -> list[dict[str, Any]]:
    """Per group: outcomes and walls against the [fleet] thresholds of .dpmlens.toml."""
    col = BY[scope.by]
    where, params = scope.where()
    where = where.replace("driver = ?", "TRUE")
    if scope.driver:
        params = params[:-1]
    sus = thresholds["suspend_max_ms"] * 1000
    res = thresholds["resume_max_ms"] * 1000
    sql = f"""
      SELECT {group_expr(col)} AS grp, count(*) AS cycles,
             count(DISTINCT host) AS hosts, count(DISTINCT machine) AS machines,
             avg((outcome = 'pass')::INT) AS pass_rate,
             avg((outcome = 'fail')::INT) AS fail_rate,
             avg((outcome = 'partial')::INT) AS partial_rate,
             quantile_cont(suspend_us, 0.5) AS suspend_p50_us,
             quantile_cont(suspend_us, 0.95) AS suspend_p95_us,
             quantile_cont(resume_us, 0.5) AS resume_p50_us,
             quantile_cont(resume_us, 0.95) AS resume_p95_us,
             avg((suspend_us > {sus})::INT) AS over_suspend,
             avg((resume_us > {res})::INT) AS over_resume
      FROM captures WHERE {where} GROUP BY ALL"""
    out = _dicts(con.execute(sql, params))
    for r in out:
        bad = (r["fail_rate"] > thresholds["fail_rate_max"]
               or r["over_suspend"] > thresholds["over_max"]
               or r["over_resume"] > thresholds["over_max"])
        r["status"] = "bad" if bad else "ok"
    return out


def _dicts(rel: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    cols = [d[0] for d in rel.description or []]
    return [dict(zip(cols, r, strict=True)) for r in rel.fetchall()]

"""Query stage: regressions between two groups (kernels, hosts, machines), per callback.

For every (driver, device, phase) with enough runs on both sides:
  - durations: Mann-Whitney U (two-sided) on a sample of runs (the cycles whose id hashes
    below one rate, ~SAMPLE cycles in the smallest group: the same cycles every time),
    Benjamini-Hochberg over all callbacks of the pair, a bootstrap 95% CI of the change of
    the median; reported when q < alpha, the CI excludes 0 and the change of the median is
    at least `min_effect_ms`;
  - failures: Fisher's exact test on failing/passing runs for callbacks that failed at all
    (others cannot reach significance), with its own Benjamini-Hochberg family.
Medians and counts come from all runs (SQL); only the tests use the sample. From the
histograms (`callback_hist`, --by kernel) the tests use every run, binned
(dpmlens.fleet.binned: U with the runs of a bucket tied; the bootstrap resamples counts).
A change-point search (ruptures, binary segmentation, least squares) along the ordered
groups says from which group on a reported callback changed.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Protocol

import duckdb
import numpy as np
import ruptures
from scipy import stats as st

from dpmlens.fleet import binned
from dpmlens.fleet.hist_stats import Binned
from dpmlens.fleet.stats import BY, Scope, callback_stats

SAMPLE = 1000  # cycles sampled in the smallest group for the tests
MIN_RUNS = 20
Key = tuple[str, str, str, str]  # group, driver, device, phase


@dataclass(frozen=True)
class Settings:
    alpha: float = 0.05  # false-discovery rate (Benjamini-Hochberg)
    min_effect_ms: float = 1.0  # smaller changes of the median are not regressions
    min_fail_rate: float = 0.005  # smaller increases of the failure rate are not reported
    bootstrap: int = 999
    seed: int = 20261126


@dataclass
class Change:
    kind: str  # "slower", "faster", "fails more", "fails less"
    driver: str
    device: str
    phase: str
    before: str
    after: str
    n_before: int
    n_after: int
    median_before_us: float
    median_after_us: float
    change_ms: float  # median after - before
    ci_ms: tuple[float, float] | None  # bootstrap 95% CI of the change of the median
    effect_ms_per_cycle: float  # change x runs per cycle
    fail_rate_before: float
    fail_rate_after: float
    p: float
    q: float  # Benjamini-Hochberg adjusted
    changed_from: str | None = None  # change point along the ordered groups


@dataclass
class Result:
    pairs: list[tuple[str, str]]
    changes: list[Change] = field(default_factory=list)
    tested: int = 0  # callbacks tested for durations (sum over pairs)
    tested_failures: int = 0


def pairs_for(groups: list[str], baseline: str | None) -> list[tuple[str, str]]:
    if baseline is not None:
        return [(baseline, g) for g in groups if g != baseline]
    return list(zip(groups, groups[1:], strict=False))


def find(con: duckdb.DuckDBPyConnection, scope: Scope, groups: list[str],
         baseline: str | None = None, settings: Settings | None = None,
         per_device: list[dict[str, Any]] | None = None,
         hist: Binned | None = None) -> Result:
    """`per_device`: stats.callback_stats rows when the caller has them (saves a pass);
    `hist`: the per-device buckets of hist_stats (then the tests use every run, binned,
    and no sample is read from the raw rows)."""
    cfg = settings or Settings()
    pairs = pairs_for(groups, baseline)
    res = Result(pairs)
    if not pairs:
        return res
    summary = _summary(per_device if per_device is not None
                       else callback_stats(con, scope))
    data: _Runs = _BinnedRuns(hist) if hist is not None else _SampledRuns(
        _samples(con, BY[scope.by], *scope.where(), groups))
    rng = np.random.default_rng(cfg.seed)
    for a, b in pairs:
        units = sorted(summary)
        dur_rows: list[tuple[tuple[str, str, str], float]] = []
        fail_rows: list[tuple[tuple[str, str, str], float]] = []
        for unit in units:
            sa, sb = summary[unit].get(a), summary[unit].get(b)
            if sa is None or sb is None or sa["n"] < MIN_RUNS or sb["n"] < MIN_RUNS:
                continue
            p = data.test((a,) + unit, (b,) + unit)
            if p is not None:
                dur_rows.append((unit, p))
            if sa["failures"] or sb["failures"]:
                table = [[sa["failures"], sa["n"] - sa["failures"]],
                         [sb["failures"], sb["n"] - sb["failures"]]]
                fail_rows.append((unit, float(st.fisher_exact(table).pvalue)))
        res.tested += len(dur_rows)
        res.tested_failures += len(fail_rows)
        for unit, p, q in _bh(dur_rows):
            sa, sb = summary[unit][a], summary[unit][b]
            change = (sb["median"] - sa["median"]) / 1000
            if q >= cfg.alpha or abs(change) < cfg.min_effect_ms:
                continue
            ci = data.ci((a,) + unit, (b,) + unit, cfg, rng)
            if ci[0] <= 0 <= ci[1]:
                continue
            res.changes.append(_change("slower" if change > 0 else "faster", unit, a, b, sa, sb,
                                       change, ci, p, q))
        for unit, p, q in _bh(fail_rows):
            sa, sb = summary[unit][a], summary[unit][b]
            ra, rb = sa["failures"] / sa["n"], sb["failures"] / sb["n"]
            if q >= cfg.alpha or abs(rb - ra) < cfg.min_fail_rate:
                continue
            change = (sb["median"] - sa["median"]) / 1000
            res.changes.append(_change("fails more" if rb > ra else "fails less", unit, a, b,
                                       sa, sb, change, None, p, q))
    if scope.by == "kernel" and baseline is None and len(groups) >= 3:
        _change_points(res, data, groups)
    res.changes.sort(key=lambda c: (-abs(c.effect_ms_per_cycle) if c.kind in ("slower", "faster")
                                    else -abs(c.fail_rate_after - c.fail_rate_before) * 1e6,
                                    c.driver, c.device, c.phase))
    return res


class _Runs(Protocol):
    """The runs of one (group, driver, device, phase), as the tests need them."""

    def test(self, a: Key, b: Key) -> float | None: ...
    def ci(self, a: Key, b: Key, cfg: Settings,
           rng: np.random.Generator) -> tuple[float, float]: ...
    def series(self, key: Key) -> np.ndarray | None: ...


class _SampledRuns:
    """Raw runs of the sampled cycles (the exact path)."""

    def __init__(self, samples: dict[Key, np.ndarray]) -> None:
        self.samples = samples

    def test(self, a: Key, b: Key) -> float | None:
        xa, xb = self.samples.get(a), self.samples.get(b)
        if xa is None or xb is None or not len(xa) >= MIN_RUNS <= len(xb):
            return None
        return float(st.mannwhitneyu(xa, xb, alternative="two-sided").pvalue)

    def ci(self, a: Key, b: Key, cfg: Settings,
           rng: np.random.Generator) -> tuple[float, float]:
        return _ci(self.samples[a], self.samples[b], cfg, rng)

    def series(self, key: Key) -> np.ndarray | None:
        return self.samples.get(key)


class _BinnedRuns:
    """Every run, binned (callback_hist): tests from the counts (dpmlens.fleet.binned)."""

    def __init__(self, hist: Binned) -> None:
        self.hist = hist

    def test(self, a: Key, b: Key) -> float | None:
        ha, hb = self.hist.get(a), self.hist.get(b)
        if ha is None or hb is None:
            return None
        return binned.mannwhitney_p(ha[0], ha[1], hb[0], hb[1])

    def ci(self, a: Key, b: Key, cfg: Settings,
           rng: np.random.Generator) -> tuple[float, float]:
        ha, hb = self.hist.get(a), self.hist.get(b)
        assert ha is not None and hb is not None
        lo, hi = binned.median_change_ci(ha[0], ha[1], hb[0], hb[1], cfg.bootstrap, rng)
        return round(lo / 1000, 3), round(hi / 1000, 3)

    def series(self, key: Key) -> np.ndarray | None:
        h = self.hist.get(key)
        return None if h is None else binned.spread(h[0], h[1], int(SAMPLE * 1.2))


def _change(kind: str, unit: tuple[str, str, str], a: str, b: str, sa: dict[str, Any],
            sb: dict[str, Any], change: float, ci: tuple[float, float] | None, p: float,
            q: float) -> Change:
    per_cycle = sb["n"] / max(sb["cycles"], 1)
    return Change(kind, unit[0], unit[1], unit[2], a, b, sa["n"], sb["n"], sa["median"],
                  sb["median"], round(change, 3), ci, round(change * per_cycle, 3),
                  sa["failures"] / sa["n"], sb["failures"] / sb["n"], p, q)


def _summary(rows: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, dict[str, Any]]]:
    out: dict[tuple[str, str, str], dict[str, dict[str, Any]]] = defaultdict(dict)
    for r in rows:
        if r["device"] == "*":
            continue
        out[(r["driver"], r["device"], r["phase"])][r["grp"]] = {
            "n": r["n"], "cycles": r["cycles"] or r["n"], "median": float(r["p50_us"]),
            "failures": r["failures"]}
    return out


def _samples(con: duckdb.DuckDBPyConnection, col: str, where: str, params: list[Any],
             groups: list[str]) -> dict[Key, np.ndarray]:
    """Runs of the cycles whose hash falls below one rate, chosen so the smallest group
    gives about SAMPLE cycles (larger groups give proportionally more): the same cycles for
    every callback and every run, one filter in the scan, no join."""
    sizes = [r[1] for r in con.execute(
        f"SELECT coalesce({col}, ''), count(*) FROM captures GROUP BY ALL").fetchall()]
    rate = min(1.0, SAMPLE * 1.2 / max(min(sizes, default=1), 1))
    cut = int(rate * 1_000_000)
    rows = con.execute(f"""
        SELECT coalesce({col}, ''), driver, device, phase, list(duration_us)
        FROM callbacks
        WHERE {where} AND hash(capture_id, cycle) % 1000000 < {cut}
        GROUP BY ALL""", params).fetchall()
    # sorted: list() gathers in thread order, and the bootstrap resamples by position
    return {(g, drv, dev, ph): np.sort(np.asarray(v, dtype=np.float64))
            for g, drv, dev, ph, v in rows}


def _bh(rows: list[tuple[Any, float]]) -> list[tuple[Any, float, float]]:
    if not rows:
        return []
    q = st.false_discovery_control([p for _, p in rows], method="bh")
    return [(u, p, float(qq)) for (u, p), qq in zip(rows, q, strict=True)]


def _ci(a: np.ndarray, b: np.ndarray, cfg: Settings,
        rng: np.random.Generator) -> tuple[float, float]:
    def diff(x: np.ndarray, y: np.ndarray, axis: int) -> np.ndarray:
        return np.asarray(np.median(y, axis=axis) - np.median(x, axis=axis))

    r = st.bootstrap((a, b), diff, n_resamples=cfg.bootstrap, method="percentile",
                     vectorized=True, random_state=rng, confidence_level=0.95)
    return (round(float(r.confidence_interval.low) / 1000, 3),
            round(float(r.confidence_interval.high) / 1000, 3))


def _change_points(res: Result, data: _Runs, groups: list[str]) -> None:
    """For each reported callback: the group from which its durations (or failures) changed,
    by one change point in the series of its sampled runs ordered by group."""
    for c in res.changes:
        series, owner = [], []
        for g in groups:
            x = data.series((g, c.driver, c.device, c.phase))
            if x is None:
                continue
            series.append(x)
            owner.extend([g] * len(x))
        if len(series) < 2:
            continue
        signal = np.concatenate(series).reshape(-1, 1)
        if c.kind.startswith("fails"):
            continue  # failures are rare events: the pair that found it says where
        bkp = ruptures.Binseg(model="l2", min_size=MIN_RUNS).fit(signal).predict(n_bkps=1)[0]
        # a change can only happen between groups: the group boundary nearest the break
        bounds = [i for i in range(1, len(owner)) if owner[i] != owner[i - 1]]
        if bounds and 0 < bkp < len(owner):
            c.changed_from = owner[min(bounds, key=lambda i: abs(i - bkp))]
    for c in res.changes:
        if c.changed_from is None:
            c.changed_from = c.after

"""Statistics from binned counts (the `callback_hist` buckets of dpmlens.fleet.hist).

Each bucket stands for one value, its representative (midpoint of its integers), and holds
a count. Every duration d is within d/256 of its bucket's representative (exact below 256 us).

- Percentiles: Hyndman-Fan type 7 (position (n-1)q, as DuckDB quantile_cont, Spark
  percentile) over the representatives with their counts. A type-7 percentile is
  x_k + f (x_k+1 - x_k) of two order statistics; each is moved by at most x/256, so the
  binned percentile is within x_k+1/256 (0.39% of the upper order statistic) of the exact
  one, and equal to it when x_k+1 < 256 us (tests/test_fleet_hist.py checks the bound on
  every percentile of the synthetic test store).
- Mann-Whitney U: over the representatives, values in one bucket tied (midranks), normal
  approximation with tie correction and continuity correction: scipy's
  `mannwhitneyu(method="asymptotic")` over the expanded values, number for number, computed
  from the counts without expanding them.
- Bootstrap CI of the change of the median: each resample draws the counts of a group from
  the multinomial of its buckets (a resample of its runs, binned).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtr


def representative(lo: np.ndarray, width: np.ndarray) -> np.ndarray:
    return lo.astype(np.float64) + (width.astype(np.float64) - 1) / 2


def quantiles(reps: np.ndarray, counts: np.ndarray, starts: np.ndarray,
              qs: tuple[float, ...]) -> np.ndarray:
    """Type-7 percentiles per group. Groups are the row ranges starts[i]:starts[i+1] (the
    last to the end) of `reps`/`counts`, each sorted by value; returns (groups, len(qs))."""
    cum = np.cumsum(counts)
    ends = np.append(starts[1:], len(counts)) - 1
    base = np.where(starts > 0, cum[np.maximum(starts - 1, 0)], 0)
    n = cum[ends] - base
    out = np.empty((len(starts), len(qs)))
    for j, q in enumerate(qs):
        h = (n - 1) * q
        k = np.floor(h).astype(np.int64)
        f = h - k
        lo = np.searchsorted(cum, base + k, side="right")
        hi = np.searchsorted(cum, base + np.minimum(k + 1, n - 1), side="right")
        out[:, j] = reps[lo] + f * (reps[hi] - reps[lo])
    return out


def mannwhitney_p(ra: np.ndarray, ca: np.ndarray, rb: np.ndarray, cb: np.ndarray) -> float:
    """Two-sided p of Mann-Whitney U from two binned samples (values `r`, counts `c`)."""
    vals = np.union1d(ra, rb)
    xa = np.zeros(len(vals))
    xb = np.zeros(len(vals))
    xa[np.searchsorted(vals, ra)] = ca
    xb[np.searchsorted(vals, rb)] = cb
    t = xa + xb
    cum = np.cumsum(t)
    mid = cum - (t - 1) / 2  # midrank of each value (ranks from 1)
    na, nb = float(xa.sum()), float(xb.sum())
    big_n = na + nb
    u1 = float((xa * mid).sum()) - na * (na + 1) / 2
    u = max(u1, na * nb - u1)
    tie = float((t ** 3 - t).sum())
    var = na * nb / 12 * ((big_n + 1) - tie / (big_n * (big_n - 1)))
    if var <= 0:
        return 1.0
    z = (u - na * nb / 2 - 0.5) / math.sqrt(var)
    return float(min(1.0, 2 * ndtr(-z)))


def median_rows(reps: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Type-7 median of each row of a (resamples, buckets) count matrix over `reps`."""
    cum = np.cumsum(counts, axis=1)
    n = cum[:, -1]
    h = (n - 1) * 0.5
    k = np.floor(h).astype(np.int64)
    f = h - k
    lo = (cum <= k[:, None]).sum(axis=1)
    hi = (cum <= np.minimum(k + 1, n - 1)[:, None]).sum(axis=1)
    out: np.ndarray = reps[lo] + f * (reps[hi] - reps[lo])
    return out


def median_change_ci(ra: np.ndarray, ca: np.ndarray, rb: np.ndarray, cb: np.ndarray,
                     resamples: int, rng: np.random.Generator,
                     level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap CI of median(b) - median(a), in the values' unit."""
    ma = median_rows(ra, rng.multinomial(int(ca.sum()), ca / ca.sum(), size=resamples))
    mb = median_rows(rb, rng.multinomial(int(cb.sum()), cb / cb.sum(), size=resamples))
    d = mb - ma
    a = (1 - level) / 2
    return float(np.percentile(d, 100 * a)), float(np.percentile(d, 100 * (1 - a)))


def spread(reps: np.ndarray, counts: np.ndarray, most: int) -> np.ndarray:
    """At most `most` evenly spaced order statistics of a binned sample (sorted): a small
    stand-in of the runs for a change-point search."""
    n = int(counts.sum())
    if n == 0:
        return np.empty(0)
    ranks = np.unique(np.linspace(0, n - 1, min(n, most)).round().astype(np.int64))
    idx = np.searchsorted(np.cumsum(counts), ranks, side="right")
    out: np.ndarray = reps[idx]
    return out

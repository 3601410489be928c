"""Query stage: regressions between two groups (kernels, hosts, machines), per callback.

For every (driver, device, phase) with at least `min_runs` runs on both sides (a callback on one
side only, or with fewer runs, is listed as not tested, with the reason):
  - durations: Mann-Whitney U (two-sided), exact when both sides have at most EXACT_MAX runs
    and no two runs tie (10 vs 10 fully separated: p = 2/C(20,10) = 1.1e-5), else the normal
    approximation with tie and continuity correction; on a sample of runs (the cycles whose
    id hashes below one rate, ~SAMPLE cycles in the smallest group: the same cycles every time),
    Benjamini-Hochberg over all callbacks of the pair, a bootstrap 95% CI of the change of
    the median; reported when q < alpha, the CI excludes 0 and the change of the median is
    at least `min_effect_ms`;
  - failures: Fisher's exact test on failing/passing runs for callbacks that failed at all
    (others cannot reach significance), with its own Benjamini-Hochberg family.
Medians and counts come from all runs (SQL); only the tests use the sample. From the
histograms (`callback_hist`, --by kernel) the tests use every run, binned
(dpmlens.fleet.binned: U with the runs of a bucket tied; the bootstrap resamples counts).
A callback that changed while its wait for other devices' callbacks changed by most of it (a
lock or a shared controller it now contends for: `callback_waits`, from the capture's
evidence) is said to have changed by that wait, with its own time (duration less the wait)
beside it. A change-point search (ruptures, binary segmentation, least squares) along the ordered
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
from dpmlens.fleet.stats import BY, Scope, callback_stats, group_expr

SAMPLE = 1000  # cycles sampled in the smallest group for the tests
MIN_RUNS = 5  # default [fleet] min_runs: 5 vs 5 fully separated is p = 0.0079 (exact)
EXACT_MAX = 50  # runs per side up to which the exact U distribution is used (no ties)
Key = tuple[str, str, str, str]  # group, driver, device, phase


@dataclass(frozen=True)
class Settings:
    alpha: float = 0.05  # false-discovery rate (Benjamini-Hochberg)
    min_effect_ms: float = 1.0  # smaller changes of the median are not regressions
    min_fail_rate: float = 0.005  # smaller increases of the failure rate are not reported
    bootstrap: int = 999
    seed: int = 20261126
    min_runs: int = MIN_RUNS  # fewer runs on a side: not tested (listed, with the reason)


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
    method: str = "asymptotic"  # of the U test: "exact" or "asymptotic"; Fisher for failures
    phase_note: str | None = None  # "the resume phase got faster: ..." beside a slower callback
    # "slower by waiting for other callbacks (2-2, 2-1; delay kprobes): ..." (callback_waits)
    wait_note: str | None = None


@dataclass
class Skipped:
    """A callback of a pair that was not tested, and why."""
    driver: str
    device: str
    phase: str
    before: str
    after: str
    n_before: int
    n_after: int
    reason: str


@dataclass
class Result:
    pairs: list[tuple[str, str]]
    changes: list[Change] = field(default_factory=list)
    tested: int = 0  # callbacks tested for durations (sum over pairs)
    tested_failures: int = 0
    methods: dict[str, int] = field(default_factory=dict)  # U tests by method
    skipped: list[Skipped] = field(default_factory=list)
    uncompared: list[str] = field(default_factory=list)  # groups in no pair ("unknown kernel")


def pairs_for(groups: list[str], baseline: str | None) -> list[tuple[str, str]]:
    """Consecutive groups, or each against the baseline; a group of captures that do not
    say theirs ("unknown kernel") is in no consecutive pair: nothing says where it belongs."""
    if baseline is not None:
        return [(baseline, g) for g in groups if g != baseline]
    known = [g for g in groups if not g.startswith("unknown ")]
    return list(zip(known, known[1:], strict=False))


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
    res.uncompared = [g for g in groups if not any(g in p for p in pairs)]
    if not pairs:
        return res
    summary = _summary(per_device if per_device is not None
                       else callback_stats(con, scope))
    data: _Runs = _BinnedRuns(hist, cfg, _raw_runs(
        con, BY[scope.by], *scope.where(), _small(summary, pairs, cfg))) \
        if hist is not None else _SampledRuns(
        _samples(con, BY[scope.by], *scope.where(), groups), cfg)
    walls = phase_walls(con, scope)
    rng = np.random.default_rng(cfg.seed)
    for a, b in pairs:
        units = sorted(summary)
        dur_rows: list[tuple[tuple[str, str, str], float]] = []
        methods: dict[tuple[str, str, str], str] = {}
        fail_rows: list[tuple[tuple[str, str, str], float]] = []
        for unit in units:
            sa, sb = summary[unit].get(a), summary[unit].get(b)
            if sa is None and sb is None:
                continue
            na, nb = (sa or {}).get("n", 0), (sb or {}).get("n", 0)
            tested: tuple[float, str] | None = None
            why = (f"only in {b}" if sa is None else f"only in {a}" if sb is None
                   else f"too few runs (fewer than min_runs {cfg.min_runs} on a side)"
                   if min(na, nb) < cfg.min_runs else None)
            if why is None:
                tested = data.test((a,) + unit, (b,) + unit)
                if tested is None:
                    why = (f"too few runs in the sample of cycles (fewer than min_runs "
                           f"{cfg.min_runs} on a side)")
            if why is not None:
                res.skipped.append(Skipped(*unit, a, b, na, nb, why))
                continue
            assert sa is not None and sb is not None and tested is not None
            p, method = tested
            res.methods[method] = res.methods.get(method, 0) + 1
            methods[unit] = method
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
            c = _change("slower" if change > 0 else "faster", unit, a, b, sa, sb, change, ci,
                        p, q)
            c.method = methods[unit]
            c.phase_note = _phase_note(c, walls)
            res.changes.append(c)
        for unit, p, q in _bh(fail_rows):
            sa, sb = summary[unit][a], summary[unit][b]
            ra, rb = sa["failures"] / sa["n"], sb["failures"] / sb["n"]
            if q >= cfg.alpha or abs(rb - ra) < cfg.min_fail_rate:
                continue
            change = (sb["median"] - sa["median"]) / 1000
            c = _change("fails more" if rb > ra else "fails less", unit, a, b, sa, sb, change,
                        None, p, q)
            c.method = "fisher"
            res.changes.append(c)
    _wait_notes(con, scope, res.changes)
    if scope.by == "kernel" and baseline is None and len(groups) >= 3:
        _change_points(res, data, [g for g in groups if g not in res.uncompared], cfg)
    res.changes.sort(key=lambda c: (-abs(c.effect_ms_per_cycle) if c.kind in ("slower", "faster")
                                    else -abs(c.fail_rate_after - c.fail_rate_before) * 1e6,
                                    c.driver, c.device, c.phase))
    return res


class _Runs(Protocol):
    """The runs of one (group, driver, device, phase), as the tests need them."""

    def test(self, a: Key, b: Key) -> tuple[float, str] | None: ...
    def ci(self, a: Key, b: Key, cfg: Settings,
           rng: np.random.Generator) -> tuple[float, float]: ...
    def series(self, key: Key) -> np.ndarray | None: ...


class _SampledRuns:
    """Raw runs of the sampled cycles (the exact path)."""

    def __init__(self, samples: dict[Key, np.ndarray], cfg: Settings) -> None:
        self.samples, self.min_runs = samples, cfg.min_runs

    def test(self, a: Key, b: Key) -> tuple[float, str] | None:
        xa, xb = self.samples.get(a), self.samples.get(b)
        if xa is None or xb is None or min(len(xa), len(xb)) < self.min_runs:
            return None
        return mann_whitney(xa, xb)

    def ci(self, a: Key, b: Key, cfg: Settings,
           rng: np.random.Generator) -> tuple[float, float]:
        return _ci(self.samples[a], self.samples[b], cfg, rng)

    def series(self, key: Key) -> np.ndarray | None:
        return self.samples.get(key)


class _BinnedRuns:
    """Every run, binned (callback_hist): tests from the counts (dpmlens.fleet.binned)."""

    def __init__(self, hist: Binned, cfg: Settings, raw: dict[Key, np.ndarray]) -> None:
        self.hist, self.min_runs = hist, cfg.min_runs
        self.raw = raw  # the runs themselves of the callbacks with few runs (_small)

    def test(self, a: Key, b: Key) -> tuple[float, str] | None:
        ra, rb = self.raw.get(a), self.raw.get(b)
        if ra is not None and rb is not None:  # few runs: their own values, no bucket ties
            if min(len(ra), len(rb)) < self.min_runs:
                return None
            return mann_whitney(ra, rb)
        ha, hb = self.hist.get(a), self.hist.get(b)
        if ha is None or hb is None or min(ha[1].sum(), hb[1].sum()) < self.min_runs:
            return None
        return binned.mannwhitney_p(ha[0], ha[1], hb[0], hb[1]), "asymptotic"

    def ci(self, a: Key, b: Key, cfg: Settings,
           rng: np.random.Generator) -> tuple[float, float]:
        ra, rb = self.raw.get(a), self.raw.get(b)
        if ra is not None and rb is not None:
            return _ci(ra, rb, cfg, rng)
        ha, hb = self.hist.get(a), self.hist.get(b)
        assert ha is not None and hb is not None
        lo, hi = binned.median_change_ci(ha[0], ha[1], hb[0], hb[1], cfg.bootstrap, rng)
        return round(lo / 1000, 3), round(hi / 1000, 3)

    def series(self, key: Key) -> np.ndarray | None:
        h = self.hist.get(key)
        return None if h is None else binned.spread(h[0], h[1], int(SAMPLE * 1.2))


def mann_whitney(xa: np.ndarray, xb: np.ndarray) -> tuple[float, str]:
    """Two-sided Mann-Whitney U: exact (the U distribution) for small samples without ties,
    else the normal approximation with tie and continuity correction (scipy's asymptotic
    method, what the binned test computes from counts)."""
    small = max(len(xa), len(xb)) <= EXACT_MAX
    ties = len(np.unique(np.concatenate([xa, xb]))) < len(xa) + len(xb)
    method = "exact" if small and not ties else "asymptotic"
    return float(st.mannwhitneyu(xa, xb, alternative="two-sided", method=method).pvalue), method


def phase_walls(con: duckdb.DuckDBPyConnection, scope: Any) -> dict[tuple[str, str], float]:
    """(group, phase) -> median wall of the phase per cycle (us)."""
    col = BY[scope.by]
    where, params = Scope(scope.by, scope.since).where()
    rows = con.execute(f"""
        SELECT {group_expr(col)}, phase, quantile_cont(wall_us, 0.5) FROM phases
        WHERE {where} AND wall_us IS NOT NULL GROUP BY ALL""", params).fetchall()
    return {(g, ph): float(w) for g, ph, w in rows}


def _phase_note(c: Change, walls: dict[tuple[str, str], float]) -> str | None:
    """A callback that got slower in a phase that got faster: say so beside it (the phase's
    other callbacks, or its overlap, made up for it)."""
    wa, wb = walls.get((c.before, c.phase)), walls.get((c.after, c.phase))
    if c.kind != "slower" or wa is None or wb is None or wb >= wa:
        return None
    return (f"the {c.phase} phase got faster: median wall {wa / 1000:.1f} -> "
            f"{wb / 1000:.1f} ms per cycle")


WAIT_SHARE = 0.5  # of a change the wait's change must make up to be named its cause


def _wait_notes(con: duckdb.DuckDBPyConnection, scope: Scope, changes: list[Change]) -> None:
    """For each slower or faster callback: when its median wait for other callbacks changed
    by at least WAIT_SHARE of its change, say so, with its own time's medians (a run without
    a wait row waited for no callback as far as its capture shows)."""
    timed = [c for c in changes if c.kind in ("slower", "faster")]
    if not timed:
        return
    col = group_expr(f"c.{BY[scope.by]}")
    where, params = scope.where("c")
    con.execute("CREATE OR REPLACE TEMP TABLE dpmlens_timed "
                "(grp VARCHAR, driver VARCHAR, device VARCHAR, phase VARCHAR)")
    con.executemany("INSERT INTO dpmlens_timed VALUES (?, ?, ?, ?)", sorted(
        {(g, c.driver, c.device, c.phase) for c in timed for g in (c.before, c.after)}))
    rows = con.execute(f"""
        WITH w AS (SELECT capture_id, cycle, driver, device, phase, start_us,
                          any_value(wait_us) AS wait_us, any_value(waited_for) AS who,
                          any_value(evidence) AS evidence
                   FROM callback_waits GROUP BY ALL)
        SELECT k.grp, k.driver, k.device, k.phase,
               quantile_cont(coalesce(w.wait_us, 0), 0.5),
               quantile_cont(c.duration_us - coalesce(w.wait_us, 0), 0.5),
               list(w.who) FILTER (WHERE w.wait_us > 0),
               list(DISTINCT w.evidence) FILTER (WHERE w.evidence IS NOT NULL)
        FROM (SELECT *, {col} AS grp FROM callbacks c WHERE {where}) c
        JOIN dpmlens_timed k USING (grp, driver, device, phase)
        LEFT JOIN w USING (capture_id, cycle, driver, device, phase, start_us)
        GROUP BY ALL""", params).fetchall()
    con.execute("DROP TABLE dpmlens_timed")
    got = {(g, d, v, p): (float(wm), float(om), who or [], ev or [])
           for g, d, v, p, wm, om, who, ev in rows}
    for c in timed:
        a = got.get((c.before, c.driver, c.device, c.phase))
        b = got.get((c.after, c.driver, c.device, c.phase))
        if a is None or b is None or not (a[3] or b[3]):
            continue
        dw = (b[0] - a[0]) / 1000
        if dw * c.change_ms <= 0 or abs(dw) < WAIT_SHARE * abs(c.change_ms):
            continue
        late = b if dw > 0 else a  # the side that waited: whom for
        counts: dict[str, int] = defaultdict(int)
        for who in late[2]:
            for d in who or []:
                counts[d] += 1
        names = ", ".join(sorted(counts, key=lambda d: (-counts[d], d))[:4]) or "?"
        evidence = ", ".join(sorted(set(a[3]) | set(b[3])))
        c.wait_note = (f"{c.kind} by {'waiting' if dw > 0 else 'no longer waiting'} for "
                       f"other callbacks ({names}; {evidence}): median wait "
                       f"{a[0] / 1000:.1f} -> {b[0] / 1000:.1f} ms, its own time "
                       f"{a[1] / 1000:.1f} -> {b[1] / 1000:.1f} ms")


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
        f"SELECT {group_expr(col)}, count(*) FROM captures GROUP BY ALL").fetchall()]
    rate = min(1.0, SAMPLE * 1.2 / max(min(sizes, default=1), 1))
    cut = int(rate * 1_000_000)
    rows = con.execute(f"""
        SELECT {group_expr(col)}, driver, device, phase, list(duration_us)
        FROM callbacks
        WHERE {where} AND hash(capture_id, cycle) % 1000000 < {cut}
        GROUP BY ALL""", params).fetchall()
    # sorted: list() gathers in thread order, and the bootstrap resamples by position
    return {(g, drv, dev, ph): np.sort(np.asarray(v, dtype=np.float64))
            for g, drv, dev, ph, v in rows}


def _small(summary: dict[tuple[str, str, str], dict[str, dict[str, Any]]],
           pairs: list[tuple[str, str]], cfg: Settings) -> set[Key]:
    """The (group, callback)s of the pairs whose test will use the exact U distribution: at
    least min_runs and at most EXACT_MAX runs on both sides."""
    out: set[Key] = set()
    for unit, per in summary.items():
        for a, b in pairs:
            sa, sb = per.get(a), per.get(b)
            if sa and sb and cfg.min_runs <= min(sa["n"], sb["n"]) \
                    and max(sa["n"], sb["n"]) <= EXACT_MAX:
                out.update(((a,) + unit, (b,) + unit))
    return out


def _raw_runs(con: duckdb.DuckDBPyConnection, col: str, where: str, params: list[Any],
              keys: set[Key]) -> dict[Key, np.ndarray]:
    """The raw durations of a few (group, driver, device, phase)s: one scan, joined to them."""
    if not keys:
        return {}
    con.execute("CREATE OR REPLACE TEMP TABLE dpmlens_small "
                "(grp VARCHAR, driver VARCHAR, device VARCHAR, phase VARCHAR)")
    con.executemany("INSERT INTO dpmlens_small VALUES (?, ?, ?, ?)", sorted(keys))
    rows = con.execute(f"""
        SELECT k.grp, k.driver, k.device, k.phase, list(c.duration_us)
        FROM (SELECT {group_expr(col)} AS grp, driver, device, phase, duration_us
              FROM callbacks WHERE {where}) c
        JOIN dpmlens_small k USING (grp, driver, device, phase)
        GROUP BY ALL""", params).fetchall()
    con.execute("DROP TABLE dpmlens_small")
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


def _change_points(res: Result, data: _Runs, groups: list[str], cfg: Settings) -> None:
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
        size = max(2, cfg.min_runs)
        if len(signal) < 2 * size:
            continue
        bkp = ruptures.Binseg(model="l2", min_size=size).fit(signal).predict(n_bkps=1)[0]
        # a change can only happen between groups: the group boundary nearest the break
        bounds = [i for i in range(1, len(owner)) if owner[i] != owner[i - 1]]
        if bounds and 0 < bkp < len(owner):
            c.changed_from = owner[min(bounds, key=lambda i: abs(i - bkp))]
    for c in res.changes:
        if c.changed_from is None:
            c.changed_from = c.after

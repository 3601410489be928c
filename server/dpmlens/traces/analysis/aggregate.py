"""Per-callback distributions and per-phase wall times across cycles.

Percentiles interpolate linearly between order statistics (numpy's default, "type 7"):
p95 of [1..20] is 19.05. Phase wall time per cycle is taken from the phase markers when the
trace has them, else from the first start to the last end of the phase's callbacks; it is
reported as mean +/- sample standard deviation across cycles.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import repeat

from dpmlens.model.phases import AFTER_ALL_PHASES, PHASES
from dpmlens.traces.model.traceset import TraceSet

CallbackKey = tuple[str, str, str]  # driver, device, phase


@dataclass(frozen=True)
class CallbackStats:
    driver: str
    device: str
    parent: str
    phase: str
    layer: str
    n: int
    min_us: float
    median_us: float
    mean_us: float
    p95_us: float
    max_us: float
    total_us: float
    cycles: int  # distinct cycles with a sample
    errors: int  # samples whose callback returned non-zero
    symbol: str | None = None
    values: tuple[float, ...] = ()  # the durations (for diff and hover histograms)

    @property
    def key(self) -> CallbackKey:
        return (self.driver, self.device, self.phase)


@dataclass(frozen=True)
class PhaseStats:
    phase: str
    cycles: int
    mean_us: float
    sd_us: float
    min_us: float
    max_us: float
    measured: bool  # all cycles from phase markers (else partly from callback spans)
    values: tuple[float, ...] = ()


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks; `sorted_values` must be sorted."""
    n = len(sorted_values)
    if n == 0:
        return math.nan
    pos = (n - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, n - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def mean_sd(values: Sequence[float]) -> tuple[float, float]:
    n = len(values)
    if n == 0:
        return math.nan, math.nan
    mean = math.fsum(values) / n
    if n == 1:
        return mean, 0.0
    var = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, math.sqrt(var)


def _py_round3(values: Iterable[float]) -> Iterable[float]:
    return map(round, values, repeat(3))


def _round3_each() -> Callable[[Iterable[float]], Iterable[float]]:
    """`round(x, 3)` of each value: in C (_critical_walk.round3_each, the same floats bit
    for bit) unless it was not built or DPMLENS_PY_WALK=1 (the analysis' C off)."""
    if os.environ.get("DPMLENS_PY_WALK") != "1":
        try:
            from dpmlens.traces.analysis import _critical_walk  # type: ignore[attr-defined]
        except ImportError:
            pass
        else:
            each: Callable[[Iterable[float]], Iterable[float]] = _critical_walk.round3_each
            return each
    return _py_round3


def aggregate(traces: TraceSet) -> list[CallbackStats]:
    """One entry per (driver, device, phase), slowest total first."""
    merged: dict[CallbackKey, list] = {}
    rounded = _round3_each()
    for g in traces.groups.values():
        if not g.durations:  # created for a start that never ended
            continue
        drv, dev, parent, phase, layer = g.key
        m = merged.get((drv, dev, phase))
        n = len(g.durations)
        if m is None:
            m = merged[(drv, dev, phase)] = [[], set(), {parent: n}, {layer: n}, 0, None]
        else:
            m[2][parent] = m[2].get(parent, 0) + n
            m[3][layer] = m[3].get(layer, 0) + n
        m[0].extend(rounded(g.durations))  # to the ns: no float noise
        m[1].update(g.cycles)
        m[4] += len(g.errors)
        m[5] = g.symbol or m[5]
    out = []
    new, put = object.__new__, object.__setattr__
    for (drv, dev, phase), (vals, cyc, parents, layers, errs, sym) in merged.items():
        vals.sort()
        n = len(vals)
        total = math.fsum(vals)
        # CallbackStats(...) without its __init__ (frozen: a global lookup and a call of
        # object.__setattr__ per field): the same calls, bound once, in the fields' order
        s = new(CallbackStats)
        put(s, "driver", drv)
        put(s, "device", dev)
        put(s, "parent", _most_common(parents))
        put(s, "phase", phase)
        put(s, "layer", _most_common(layers))
        put(s, "n", n)
        put(s, "min_us", vals[0])
        put(s, "median_us", round(percentile(vals, 0.5), 3))
        put(s, "mean_us", round(total / n, 3))
        put(s, "p95_us", round(percentile(vals, 0.95), 3))
        put(s, "max_us", vals[-1])
        put(s, "total_us", round(total, 3))
        put(s, "cycles", len(cyc))
        put(s, "errors", errs)
        put(s, "symbol", sym)
        put(s, "values", tuple(vals))
        out.append(s)
    out.sort(key=lambda s: (-s.total_us, s.driver, s.device, _order(s.phase)))
    return out


def _most_common(counts: dict[str, int]) -> str:
    """Counter(counts).most_common(1)[0][0]: the largest count, the first of equals."""
    if len(counts) == 1:
        return next(iter(counts))
    return max(counts.items(), key=_count)[0]


def _count(item: tuple[str, int]) -> int:
    return item[1]


def phase_stats(traces: TraceSet) -> list[PhaseStats]:
    """Per phase: wall time per cycle as mean +/- sd, in the order of a suspend/resume."""
    per: dict[str, dict[int, tuple[float, bool]]] = {}
    for pt in traces.phase_times:
        cyc = per.setdefault(pt.phase, {})
        old = cyc.get(pt.cycle)
        # A measured marker wins over a span estimate; two measurements: the longer.
        if (
            old is None
            or (pt.measured and not old[1])
            or (pt.measured == old[1] and pt.wall_us > old[0])
        ):
            cyc[pt.cycle] = (pt.wall_us, pt.measured)
    out = []
    for phase, cyc in per.items():
        vals = [v for v, _ in cyc.values()]
        mean, sd = mean_sd(vals)
        out.append(
            PhaseStats(
                phase,
                len(vals),
                round(mean, 3),
                round(sd, 3),
                min(vals),
                max(vals),
                all(m for _, m in cyc.values()),
                tuple(vals),
            )
        )
    out.sort(key=lambda p: _order(p.phase))
    return out


def _order(phase: str) -> int:
    p = PHASES.get(phase)
    return p.order if p else AFTER_ALL_PHASES

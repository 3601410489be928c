"""Before/after comparison of two TraceSets with a Mann-Whitney U test.

Two-sided test with the normal approximation, a continuity correction of 0.5 and the tie
correction of the variance:
  sigma^2 = n1*n2/12 * ((n+1) - sum(t^3 - t) / (n*(n-1)))
It is only run when both sides have at least MIN_CYCLES values; below that the report says
the sample is too small instead of printing a p-value nobody should trust.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from dpmlens.traces.analysis.aggregate import aggregate, percentile, phase_stats
from dpmlens.traces.model.traceset import TraceSet

MIN_CYCLES = 5


@dataclass(frozen=True)
class MannWhitney:
    u: float  # U of the first sample
    z: float
    p: float  # two-sided


def mann_whitney_u(a: Sequence[float], b: Sequence[float]) -> MannWhitney:
    n1, n2 = len(a), len(b)
    if n1 == 0 or n2 == 0:
        raise ValueError("both samples must be non-empty")
    tagged = sorted([(v, 0) for v in a] + [(v, 1) for v in b])
    n = n1 + n2
    ranks = [0.0] * n
    tie_term = 0.0
    i = 0
    while i < n:
        j = i
        while j + 1 < n and tagged[j + 1][0] == tagged[i][0]:
            j += 1
        avg = (i + j) / 2 + 1  # ranks are 1-based
        for k in range(i, j + 1):
            ranks[k] = avg
        t = j - i + 1
        tie_term += t**3 - t
        i = j + 1
    r1 = sum(r for r, (_, side) in zip(ranks, tagged, strict=True) if side == 0)
    u1 = r1 - n1 * (n1 + 1) / 2
    mu = n1 * n2 / 2
    var = n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1)))
    if var <= 0:
        return MannWhitney(u1, 0.0, 1.0)
    delta = u1 - mu
    cc = 0.5 if delta > 0 else -0.5 if delta < 0 else 0.0
    z = (delta - cc) / math.sqrt(var)
    p = min(1.0, math.erfc(abs(z) / math.sqrt(2)))
    return MannWhitney(u1, z, p)


@dataclass(frozen=True)
class DiffRow:
    kind: str  # "callback" or "phase"
    driver: str
    device: str
    phase: str
    n_before: int
    n_after: int
    median_before_us: float | None
    median_after_us: float | None
    change_us: float | None
    change_pct: float | None
    p: float | None
    verdict: str  # "faster", "slower", "no significant change", "too few cycles (...)", ...


def _row(
    kind: str,
    drv: str,
    dev: str,
    phase: str,
    before: Sequence[float],
    after: Sequence[float],
    alpha: float,
) -> DiffRow:
    mb = round(percentile(sorted(before), 0.5), 3) if before else None
    ma = round(percentile(sorted(after), 0.5), 3) if after else None
    change = pct = p = None
    if mb is not None and ma is not None:
        change = round(ma - mb, 3)
        pct = round(100.0 * change / mb, 1) if mb else None
    if not before:
        verdict = "only after"
    elif not after:
        verdict = "only before"
    elif len(before) < MIN_CYCLES or len(after) < MIN_CYCLES:
        verdict = (
            f"too few cycles to test (n={len(before)} vs {len(after)}, need >= {MIN_CYCLES} each)"
        )
    else:
        p = mann_whitney_u(before, after).p
        if p < alpha:
            verdict = "faster" if (change or 0) < 0 else "slower"
        else:
            verdict = "no significant change"
    return DiffRow(kind, drv, dev, phase, len(before), len(after), mb, ma, change, pct, p, verdict)


def compare(before: TraceSet, after: TraceSet, alpha: float = 0.05) -> list[DiffRow]:
    """Phases first (suspend/resume order), then callbacks by the largest absolute change."""
    pb = {p.phase: p.values for p in phase_stats(before)}
    pa = {p.phase: p.values for p in phase_stats(after)}
    phases = [p.phase for p in phase_stats(before)]
    phases += [p for p in pa if p not in pb]
    rows = [_row("phase", "", "", ph, pb.get(ph, ()), pa.get(ph, ()), alpha) for ph in phases]
    cb = {s.key: s.values for s in aggregate(before)}
    ca = {s.key: s.values for s in aggregate(after)}
    cbs = [
        _row("callback", k[0], k[1], k[2], cb.get(k, ()), ca.get(k, ()), alpha)
        for k in list(cb) + [k for k in ca if k not in cb]
    ]
    cbs.sort(key=lambda r: -abs(r.change_us or 0.0))
    return rows + cbs

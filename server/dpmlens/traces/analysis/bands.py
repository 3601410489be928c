"""How sure a what-if is: the error band measured in the capture lab for its kind of change
with its kind of evidence (bands.yaml, made by lab/band_table.py from the A/B experiments;
docs/traces.md "How sure a prediction is").

Change kinds: `sync` (--sync), `async` (--async), `delay` (--delay, --spec-minimums),
`ordering` (--ordering 6.16: no kernel in the lab to measure it). Evidence kinds: the delay
kprobes with their returns (measured sleeps), the scheduler's events (waits told from work,
hand-overs between callbacks), both, neither. A band is the range of (predicted - measured) /
measured the lab saw for that cell on a phase (suspend or resume), widened by the A/B noise:
the measured value is expected inside [predicted / (1 + high), predicted / (1 + low)].
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

_TABLE = Path(__file__).with_name("bands.yaml")
BANDED_PHASES = ("suspend", "resume")
# a --delay change whose delay calls the capture neither measured nor told from the
# scheduler's events: nothing replayed, no prediction (traces.analysis.whatif._rated_kinds)
NOT_REPLAYED = "delay-unmeasured"
# what to capture for what the change needs, by missing evidence
_SCHED = ("the scheduler's events (sched_switch and sched_waking: `trace-cmd record -e "
          "sched:sched_switch -e sched:sched_waking ...`, or the same events enabled in "
          "tracefs beside power:*)")
_KPROBES = ("sleepgraph's delay kprobes with their return probes (msleep, usleep_range, "
            "schedule_timeout, udelay: `sleepgraph -dev`, or msleep_cal/msleep_ret kprobes "
            "in tracefs)")


@dataclass
class Evidence:
    """What a what-if's prediction rests on (traces.analysis.whatif fills it)."""

    delays: bool = False  # delay kprobes with their returns: measured sleeps
    sched: bool = False  # sched_switch/sched_waking in the capture (and used)
    waits: bool = False  # the contended replay told waits from work with them
    cpus: int | None = None  # the CPU contention model's CPUs (None: off)
    locks: list[str] = field(default_factory=list)  # each lock kept, and from what
    # delay calls told from the scheduler's events, no kprobes (traces.analysis.sleep_calls)
    sleep_calls: int = 0
    delays_replayed: bool = False  # some --delay target found calls to change


@dataclass(frozen=True)
class Band:
    change: str
    evidence: str
    phase: str
    low_pct: float
    high_pct: float
    rows: int  # lab predictions it was measured on
    basis: str  # which experiments

    def measured_range(self, predicted_us: float) -> tuple[float, float]:
        """Where the measured value is expected, given the prediction."""
        return (predicted_us / (1 + self.high_pct / 100.0),
                predicted_us / (1 + self.low_pct / 100.0))

    def text(self) -> str:
        return f"{self.low_pct:+.0f}%..{self.high_pct:+.0f}%"


@cache
def table() -> dict[tuple[str, str, str], Band]:
    from dpmlens.traces.model.yaml_tables import safe_load

    data = safe_load(_TABLE.read_text()) or {}
    out = {}
    for row in data.get("bands") or []:
        b = Band(str(row["change"]), str(row["evidence"]), str(row["phase"]),
                 float(row["low_pct"]), float(row["high_pct"]), int(row["rows"]),
                 str(row.get("basis", "")))
        out[(b.change, b.evidence, b.phase)] = b
    return out


def evidence_kind(ev: Evidence) -> str:
    if ev.delays and ev.sched:
        return "kprobes+sched"
    return "kprobes" if ev.delays else "sched" if ev.sched else "neither"


@dataclass
class Sureness:
    """A what-if's evidence, its band per phase (None: no lab measurement for the cell) and
    what to capture next time."""

    evidence: str
    changes: list[str]
    bands: dict[str, Band | None]
    unmeasured: list[str]  # change kinds with no band for this evidence
    capture_next: str | None

    def json(self, evidence: Evidence, per_phase: list[tuple[str, int, float, float]]
             ) -> dict[str, Any]:
        phases = {}
        for ph, _, _, pred in per_phase:
            b = self.bands.get(ph)
            if ph in BANDED_PHASES and self.changes:
                lo, hi = b.measured_range(pred) if b is not None else (None, None)
                phases[ph] = None if b is None else {
                    "low_pct": b.low_pct, "high_pct": b.high_pct, "rows": b.rows,
                    "basis": b.basis, "measured_low_us": round(lo or 0.0, 3),
                    "measured_high_us": round(hi or 0.0, 3)}
        return {"evidence": {"kind": self.evidence, "delays_measured": evidence.delays,
                             "delay_calls_from_sched": evidence.sleep_calls,
                             "sched_events": evidence.sched, "waits_from_sched": evidence.waits,
                             "cpus": evidence.cpus, "locks": evidence.locks},
                "change_kinds": self.changes, "bands": phases,
                "unmeasured": self.unmeasured, "capture_next": self.capture_next}


def sureness(kinds: list[str], ev: Evidence) -> Sureness:
    """KINDS: the change kinds of the what-if (sync, async, async-unseen, delay, ordering)."""
    kind = evidence_kind(ev)
    rows = table()
    bands: dict[str, Band | None] = {}
    unmeasured = []
    for ph in BANDED_PHASES:
        cells = [rows.get((k, kind, ph)) for k in kinds]
        if not kinds or any(c is None for c in cells):
            bands[ph] = None
            continue
        lo = min(c.low_pct for c in cells if c is not None)
        hi = max(c.high_pct for c in cells if c is not None)
        widest = max((c for c in cells if c is not None), key=lambda c: c.high_pct - c.low_pct)
        bands[ph] = Band("+".join(kinds), kind, ph, lo, hi, min(
            c.rows for c in cells if c is not None), widest.basis)
    for k in kinds:
        if not any((k, kind, ph) in rows for ph in BANDED_PHASES):
            unmeasured.append(k)
    need = []
    moves = any(k in kinds for k in ("sync", "async", "async-unseen", "ordering"))
    # (with a band wider than the lab's 10% bound, what the capture lacks may narrow it)
    wide = any(b is None or b.low_pct < -10 or b.high_pct > 10 for b in bands.values())
    if moves and not ev.sched:
        need.append(_SCHED)
    delay = "delay" in kinds or NOT_REPLAYED in kinds
    if NOT_REPLAYED in kinds and not ev.delays and not ev.sched:
        need.append(_SCHED)  # (either tells a sleep's calls: traces.analysis.sleep_calls)
    if not ev.delays and (delay or (moves and (not ev.sched or wide))):
        need.append(_KPROBES)
    if NOT_REPLAYED in kinds and need == [_KPROBES]:
        capture = "to predict this change, capture " + _KPROBES
    elif NOT_REPLAYED in kinds and len(need) == 2:
        capture = ("to predict this change, capture " + " or ".join(need) + " (best "
                   "both)")
    else:
        capture = ("to predict this change more surely, capture " + " and ".join(need)
                   if need else None)
    return Sureness(kind, kinds, bands, unmeasured, capture)

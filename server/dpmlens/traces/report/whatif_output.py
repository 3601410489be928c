"""Text and JSON of `dpmlens trace whatif`."""

from __future__ import annotations

from typing import Any

from dpmlens.traces.analysis.bands import NOT_REPLAYED
from dpmlens.traces.analysis.whatif import Replay, WhatIf
from dpmlens.traces.model.durations import format_us, signed_us
from dpmlens.traces.model.traceset import TraceSet
from dpmlens.traces.report.critical_output import representative
from dpmlens.traces.report.table import table

WHATIF_JSON_VERSION = 3  # 2: "ordering"; 3: "evidence", "bands", "capture_next", ...


def _totals(w: WhatIf) -> tuple[float, float]:
    """Per cycle, summed over the phases: (measured mean, predicted mean)."""
    rows = w.per_phase()
    return round(sum(r[2] for r in rows), 3), round(sum(r[3] for r in rows), 3)


def _chain_json(traces: TraceSet, r: Replay) -> dict[str, Any]:
    names = traces.store.threads
    return {"cycle": r.run.cycle, "phase": r.run.phase, "measured_us": r.measured_us,
            "predicted_us": r.predicted_us,
            "chain": [{"driver": iv.driver, "device": iv.device,
                       "thread": names[iv.thread] if iv.thread >= 0 else None,
                       "start_us": round(start, 3), "duration_us": round(dur, 3), "link": link}
                      for iv, start, dur, link in r.path()]}


def _representative(w: WhatIf) -> list[Replay]:
    by_run = {id(r.run): r for r in w.replays}

    class _P:  # critical_output.representative wants .run
        def __init__(self, r: Replay) -> None:
            self.run = r.run

    return [by_run[id(p.run)] for p in representative([_P(r) for r in w.replays])]


def whatif_json(traces: TraceSet, w: WhatIf, changes: list[str],
                ordering: str = "legacy") -> dict[str, Any]:
    measured, predicted = _totals(w)
    return {
        "version": WHATIF_JSON_VERSION, "cycles": traces.cycles, "changes": changes,
        "phases": [{"phase": ph, "runs": n, "measured_us": m, "predicted_us": p,
                    "change_us": round(p - m, 3)} for ph, n, m, p in w.per_phase()],
        "total": {"measured_us": measured, "predicted_us": predicted,
                  "change_us": round(predicted - measured, 3)},
        "runs": [{"cycle": r.run.cycle, "phase": r.run.phase, "measured_us": r.measured_us,
                  "predicted_us": r.predicted_us,
                  "removed_from_callbacks_us": r.saved_in_callbacks_us} for r in w.replays],
        "critical_path": [_chain_json(traces, r) for r in _representative(w)],
        "assumptions": w.assumptions, "not_replayed": w.not_replayed,
        "ordering": ordering,
        # version 3: how sure (traces.analysis.bands)
        **(w.sure.json(w.evidence, w.per_phase()) if w.sure is not None
           and w.evidence is not None else {}),
    }


def whatif_text(traces: TraceSet, w: WhatIf, changes: list[str]) -> str:

    names = traces.store.threads
    out = [f"what if: {', '.join(changes) if changes else 'nothing changes (a replay check)'}"
           f" ({traces.cycles} cycle(s))", ""]
    rows = [["phase", "runs", "measured", "predicted", "change"]]
    for ph, n, m, p in w.per_phase():
        pct = f" ({(p - m) / m * 100:+.1f}%)" if m else ""
        rows.append([ph, str(n), format_us(m), format_us(p), signed_us(round(p - m, 3)) + pct])
    measured, predicted = _totals(w)
    rows.append(["total per cycle", "", format_us(measured), format_us(predicted),
                 signed_us(round(predicted - measured, 3))])
    out += ["Phase wall time (mean over cycles):", table(rows, {1, 2, 3, 4})]
    out += _sureness_text(w)
    changed = [r for r in _representative(w)
               if abs(r.predicted_us - r.measured_us) > max(0.01 * r.measured_us, 100)]
    if changed:
        out.append("\nNew critical path (the cycle with the median wall time):")
    for r in changed:
        out.append(f"  {r.run.phase} (cycle {r.run.cycle}): {format_us(r.measured_us)} -> "
                   f"{format_us(r.predicted_us)}")
        floor = max(r.predicted_us * 0.02, 100.0)
        hidden = 0
        for iv, start, dur, link in r.path():
            if dur < floor:
                hidden += 1
                continue
            if hidden:
                out.append(f"      ... {hidden} short step(s)")
                hidden = 0
            thread = names[iv.thread] if iv.thread >= 0 else "?"
            out.append(f"    {format_us(start):>10}  {iv.driver or '-'} {iv.device}  "
                       f"{format_us(dur)}  [{thread}] ({link})")
        if hidden:
            out.append(f"      ... {hidden} short step(s)")
    out.append("\nAssumptions:")
    out += [f"  - {a}" for a in w.assumptions]
    out.append("  - each callback starts after the last of what it waited for in the capture "
               "ended, plus the lag measured after it; the rest of each phase is unchanged")
    if w.not_replayed:
        out.append("\nNot replayed:")
        out += [f"  - {a}" for a in w.not_replayed]
    return "\n".join(out) + "\n"


def _sureness_text(w: WhatIf) -> list[str]:
    """The evidence, the lab's band per banded phase, what to capture next time."""
    sure, ev = w.sure, w.evidence
    if sure is None or ev is None or not sure.changes:
        return []
    have = {"kprobes+sched": "delay kprobes and the scheduler's events",
            "kprobes": "delay kprobes, no scheduler events",
            "sched": "the scheduler's events, no delay kprobes",
            "neither": "neither delay kprobes nor scheduler events"}[sure.evidence]
    out = [f"\nHow sure (evidence: {have}"
           + (f"; locks: {'; '.join(ev.locks)}" if ev.locks else "") + "):"]
    per = {ph: p for ph, _, _, p in w.per_phase()}
    for ph, band in sure.bands.items():
        if ph not in per:
            continue
        if band is None and NOT_REPLAYED in sure.changes:
            why = ("the scheduler's events tell only a named msleep's calls, by their "
                   "length (CALLER:msleep(N)); this change needs the delay kprobes"
                   if ev.sched else "no delay kprobes measured it, no scheduler events "
                   "to tell it from its sleeps")
            out.append(f"  {ph}: not predicted: the capture has no call of the delay the "
                       f"change names ({why}); the figure is the phase as measured")
            continue
        if band is None:
            out.append(f"  {ph}: no lab-measured band for {'+'.join(sure.changes)} with this "
                       "evidence: the prediction may be far off")
            continue
        lo, hi = band.measured_range(per[ph])
        out.append(f"  {ph}: {format_us(per[ph])}, band {band.text()} for "
                   f"{band.change} with {band.evidence} (the lab's {band.rows} prediction(s): "
                   f"{band.basis}): expect {format_us(lo)} to {format_us(hi)}")
    if sure.capture_next:
        out.append(f"  Next time: {sure.capture_next}.")
    return out

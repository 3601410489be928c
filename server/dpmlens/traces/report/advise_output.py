"""Text and JSON of `dpmlens trace advise`."""

from __future__ import annotations

from typing import Any

from dpmlens.traces.analysis.advise import Advice, Advised
from dpmlens.traces.model.durations import format_us

ADVISE_JSON_VERSION = 1


def _item_json(rank: int, a: Advice) -> dict[str, Any]:
    return {
        "rank": rank, "kind": a.kind, "title": a.title, "targets": a.targets,
        "saving_us": a.saving_us,
        "saving_range_us": list(a.saving_range_us) if a.phases else None,
        "band": None if a.band is None else {
            "suspend_minus_pct": a.band.down[0], "suspend_plus_pct": a.band.down[1],
            "resume_minus_pct": a.band.up[0], "resume_plus_pct": a.band.up[1],
            "source": a.band.source},
        "busy_us": a.busy_us,
        "phases": [{"phase": p.phase, "runs": p.runs, "predicted_before_us": p.predicted_before_us,
                    "predicted_after_us": p.predicted_after_us, "saving_us": p.saving_us,
                    "band_pct": list(a.band.of(p.phase)) if a.band else None}
                   for p in a.phases],
        "knob": a.knob, "patch": a.patch, "whatif": a.whatif, "evidence": a.evidence,
        "notes": a.notes,
    }


def advise_json(adv: Advised) -> dict[str, Any]:
    return {
        "version": ADVISE_JSON_VERSION, "cycles": adv.cycles, "evidence": adv.evidence.words(),
        "pm_async_off": adv.pm_async_off,
        "phases": [{"phase": ph, "runs": b.runs, "measured_us": adv.measured_us[ph],
                    "replayed_us": b.predicted_before_us}
                   for ph, b in adv.baseline.items()],
        "advice": [_item_json(i + 1, a) for i, a in enumerate(adv.items)],
        "notes": adv.notes,
    }


def advise_text(adv: Advised) -> str:
    ev = ", ".join(adv.evidence.words()) or "callback events only"
    out = [f"What to change first ({adv.cycles} cycle(s); evidence: {ev}):", ""]
    if not adv.items:
        out.append("  nothing found that the replay says would save time")
    for i, a in enumerate(adv.items, 1):
        if a.kind == "link":
            head = f"{i}. {a.title}: no saving predicted (not replayed)"
        elif a.kind == "busy-wait":
            head = f"{i}. {a.title}: {format_us(a.busy_us)} a cycle of busy CPU (no saving " \
                   "predicted on the path)"
        else:
            lo, hi = a.saving_range_us
            head = (f"{i}. {a.title}: saves {format_us(a.saving_us)} a cycle "
                    f"(band {format_us(lo)} to {format_us(hi)})")
        out.append(head)
        for p in a.phases:
            band = ""
            if a.band is not None:
                minus, plus = a.band.of(p.phase)
                band = f" (-{minus:g}%/+{plus:g}%)"
            out.append(f"     {p.phase}: {format_us(p.predicted_before_us)} -> "
                       f"{format_us(p.predicted_after_us)}{band}")
        for k in a.knob:
            out.append(f"     now:   {k}")
        if a.patch:
            out.append(f"     patch: {a.patch}")
        if a.whatif:
            out.append(f"     check: dpmlens trace whatif CAPTURE {' '.join(a.whatif)}")
        for n in a.notes:
            out.append(f"     note:  {n}")
        if a.band is not None:
            out.append(f"     band:  {a.band.source}")
        out.append("")
    rows = [f"  {ph}: measured {format_us(adv.measured_us[ph])}, replayed "
            f"{format_us(b.predicted_before_us)}" for ph, b in adv.baseline.items()
            if ph in ("suspend", "resume", "suspend_late", "resume_early", "suspend_noirq",
                      "resume_noirq")]
    if rows:
        out += ["Phases (mean per cycle; savings are against the replay):", *rows, ""]
    out += [f"note: {n}" for n in adv.notes]
    return "\n".join(out).rstrip() + "\n"

"""`dpmlens trace diff` for runtime PM: per device, the runtime suspend and resume latencies
before and after (medians, Mann-Whitney U as for callbacks: each transition is a sample), and
what changed in how the device was used (transitions, periods under break-even, errors)."""

from __future__ import annotations

from typing import Any

from dpmlens.traces.analysis.diff import DiffRow, _row
from dpmlens.traces.analysis.rpm_stats import DeviceRpm, runtime_stats
from dpmlens.traces.model.traceset import TraceSet

_MEMBERS = (("runtime_suspend", "suspend"), ("runtime_resume", "resume"))


def compare_runtime(before: TraceSet, after: TraceSet, alpha: float = 0.05
                    ) -> tuple[list[DiffRow], list[dict[str, Any]]] | None:
    """(latency rows, device summaries); None when neither side has rpm_* events."""
    rb, ra = runtime_stats(before), runtime_stats(after)
    if rb is None and ra is None:
        return None
    b = {d.device: d for d in (rb.devices if rb else [])}
    a = {d.device: d for d in (ra.devices if ra else [])}
    rows: list[DiffRow] = []
    devices: list[dict[str, Any]] = []
    for dev in list(b) + [x for x in a if x not in b]:
        db, da = b.get(dev), a.get(dev)
        driver = (db or da).driver if (db or da) else ""
        for member, attr in _MEMBERS:
            vb = _values(db, attr)
            va = _values(da, attr)
            if vb or va:
                rows.append(_row("runtime", driver, dev, member, vb, va, alpha))
        devices.append({
            "device": dev, "driver": driver or None,
            "suspends_before": db.suspends if db else 0, "suspends_after": da.suspends if da else 0,
            "resumes_before": db.resumes if db else 0, "resumes_after": da.resumes if da else 0,
            "short_share_before": _share(db), "short_share_after": _share(da),
            "errors_before": _errors(db), "errors_after": _errors(da),
        })
    rows.sort(key=lambda r: -abs(r.change_us or 0.0))
    return rows, devices


def _values(d: DeviceRpm | None, attr: str) -> tuple[float, ...]:
    dist = getattr(d, attr) if d is not None else None
    return dist.values if dist is not None else ()


def _share(d: DeviceRpm | None) -> float | None:
    s = d.short_share if d is not None else None
    return None if s is None else round(s, 4)


def _errors(d: DeviceRpm | None) -> dict[str, int]:
    if d is None:
        return {}
    return {f"{e.call} {e.name}": e.count for e in d.errors}


__all__ = ["compare_runtime"]

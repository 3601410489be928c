"""Model stage: one parsed capture (a TraceSet and its header metadata) -> rows per table.

Columns are plain lists keyed by the names in `schema.TABLES`; the store turns them into
Parquet. Times are integers: microseconds on the capture's trace clock (`start_us`) and
durations in microseconds, rounded.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from datetime import datetime, timezone
from typing import Any

from dpmlens.fleet import trace_adapter
from dpmlens.fleet.captures import Capture
from dpmlens.fleet.schema import TABLES
from dpmlens.traces import TraceSet

Columns = dict[str, list[Any]]
Tables = dict[str, Columns]

# What the user may set with --meta that is a column of `captures` (the rest become tags)
META_COLUMNS = ("host", "machine", "kernel", "mode", "trigger", "captured_at")


def empty() -> Tables:
    return {t: {c: [] for c, _ in cols} for t, cols in TABLES.items()}


def _us(seconds: float) -> int | None:
    return None if seconds != seconds or math.isinf(seconds) else round(seconds * 1e6)


def capture_rows(cap: Capture, ts: TraceSet, tags: dict[str, str], ingest: dict[str, str],
                 out: Tables) -> int:
    """Append the capture's rows to `out`; returns the number of cycles."""
    meta = {**cap.meta, **{k: v for k, v in tags.items() if k in META_COLUMNS}}
    who = (meta.get("kernel", ""), meta.get("host", ""), meta.get("machine", ""))
    cid = cap.capture_id
    on_path, delays, waits = trace_adapter.critical_marks(ts)

    cb = out["callbacks"]
    per_cycle: dict[int, list[Any]] = defaultdict(lambda: [0, set(), None])  # n, errs, first
    for drv, dev, parent, phase, layer, start, dur, err, c, thread, key in \
            trace_adapter.callback_runs(ts):
        cb["capture_id"].append(cid)
        cb["cycle"].append(c)
        cb["kernel"].append(who[0])
        cb["host"].append(who[1])
        cb["machine"].append(who[2])
        cb["driver"].append(drv)
        cb["device"].append(dev)
        cb["parent"].append(parent)
        cb["phase"].append(phase)
        cb["layer"].append(layer)
        cb["thread"].append(thread)
        cb["start_us"].append(_us(start))
        cb["duration_us"].append(round(dur))
        cb["error"].append(err)
        cb["on_critical_path"].append(key in on_path)
        w = waits.get(key)
        if w is not None:
            _row(out["callback_waits"], capture_id=cid, cycle=c, kernel=who[0], host=who[1],
                 machine=who[2], driver=drv, device=dev, phase=phase, start_us=_us(start),
                 wait_us=round(w.us), waited_for=w.holders, evidence=w.evidence)
        pc = per_cycle[c]
        pc[0] += 1
        if err:
            pc[1].add(err)
            if pc[2] is None or (start == start and start < pc[2][0]):
                pc[2] = (start if start == start else math.inf, phase)

    ph = out["phases"]
    walls: dict[int, list[int]] = defaultdict(lambda: [0, 0])  # suspend us, resume us
    resumed: set[int] = set()
    cycles_seen: set[int] = set(per_cycle)
    for pt in ts.phase_times:
        cycles_seen.add(pt.cycle)
        _row(ph, capture_id=cid, cycle=pt.cycle, kernel=who[0], host=who[1], machine=who[2],
             phase=pt.phase, start_us=_us(pt.start), wall_us=round(pt.wall_us),
             measured=pt.measured)
        up = trace_adapter.is_resume_phase(pt.phase)
        walls[pt.cycle][1 if up else 0] += round(pt.wall_us)
        if up:
            resumed.add(pt.cycle)

    st = out["kernel_steps"]
    for s in trace_adapter.steps(ts):
        _row(st, capture_id=cid, cycle=s.cycle, kernel=who[0], host=who[1], machine=who[2],
             step=s.name, value=s.val, start_us=_us(s.start),
             duration_us=_us(s.end - s.start))

    dl = out["delays"]
    for d in delays:
        owner = d.owner or (None, None, None)
        _row(dl, capture_id=cid, cycle=d.cycle, kernel=who[0], host=who[1], machine=who[2],
             func=d.func, caller=d.caller,
             requested_us=None if d.requested_ms != d.requested_ms else round(d.requested_ms * 1e3),
             calls=d.calls, total_us=round(d.total_us), start_us=_us(d.start),
             driver=owner[0], device=owner[1], phase=owner[2], on_critical_path=d.on_path)

    rp = out["rpm_events"]
    for r in trace_adapter.rpm_rows(ts):
        _row(rp, capture_id=cid, kernel=who[0], host=who[1], machine=who[2], device=r.device,
             kind=r.kind, start_us=_us(r.start), duration_us=_us(r.end - r.start), ret=r.ret,
             usage=r.usage, thread=r.thread)

    iss = out["issues"]
    for pattern, (n, example) in sorted(cluster_issues(cap.dmesg_issues).items()):
        _row(iss, capture_id=cid, kernel=who[0], host=who[1], machine=who[2], pattern=pattern,
             example=example, count=n)

    captured = meta.get("captured_at") or ""
    notes = [f"{f.path}: {n}" for f in ts.files for n in f.notes] + list(ts.errors)
    fw = trace_adapter.firmware(ts)
    last = max(cycles_seen) if cycles_seen else -1
    cp = out["captures"]
    for c in sorted(cycles_seen):
        n, errs, first = per_cycle.get(c, (0, set(), None))
        if errs:
            outcome, fail_phase = "fail", first[1] if first else None
        elif c == last and c not in resumed and walls[c][0] > 0:
            outcome, fail_phase = "partial", None  # the capture ends before resume
        else:
            outcome, fail_phase = "pass", None
        f = fw.get(c)
        _row(cp, capture_id=cid, cycle=c, captured_at=_when(captured), kernel=who[0],
             host=who[1], machine=who[2], mode=meta.get("mode"), trigger=meta.get("trigger"),
             fw_suspend_us=round(f[0]) if f else _ns_to_us(meta.get("fw_suspend_ns")),
             fw_resume_us=round(f[1]) if f else _ns_to_us(meta.get("fw_resume_ns")),
             sysinfo=meta.get("sysinfo"), command=meta.get("command"), outcome=outcome,
             fail_phase=fail_phase, error_codes=sorted(errs), suspend_us=walls[c][0],
             resume_us=walls[c][1], callbacks=n, source_files=list(cap.names), notes=notes,
             tags=[{"key": k, "value": v} for k, v in sorted(tags.items())
                   if k not in META_COLUMNS],
             ingest_id=ingest["id"], ingested_at=_when(ingest["at"]),
             dpmlens_version=ingest["version"])
    return len(cycles_seen)


def _row(cols: Columns, **values: Any) -> None:
    for k, v in values.items():
        cols[k].append(v)


def _when(iso: str) -> datetime | None:
    if not iso:
        return None
    try:
        d = datetime.fromisoformat(iso)
    except ValueError:
        return None
    return (d if d.tzinfo else d.replace(tzinfo=timezone.utc)).astimezone(timezone.utc)


def _ns_to_us(ns: str | None) -> int | None:
    return round(int(ns) / 1000) if ns and ns.isdigit() else None


_NUMBERS = re.compile(r"0x[0-9a-fA-F]+|\b[0-9a-fA-F]{8,}\b|\d+(?:\.\d+)?")
_STAMP = re.compile(r"^\s*\[\s*[\d.]+\]\s*")


def issue_pattern(line: str) -> str:
    """A dmesg line without its timestamp, numbers and addresses: lines that differ only in
    those are one issue ("usb 1-4: device descriptor read/64, error -N")."""
    return _NUMBERS.sub("N", _STAMP.sub("", line)).strip()[:200]


def cluster_issues(lines: list[str]) -> dict[str, tuple[int, str]]:
    counts: Counter[str] = Counter()
    example: dict[str, str] = {}
    for line in lines:
        p = issue_pattern(line)
        counts[p] += 1
        example.setdefault(p, _STAMP.sub("", line).strip()[:300])
    return {p: (n, example[p]) for p, n in counts.items()}


def reject_row(out: Tables, path: str, capture_id: str | None, reason: str,
               ingest: dict[str, str]) -> None:
    _row(out["rejects"], path=path, capture_id=capture_id, reason=reason,
         ingest_id=ingest["id"], rejected_at=_when(ingest["at"]))


def capture_date(cols: Columns, i: int) -> str:
    """The partition value of row i of `captures` (UTC date; 1970-01-01 when unknown)."""
    d = cols["captured_at"][i]
    return d.date().isoformat() if d is not None else "1970-01-01"

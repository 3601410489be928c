"""Ingest: paths -> captures (read) -> rows (model) -> staged Parquet -> committed (store).

Captures are parsed in worker processes (each returns its rows); the parent writes rows in
batches of bounded size, so memory stays flat however many captures an ingest holds.
"""

from __future__ import annotations

import multiprocessing
import os
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from dpmlens import __version__
from dpmlens.fleet import captures, rows
from dpmlens.fleet.store import Staging, Store
from dpmlens.traces import CallbackStats, aggregate, build_index, load_traces, map_to_source

BATCH_ROWS = 400_000  # callback rows per staged batch (~150 MB of Python lists at most)


@dataclass
class Summary:
    ingest_id: str
    captures: int = 0  # new captures stored
    cycles: int = 0
    callbacks: int = 0
    already: int = 0  # captures the store had (same content): skipped
    rejects: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    recovered: list[str] = field(default_factory=list)
    files: int = 0
    notes: list[str] = field(default_factory=list)


@dataclass
class _Job:
    cap: captures.Capture
    tags: dict[str, str]
    ingest: dict[str, str]
    want_stats: bool


def _parse(job: _Job) -> tuple[str, rows.Tables | None, str | None, list[CallbackStats] | None]:
    """Worker: one capture -> its rows, or the reason it was rejected."""
    cap = job.cap
    try:
        ts = load_traces([str(f) for f in cap.files])
    except Exception as exc:  # a reader bug on one capture must not stop the ingest
        return cap.capture_id, None, f"internal error: {type(exc).__name__}: {exc}", None
    if ts.sample_count == 0 and not ts.phase_times:
        why = "; ".join(ts.errors) or "no suspend/resume callbacks or phases in the capture"
        return cap.capture_id, None, why, None
    out = rows.empty()
    rows.capture_rows(cap, ts, job.tags, job.ingest, out)
    return cap.capture_id, out, None, aggregate(ts) if job.want_stats else None


def ingest(store: Store, paths: list[str], tags: dict[str, str], jobs: int = 0,
           source: str | None = None,
           progress: Callable[[str], None] | None = None) -> Summary:
    store.check(create=True)
    now = datetime.now(timezone.utc)
    ingest_id = now.strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(4)
    info = {"id": ingest_id, "at": now.isoformat(), "version": __version__}
    summary = Summary(ingest_id)
    summary.recovered = store.recover()
    found = captures.find(paths)
    try:
        known = store.known_ids()
        todo: list[captures.Capture] = []
        seen: set[str] = set()
        pending = rows.empty()
        for path, why in found.errors:
            summary.rejects.append((path, why))
            rows.reject_row(pending, path, None, why, info)
        for cap in found.captures:
            try:
                captures.identify(cap)
            except (OSError, EOFError, ValueError) as exc:
                why = f"cannot read: {exc}"
                summary.rejects.append((", ".join(cap.names), why))
                rows.reject_row(pending, ", ".join(cap.names), None, why, info)
                continue
            if cap.capture_id in known or cap.capture_id in seen:
                summary.already += 1
                continue
            seen.add(cap.capture_id)
            if "captured_at" not in cap.meta and "captured_at" not in tags:
                cap.meta["captured_at"] = captures.file_date(cap)
            todo.append(cap)
        staging = Staging(store, ingest_id)
        try:
            _run(staging, todo, tags, info, jobs, source, pending, summary, progress)
            summary.files = staging.commit()
        except BaseException:
            staging.abort()
            raise
    finally:
        found.cleanup()
    return summary


def _run(staging: Staging, todo: list[captures.Capture], tags: dict[str, str],
         info: dict[str, str], jobs: int, source: str | None, pending: rows.Tables,
         summary: Summary, progress: Callable[[str], None] | None) -> None:
    by_id = {c.capture_id: c for c in todo}
    dates: dict[str, str] = {}
    stats: dict[str, list[CallbackStats]] = {}
    for cid, out, why, st in _results(todo, tags, info, jobs, source is not None):
        cap = by_id[cid]
        if out is None:
            reason = why or "unreadable"
            summary.rejects.append((", ".join(cap.names), reason))
            rows.reject_row(pending, ", ".join(cap.names), cid, reason, info)
            continue
        if st is not None:
            stats[cid] = st
        cyc = out["captures"]
        dates[cid] = rows.capture_date(cyc, 0) if cyc["capture_id"] else "1970-01-01"
        summary.captures += 1
        summary.cycles += len(cyc["capture_id"])
        summary.callbacks += len(out["callbacks"]["capture_id"])
        for t, cols in out.items():
            dst = pending[t]
            for c, v in cols.items():
                dst[c].extend(v)
        if progress is not None:
            progress(", ".join(cap.names))
        if len(pending["callbacks"]["capture_id"]) >= BATCH_ROWS:
            staging.write(pending, dates)
            pending = rows.empty()
    if source is not None and stats:
        _map_sources(source, stats, pending, dates, summary)
    staging.write(pending, dates)


def _results(todo: list[captures.Capture], tags: dict[str, str], info: dict[str, str],
             jobs: int, want_stats: bool) -> Iterator[tuple[str, Any, Any, Any]]:
    work = [_Job(c, tags, info, want_stats) for c in todo]
    n = jobs or min(len(os.sched_getaffinity(0)), 8)
    if n <= 1 or len(work) <= 1:
        yield from map(_parse, work)
        return
    ctx = multiprocessing.get_context("forkserver")
    # a fresh worker every 200 captures: memory stays flat over a long ingest
    with ctx.Pool(n, maxtasksperchild=200) as pool:
        yield from pool.imap(_parse, work, chunksize=4)


def _map_sources(source: str, stats: dict[str, list[CallbackStats]], pending: rows.Tables,
                 dates: dict[str, str], summary: Summary) -> None:
    names = {s.driver for st in stats.values() for s in st}
    index = build_index(source, names)
    summary.notes.extend(f"--source: {e}" for e in index.errors[:5])
    sm = pending["source_map"]
    for cid, st in stats.items():
        mapped = map_to_source(st, index)
        for (drv, dev, phase), m in sorted(mapped.mappings.items()):
            if m.source is None:
                continue
            for c, v in (("capture_id", cid), ("driver", drv), ("device", dev), ("phase", phase),
                         ("function", m.source.function), ("file", m.source.path),
                         ("line", m.source.line), ("member", m.source.member),
                         ("ops_table", m.source.table), ("via", m.source.via)):
                sm[c].append(v)
        dates.setdefault(cid, "1970-01-01")

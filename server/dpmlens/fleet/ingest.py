"""Ingest: paths -> captures (read) -> rows (model) -> staged Parquet -> committed (store).

Captures are split into chunks; a worker process parses a chunk's captures and writes their
rows into the ingest's staging folder itself, in batches of bounded size, so no process holds
more than one batch however many captures an ingest has. The parent only decides what to
read, writes the rejects, and commits.
"""

from __future__ import annotations

import gc
import lzma
import math
import multiprocessing
import os
import resource
import secrets
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from dpmlens import __version__
from dpmlens.fleet import captures, rows
from dpmlens.fleet.store import Staging, Store, staging_connection, write_batch, writer_lock
from dpmlens.traces import CallbackStats, aggregate, build_index, load_traces, map_to_source

BATCH_ROWS = 200_000  # callback rows per staged batch (~100 MB of Python lists at most)
CHUNK = 100  # captures per worker task: fewer, larger files; still several tasks per worker
RECYCLE = 400  # captures a worker parses before it is replaced
_LOCK = threading.Lock()  # the summary: the pool's task thread and the result loop write it


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
    cpu_s: float = 0.0  # parent + workers, user + system
    parent_cpu_s: float = 0.0  # of which the parent (identification, commit)
    peak_rss_mb: float = 0.0  # the largest process


@dataclass
class _Chunk:
    index: int
    caps: list[captures.Capture]
    tags: dict[str, str]
    ingest: dict[str, str]
    want_stats: bool
    staging: Path


@dataclass
class _Done:
    stored: list[tuple[str, int, int, str]]  # capture id, cycles, callbacks, capture date
    rejected: list[tuple[str, str, str]]  # capture id, names, reason
    stats: dict[str, list[CallbackStats]]
    cpu_s: float
    rss_mb: float


def _chunk(job: _Chunk) -> _Done:
    """Worker: parse a chunk of captures, write their rows into the staging folder."""
    t0 = resource.getrusage(resource.RUSAGE_SELF)
    # parsing makes millions of short-lived objects while a batch of rows stays alive: with
    # the default gen-0 threshold (700) the cyclic GC rescans them all the time (12-18% of a
    # worker's CPU, measured); reference counting frees almost everything anyway
    gc_was = gc.get_threshold()
    gc.set_threshold(50_000, 50, 100)
    lock = writer_lock(job.staging)
    con = staging_connection()
    done = _Done([], [], {}, 0.0, 0.0)
    out, dates, batch = rows.empty(), {}, 0
    try:
        for cap in job.caps:
            why = None
            try:
                ts = load_traces([str(f) for f in cap.files])
                if ts.sample_count == 0 and not ts.phase_times:
                    why = "; ".join(_named(cap, e) for e in ts.errors) \
                        or "no suspend/resume callbacks or phases"
            except Exception as exc:  # a reader bug on one capture must not stop the ingest
                why = f"internal error: {type(exc).__name__}: {exc}"
            if why is not None:
                done.rejected.append((cap.capture_id, ", ".join(cap.names), why))
                continue
            n_cb = len(out["callbacks"]["capture_id"])
            n_cy = rows.capture_rows(cap, ts, job.tags, job.ingest, out)
            cyc = out["captures"]
            dates[cap.capture_id] = (rows.capture_date(cyc, len(cyc["capture_id"]) - 1)
                                     if cyc["capture_id"] else "1970-01-01")
            done.stored.append((cap.capture_id, n_cy, len(out["callbacks"]["capture_id"]) - n_cb,
                                dates[cap.capture_id]))
            if job.want_stats:
                done.stats[cap.capture_id] = aggregate(ts)
            if len(out["callbacks"]["capture_id"]) >= BATCH_ROWS:
                write_batch(con, job.staging, f"{job.ingest['id']}-c{job.index}-{batch}", out,
                            dates)
                out, dates, batch = rows.empty(), {}, batch + 1
        if dates:
            write_batch(con, job.staging, f"{job.ingest['id']}-c{job.index}-{batch}", out, dates)
    finally:
        con.close()
        if lock is not None:
            os.close(lock)
        gc.set_threshold(*gc_was)
    t1 = resource.getrusage(resource.RUSAGE_SELF)
    done.cpu_s = (t1.ru_utime - t0.ru_utime) + (t1.ru_stime - t0.ru_stime)
    done.rss_mb = t1.ru_maxrss / 1024
    return done


def ingest(store: Store, paths: list[str], tags: dict[str, str], jobs: int = 0,
           source: str | None = None,
           progress: Callable[[str], None] | None = None) -> Summary:
    t0 = resource.getrusage(resource.RUSAGE_SELF)
    store.check(create=True)
    now = datetime.now(timezone.utc)
    ingest_id = now.strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(4)
    info = {"id": ingest_id, "at": now.isoformat(), "version": __version__}
    summary = Summary(ingest_id)
    summary.recovered = store.recover()
    migrated = store.migrate()  # an older store: histograms of its rows first
    if migrated:
        summary.notes.append(migrated)
    found = captures.find(paths)
    try:
        rejects = rows.empty()
        for path, why in found.errors:
            summary.rejects.append((path, why))
            rows.reject_row(rejects, path, None, why, info)
        todo = _identified(found.captures, store.known_ids(), tags, info, rejects, summary)
        staging = Staging(store, ingest_id)
        try:
            stats = _run(staging, todo, len(found.captures), tags, info, jobs,
                         source is not None, rejects, summary, progress)
            if source is not None and stats:
                sm = rows.empty()
                _map_sources(source, stats, sm, summary)
                staging.write({"source_map": sm["source_map"]},
                              {c: staging.dates[c] for c in stats})
            staging.write({"rejects": rejects["rejects"]}, {})
            summary.files = staging.commit()
        except BaseException:
            staging.abort()
            raise
    finally:
        found.cleanup()
    t1 = resource.getrusage(resource.RUSAGE_SELF)
    summary.parent_cpu_s = (t1.ru_utime - t0.ru_utime) + (t1.ru_stime - t0.ru_stime)
    summary.cpu_s += summary.parent_cpu_s
    summary.peak_rss_mb = max(summary.peak_rss_mb, t1.ru_maxrss / 1024)
    return summary


def _named(cap: captures.Capture, error: str) -> str:
    """A reader's "FILE: why" with FILE as the user knows it (an archive member's temporary
    path becomes `archive!member`; a one-file capture's own name is already the reject's)."""
    for f, name in zip(cap.files, cap.names, strict=True):
        if error.startswith(f"{f}: "):
            why = error[len(str(f)) + 2:]
            return why if len(cap.files) == 1 else f"{name}: {why}"
    return error


def _identified(caps: list[captures.Capture], known: set[str], tags: dict[str, str],
                info: dict[str, str], rejects: rows.Tables, summary: Summary
                ) -> Iterator[captures.Capture]:
    """The captures to parse, identified (content hash, header) one by one as the workers
    ask for them: the parent hashes while the workers parse, not before they start."""
    seen: set[str] = set()
    for cap in caps:
        try:
            captures.identify(cap)
        except (OSError, EOFError, ValueError, lzma.LZMAError) as exc:
            why = f"cannot read: {exc}"
            with _LOCK:
                summary.rejects.append((", ".join(cap.names), why))
                rows.reject_row(rejects, ", ".join(cap.names), None, why, info)
            continue
        if cap.capture_id in known or cap.capture_id in seen:
            with _LOCK:
                summary.already += 1
            continue
        seen.add(cap.capture_id)
        if "captured_at" not in cap.meta and "captured_at" not in tags:
            cap.meta["captured_at"] = captures.file_date(cap)
        yield cap


def _run(staging: Staging, todo: Iterator[captures.Capture], count: int, tags: dict[str, str],
         info: dict[str, str], jobs: int, want_stats: bool, rejects: rows.Tables,
         summary: Summary,
         progress: Callable[[str], None] | None) -> dict[str, list[CallbackStats]]:
    """`todo`: the captures, produced lazily (at most `count`)."""
    n = jobs or min(len(os.sched_getaffinity(0)), 8)
    # several chunks per worker: the first start while the parent still identifies the rest
    size = max(1, min(CHUNK, max(10, math.ceil(count / max(4 * n, 1)))))

    def chunks() -> Iterator[_Chunk]:
        batch: list[captures.Capture] = []
        index = 0
        for cap in todo:
            batch.append(cap)
            if len(batch) == size:
                yield _Chunk(index, batch, tags, info, want_stats, staging.dir)
                batch, index = [], index + 1
        if batch:
            yield _Chunk(index, batch, tags, info, want_stats, staging.dir)

    stats: dict[str, list[CallbackStats]] = {}
    for done in _results(chunks(), n, count > size, size):
        with _LOCK:
            for cid, cycles, callbacks, date in done.stored:
                staging.ids.add(cid)
                staging.dates[cid] = date
                summary.captures += 1
                summary.cycles += cycles
                summary.callbacks += callbacks
            for cid, names, why in done.rejected:
                summary.rejects.append((names, why))
                rows.reject_row(rejects, names, cid, why, info)
        stats.update(done.stats)
        summary.cpu_s += done.cpu_s
        summary.peak_rss_mb = max(summary.peak_rss_mb, done.rss_mb)
        if progress is not None:
            progress(f"{summary.captures} captures")
    return stats


def _results(chunks: Iterator[_Chunk], n: int, multi: bool, size: int) -> Iterator[_Done]:
    """The pool's task thread pulls `chunks` (so identification runs beside the workers)."""
    if n <= 1 or not multi:
        yield from map(_chunk, chunks)
        return
    ctx = multiprocessing.get_context("forkserver")
    # workers fork from a server that has imported the readers and DuckDB: a fresh worker
    # costs a fork, not a second of imports
    ctx.set_forkserver_preload(["dpmlens.fleet.ingest"])
    # a fresh worker every ~RECYCLE captures: memory stays flat over a long ingest
    with ctx.Pool(n, maxtasksperchild=max(1, RECYCLE // size)) as pool:
        yield from pool.imap_unordered(_chunk, chunks)


def _map_sources(source: str, stats: dict[str, list[CallbackStats]], out: rows.Tables,
                 summary: Summary) -> None:
    names = {s.driver for st in stats.values() for s in st}
    index = build_index(source, names)
    summary.notes.extend(f"--source: {e}" for e in index.errors[:5])
    sm = out["source_map"]
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



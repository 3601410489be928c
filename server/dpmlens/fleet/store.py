"""Store stage: immutable Parquet files under one folder, DuckDB as the engine over them.

    STORE/dpmlens-store.json                       format number (refuse newer), who made it
    STORE/<table>/capture_date=YYYY-MM-DD/<ingest>-<batch>-<n>.parquet
    STORE/.staging/<ingest>/...                    an ingest in progress (readers never look)

An ingest writes every file into its own staging folder (holding an flock on it while it
lives), then, under the store's lock, writes a journal of renames, fsyncs it, renames each
file into place and removes the staging folder. A kill or a full disk before the journal
leaves only a staging folder, which the next writer removes (its lock is free: its owner is
dead); a kill during the renames is rolled forward from the journal. Readers glob
`<table>/*/*.parquet`, so what they see is the store before or after an ingest. Files are
never rewritten; two ingests at once each land their own files, one after the other.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from dpmlens import __version__
from dpmlens.core.errors import UsageError
from dpmlens.fleet import hist
from dpmlens.fleet.schema import PARTITION, SORT, STORE_FORMAT, TABLES

MARKER = "dpmlens-store.json"
MEMORY_LIMIT = os.environ.get("DPMLENS_FLEET_MEMORY", "6GB")
STAGING = ".staging"
JOURNAL = "journal.json"


class StoreError(UsageError):
    """The store cannot be used (newer format, not a store, unwritable): one line, exit 2."""


class Store:
    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    # -- opening ---------------------------------------------------------------------------
    def check(self, create: bool = False) -> None:
        marker = self.root / MARKER
        if not marker.is_file():
            if not create:
                raise StoreError(f"{self.root}: not a dpmlens fleet store (no {MARKER}); "
                                 "create one with `dpmlens fleet ingest --store DIR CAPTURE...`")
            # another ingest creating the same store at this moment leaves its staging
            # folder, lock, marker or the marker's temporary file: not foreign content
            if self.root.exists() and any(
                    p.name not in (STAGING, ".lock", MARKER) and not p.name.startswith(
                        f".{MARKER}.") for p in self.root.iterdir()):
                raise StoreError(f"{self.root}: exists and is not a dpmlens fleet store "
                                 f"(no {MARKER}); give an empty or new folder")
            self.root.mkdir(parents=True, exist_ok=True)
            from dpmlens.core.atomic import write_text_atomic
            write_text_atomic(marker, json.dumps(
                {"format": STORE_FORMAT, "created_by": f"dpmlens {__version__}"}) + "\n")
            return
        try:
            info = json.loads(marker.read_text())
            fmt = int(info["format"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise StoreError(f"{marker}: unreadable store marker ({exc})") from None
        if fmt > STORE_FORMAT:
            raise StoreError(
                f"{self.root}: written by a newer dpmlens ({info.get('created_by', '?')}, store "
                f"format {fmt}); this dpmlens {__version__} reads formats up to {STORE_FORMAT}: "
                "upgrade dpmlens")

    def format(self) -> int:
        """The store's format number (after check())."""
        try:
            return int(json.loads((self.root / MARKER).read_text())["format"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise StoreError(f"{self.root / MARKER}: unreadable store marker ({exc})") from None

    def migrate(self) -> str | None:
        """Bring a format-1 store to this format: write `callback_hist` over every callbacks
        file there is, as one more immutable set of files, then update the marker (under the
        store's lock, so no ingest commits meanwhile). None when there was nothing to do."""
        self.check()
        self.recover()
        with self.lock():
            old = self.format()
            if old >= STORE_FORMAT:
                return None
            # below format 2, histograms can only be those of a migration killed after its
            # renames (recover() rolled them forward) and before the marker: redo them all
            for t in hist.DERIVED:
                shutil.rmtree(self.root / t, ignore_errors=True)
            staging = Staging(self, "migrate-" + secrets.token_hex(4))
            try:
                staging.con.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")
                staging.con.execute("SET threads = 2")
                files = sorted(self.files("callbacks"))
                hist.write(staging.con, files, staging.dir, staging.id)
                moved = staging.commit_locked()
            except BaseException:
                staging.abort()
                raise
            from dpmlens.core.atomic import write_text_atomic
            info = json.loads((self.root / MARKER).read_text())
            write_text_atomic(self.root / MARKER, json.dumps(
                {**info, "format": STORE_FORMAT,
                 "migrated_by": f"dpmlens {__version__}"}) + "\n")
        return (f"{self.root}: store format {old} -> {STORE_FORMAT}: duration histograms and "
                f"worst devices (callback_hist, phase_worst) of {len(files)} callbacks "
                f"files, {moved} files written")

    # -- reading ---------------------------------------------------------------------------
    def connect(self, threads: int | None = None) -> duckdb.DuckDBPyConnection:
        """A DuckDB connection with one view per table over its Parquet files."""
        self.check()
        con = duckdb.connect()
        con.execute("SET enable_progress_bar = false")  # it would write into our stdout
        # a shared machine: spill to disk rather than take 80% of the RAM (DuckDB's default)
        con.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")
        con.execute("SET preserve_insertion_order = false")
        con.execute(f"SET temp_directory = {_quote(tempfile.gettempdir() + '/dpmlens-duckdb')}")
        if threads:
            con.execute(f"SET threads = {int(threads)}")
        for table, cols in TABLES.items():
            files = sorted(self.files(table))
            if files:
                lst = ", ".join(_quote(str(f)) for f in files)
                con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet([{lst}], "
                            "hive_partitioning = true, union_by_name = true)")
            else:
                typed = ", ".join(f"CAST(NULL AS {t}) AS {c}" for c, t in cols)
                con.execute(f"CREATE VIEW {table} AS SELECT {typed}, "
                            f"CAST(NULL AS DATE) AS {PARTITION} WHERE false")
        return con

    def stamp(self, tables: tuple[str, ...] = ("captures", "callbacks", "delays")
              ) -> tuple[tuple[str, int], ...]:
        """What changes when an ingest lands: the marker's and the tables' folder mtimes (a
        file renamed into `<table>/capture_date=D/` changes that folder's). A reader that
        polls this stats a few hundred folders, never re-reads a file of an unchanged store."""
        out: list[tuple[str, int]] = []
        for p in (self.root / MARKER, *(self.root / t for t in tables)):
            try:
                out.append((p.name, p.stat().st_mtime_ns))
            except OSError:
                out.append((p.name, -1))
                continue
            if p.is_dir():
                with contextlib.suppress(OSError), os.scandir(p) as it:
                    out.extend((f"{p.name}/{e.name}", e.stat().st_mtime_ns) for e in it)
        return tuple(sorted(out))

    def files(self, table: str) -> Iterator[Path]:
        return (self.root / table).glob("*/*.parquet")

    def known_ids(self) -> set[str]:
        con = self.connect()
        try:
            rows = con.execute("SELECT DISTINCT capture_id FROM captures UNION "
                               "SELECT DISTINCT capture_id FROM rejects "
                               "WHERE capture_id IS NOT NULL").fetchall()
        finally:
            con.close()
        return {r[0] for r in rows}

    # -- writing ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        fd = os.open(self.root / ".lock", os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def recover(self) -> list[str]:
        """Finish or remove the staging folders of dead ingests; what was done, per folder."""
        done: list[str] = []
        base = self.root / STAGING
        if not base.is_dir():
            return done
        with self.lock():
            for d in sorted(base.iterdir()):
                fd = _try_lock(d / ".owner")
                if fd is None:
                    continue  # a live ingest
                workers = _try_lock(d / ".workers")
                if workers is None:  # its owner died, a worker still writes: next time
                    os.close(fd)
                    continue
                os.close(workers)
                try:
                    if (d / JOURNAL).is_file():
                        self._rename_all(d)
                        done.append(f"{d.name}: completed an interrupted commit")
                    else:
                        done.append(f"{d.name}: removed an interrupted ingest's files")
                    shutil.rmtree(d, ignore_errors=True)
                finally:
                    os.close(fd)
        return done

    def _rename_all(self, staging: Path) -> None:
        moves = json.loads((staging / JOURNAL).read_text())
        for src, dst in moves:
            s, t = staging / src, self.root / dst
            if s.exists():
                t.parent.mkdir(parents=True, exist_ok=True)
                os.replace(s, t)


class Staging:
    """One ingest's files before they are committed."""

    def __init__(self, store: Store, ingest_id: str) -> None:
        self.store = store
        self.id = ingest_id
        self.dir = store.root / STAGING / ingest_id
        self.dir.mkdir(parents=True)
        self._owner = _try_lock(self.dir / ".owner")  # held until commit/abort
        self.batches = 0
        self.ids: set[str] = set()  # capture ids written so far (by this process or workers)
        self.dates: dict[str, str] = {}  # their capture dates
        self.con = staging_connection()

    def write(self, tables: dict[str, dict[str, list[Any]]], dates: dict[str, str]) -> None:
        """Write one batch of rows from this process."""
        self.ids.update(dates)
        write_batch(self.con, self.dir, f"{self.id}-{self.batches}", tables, dates)
        self.batches += 1

    def staged(self) -> list[str]:
        return sorted(str(p.relative_to(self.dir)) for p in self.dir.glob("*/*/*.parquet"))

    def commit(self, drop: set[str] | None = None) -> int:
        """Move the staged files into the store (under its lock); `drop`: capture ids to
        leave out because another ingest committed them meanwhile. Returns files moved."""
        with self.store.lock():
            return self.commit_locked(drop)

    def commit_locked(self, drop: set[str] | None = None) -> int:
        store = self.store
        dup = (set(drop or ()) | store.known_ids()) & self.ids
        files = self.staged()
        if dup:
            self._filter(files, dup)
            files = self.staged()
        for f in files:  # the data must be on disk before the journal points at it
            _fsync(self.dir / f)
        from dpmlens.core.atomic import write_text_atomic
        write_text_atomic(self.dir / JOURNAL, json.dumps([[f, f] for f in files]))
        store._rename_all(self.dir)
        for f in {str(Path(f).parent) for f in files}:
            _fsync_dir(store.root / f)
        self.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        return len(files)

    def _filter(self, files: list[str], drop: set[str]) -> None:
        """Rewrite staged files without the rows of `drop` (rare: two ingests of one capture
        at once), then the histograms from the callbacks left. Staged files are this
        ingest's own, so rewriting them is safe."""
        self.con.register("drop_ids", {"capture_id": np.array(sorted(drop), dtype=object)})
        for f in files:
            if f.split("/", 1)[0] in hist.DERIVED:
                (self.dir / f).unlink()  # derived from the callbacks: rebuilt below
                continue
            p = self.dir / f
            tmp = p.with_suffix(".filtered")
            self.con.execute(
                f"COPY (SELECT * FROM read_parquet({_quote(str(p))}) "
                "WHERE capture_id IS NULL OR capture_id NOT IN (SELECT capture_id FROM drop_ids)) "
                f"TO {_quote(str(tmp))} (FORMAT parquet, COMPRESSION zstd)")
            n = self.con.execute(f"SELECT count(*) FROM read_parquet({_quote(str(tmp))})")
            row = n.fetchone()
            if row is None or row[0] == 0:
                tmp.unlink()
                p.unlink()
            else:
                os.replace(tmp, p)
        left = sorted(self.dir.glob("callbacks/*/*.parquet"))
        hist.write(self.con, left, self.dir, f"{self.id}-refiltered")

    def abort(self) -> None:
        self.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.con.close()
        if self._owner is not None:
            os.close(self._owner)
            self._owner = None


def writer_lock(staging_dir: Path) -> int | None:
    """A worker writing into a staging folder holds this shared lock, so a dead ingest's
    folder is not removed while one of its workers still writes (recover() needs it free)."""
    fd = os.open(staging_dir / ".workers", os.O_CREAT | os.O_RDWR, 0o644)
    fcntl.flock(fd, fcntl.LOCK_SH)
    return fd


def staging_connection() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    con.execute("SET threads = 1")
    con.execute("SET preserve_insertion_order = false")
    return con


def write_batch(con: duckdb.DuckDBPyConnection, staging_dir: Path, name: str,
                tables: dict[str, dict[str, list[Any]]], dates: dict[str, str]) -> None:
    """Write one batch of rows into a staging folder: one Parquet file per (table, capture
    date), named `<name>-<n>.parquet`; `dates` maps capture ids to their date partition."""
    ids = np.array(list(dates), dtype=object)
    day = np.array([dates[i] for i in ids], dtype=object)
    con.register("dates", {"capture_id": ids, "d": day})
    for table, cols in tables.items():
        n = len(next(iter(cols.values())))
        if n == 0:
            continue
        con.register("batch", {c: _array(v, t) for (c, t), v in
                               zip(TABLES[table], cols.values(), strict=True)})
        select = ", ".join(f"CAST(b.{c} AS {t}) AS {c}" for c, t in TABLES[table])
        if table == "rejects":
            date = "CAST(CAST(b.rejected_at AS DATE) AS VARCHAR)"
            src = "batch b"
        else:
            date = "dt.d"
            src = "batch b JOIN dates dt USING (capture_id)"
        order = f" ORDER BY {SORT[table]}" if table in SORT else ""
        out = staging_dir / table
        con.execute(
            f"COPY (SELECT {select}, {date} AS {PARTITION} FROM {src}{order}) "
            f"TO {_quote(str(out))} (FORMAT parquet, COMPRESSION zstd, "
            f"PARTITION_BY ({PARTITION}), OVERWRITE_OR_IGNORE, "
            f"FILENAME_PATTERN '{name}-{{i}}')")
        con.unregister("batch")
        if table == "callbacks":  # the batch's histograms, from the files just written
            hist.write(con, sorted(out.glob(f"*/{name}-*.parquet")), staging_dir, name)
    con.unregister("dates")


def _array(values: list[Any], sql_type: str) -> np.ndarray:
    if sql_type == "BOOLEAN":
        return np.array(values, dtype=bool)
    if sql_type == "BIGINT" and None not in values:
        return np.array(values, dtype=np.int64)
    a = np.empty(len(values), dtype=object)
    a[:] = values
    return a


def _quote(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _try_lock(path: Path) -> int | None:
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        _fsync(path)

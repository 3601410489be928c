"""Background index of the workspace's C files (function definitions, dev_pm_ops, drivers).

Two uses:
- the resolver rules use to follow helpers into other files of the same directory
  (`lookup(name) -> (FileModel, FunctionDef) | None`, docs/architecture.md);
- trace mapping anywhere in the workspace (driver name -> .pm table -> callback definition).

Parsing runs in worker *processes* at low priority (nice), so the server's event loop and the
open document's diagnostics never wait for it and the GIL is not shared. Directories of open
documents jump the queue: all their files are summarised; elsewhere only files that pass the
byte-level PM prefilter are parsed. Summaries are small (names, tables, drivers, the callback
definitions), so a whole drivers/ tree fits in memory; full FileModels are rebuilt on demand
and kept in a small LRU.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import multiprocessing
import os
import time
from collections import OrderedDict, deque
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from functools import partial
from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path

from dpmlens.config.settings import Config
from dpmlens.core.durations import format_us
from dpmlens.lsp.core import DpmlensServer, LanguageFeature
from dpmlens.lsp.documents import Document
from dpmlens.lsp.findings_store import FindingsStore
from dpmlens.lsp.index_findings import Precomputed
from dpmlens.lsp.index_worker import (
    SUFFIXES,
    FileSummary,
    findings_many,
    portable_model,
    summarize_many,
    walk_sources,
    worker_init,
)
from dpmlens.lsp.settings import Settings
from dpmlens.model.types import FileModel, FunctionDef

CHUNK = 48  # files per worker task: big enough to amortise pickling, small enough to interleave
MODEL_CACHE = 64  # models of other files kept for the resolver (tree-less ones are small)


@dataclass
class _Job:
    paths: list[str]
    prefilter: bool
    directory: str | None = None  # set for "index this whole directory" jobs
    findings: Config | None = None  # set for "compute these files' findings" jobs


class DirResolver:
    """`lookup(name)` for one document: functions defined in other files of its directory."""

    def __init__(self, index: WorkspaceIndex, path: str) -> None:
        self.index = index
        self.path = path
        self.directory = os.path.dirname(path)

    def lookup(self, name: str) -> tuple[FileModel, FunctionDef] | None:
        where = self.index.dir_functions.get(self.directory)
        if not where:
            return None
        for path in where.get(name, ()):
            if path == self.path:
                continue
            model = self.index.model_of(path)
            if model is None:
                continue
            fn = model.functions.get(name)
            if fn is not None:
                return model, fn
        return None


class WorkspaceIndex(LanguageFeature):
    name = "workspace index"

    def __init__(self, server: DpmlensServer) -> None:
        super().__init__(server)
        self.summaries: dict[str, FileSummary] = {}
        self.dir_functions: dict[str, dict[str, list[str]]] = {}  # dir -> name -> paths
        self.dirs_indexed: set[str] = set()
        self.state = "idle"  # idle | indexing | done
        self.files_seen = 0
        self.files_parsed = 0
        self.seconds = 0.0
        self.workers = max(1, min(2, (os.cpu_count() or 2)))
        self._pool: ProcessPoolExecutor | None = None
        self._queue: deque[_Job] = deque()
        self._in_flight: set[asyncio.Future[Any]] = set()
        self._models: OrderedDict[str, tuple[int, FileModel]] = OrderedDict()
        self._stat_cache: dict[str, tuple[float, int]] = {}
        self._wake: asyncio.Event | None = None
        self._scan_total = 0
        self._scan_done = 0
        self._task: asyncio.Task[None] | None = None
        self._dir_jobs: dict[str, int] = {}  # directory -> its job's chunks not back yet
        # path -> the findings the workers computed after the scan (index_findings.py)
        self.findings: dict[str, Precomputed] = {}
        self._findings_left = 0
        self._findings_t0 = 0.0
        # the findings of an earlier run, kept on disk (findings_store.py): read at start
        self.store: FindingsStore | None = None
        self._store_task: asyncio.Task[None] | None = None
        self._walked: list[str] = []  # the C files the last scan walked
        self._parsed: frozenset[str] = frozenset()  # of them, those it parsed (.c)
        server.handle(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS, self.did_change_folders)

    # -- lifecycle -------------------------------------------------------------------------

    def initialize(self) -> None:
        # Start the worker processes while the client waits for `initialize` (spawning one
        # takes tens of milliseconds of this process' time, better not on the first didOpen).
        if workspace_roots(self.server):
            pool = self._ensure_pool()
            for _ in range(self.workers):
                pool.submit(os.getpid)

    def initialized(self) -> None:
        roots = workspace_roots(self.server)
        if roots:
            loop = asyncio.get_running_loop()
            if self.server.settings.index_findings:
                self._store_task = loop.create_task(self._load_store(roots))
            loop.create_task(self.scan(roots))

    async def _compute_findings_after_store(self) -> None:
        """The findings pass, once the store is read (a small workspace's scan can end first:
        its pass would then compute what the store holds)."""
        if self._store_task is not None:
            await asyncio.wait([self._store_task])
        self.compute_findings()

    async def _load_store(self, roots: list[str]) -> None:
        """Read the findings an earlier run kept for these folders (in a thread: a kernel's
        drivers/ keeps a few MB of JSON)."""

        def load() -> tuple[FindingsStore, str | None]:
            store = FindingsStore.for_roots(roots)
            return store, store.load()

        try:
            store, problem = await asyncio.get_running_loop().run_in_executor(None, load)
        except Exception as e:  # (the store is an optimisation: the index works without it)
            self.server.log("warning", f"dpmlens: stored findings not read: {e}")
            return
        if problem is not None:
            self.server.log("warning", f"dpmlens: stored findings not used: {problem}")
        self.store = store
        if len(store):
            self.server.log("info", f"dpmlens: read the stored findings of {len(store)} files "
                                    f"({store.path})")

    def settings_changed(self, old: Settings, new: Settings) -> None:
        if old.index_findings and not new.index_findings:  # turned off: the pass stops
            self._queue = deque(job for job in self._queue if job.findings is None)
            self.findings.clear()
            self.store = None
            self._findings_left = 0
        elif new.index_findings and not old.index_findings:
            loop = asyncio.get_running_loop()
            if roots := workspace_roots(self.server):
                self._store_task = loop.create_task(self._load_store(roots))
            if self.state == "done":  # turned on after the scan: the pass runs now
                loop.create_task(self._compute_findings_after_store())

    def document_opened(self, doc: Document) -> None:
        self.want_directory(os.path.dirname(doc.path))

    def document_saved(self, doc: Document) -> None:
        self.refresh_file(doc.path)

    def files_changed(self, changes: Sequence[types.FileEvent]) -> None:
        for change in changes:
            path = to_fs_path(change.uri)
            if path:
                with self.server.guard("workspace index (watched files)"):
                    self.refresh_file(path)

    def did_change_folders(self, params: types.DidChangeWorkspaceFoldersParams) -> None:
        added = [to_fs_path(f.uri) for f in params.event.added]
        roots = [r for r in added if r and os.path.isdir(r)]
        if roots:
            asyncio.get_running_loop().create_task(self.scan(roots))

    # -- queries ---------------------------------------------------------------------------

    def resolver_for(self, path: str) -> DirResolver:
        return DirResolver(self, path)

    def source_of(self, path: str) -> bytes | None:
        doc = self.server.documents.by_path(path)
        if doc is not None:
            return doc.source
        try:
            with open(path, "rb") as fh:
                return fh.read()
        except OSError:
            return None

    def model_of(self, path: str) -> FileModel | None:
        """Full model of a file: the open document's latest one, else rebuilt from disk."""
        model = self.server.documents.model_of(path)
        if model is not None:
            return model
        mtime = self._mtime(path)
        if mtime is None:
            return None
        hit = self._models.get(path)
        if hit is not None and hit[0] == mtime:
            self._models.move_to_end(path)
            return hit[1]
        from dpmlens.model.build import build_model

        source = self.source_of(path)
        if source is None:
            return None
        model = portable_model(build_model(path, source))  # no tree: 64 of them stay small
        self._remember(path, mtime, model)
        return model

    def _mtime(self, path: str) -> int | None:
        """mtime of `path`, stat()ed at most once a second (rules look helpers up hundreds of
        times per analysis; a changed file is also reported by watchers and saves)."""
        now = time.monotonic()
        seen = self._stat_cache.get(path)
        if seen is not None and now - seen[0] < 1.0:
            return seen[1]
        try:
            mtime = os.stat(path).st_mtime_ns
        except OSError:
            self._stat_cache.pop(path, None)
            return None
        self._stat_cache[path] = (now, mtime)
        return mtime

    def _remember(self, path: str, mtime_ns: int, model: FileModel) -> None:
        self._models[path] = (mtime_ns, model)
        self._models.move_to_end(path)
        while len(self._models) > MODEL_CACHE:
            self._models.popitem(last=False)

    def pm_summaries(self) -> Iterable[FileSummary]:
        return (s for s in self.summaries.values() if s.pm_tables or s.drivers)

    def status(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "files_seen": self.files_seen,
            "files_parsed": self.files_parsed,
            "files_with_pm": sum(1 for _ in self.pm_summaries()),
            "seconds": round(self.seconds, 2),
        }

    # -- updates ---------------------------------------------------------------------------

    def _store(self, s: FileSummary) -> None:
        self._stat_cache.pop(s.path, None)
        old = self.summaries.get(s.path)
        self.summaries[s.path] = s
        self._models.pop(s.path, None)
        d = os.path.dirname(s.path)
        where = self.dir_functions.get(d)
        if where is None:
            return
        if old is not None:
            for n in (*old.public, *old.static):
                paths = where.get(n)
                if paths and s.path in paths:
                    paths.remove(s.path)
        visible = s.public + s.static if s.path.endswith(".h") else s.public
        for n in visible:
            where.setdefault(n, []).append(s.path)

    def remove(self, path: str) -> None:
        self._stat_cache.pop(path, None)
        self.findings.pop(path, None)
        if self.store is not None:
            self.store.forget(path)
        old = self.summaries.pop(path, None)
        self._models.pop(path, None)
        where = self.dir_functions.get(os.path.dirname(path))
        if old is not None and where is not None:
            for n in (*old.public, *old.static):
                paths = where.get(n)
                if paths and path in paths:
                    paths.remove(path)

    def want_directory(self, directory: str) -> None:
        """Index every C file of `directory` before anything else queued."""
        if directory in self.dirs_indexed:
            return
        self.dirs_indexed.add(directory)
        self.dir_functions[directory] = {}
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            return
        paths = [os.path.join(directory, n) for n in names if n.endswith(SUFFIXES)]
        # Files the workspace scan already summarised only need to be linked in.
        for p in paths:
            if p in self.summaries:
                self._store(self.summaries[p])
        todo = [p for p in paths if p not in self.summaries]
        self._queue.appendleft(_Job(todo, prefilter=False, directory=directory))
        self._kick()

    def refresh_file(self, path: str) -> None:
        if not path.endswith(SUFFIXES):
            return
        if not os.path.exists(path):
            self.remove(path)
            return
        self._queue.appendleft(_Job([path], prefilter=False))
        self._kick()

    # -- scheduling ------------------------------------------------------------------------

    def _kick(self) -> None:
        if self._wake is not None:
            self._wake.set()
        if self._task is None or self._task.done():
            with contextlib.suppress(RuntimeError):
                self._task = asyncio.get_running_loop().create_task(self._drain())

    def _ensure_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            ctx = multiprocessing.get_context("spawn")
            self._pool = ProcessPoolExecutor(
                max_workers=self.workers, mp_context=ctx, initializer=worker_init,
                initargs=(os.getpid(),),
            )
        return self._pool

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        # One task per worker (+1 ready): a directory job never waits behind a long queue.
        limit = self.workers + 1
        while self._queue or self._in_flight:
            while self._queue and len(self._in_flight) < limit:
                job = self._queue.popleft()
                # (a findings job is one task: its files are grouped by directory)
                step = CHUNK if job.findings is None else max(1, len(job.paths))
                for i in range(0, max(1, len(job.paths)), step):
                    part = job.paths[i : i + step]
                    task: tuple[Any, ...] = (summarize_many, part, job.prefilter)
                    if job.findings is not None:
                        task = (findings_many, part, job.findings,
                                self._parsed.intersection(part), self._stored(part, job.findings))
                    try:
                        fut: Future[Any] = self._ensure_pool().submit(*task)
                    except BrokenProcessPool:  # a worker died (crashed on a file): new pool
                        self._reset_pool()
                        fut = self._ensure_pool().submit(*task)
                    if job.directory is not None:
                        self._dir_jobs[job.directory] = self._dir_jobs.get(job.directory, 0) + 1
                    afut = asyncio.wrap_future(fut, loop=loop)
                    afut.add_done_callback(partial(self._done, job=job, n=len(part)))
                    self._in_flight.add(afut)
            if self._in_flight:
                await asyncio.wait(self._in_flight, return_when=asyncio.FIRST_COMPLETED)

    def _config(self, paths: list[str]) -> Config | None:
        """The configuration the server would analyse `paths[0]` with: the workers compute
        the findings of each file with it (index_findings.py; a file of the chunk under
        another `.dpmlens.toml` fails the check at didOpen). None: none computed."""
        if not paths:
            return None
        from dpmlens.lsp.project_config import ProjectConfigs

        try:
            return self.server.get_feature(ProjectConfigs).config_for(paths[0])
        except Exception:  # (a server assembled without it: no findings in the index)
            return None

    def precomputed(self, path: str) -> Precomputed | None:
        """The findings the workers computed for `path`, or those an earlier run kept, if any
        (check them with `holds`)."""
        found = self.findings.get(path)
        if found is None and self.store is not None and self.server.settings.index_findings:
            config = self._config([path])
            found = self.store.get(path, config) if config is not None else None
        return found

    def _stored(self, paths: list[str], config: Config) -> dict[str, Precomputed] | None:
        if self.store is None:
            return None
        found = {p: pre for p in paths if (pre := self.store.get(p, config)) is not None}
        return found or None

    def compute_findings(self) -> None:
        """Queue, behind everything else, the findings of every .c file the scan parsed, and
        of those it did not whose text the rules' prefilter rejects (index_findings.py: a
        didOpen of one with that text needs no parse), a directory's files together; the end
        is logged."""
        if not self.server.settings.index_findings:
            return  # (the user turned the background pass off: didOpen analyses)
        parsed = frozenset(p for p, s in self.summaries.items() if p.endswith(".c") and not s.error)
        by_dir: dict[str, list[str]] = {}
        for path in sorted(parsed.union(p for p in self._walked if p.endswith(".c"))):
            if path in parsed or path not in self.summaries:  # (not: one it could not read)
                by_dir.setdefault(os.path.dirname(path), []).append(path)
        # (at most CHUNK files a task, a few seconds: a directory job of a document opened
        # meanwhile waits for the tasks in flight)
        part: list[str] = []
        chunks: list[list[str]] = []
        for paths in by_dir.values():
            if part and len(part) + len(paths) > CHUNK:
                chunks.append(part)
                part = []
            for i in range(0, len(paths), CHUNK):
                part = part + paths[i : i + CHUNK]
                if len(part) >= CHUNK:
                    chunks.append(part)
                    part = []
        if part:
            chunks.append(part)
        jobs = [(c, self._config(c)) for c in chunks]
        jobs = [(c, config) for c, config in jobs if config is not None]
        if not jobs:
            return
        self._findings_left = len(jobs)
        self._findings_t0 = time.perf_counter()
        self._parsed = parsed
        for c, config in jobs:
            self._queue.append(_Job(c, prefilter=False, findings=config))
        self._kick()

    def directory_pending(self, directory: str) -> bool:
        """Is a directory job of `directory` queued or running (its end reruns the open
        documents' diagnostics: `index_updated`)?"""
        return self._dir_jobs.get(directory, 0) > 0 or any(
            job.directory == directory for job in self._queue)

    def _done(self, fut: asyncio.Future[Any], *, job: _Job, n: int) -> None:
        self._in_flight.discard(fut)
        if job.directory is not None:
            left = self._dir_jobs.get(job.directory, 1) - 1
            if left > 0:
                self._dir_jobs[job.directory] = left
            else:
                self._dir_jobs.pop(job.directory, None)
        if job.findings is not None:
            self._findings_done(fut)
            return
        if fut.cancelled():
            return
        exc = fut.exception()
        if exc is not None:
            self.server.log("warning", f"dpmlens index: a worker failed on one of "
                                       f"{job.paths[0]}...: {exc}; those files are skipped")
            return  # a broken pool is replaced at the next submit (_drain)
        for s, model in fut.result():
            self._store(s)
            if model is not None:
                self._remember(s.path, s.mtime_ns, model)
            self.files_parsed += 1
            if s.error:
                self.server.log("debug", f"{s.path}: not indexed: {s.error}")
        if job.prefilter:
            self._scan_done += n
        else:
            # A directory of an open document (or a changed file) is ready: rerun diagnostics
            # so helpers in other files are followed.
            self.server.features.index_updated(job.directory)

    def _findings_done(self, fut: asyncio.Future[Any]) -> None:
        """A findings task is back (its files are opened the usual way if it failed)."""
        if not self.server.settings.index_findings:
            return  # (turned off while it ran)
        if not fut.cancelled() and fut.exception() is None:
            for path, pre in fut.result():
                if pre is not None:
                    self.findings[path] = pre
        self._findings_left -= 1
        if self._findings_left == 0:
            took = format_us((time.perf_counter() - self._findings_t0) * 1e6)
            kept = sum(1 for pre in self.findings.values() if pre.earlier)
            self.server.log("info", f"dpmlens: computed the findings of {len(self.findings)} "
                                    f"files in {took} (for didOpen; {kept} kept from an "
                                    f"earlier run)")
            asyncio.get_running_loop().create_task(self._save_store())

    async def _save_store(self) -> None:
        """Keep the findings of the files the scan parsed for the next run (in a thread)."""
        store = self.store
        if store is None:
            return
        kept = {p: pre for p, pre in self.findings.items() if p in self._parsed}
        try:
            n = await asyncio.get_running_loop().run_in_executor(None, store.save, kept)
        except Exception as e:  # (a full disk, no cache directory: the next run computes them)
            self.server.log("warning", f"dpmlens: findings not stored in {store.path}: {e}")
            return
        self.server.log("info", f"dpmlens: stored the findings of {n} files ({store.path})")

    async def scan(self, roots: list[str]) -> None:
        """Walk the workspace and queue every C file behind directory jobs; report progress."""
        t0 = time.perf_counter()
        self.state = "indexing"
        token = await self._progress_begin()
        loop = asyncio.get_running_loop()
        # The walk runs in a worker process too: in a thread it would hold the GIL against
        # the open document's first analysis.
        files = await loop.run_in_executor(self._ensure_pool(), walk_sources, roots)
        self._walked = files
        self.files_seen = len(files)
        self._scan_total = len(files)
        self._scan_done = 0
        for i in range(0, len(files), CHUNK):
            self._queue.append(_Job(files[i : i + CHUNK], prefilter=True))
        self._kick()
        last = -1
        while self._task is not None and not self._task.done():
            await asyncio.sleep(0.25)
            pct = int(100 * self._scan_done / max(1, self._scan_total))
            if token is not None and pct != last:
                last = pct
                self._progress(
                    token,
                    types.WorkDoneProgressReport(
                        message=f"{self._scan_done}/{self._scan_total} files", percentage=pct
                    ),
                )
        self.seconds = time.perf_counter() - t0
        self.state = "done"
        # The summaries live as long as the server: take them out of the cyclic GC's scans,
        # so a full collection during typing does not walk the whole index.
        gc.collect()
        gc.freeze()
        n_pm = sum(1 for _ in self.pm_summaries())
        msg = index_summary(self.files_seen, self.seconds, self.files_parsed, n_pm)
        self.server.log("info", f"dpmlens: {msg}")
        if token is not None:
            self._progress(token, types.WorkDoneProgressEnd(message=msg))
        self.server.features.workspace_indexed()
        await self._compute_findings_after_store()

    async def _progress_begin(self) -> str | None:
        caps = self.server.client_capabilities.window
        if caps is None or not caps.work_done_progress:
            return None
        token = f"dpmlens-index-{id(self)}"
        try:
            await self.server.work_done_progress.create_async(token)
        except Exception as e:  # the client said no: index anyway, silently
            self.server.log("debug", f"no progress for the index: {e}")
            return None
        self._progress(
            token,
            types.WorkDoneProgressBegin(
                title="dpmlens: indexing C files", percentage=0, cancellable=False
            ),
        )
        return token

    def _progress(self, token: str, value: Any) -> None:
        with self.server.guard("index progress"):
            if isinstance(value, types.WorkDoneProgressBegin):
                self.server.work_done_progress.begin(token, value)
            elif isinstance(value, types.WorkDoneProgressReport):
                self.server.work_done_progress.report(token, value)
            else:
                self.server.work_done_progress.end(token, value)

    def _reset_pool(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    def shutdown(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None


def index_summary(files_seen: int, seconds: float, files_parsed: int, n_pm: int) -> str:
    return (f"indexed {files_seen} C files in {format_us(seconds * 1e6)} "
            f"({files_parsed} parsed, {n_pm} with PM tables or drivers)")


def workspace_roots(server: DpmlensServer) -> list[str]:
    ws = server.workspace
    roots = [to_fs_path(f.uri) for f in ws.folders.values()]
    if not roots and ws.root_path:
        roots = [ws.root_path]
    return [r for r in roots if r and os.path.isdir(r)]

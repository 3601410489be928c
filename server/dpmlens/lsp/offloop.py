"""Analyses too big for the event loop run in a worker process.

Everything the server answers (hover, code actions, edits of other documents, cancel requests)
waits while the event loop analyses a document; for a typical driver that is milliseconds, but
a generated 24 MB register header takes seconds. A document of `big_bytes()` or more is
therefore analysed in a separate process (`analyze_elsewhere`):

- the loop stays free: the result comes back as a callback on the loop;
- a newer version supersedes a run: its result is dropped (`Diagnostics` checks the text), and
  only the latest text is queued while one runs;
- a run over the per-file budget (`limits.FILE_SECONDS`) is killed, and the document is
  reported as skipped with the limit and how to raise it, as `dpmlens check` does.

Out of process there is no workspace index: helpers in other files are not followed for such
a document, and hover and CodeLens see an empty model for it (its findings are all there).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass

from dpmlens.config.settings import Config
from dpmlens.core import limits
from dpmlens.core.findings import Finding
from dpmlens.engine.process_pool import close_pool

_DEFAULT_BIG = 1 << 20  # 1 MiB: the largest drivers/*.c of 6.12 analyse in ~0.3 s on the loop


def big_bytes() -> int:
    """Documents of this size or more are analysed out of the event loop
    (DPMLENS_OFFLOOP_BYTES overrides, e.g. for tests)."""
    raw = os.environ.get("DPMLENS_OFFLOOP_BYTES", "")
    return int(raw) if raw.isdigit() else _DEFAULT_BIG


def analyze_elsewhere(path: str, source: bytes, config: Config) -> list[Finding]:
    """What the worker process runs: the CLI's analysis of one file (no resolver)."""
    from dpmlens.engine.analyze import analyze_source

    return analyze_source(path, source, config)


@dataclass
class _Job:
    uri: str
    path: str
    source: bytes
    config: Config
    done: Callable[[bytes, list[Finding] | None, str | None], None]


class OffLoop:
    """One worker process, one run at a time, the latest text of each document queued."""

    def __init__(self) -> None:
        self._pool: ProcessPoolExecutor | None = None
        self._running: tuple[_Job, Future[list[Finding]], asyncio.TimerHandle] | None = None
        self._queued: dict[str, _Job] = {}

    def submit(
        self, uri: str, path: str, source: bytes, config: Config,
        done: Callable[[bytes, list[Finding] | None, str | None], None],
    ) -> None:
        """Analyse `source`; later `done(source, findings, None)` on the loop, or
        `done(source, None, reason)` when it failed or ran over the budget."""
        self._queued[uri] = _Job(uri, path, source, config, done)  # replaces an older text
        if self._running is None:
            self._next()

    def pending(self, uri: str) -> bytes | None:
        """The text of `uri` queued or being analysed, if any."""
        if uri in self._queued:
            return self._queued[uri].source
        if self._running is not None and self._running[0].uri == uri:
            return self._running[0].source
        return None

    def close(self) -> None:
        self._queued.clear()
        if self._running is not None:
            self._running[2].cancel()
            self._running = None
        self._kill()

    # -- internals ------------------------------------------------------------------------

    def _next(self) -> None:
        if not self._queued:
            return
        uri = next(iter(self._queued))
        job = self._queued.pop(uri)
        loop = asyncio.get_running_loop()
        future = self._ensure_pool().submit(analyze_elsewhere, job.path, job.source, job.config)
        budget = limits.FILE_SECONDS.value
        timer = loop.call_later(budget, self._over_budget, future)
        self._running = (job, future, timer)
        future.add_done_callback(lambda f: loop.call_soon_threadsafe(self._finished, f))

    def _finished(self, future: Future[list[Finding]]) -> None:
        if self._running is None or self._running[1] is not future:
            return  # killed over the budget: reported already
        job, _f, timer = self._running
        timer.cancel()
        self._running = None
        try:
            findings = future.result()
        except Exception as exc:  # a crashed worker: say so for this document, go on
            self._kill()
            job.done(job.source, None, f"the analysis failed: {type(exc).__name__}: {exc}")
        else:
            job.done(job.source, findings, None)
        self._next()

    def _over_budget(self, future: Future[list[Finding]]) -> None:
        if self._running is None or self._running[1] is not future:
            return
        job = self._running[0]
        self._running = None
        self._kill()
        job.done(job.source, None, limits.FILE_SECONDS.exceeded("analysis:"))
        self._next()

    def _ensure_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            from dpmlens.lsp.index_worker import worker_init

            self._pool = ProcessPoolExecutor(
                max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                initializer=worker_init, initargs=(os.getpid(),),
            )
        return self._pool

    def _kill(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            close_pool(pool, kill=True)

"""`check_paths`: run the engine over files and directories, in parallel.

The parent walks the paths and hands out file names only; each worker reads its files, drops
those the byte prefilter shows cannot hold PM code, analyzes the rest, and sends back just the
findings (small frozen dataclasses) plus the source lines they point at — never trees or models.
"""

from __future__ import annotations

import io
import itertools
import multiprocessing
import os
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, CancelledError, Future, ProcessPoolExecutor, wait
from concurrent.futures import TimeoutError as FutureTimeout  # not the builtin on 3.10
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from typing import Any

from dpmlens.config.settings import Config
from dpmlens.core import limits
from dpmlens.core.findings import Finding
from dpmlens.core.inputs import LimitExceeded, read_source
from dpmlens.core.nesting import too_deep
from dpmlens.engine.process_pool import close_pool
from dpmlens.engine.walk import InputError, iter_files
from dpmlens.syntax.prefilter import WordFilter

# Below this many files one worker process: a bigger pool costs more than it saves.
_POOL_MIN_FILES = 16
_BINARY_PROBE = 8192
# Files per task sent to a worker: large enough to keep IPC rare, small enough to balance.
_CHUNK = 32


@dataclass
class CheckRun:
    findings: list[Finding]
    errors: list[InputError]
    files_checked: int = 0  # read and considered (including those the prefilter dropped)
    files_analyzed: int = 0  # passed the prefilter and were parsed
    bytes_checked: int = 0
    lines_checked: int = 0
    elapsed: float = 0.0
    jobs: int = 1
    baseline_suppressed: int = 0  # findings hidden because the baseline already has them
    quiet_hidden: int = 0  # latency costs the severity policy leaves out (--all-costs)
    notes: list[str] = field(default_factory=list)  # what was not read (a partial tree)
    # (path, line) -> that source line, for printers that quote the code (checkpatch, SARIF).
    source_lines: dict[tuple[str, int], str] = field(default_factory=dict)

    @property
    def usage_errors(self) -> list[InputError]:
        return [e for e in self.errors if e.usage]


@dataclass
class _FileResult:
    path: str
    findings: list[Finding]
    error: InputError | None
    nbytes: int
    nlines: int
    analyzed: bool
    lines: dict[int, str]


@dataclass(frozen=True)
class _Job:
    """What every file of a run is checked with; handed to each worker once."""

    config: Config
    rules: list[Any] | None
    prefilter: WordFilter
    count_lines: bool

    def check(self, path: str) -> _FileResult:
        return check_file(path, self.config, self.rules, self.prefilter, self.count_lines)


_worker_job: _Job | None = None


def _init_worker(job: _Job) -> None:
    global _worker_job
    _worker_job = job


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def check_file(
    path: str,
    config: Config,
    rules: list[Any] | None = None,
    prefilter: WordFilter | None = None,
    count_lines: bool = True,
) -> _FileResult:
    """Read, prefilter and analyze one file; every failure becomes an InputError.

    `rules`: the rules to run (default: all of `rules/`, as `engine.analyze_source` does);
    `prefilter`: the byte prefilter (default: `engine.prefilter(config, rules)`);
    `count_lines`: count
    the file's lines (one more pass over every byte, ~3 % of a run; only checkpatch's
    `total:` line needs them).
    """
    from dpmlens.engine.analyze import prefilter as engine_prefilter
    from dpmlens.engine.parted import analyze_sized
    from dpmlens.rules.loader import load_rules

    try:
        source = read_bytes(path)
    except OSError as exc:
        error = InputError(path, f"cannot read: {exc.strerror or exc}")
        return _FileResult(path, [], error, 0, 0, False, {})
    except LimitExceeded as exc:
        return _FileResult(path, [], InputError(path, f"{exc}; skipped"), 0, 0, False, {})
    nbytes, nlines = len(source), source.count(b"\n") if count_lines else 0
    if b"\0" in source[:_BINARY_PROBE]:
        error = InputError(path, "binary file (contains NUL bytes), skipped")
        return _FileResult(path, [], error, nbytes, 0, False, {})
    if prefilter is None:
        prefilter = engine_prefilter(config, rules)
    if not prefilter.matches(source):
        return _FileResult(path, [], None, nbytes, nlines, False, {})
    if (deep := too_deep(source)) is not None:  # the analysis budget (nesting.py)
        return _FileResult(path, [], InputError(path, f"{deep}, skipped"), nbytes, nlines, True,
                           {})
    try:
        findings = analyze_sized(path, source, config, rules or load_rules(), prefilter)
    except RecursionError:
        error = InputError(path, "too deeply nested to analyze, skipped")
        return _FileResult(path, [], error, nbytes, nlines, True, {})
    except Exception as exc:  # one bad file must not end a run over 20,000
        if os.environ.get("DPMLENS_DEBUG"):
            raise
        error = InputError(path, f"internal error, file skipped: {type(exc).__name__}: {exc}")
        return _FileResult(path, [], error, nbytes, nlines, True, {})
    return _FileResult(path, findings, None, nbytes, nlines, True, _quoted_lines(source, findings))


def read_bytes(path: str) -> bytes:
    """The whole file (inputs.read_source: refused above limits.SOURCE_BYTES)."""
    return read_source(path)


def _quoted_lines(source: bytes, findings: list[Finding]) -> dict[int, str]:
    if not findings:
        return {}
    wanted = {f.span.line for f in findings}
    last = max(wanted)
    out: dict[int, str] = {}
    # line by line up to the last one wanted: a list of every line of a 20 MB source would be
    # the largest thing this process holds
    for n, line in enumerate(io.BytesIO(source), 1):
        if n in wanted:
            out[n] = line.rstrip(b"\n").rstrip(b"\r").decode("utf-8", errors="replace")
        if n >= last:
            break
    return out


def _check_chunk(paths: list[str]) -> list[_FileResult]:
    assert _worker_job is not None
    return [_worker_job.check(path) for path in paths]


def check_paths(
    paths: Iterable[str],
    config: Config,
    jobs: int | None = None,
    *,
    keep_file: Callable[[str], bool] | None = None,
    rules: list[Any] | None = None,
    count_lines: bool = True,
    cache: Any = None,
) -> CheckRun:
    """Check every .c/.h under `paths` with `jobs` processes (default: all cores).

    `keep_file` narrows the walk (e.g. `--diff`: only files the revision changed); `rules`
    replaces the default rule set (all of `rules/`); without `count_lines`,
    `CheckRun.lines_checked` stays 0; `cache` (a `result_cache.ResultCache`) answers for the
    files it has seen and records the others (the caller saves it).
    """
    started = time.monotonic()
    walk_errors: list[InputError] = []
    files: Iterator[str] = iter_files(list(paths), walk_errors)
    if keep_file is not None:
        files = filter(keep_file, files)
    jobs = max(1, jobs or default_jobs())
    run = CheckRun(findings=[], errors=[], jobs=jobs)
    from dpmlens.engine.analyze import prefilter

    job = _Job(config, rules, prefilter(config, rules), count_lines)  # built once, in the parent
    if cache is None:
        results = _results(files, job, jobs)
    else:
        results = cache.results_for(files, job, lambda todo: _results(todo, job, jobs))
    for result in results:
        run.files_checked += 1
        run.bytes_checked += result.nbytes
        run.lines_checked += result.nlines
        run.files_analyzed += result.analyzed
        run.findings.extend(_configured(result.findings, config))
        if result.error is not None:
            run.errors.append(result.error)
        for line, text in result.lines.items():
            run.source_lines[(result.path, line)] = text
    run.errors.extend(walk_errors)
    run.findings.sort(key=Finding.sort_key)
    run.errors.sort(key=lambda e: (not e.usage, e.path))
    run.elapsed = time.monotonic() - started
    return run


def _configured(findings: list[Finding], config: Config) -> list[Finding]:
    """Apply rule on/off and severity overrides, whether or not the engine already did."""
    out = []
    for f in findings:
        if not config.is_enabled(f.rule):
            continue
        severity = config.severity_for(f.rule, f.severity)
        out.append(f if severity == f.severity else replace(f, severity=severity))
    return out


def _results(files: Iterator[str], job: _Job, jobs: int) -> Iterator[_FileResult]:
    first = list(itertools.islice(files, _POOL_MIN_FILES))
    if not first:
        return
    # Import the engine (and whatever it loads at import time) before forking, so the workers
    # share it copy-on-write instead of each importing it again; and what the rules read once
    # per tree (the tree's headers), read here once rather than in every worker.
    from dpmlens.engine.analyze import warm

    if jobs > 1 and len(first) >= _POOL_MIN_FILES:  # (one worker would read it just as once)
        warm(first[0], job.config, job.rules)

    if jobs == 1 or len(first) < _POOL_MIN_FILES:
        jobs = 1
        if multiprocessing.current_process().daemon:  # may not fork: no budget then
            for path in itertools.chain(first, files):
                yield job.check(path)
            return
    # `-j 1` and small runs analyze in one worker process too, for the per-file time budget
    # (limits.FILE_SECONDS): a process is the one thing that can be stopped anywhere, in a
    # long tree-sitter parse (C code that Python signals such as SIGALRM cannot interrupt
    # until it returns; tree-sitter 0.26.1's progress_callback is ignored for a bytes
    # source) or in a rule's Python loop, on any thread. A fork costs ~20 ms per run.
    yield from _Pool(jobs, job).run(itertools.chain(first, files))


def _chunks(files: Iterator[str], size: int) -> Iterator[list[str]]:
    while chunk := list(itertools.islice(files, size)):
        yield chunk


class _Pool:
    """Worker processes fed with chunks of file names as the walk yields them.

    A worker that dies (a crash in native code, the OOM killer) must not hang or end the run:
    the chunks it took down are re-checked one file per task in a fresh worker, and the file
    that kills it again is reported as an InputError. A worker that stops (SIGSTOP, a file
    that never finishes) is treated the same way: when no chunk finishes within a file's time
    budget (limits.FILE_SECONDS), the chunks in flight are re-checked one file per task, each
    with that budget, and a file over it is skipped and named.
    """

    def __init__(self, jobs: int, job: _Job) -> None:
        self.jobs, self.job = jobs, job
        self.budget = limits.FILE_SECONDS.value
        methods = multiprocessing.get_all_start_methods()
        self.context = multiprocessing.get_context("fork" if "fork" in methods else None)

    def _executor(self, workers: int) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            workers,
            mp_context=self.context,
            initializer=_init_worker,
            initargs=(self.job,),
        )

    def run(self, files: Iterator[str]) -> Iterator[_FileResult]:
        suspects: list[str] = []
        executor = self._executor(self.jobs)
        pending: dict[Future[list[_FileResult]], list[str]] = {}
        try:
            for chunk in _chunks(files, _CHUNK):
                # Keep a few chunks per worker in flight: enough to never starve, few enough
                # that a crash sends little back for re-checking.
                while len(pending) >= 4 * self.jobs:
                    if (yield from self._harvest(pending, suspects)):
                        close_pool(executor, kill=True)
                        executor = self._executor(self.jobs)
                pending[executor.submit(_check_chunk, chunk)] = chunk
            while pending:
                if (yield from self._harvest(pending, suspects)):
                    close_pool(executor, kill=True)
                    executor = self._executor(self.jobs)
        finally:
            close_pool(executor)
        yield from self._isolate(suspects)

    def _harvest(
        self, pending: dict[Future[list[_FileResult]], list[str]], suspects: list[str]
    ) -> Generator[_FileResult, None, bool]:
        """Yield the results of finished chunks; True if the pool broke or stalled."""
        done, _ = wait(pending, timeout=self.budget, return_when=FIRST_COMPLETED)
        if not done:  # nothing finished within a file's budget: a worker is stuck
            for chunk in pending.values():
                suspects.extend(chunk)
            pending.clear()
            return True
        broken = False
        for future in done:
            chunk = pending.pop(future)
            try:
                yield from future.result()
            except (BrokenProcessPool, CancelledError):
                suspects.extend(chunk)
                broken = True
        return broken

    def _isolate(self, suspects: list[str]) -> Iterator[_FileResult]:
        executor: ProcessPoolExecutor | None = None
        try:
            for path in suspects:
                executor = executor or self._executor(1)
                try:
                    yield from executor.submit(_check_chunk, [path]).result(self.budget)
                except (BrokenProcessPool, FutureTimeout) as exc:
                    close_pool(executor, kill=True)
                    executor = None
                    message = (
                        "the analysis crashed its worker process; file skipped"
                        if isinstance(exc, BrokenProcessPool)
                        else limits.FILE_SECONDS.exceeded("no result in time:") + "; skipped"
                    )
                    yield _FileResult(path, [], InputError(path, message), 0, 0, False, {})
        finally:
            if executor is not None:
                close_pool(executor)

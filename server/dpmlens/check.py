"""`check_paths`: run the engine over files and directories, in parallel.

The parent walks the paths and hands out file names only; each worker reads its files, drops
those the byte prefilter shows cannot hold PM code, analyzes the rest, and sends back just the
findings (small frozen dataclasses) plus the source lines they point at — never trees or models.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from dpmlens.config import Config
from dpmlens.findings import Finding
from dpmlens.walk import InputError, iter_files

# Below this many files a process pool costs more than it saves.
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


_worker_state: tuple[Config, list[Any] | None] | None = None


def _init_worker(config: Config, rules: list[Any] | None) -> None:
    global _worker_state
    _worker_state = (config, rules)


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def check_file(path: str, config: Config, rules: list[Any] | None = None) -> _FileResult:
    """Read, prefilter and analyze one file; every failure becomes an InputError.

    `rules`: the rules to run (default: all of `rules/`, as `engine.analyze_source` does).
    """
    from dpmlens.engine import analyze_model
    from dpmlens.model.build import build_model
    from dpmlens.syntax.prefilter import may_contain_pm

    try:
        with open(path, "rb") as handle:
            source = handle.read()
    except OSError as exc:
        error = InputError(path, f"cannot read: {exc.strerror or exc}")
        return _FileResult(path, [], error, 0, 0, False, {})
    nbytes, nlines = len(source), source.count(b"\n")
    if b"\0" in source[:_BINARY_PROBE]:
        error = InputError(path, "binary file (contains NUL bytes), skipped")
        return _FileResult(path, [], error, nbytes, 0, False, {})
    if not may_contain_pm(source):
        return _FileResult(path, [], None, nbytes, nlines, False, {})
    try:
        findings = analyze_model(build_model(path, source), config, None, rules)
    except RecursionError:
        error = InputError(path, "too deeply nested to analyze, skipped")
        return _FileResult(path, [], error, nbytes, nlines, True, {})
    except Exception as exc:  # one bad file must not end a run over 20,000
        if os.environ.get("DPMLENS_DEBUG"):
            raise
        error = InputError(path, f"internal error, file skipped: {type(exc).__name__}: {exc}")
        return _FileResult(path, [], error, nbytes, nlines, True, {})
    return _FileResult(path, findings, None, nbytes, nlines, True, _quoted_lines(source, findings))


def _quoted_lines(source: bytes, findings: list[Finding]) -> dict[int, str]:
    if not findings:
        return {}
    wanted = {f.span.line for f in findings}
    lines = source.split(b"\n")
    return {
        n: lines[n - 1].rstrip(b"\r").decode("utf-8", errors="replace")
        for n in wanted
        if 0 < n <= len(lines)
    }


def _check_in_worker(path: str) -> _FileResult:
    assert _worker_state is not None
    return check_file(path, *_worker_state)


def check_paths(
    paths: Iterable[str],
    config: Config,
    jobs: int | None = None,
    *,
    keep_file: Callable[[str], bool] | None = None,
    rules: list[Any] | None = None,
) -> CheckRun:
    """Check every .c/.h under `paths` with `jobs` processes (default: all cores).

    `keep_file` narrows the walk (e.g. `--diff`: only files the revision changed); `rules`
    replaces the default rule set (all of `rules/`).
    """
    started = time.monotonic()
    walk_errors: list[InputError] = []
    files: Iterator[str] = iter_files(list(paths), walk_errors)
    if keep_file is not None:
        files = filter(keep_file, files)
    jobs = max(1, jobs or default_jobs())
    run = CheckRun(findings=[], errors=[], jobs=jobs)
    for result in _results(files, config, jobs, rules):
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


def _results(
    files: Iterator[str], config: Config, jobs: int, rules: list[Any] | None
) -> Iterator[_FileResult]:
    first = list(itertools.islice(files, _POOL_MIN_FILES))
    if jobs == 1 or len(first) < _POOL_MIN_FILES:
        for path in itertools.chain(first, files):
            yield check_file(path, config, rules)
        return
    # Import the engine (and whatever it loads at import time) before forking, so the workers
    # share it copy-on-write instead of each importing it again.
    import dpmlens.engine  # noqa: F401
    import dpmlens.syntax.prefilter  # noqa: F401

    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    # The walk feeds the pool as it goes (the pool's feeder thread pulls from the generator),
    # so workers start on the first files while the tree is still being listed.
    with context.Pool(jobs, initializer=_init_worker, initargs=(config, rules)) as pool:
        yield from pool.imap_unordered(_check_in_worker, itertools.chain(first, files), _CHUNK)

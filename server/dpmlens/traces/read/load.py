"""`load_traces(paths) -> TraceSet`: read every file, never raise for bad input."""

from __future__ import annotations

import gzip
import lzma
import os
import zlib
from collections.abc import Callable
from pathlib import Path

from dpmlens.core import inputs
from dpmlens.traces.model import names
from dpmlens.traces.model.sample import Collector, FileReport
from dpmlens.traces.model.traceset import TraceSet, resolve_names
from dpmlens.traces.read import detect, dmesg, ftrace, perfetto

_PARSERS = {"dmesg": dmesg.parse, "ftrace": ftrace.parse, "perfetto": perfetto.parse}


def load_traces(
    paths: list[str | os.PathLike[str]],
    progress: Callable[[str, int, int], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> TraceSet:
    """Read files and directories (recursively; sleepgraph -multi trees) into one TraceSet.

    Cycles are numbered across all files. A sleepgraph test's X_dmesg.txt is skipped when its
    X_ftrace.txt has the callbacks (the same suspend would count twice). `progress(path, i, n)`
    is called before each file; `cancelled()` stops between files.
    """
    ts = TraceSet()
    entries, errors = detect.expand(paths)
    ts.errors.extend(errors)
    # ftrace before dmesg so that a dmesg can see whether its ftrace twin had callbacks.
    entries.sort(key=lambda e: (detect.sleepgraph_pair(e[0]) is not None, str(e[0])))
    by_path: dict[Path, FileReport] = {}
    loaded_from: set[Path] = set()
    dirs = {d for _, _, d in entries if d is not None}
    for i, (path, named, directory) in enumerate(entries):
        if cancelled is not None and cancelled():
            ts.errors.append("loading cancelled")
            break
        if progress is not None:
            progress(str(path), i, len(entries))
        twin = detect.sleepgraph_pair(path)
        if twin is not None and by_path.get(twin) is not None and by_path[twin].samples:
            rep = FileReport(str(path), "dmesg")
            rep.notes.append(f"same test as {twin.name}, which has the callbacks: skipped so "
                             "the suspend is not counted twice")
            if ts.store.ambiguous:
                _harvest(path, ts)
            ts.files.append(rep)
            by_path[path] = rep
            continue
        rep = _load_one(path, ts, named)
        if rep is None or (not named and not rep.error and rep.samples == 0
                           and rep.cycles == 0 and rep.rpm_events == 0):
            # found in a directory and not a trace (or a text quoting a few log lines, as
            # kernel documentation does): not an error
            ts.ignored.append(str(path))
            continue
        by_path[path] = rep
        ts.files.append(rep)
        if directory is not None:
            loaded_from.add(directory)
        if rep.error:
            ts.errors.append(f"{path}: {rep.error}")
    for d in sorted(dirs - loaded_from):
        if not (cancelled is not None and cancelled()):
            ts.errors.append(f"{d}: {detect.NO_TRACES}")
    resolve_names(ts)
    return ts


def _harvest(path: Path, ts: TraceSet) -> None:
    try:
        with detect.open_stream(path) as stream:
            names.harvest_dmesg(stream.read(64 << 20), ts.store)
    except (OSError, EOFError, zlib.error, inputs.LimitExceeded):
        pass


def _load_one(path: Path, ts: TraceSet, named: bool = True) -> FileReport | None:
    rep = FileReport(str(path))
    try:
        rep.format = detect.detect(path)
    except detect.FormatError as exc:
        if not named:
            return None
        rep.error = str(exc)
        return rep
    except OSError as exc:
        rep.error = exc.strerror or str(exc)
        return rep
    coll = Collector(rep, ts.store, ts.cycles)
    try:
        with detect.open_stream(path) as stream:
            _PARSERS[rep.format](stream, coll)
    except perfetto.PerfettoUnavailable as exc:
        rep.error = str(exc)
    except (EOFError, gzip.BadGzipFile, zlib.error, lzma.LZMAError) as exc:
        rep.error = f"compressed data is truncated or corrupt ({exc}); kept what was read"
    except OSError as exc:
        rep.error = f"read error: {exc.strerror or exc}"
    except inputs.LimitExceeded as exc:
        rep.error = f"{exc}; kept what was read"
    except MemoryError:
        rep.error = "out of memory while reading"
    except Exception as exc:  # a parser bug on one capture must not lose the others
        if os.environ.get("DPMLENS_DEBUG"):
            raise
        rep.error = f"internal error, kept what was read: {type(exc).__name__}: {exc}"
    ts.cycles += coll.finish()
    return rep


__all__ = ["load_traces"]

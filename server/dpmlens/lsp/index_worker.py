"""The workspace index's worker side: runs in the pool processes, never in the server.

Each task reads and parses a chunk of files and sends back small summaries (and, for a
directory of an open document, tree-less models the resolver can use as they are).
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import threading
import time
from dataclasses import dataclass, field, replace

from dpmlens.config.settings import Config
from dpmlens.core import inputs, limits
from dpmlens.core.nesting import too_deep
from dpmlens.lsp.index_findings import (
    DirModels,
    Listings,
    Precomputed,
    nothing_to_find,
    precompute,
)
from dpmlens.model.types import DriverStruct, FileModel, FunctionDef, PmTable

SUFFIXES = (".c", ".h")


@dataclass(frozen=True)
class FileSummary:
    path: str
    mtime_ns: int
    public: tuple[str, ...]  # non-static function definitions
    static: tuple[str, ...]  # static function definitions (visible to others only in headers)
    pm_tables: dict[str, PmTable] = field(default_factory=dict)
    drivers: tuple[DriverStruct, ...] = ()
    callbacks: dict[str, FunctionDef] = field(default_factory=dict)  # named by tables/drivers
    error: str | None = None


def worker_init(server_pid: int) -> None:
    # fd 1 of the server is the protocol pipe: make sure nothing a worker prints lands there.
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    with contextlib.suppress(OSError):
        os.nice(10)
    # A server that exits without joining its pool (pygls exits from inside the event loop;
    # a kill or a crash cannot clean up at all) must not leave workers behind: leave with it.
    # (The server's pid comes as an argument: it may be gone before this runs at all.)
    def watch_parent() -> None:
        while os.getppid() == server_pid:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch_parent, name="dpmlens-parent-watch", daemon=True).start()


def summarize(
    path: str, source: bytes | None = None, mtime_ns: int = 0, keep_model: bool = False
) -> tuple[FileSummary, FileModel | None]:
    """The summary of one file and, with `keep_model`, a tree-less model to ship back."""
    from dpmlens.model.build import build_model

    try:
        if source is None:
            st = os.stat(path)
            mtime_ns = st.st_mtime_ns
            if not stat.S_ISREG(st.st_mode):  # a FIFO would block the worker for ever
                err = f"{inputs.kind(st.st_mode)}, skipped"
                return FileSummary(path, mtime_ns, (), (), error=err), None
            if st.st_size > limits.SOURCE_BYTES.value:
                err = limits.SOURCE_BYTES.exceeded("too large:") + "; skipped"
                return FileSummary(path, mtime_ns, (), (), error=err), None
            with open(path, "rb") as fh:
                source = fh.read()
        if (deep := too_deep(source)) is not None:
            return FileSummary(path, mtime_ns, (), (), error=deep), None
        model = build_model(path, source)
        shipped = portable_model(model) if keep_model else None
    except OSError as e:
        err = f"cannot read: {e.strerror or e}"
        return FileSummary(path, mtime_ns, (), (), error=err), None
    except Exception as e:  # a model bug on one file must not stop the index
        return FileSummary(path, mtime_ns, (), (), error=f"{type(e).__name__}: {e}"), None
    return summary_of(model, mtime_ns), shipped


def findings_many(
    paths: list[str],
    config: Config,
    parsed: frozenset[str] | None = None,
    stored: dict[str, Precomputed] | None = None,
) -> list[tuple[str, Precomputed | None]]:
    """Worker task, after the workspace scan: the findings of each .c file as the server
    would publish them on its didOpen (index_findings.py). In directory order: the files of
    a directory are read once for the helpers. A file the scan did not parse (no PM words:
    not in `parsed`, when given) gets them only when the rules' prefilter says there are none.
    `stored`: findings kept from an earlier run (findings_store.py); one that still holds for
    the file's text is taken as it is, without a parse.
    """
    from dpmlens.model.build import build_model

    out: list[tuple[str, Precomputed | None]] = []
    listings = Listings()
    for path in paths:
        pre = None
        try:
            stamp = listings.stamp(path)  # (before the text is read: see Listings)
            with open(path, "rb") as fh:
                source = fh.read()
            old = stored.get(path) if stored else None
            if old is not None and old.holds(path, source, config, stamp):
                out.append((path, old))
                continue
            # the rules' prefilter first: a file it rejects needs no model (the scan parses
            # on its own, wider words)
            pre = nothing_to_find(path, source, config, stamp)
            if pre is None and (parsed is None or path in parsed) and (
                    len(source) <= limits.SOURCE_BYTES.value and too_deep(source) is None):
                pre = precompute(path, source, build_model(path, source), config, _DIRS, stamp)
        except Exception:  # (OSError, a model bug: the open analyses it the usual way)
            pre = None
        out.append((path, pre))
    _DIRS.clear()  # (the models of a directory are big: not kept between tasks)
    return out


def visible_model(path: str) -> tuple[frozenset[str], FileModel | None]:
    """What the server's resolver finds in `path` once its directory is indexed: the names
    the directory job's summary makes visible (non-static; any in a header), and its model."""
    s, model = summarize(path, keep_model=True)
    return frozenset(s.public + s.static if path.endswith(".h") else s.public), model


_DIRS = DirModels(visible_model)  # per worker process: the directories being precomputed


def portable_model(model: FileModel) -> FileModel:
    """A picklable copy for the resolver: all call sites extracted, no tree, no loader.

    Building it here, in the worker, spares the server's event loop the parse of every helper
    file the rules follow (rules that need another file's tree reparse it themselves).
    """
    return FileModel(
        path=model.path, source=model.source, functions=model.functions,
        calls=list(model.calls), pm_tables=model.pm_tables, drivers=model.drivers,
        defines=model.defines, tree=None,
    )


_MODNAMES: dict[str, dict[str, str]] = {}  # per worker: directory -> stem -> KBUILD_MODNAME


def effective_drivers(model: FileModel) -> tuple[DriverStruct, ...]:
    """Driver structs named as the running kernel names them (what traces carry).

    `build_model` takes KBUILD_MODNAME from the file stem; a multi-file module is named by the
    directory's Makefile (carl9170's usb.c registers "carl9170", not "usb"). Resolved here,
    where the source is at hand, because the summaries do not keep it.
    """
    from dpmlens.traces.source.mapping import effective_name, file_modname, module_names

    if not model.drivers:
        return ()
    directory = os.path.dirname(model.path)
    mods = _MODNAMES.get(directory)
    if mods is None:
        mods = _MODNAMES[directory] = module_names(directory)
    modname = file_modname(model.path, mods)
    return tuple(
        replace(drv, name=effective_name(model, drv, modname, {})) for drv in model.drivers
    )


def summary_of(model: FileModel, mtime_ns: int) -> FileSummary:
    named: set[str] = set()
    for table in model.pm_tables.values():
        named.update(m.function for m in table.members if m.function)
    for drv in model.drivers:
        named.update(v for v in drv.legacy.values() if v)
        if drv.probe:
            named.add(drv.probe)
    intern = sys.intern
    return FileSummary(
        path=model.path,
        mtime_ns=mtime_ns,
        public=tuple(intern(n) for n, f in model.functions.items() if not f.is_static),
        static=tuple(intern(n) for n, f in model.functions.items() if f.is_static),
        pm_tables=dict(model.pm_tables),
        drivers=effective_drivers(model),
        callbacks={n: model.functions[n] for n in named if n in model.functions},
    )


def summarize_many(
    paths: list[str], prefilter: bool
) -> list[tuple[FileSummary, FileModel | None]]:
    """Worker task. Prefiltered (workspace scan): only files with PM words are parsed.
    Otherwise (a directory of an open document): every file, with its model for the resolver."""
    from dpmlens.model.keywords import index_filter

    out = []
    for path in paths:
        if prefilter:
            try:
                st = os.stat(path)
                if not stat.S_ISREG(st.st_mode) or st.st_size > limits.SOURCE_BYTES.value:
                    continue
                with open(path, "rb") as fh:
                    data = fh.read()
            except OSError:
                continue
            if not index_filter().matches(data):
                continue
            out.append(summarize(path, data, st.st_mtime_ns))
        else:
            out.append(summarize(path, keep_model=True))
    return out



def walk_sources(roots: list[str]) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for n in sorted(filenames):
                if n.endswith(SUFFIXES):
                    p = os.path.join(dirpath, n)
                    if p not in seen:
                        seen.add(p)
                        out.append(p)
    return out

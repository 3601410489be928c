"""Findings the workspace index computes for its files, for a didOpen that needs no parse.

Once the scan has ended (its summaries first, as before), the index's workers analyse every
.c file it parsed, a directory's files together, behind every other job: the rules run the
way the server's full analysis runs them once the file's directory is indexed, with a resolver that
finds helpers in the other files of the directory (`DirLookup`, which answers as
`workspace_index.DirResolver` does with the whole directory summarised). The findings are
kept by the server, keyed by what they depend on:

    pre = precompute(path, source, model, config, models)   # in the worker
    pre.holds(path, source, config)                          # in the server, at didOpen

A document opened with the very text the worker read (a content hash), the same configuration,
a directory whose C files have not changed since (size and mtime of each) and the same local
headers elsewhere gets these findings published at once; the server's own analysis, which the
next edits need, runs after.

Not precomputed (None): a helper defined in two files of the directory (which one the server
finds depends on the order it indexed them), a helper file over SIBLING_BYTES holding the
name, a rule's failure (the server's analysis then reports it the usual way). A file the
rules' prefilter rejects gets () (`nothing_to_find`: also those the scan did not parse).
"""

from __future__ import annotations

import hashlib
import os
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from dpmlens.config.settings import Config
from dpmlens.core.findings import Finding
from dpmlens.engine.walk import SOURCE_SUFFIXES
from dpmlens.model.types import FileModel, FunctionDef

SIBLING_BYTES = 1 << 20  # a helper file this big is not summarised for another's findings
MODELS_KEPT = 16  # models of helper files a worker keeps while computing findings

# (file name, size, mtime_ns) of each C file of a directory but the analysed one
Stamp = tuple[tuple[str, int, int], ...]


@dataclass(frozen=True)
class Precomputed:
    digest: bytes  # of the text analysed
    config: Config
    stamp: Stamp  # the directory's other C files then
    findings: tuple[Finding, ...]
    headers: Stamp = ()  # the local headers it read elsewhere (`#include "../x.h"`), then
    # read from the store an earlier run kept (findings_store.py), not computed in this one
    earlier: bool = field(default=False, compare=False)

    def holds(
        self, path: str, source: bytes, config: Config, stamp: Stamp | None = None
    ) -> bool:
        """Are these the findings of a full analysis of `source` at `path` now? (`stamp`: the
        directory's, if the caller listed it before reading `source`.)"""
        return (
            digest(source) == self.digest
            and config == self.config
            and (directory_stamp(path) if stamp is None else stamp) == self.stamp
            and files_stamp(h for h, _s, _m in self.headers) == self.headers
        )


def digest(source: bytes) -> bytes:
    return hashlib.blake2b(source, digest_size=20).digest()


def directory_stamp(path: str) -> Stamp:
    """What the findings of `path` may read of its directory (helpers, sibling files, local
    headers): name, size and mtime of every other C file there (every one: `dir/`)."""
    directory, me = os.path.split(path)
    out = []
    try:
        with os.scandir(directory or ".") as it:
            for entry in it:
                if entry.name == me or not entry.name.endswith(SOURCE_SUFFIXES):
                    continue
                try:
                    st = entry.stat()
                except OSError:
                    continue
                out.append((entry.name, st.st_size, st.st_mtime_ns))
    except OSError:
        return ()
    return tuple(sorted(out))


class Listings:
    """Each directory's C files listed once (a worker's task): the stamp of each of its files
    without a listing per file (amdgpu's 567 files would stat 567 x 567 entries). Taken before
    the files are read, so a change made since can only make a stamp older than the text:
    such findings fail `holds` at didOpen, never pass it wrongly."""

    def __init__(self) -> None:
        self._dirs: dict[str, Stamp] = {}

    def stamp(self, path: str) -> Stamp:
        directory, me = os.path.split(path)
        listing = self._dirs.get(directory)
        if listing is None:
            listing = self._dirs[directory] = directory_stamp(os.path.join(directory, ""))
        return tuple(row for row in listing if row[0] != me)


def files_stamp(paths: Iterable[str]) -> Stamp:
    """(path, size, mtime_ns) of each file, in order; (path, -1, -1) for one missing."""
    out = []
    for p in paths:
        try:
            st = os.stat(p)
            out.append((p, st.st_size, st.st_mtime_ns))
        except OSError:
            out.append((p, -1, -1))
    return tuple(out)


class DirLookup:
    """`lookup(name)` over the other C files of a file's directory, summarised as the index's
    directory job summarises them (index_worker.summarize): a function is found where the
    file's summary makes it visible (non-static, or any in a header). A name visible in two
    files sets `unsure` (the server's answer would depend on its indexing order), and so does
    a file over SIBLING_BYTES that holds the name (a register header of megabytes: not parsed
    for one file's first diagnostics)."""

    def __init__(self, path: str, models: DirModels) -> None:
        self.path = path
        self.models = models
        self.unsure = False

    def lookup(self, name: str) -> tuple[FileModel, FunctionDef] | None:
        key = name.encode("latin-1", "replace")
        hits: list[tuple[FileModel, FunctionDef]] = []
        for path in self.models.files(self.path):
            text = self.models.text(path)
            if path == self.path or key not in text:
                continue
            if len(text) > SIBLING_BYTES:
                self.unsure = True
                continue
            if name not in self.models.visible(path):
                continue
            model = self.models.model(path)
            fn = model.functions.get(name) if model is not None else None
            if model is not None and fn is not None:
                hits.append((model, fn))
        if len(hits) > 1:
            self.unsure = True
        return hits[0] if hits else None


# a file's summary as the directory job makes it: (the names it makes visible, its model)
Summarize = Callable[[str], tuple[frozenset[str], FileModel | None]]


class DirModels:
    """The C files of the directories a worker is analysing, read and summarised once each
    (a task takes a directory's files one after another: the last one is kept)."""

    def __init__(self, summarize: Summarize) -> None:
        self._summarize = summarize
        # directory -> its C files, sorted -> (text, the names visible once summarised)
        self._dirs: dict[str, dict[str, list[object]]] = {}
        self._stamps: dict[str, Stamp] = {}  # directory -> its C files when first read
        # the last models found helpers in (summarised again when needed after: a directory
        # of hundreds of files would hold hundreds of models)
        self._models: OrderedDict[str, FileModel | None] = OrderedDict()

    def clear(self) -> None:
        self._dirs.clear()
        self._stamps.clear()
        self._models.clear()

    def freshen(self, directory: str) -> None:
        """Forget what was read of `directory` if one of its C files changed since."""
        now = directory_stamp(os.path.join(directory, ""))
        if self._stamps.get(directory, now) != now:
            self._dirs.pop(directory, None)
        self._stamps[directory] = now

    def _dir(self, path: str) -> dict[str, list[object]]:
        directory = os.path.dirname(path)
        hit = self._dirs.get(directory)
        if hit is None:
            try:
                names = sorted(os.listdir(directory or "."))
            except OSError:
                names = []
            hit = {os.path.join(directory, n): [None, None]
                   for n in names if n.endswith(SOURCE_SUFFIXES)}
            while self._dirs:  # (one directory at a time)
                self._stamps.pop(old := next(iter(self._dirs)), None)
                self._dirs.pop(old)
            self._models.clear()
            self._dirs[directory] = hit
        return hit

    def files(self, path: str) -> list[str]:
        return list(self._dir(path))

    def text(self, path: str) -> bytes:
        slot = self._dir(path)[path]
        if slot[0] is None:
            try:
                with open(path, "rb") as fh:
                    slot[0] = fh.read()
            except OSError:
                slot[0] = b""
        text = slot[0]
        assert isinstance(text, bytes)
        return text

    def visible(self, path: str) -> frozenset[str]:
        slot = self._dir(path)[path]
        if slot[1] is None:
            slot[1], model = self._summarize(path)
            self._keep(path, model)
        return slot[1]  # type: ignore[return-value]

    def model(self, path: str) -> FileModel | None:
        if path in self._models:
            self._models.move_to_end(path)
            return self._models[path]
        model = self._summarize(path)[1]
        self._keep(path, model)
        return model

    def _keep(self, path: str, model: FileModel | None) -> None:
        self._models[path] = model
        while len(self._models) > MODELS_KEPT:
            self._models.popitem(last=False)


def nothing_to_find(
    path: str, source: bytes, config: Config, stamp: Stamp | None = None
) -> Precomputed | None:
    """No findings, when the rules' prefilter rejects `source` (a file without PM code: its
    open needs neither a parse nor an analysis); None when it does not. (`stamp`: the
    directory's, listed before `source` was read; else listed now.)"""
    from dpmlens.engine.analyze import prefilter

    if prefilter(config).matches(source):
        return None
    return Precomputed(digest(source), config,
                       directory_stamp(path) if stamp is None else stamp, ())


def precompute(
    path: str, source: bytes, model: FileModel, config: Config, models: DirModels,
    stamp: Stamp | None = None,
) -> Precomputed | None:
    """The findings of a full analysis of `model` (of `source` at `path`) with the helpers of
    its directory (read through `models`), as the server would publish them; None when that
    cannot be vouched for. (A source the rules' prefilter rejects: `nothing_to_find`, before
    a model is built.) `stamp`: the directory's, if listed before `source` was read (else
    listed now); a change since then gives None."""
    from dpmlens.engine.analyze import analyze_model

    stamp = directory_stamp(path) if stamp is None else stamp
    models.freshen(os.path.dirname(path))
    resolver = DirLookup(path, models)
    try:
        findings = analyze_model(model, config, resolver)
    except Exception:  # (the server's own analysis reports a rule's failure)
        return None
    if resolver.unsure or directory_stamp(path) != stamp:
        return None
    here = os.path.dirname(path)
    read = model.loader.header_files() if model.loader is not None else {}
    headers = files_stamp(sorted(h for h in read if os.path.dirname(h) != here))
    return Precomputed(digest(source), config, stamp, tuple(findings), headers)

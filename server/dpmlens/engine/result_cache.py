"""A result cache for `dpmlens check`: an unchanged tree is not analyzed again.

One pack per rule set + configuration + dpmlens build (`<cache>/v1/<key>.json`) holds:
  - `files`: absolute directory -> file name -> [size, mtime_ns, inode, content sha256, local
    #includes, racy, line count if the prefilter drops it]; a file whose stat matches is not
    read at all (git's index does the same), unless it was modified within a few seconds of
    being indexed;
  - `results`: file key -> the file's result (findings, quoted lines, counts), where the file
    key hashes the file's content AND everything else its findings may depend on: the content
    of the other `.c` files of its directory (rules.sibling_waits reads them), of the local
    headers it includes (model.headers reads their #defines), and the kernel version of its
    tree (rules.sleep_slack reads the top Makefile). A touched but unchanged file hashes to the
    same key and is not analyzed again.

Safe under concurrent runs: a pack is replaced atomically (`atomic.write_text_atomic`) after
merging what is on disk, so two runs at once lose at most some entries, never corrupt one.
Bounded: at most MAX_RESULTS results and MAX_FILES files per pack (least recently used go
first) and MAX_PACKS packs (oldest go first). The directory carries a CACHEDIR.TAG so backup
tools skip it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import re
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from dpmlens import __version__
from dpmlens.core import limits
from dpmlens.core.atomic import write_text_atomic
from dpmlens.core.findings import ChainStep, Finding, Fix, Severity, Span, TextEdit

FORMAT = 1
MAX_RESULTS = 150_000
MAX_FILES = 150_000
MAX_PACKS = 8
_BINARY_PROBE = 8192
_RACY_SECONDS = 3.0
_LOCAL_INCLUDE = re.compile(rb'#[ \t]*include[ \t]*"([^"\n]+\.h)"')
_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by dpmlens.\n"
    "# For information about cache directory tags, see https://bford.info/cachedir/\n"
)


def default_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "dpmlens"


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()


def build_fingerprint() -> str:
    """dpmlens's version and code, the rule files and tables, the tree-sitter queries and the
    parser: what results depend on besides the input (an edit during development must not
    reuse old results)."""
    from dpmlens.core.paths import grammars_dir, rules_dir

    h = hashlib.sha256(__version__.encode())
    package = Path(__file__).resolve().parents[1]  # all of dpmlens/, not only engine/
    for root in (package, rules_dir(), grammars_dir()):
        for path in sorted(root.rglob("*")):
            if path.suffix in (".py", ".yaml", ".json", ".scm") and path.is_file():
                h.update(str(path.relative_to(root)).encode())
                h.update(path.read_bytes())
    try:
        import tree_sitter_c

        h.update(str(getattr(tree_sitter_c, "__file__", "")).encode())
    except ImportError:  # pragma: no cover - a dependency
        pass
    return h.hexdigest()


def config_text(config: Any) -> str:
    """A configuration as stable text (two equal configurations give the same)."""
    return json.dumps(dataclasses.asdict(config), sort_keys=True, default=_plain)


def run_key(config: Any, rules: list[Any] | None, count_lines: bool) -> str:
    """The pack's key: build + configuration + rule set + what a result holds."""
    settings = config_text(config)
    ids = "all" if rules is None else ",".join(sorted(r.id for r in rules))
    return _digest(str(FORMAT), build_fingerprint(), settings, ids, str(count_lines))[:24]


def _plain(value: Any) -> Any:
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    return str(value)


# --- findings <-> JSON (paths equal to the file's own are stored as ""; also the editor's
# findings store, lsp/findings_store.py) ---------------------------------------------------


def _span(s: Span) -> list[int]:
    return [s.line, s.column, s.end_line, s.end_column]


def _path_out(path: str, own: str) -> str:
    return "" if path == own else path


def finding_out(f: Finding, own: str) -> list[Any]:
    chain = [[s.function, _path_out(s.path, own), _span(s.span), s.note] for s in f.chain]
    fixes = [
        [x.title, [[_path_out(e.path, own), _span(e.span), e.new_text] for e in x.edits]]
        for x in f.fixes
    ]
    return [f.rule, f.kernel_type, int(f.severity), _path_out(f.path, own), _span(f.span),
            f.message, f.function, f.phase, chain, fixes, list(f.tags)]  # fmt: skip


def finding_in(d: list[Any], own: str) -> Finding:
    rule, ktype, sev, path, span, message, function, phase, chain, fixes, tags = d
    return Finding(
        rule, ktype, Severity(sev), path or own, Span(*span), message, function, phase,
        tuple(ChainStep(fn, p or own, Span(*sp), note) for fn, p, sp, note in chain),
        tuple(Fix(t, tuple(TextEdit(p or own, Span(*sp), nt) for p, sp, nt in e))
              for t, e in fixes),
        tuple(tags),
    )  # fmt: skip


class ResultCache:
    def __init__(self, directory: str | os.PathLike[str], key: str) -> None:
        self.root = Path(directory)
        self.pack = self.root / f"v{FORMAT}" / f"{key}.json"
        self.files: dict[str, dict[str, list[Any]]] = {}  # directory -> name -> entry
        self.results: dict[str, list[Any]] = {}
        self.used: dict[str, float] = {}  # result key -> last use (in this pack)
        self.dirty = False
        self.now = time.time()
        self._dirsig: dict[str, str] = {}
        self._dirs: dict[str, str] = {}  # directory as spelled -> absolute
        self._seen: dict[tuple[str, str], list[Any]] = {}  # entries checked in this run
        self._headers: dict[tuple[str, str], str] = {}  # (directory, #include) -> its hash
        self._pending: dict[str, str] = {}  # path -> file key, for results to store
        self.hits = self.misses = 0
        self._load()

    # --- the pack on disk ---------------------------------------------------------------

    def _load(self) -> None:
        try:
            data = json.loads(self.pack.read_bytes())
        except (OSError, ValueError):
            return  # no pack yet, or a broken one: start empty (it is only a cache)
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            return
        self.files = data.get("files", {})
        self.results = data.get("results", {})
        self.used = data.get("used", {})

    def save(self) -> None:
        """Merge with what other runs wrote meanwhile and replace the pack atomically."""
        if not self.dirty:
            return
        try:
            self.pack.parent.mkdir(parents=True, exist_ok=True)
            tag = self.root / "CACHEDIR.TAG"
            if not tag.exists():
                write_text_atomic(tag, _TAG)
            mine = (self.files, self.results, self.used)
            self.files, self.results, self.used = {}, {}, {}
            self._load()  # the current pack, maybe newer than the one this run read
            for directory, names in mine[0].items():
                self.files.setdefault(directory, {}).update(names)
            self.results.update(mine[1])
            self.used.update(mine[2])
            self._evict()
            doc = {"format": FORMAT, "files": self.files, "results": self.results,
                   "used": self.used}  # fmt: skip
            write_text_atomic(self.pack, json.dumps(doc, separators=(",", ":")))
            self._evict_packs()
        except OSError:
            pass  # a read-only or full cache directory must not fail the check
        self.dirty = False

    def _evict(self) -> None:
        if len(self.results) > MAX_RESULTS:
            keep = sorted(self.results, key=lambda k: self.used.get(k, 0.0))[-MAX_RESULTS:]
            self.results = {k: self.results[k] for k in keep}
        self.used = {k: v for k, v in self.used.items() if k in self.results}
        total = sum(len(names) for names in self.files.values())
        for directory in list(self.files):  # oldest directories first
            if total <= MAX_FILES:
                break
            total -= len(self.files.pop(directory))

    def _evict_packs(self) -> None:
        packs = sorted(self.pack.parent.glob("*.json"), key=_mtime)
        for old in packs[:-MAX_PACKS]:
            with contextlib.suppress(OSError):
                old.unlink()

    # --- content identity ---------------------------------------------------------------

    def _split(self, path: str) -> tuple[str, str]:
        """(absolute directory, file name); os.path.abspath per file costs a getcwd()."""
        head, _, name = path.rpartition(os.sep)
        directory = self._dirs.get(head)
        if directory is None:
            directory = self._dirs[head] = os.path.abspath(head or os.curdir)
        return directory, name

    def _entry(self, directory: str, name: str) -> tuple[list[Any] | None, bytes | None]:
        """The file's index entry, refreshed if its stat changed (None if unreadable), and its
        bytes if they had to be read for that (once per run; then only the entry)."""
        seen = self._seen.get((directory, name))
        if seen is not None:
            return seen, None
        absolute = os.path.join(directory, name)
        try:
            st = os.stat(absolute)
        except (OSError, ValueError):  # ValueError: a NUL byte (an #include's name)
            return None, None
        if not stat.S_ISREG(st.st_mode):
            return None, None  # a FIFO would block the open below; the walk reports it
        if st.st_size > limits.SOURCE_BYTES.value:
            return None, None  # not read whole here either; the worker names the limit
        names = self.files.get(directory)
        entry = names.get(name) if names is not None else None
        data = None
        if entry is None or entry[:3] != [st.st_size, st.st_mtime_ns, st.st_ino] or entry[5]:
            try:
                with open(absolute, "rb") as fh:
                    data = fh.read()
            except OSError:
                return None, None
            old, entry = entry, self._record(directory, name, st, data)
            if old is not None and old[3] == entry[3]:
                entry[6] = old[6]  # touched, not changed: the prefilter's answer holds
        self._seen[(directory, name)] = entry
        return entry, data

    def _record(self, directory: str, name: str, st: os.stat_result, data: bytes) -> list[Any]:
        includes = sorted({m.group(1).decode("latin-1") for m in _LOCAL_INCLUDE.finditer(data)})
        # "Racy" (git's word): modified so recently that a second write within the file
        # system's timestamp granularity could keep size, mtime and inode; hashed again
        # next time instead of trusting its stat.
        racy = st.st_mtime_ns >= (self.now - _RACY_SECONDS) * 1e9
        digest = hashlib.sha256(data).hexdigest()[:32]
        # The last field: None, or the line count when the byte prefilter drops these bytes
        # (their result is empty whatever the other files say).
        entry = [st.st_size, st.st_mtime_ns, st.st_ino, digest, includes, racy, None]
        self.files.setdefault(directory, {})[name] = entry
        self.dirty = True
        return entry

    def _hash(self, directory: str, name: str) -> str | None:
        entry, _ = self._entry(directory, name)
        return entry[3] if entry is not None else None

    def _directory_signature(self, directory: str) -> str:
        """The .c files of a directory (sibling_waits reads them) and its tree's kernel
        version (sleep_slack reads the top Makefile)."""
        sig = self._dirsig.get(directory)
        if sig is None:
            from dpmlens.rules.sleep_slack import tree_version

            try:
                names = sorted(n for n in os.listdir(directory) if n.endswith(".c"))
            except OSError:
                names = []
            parts = [f"{n}={self._hash(directory, n)}" for n in names]
            parts.append(str(tree_version(directory)))
            sig = self._dirsig[directory] = _digest(*parts)
        return sig

    def file_key(self, directory: str, entry: list[Any]) -> str:
        """The file's content, its directory's signature and its local headers' content."""
        headers = []
        for header in entry[4]:
            value = self._headers.get((directory, header))
            if value is None:
                hdir, _, hname = os.path.join(directory, header).rpartition(os.sep)
                value = f"{header}={self._hash(os.path.normpath(hdir), hname)}"
                self._headers[(directory, header)] = value
            headers.append(value)
        return _digest(entry[3], self._directory_signature(directory), *headers)[:32]

    # --- results ------------------------------------------------------------------------

    def results_for(
        self,
        files: Iterable[str],
        job: Any,
        analyze: Callable[[Iterator[str]], Iterator[Any]],
    ) -> Iterator[Any]:
        """Every file's result: from the cache, from the byte prefilter (files it drops are
        read here anyway, to hash them), or from `analyze` (the worker pool) for the rest."""
        ready: list[Any] = []

        def to_analyze() -> Iterator[str]:
            for path in files:
                result = self._lookup(path, job)
                if result is None:
                    yield path
                else:
                    ready.append(result)

        for result in analyze(to_analyze()):
            self._store(result)
            yield result
            while ready:
                yield ready.pop()
        yield from ready

    def _lookup(self, path: str, job: Any) -> Any | None:
        from dpmlens.engine.check import _FileResult

        directory, name = self._split(path)
        entry, data = self._entry(directory, name)
        if entry is None:
            return None  # the worker reports why it cannot be read
        if entry[6] is not None:  # no PM code in these bytes: nothing else matters
            self.hits += 1
            return _FileResult(path, [], None, entry[0], entry[6], False, {})
        key = self.file_key(directory, entry)
        stored = self.results.get(key)
        if stored is not None:
            self.hits += 1
            if self.used.get(key, 0.0) < self.now - 3600:  # refresh LRU stamps hourly
                self.used[key] = self.now
                self.dirty = True
            nbytes, nlines, analyzed, findings, lines = stored
            found = [finding_in(f, path) for f in findings]
            quoted = {int(k): v for k, v in lines.items()}
            return _FileResult(path, found, None, nbytes, nlines, bool(analyzed), quoted)
        self.misses += 1
        if data is None:
            try:
                with open(os.path.join(directory, name), "rb") as fh:
                    data = fh.read()
            except OSError:
                return None
            if hashlib.sha256(data).hexdigest()[:32] != entry[3]:
                return None  # changed since it was indexed: the worker reads it, not stored
        if b"\0" in data[:_BINARY_PROBE]:
            return None  # the worker reports it; not cached
        if not job.prefilter.matches(data):  # answered here, no worker needed
            entry[6] = data.count(b"\n") if job.count_lines else 0
            self.dirty = True
            return _FileResult(path, [], None, len(data), entry[6], False, {})
        self._pending[path] = key
        return None

    def _store(self, result: Any) -> None:
        key = self._pending.pop(result.path, None)
        if key is None or result.error is not None:
            return  # a cache hit, or a file that could not be checked (not cached)
        own = result.path
        self.results[key] = [
            result.nbytes, result.nlines, int(result.analyzed),
            [finding_out(f, own) for f in result.findings],
            {str(k): v for k, v in result.lines.items()},
        ]  # fmt: skip
        self.used[key] = self.now
        self.dirty = True


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def open_cache(directory: str | None, config: Any, rules: list[Any] | None, count_lines: bool
               ) -> ResultCache:  # fmt: skip
    return ResultCache(directory or default_dir(), run_key(config, rules, count_lines))

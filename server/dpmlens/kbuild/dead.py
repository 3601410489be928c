"""Drivers no real build enables, from the tree's Kconfig and Makefiles.

A file is built by the `obj-$(CONFIG_X) += foo.o` lines of its directory's Makefile (through
composite objects: `foo-objs`/`foo-y`/`foo-$(CONFIG_Y)`), under the conditions of the
`obj-$(CONFIG_D) += dir/` lines of the parent Makefiles. It is *dead* when every way to build
it needs a symbol no real configuration can enable:

- one that depends on `BROKEN` (a conjunct of its `depends on`, an enclosing `if` or `menu`,
  or the `source` line that reads its Kconfig file);
- one that only `COMPILE_TEST` enables (`depends on COMPILE_TEST # nothing uses this`; an
  `X || COMPILE_TEST` lives as long as X does);
- one under `UNUSED_BOARD_FILES` (arm board files kept for nobody, removed later);

or when it lives in `drivers/staging/**/deprecated/`, or when it is a platform driver matched
by name only whose devices only dead board files declare (kbuild/board_devices.py). A
symbol that a live symbol `select`s is live whatever it depends on. Anything this reader
does not understand counts as live: a finding is only ever lowered on a fact read from the
tree.

Kconfig is read by following `source` lines from the top `Kconfig` (`$(SRCARCH)` stands for
every `arch/*`): kconfiglib 14.1 (PyPI) stops at 6.x's `modules` keyword. The index is cached
by the files' sizes and mtimes (`load(top, cache_dir)`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from dpmlens.core.atomic import write_text_atomic
from dpmlens.kbuild import board_devices
from dpmlens.kbuild.kconfig_deps import OFF, Judge, KconfigIndex, Reader

DEPRECATED = "in drivers/staging/**/deprecated"
LEGACY_PREFIX = "legacy hardware: "  # a driver only buses/platforms nobody can test build
_INDEX_VERSION = 1


# --- Makefiles ----------------------------------------------------------------------------------

_ASSIGN = re.compile(
    r"^([A-Za-z0-9_.\-/]+?)-(\$\(CONFIG_([A-Za-z0-9_]+)\)|y|m|objs|obj)\s*[:+?]?=\s*(.*)$"
)


_INCLUDE = re.compile(r"^-?include\s+\$\((?:srctree\)/\$\()?src\)/([\w.\-]+)$")


def _makefile_entries(
    directory: Path, name: str | None = None, depth: int = 0
) -> list[tuple[str, str | None, list[str]]]:
    """(variable stem, CONFIG symbol or None, listed names) of each assignment, with those of
    the files it includes from its own directory (`include $(src)/Makefile.soc`: the
    `ifdef` around one only adds a condition, so reading it unconditioned errs on live)."""
    for candidate in (name,) if name else ("Makefile", "Kbuild"):
        path = directory / candidate
        try:
            text = path.read_text("utf-8", "replace")
            break
        except OSError:
            continue
    else:
        return []
    out = []
    for line in text.replace("\\\n", " ").split("\n"):
        line = line.split("#", 1)[0].strip()
        inc = _INCLUDE.match(line)
        if inc is not None and depth < 3:
            out += _makefile_entries(directory, inc.group(1), depth + 1)
            continue
        m = _ASSIGN.match(line)
        if m is None:
            continue
        stem, cond, sym, values = m.groups()
        if stem != "obj" and cond not in ("y", "objs") and sym is None:
            continue  # foo-m, lib-y, ...: not a build condition we read
        out.append((stem, sym, values.split()))
    return out


class _Makefiles:
    def __init__(self, top: Path) -> None:
        self.top = top
        self.cache: dict[Path, list[tuple[str, str | None, list[str]]]] = {}

    def entries(self, directory: Path) -> list[tuple[str, str | None, list[str]]]:
        hit = self.cache.get(directory)
        if hit is None:
            hit = self.cache[directory] = _makefile_entries(directory)
        return hit

    def ways(self, directory: Path, name: str, depth: int = 0) -> list[list[str]] | None:
        """Each way the Makefile of `directory` builds `name` (an object `foo.o` or a
        subdirectory `sub/`): the CONFIG symbols it needs; None when it does not name it."""
        if depth > 6:
            return None
        found: list[list[str]] = []
        named = False
        for stem, sym, values in self.entries(directory):
            if name not in values:
                continue
            named = True
            need = [sym] if sym else []
            if stem == "obj":
                found.append(need)
                continue
            outer = self.ways(directory, stem + ".o", depth + 1)
            for way in outer if outer is not None else [[]]:
                found.append(need + way)
        return found if named else None


# --- the verdict --------------------------------------------------------------------------------


class DeadDrivers:
    """`reason(path)`: why no real build compiles the file, or None."""

    def __init__(
        self, top: Path, index: KconfigIndex, legacy: Mapping[str, str] | None = None
    ) -> None:
        self.top = top
        self.legacy = dict(legacy or {})
        self.judge = Judge(index, frozenset(self.legacy))
        self.make = _Makefiles(top)
        self.memo: dict[str, str | None] = {}
        self.kconfig_memo: dict[str, str | None] = {}
        self.names: dict[str, list[str] | None] = {}  # file -> name-only driver's names
        self.spelled: dict[str, set[str]] = {}  # name -> files spelling it (arch/, then all)
        self.searched_all: set[str] = set()  # names searched beyond arch/

    def reason(self, path: str) -> str | None:
        full = Path(os.path.abspath(path))
        try:
            rel = full.relative_to(self.top)
        except ValueError:
            return None
        parts = rel.parts
        if (
            len(parts) > 2
            and parts[0] == "drivers"
            and "staging" in parts
            and any(p == "deprecated" for p in parts[:-1])
        ):
            return DEPRECATED
        key = str(rel)
        if key in self.memo:
            return self.memo[key]
        result = self._built(full, key)
        if result is None:
            result = self._unbound(full, key)
        self.memo[key] = result
        return result

    def _built(self, full: Path, key: str) -> str | None:
        """The Kconfig/Makefile verdict alone (what a board file's deadness is read from)."""
        if key not in self.kconfig_memo:
            self.kconfig_memo[key] = self._reason(full)
        return self.kconfig_memo[key]

    # --- platform drivers only dead board files instantiate --------------------------------

    def _driver_names(self, full: Path, key: str) -> list[str] | None:
        if key not in self.names:
            try:
                text = full.read_bytes()
            except OSError:
                text = b""
            self.names[key] = board_devices.name_only_names(text)
        return self.names[key]

    def prepare(self, paths: Iterable[str]) -> None:
        """Search arch/ once for the names of every name-only platform driver among `paths`
        that Kconfig leaves live (what `reason` would otherwise search file by file)."""
        wanted: set[str] = set()
        for p in paths:
            full = Path(os.path.abspath(p))
            try:
                key = str(full.relative_to(self.top))
            except ValueError:
                continue
            if key in self.memo or full.suffix != ".c" or self._built(full, key) is not None:
                continue
            wanted.update(self._driver_names(full, key) or ())
        self._search(["arch"], wanted - set(self.spelled))

    def _search(self, dirs: list[str], names: Iterable[str]) -> bool:
        names = list(names)
        if not names:
            return True
        found = board_devices.spelled_in(self.top, dirs, names)
        if found is None:
            return False
        for name, files in found.items():
            self.spelled.setdefault(name, set()).update(files)
        return True

    def _unbound(self, full: Path, key: str) -> str | None:
        """A platform driver matched by name only, each of whose devices is declared only in
        files no real build compiles: built, never probed."""
        names = self._driver_names(full, key)
        if not names:
            return None
        if not self._search(["arch"], [n for n in names if n not in self.spelled]):
            return None
        if not self._board_only(names, key):
            return None  # a live file spells a name, or no board file does: nothing stated
        rest = [d.name for d in sorted(self.top.iterdir()) if d.is_dir() and d.name != "arch"]
        if not self._search(rest, [n for n in names if n not in self.searched_all]):
            return None
        self.searched_all.update(names)
        why = self._board_only(names, key)
        if why is None:
            return None
        files, reasons = why
        legacy = [r for r in reasons if r.startswith(LEGACY_PREFIX)]
        shown = ", ".join(files[:3]) + (", ..." if len(files) > 3 else "")
        text = f"its platform device is declared only in {shown} ({'; '.join(sorted(reasons))})"
        return LEGACY_PREFIX + text if legacy else text

    def _board_only(self, names: list[str], key: str) -> tuple[list[str], set[str]] | None:
        """(declaring files, their reasons) when at least one file other than the driver
        spells one of its names and every such file is dead; else None."""
        files = sorted({f for n in names for f in self.spelled.get(n, ()) if f != key})
        if not files:
            return None
        reasons: set[str] = set()
        for f in files:
            if not f.endswith(".c"):
                return None  # a header: whoever includes it may declare the device
            why = self._built(self.top / f, f)
            if why is None:
                return None
            reasons.add(why)
        return files, reasons

    def _reason(self, full: Path) -> str | None:
        if full.suffix != ".c":
            return None
        # the file, in its directory or (as `sub/foo.o`) in a parent's Makefile
        name, directory = full.stem + ".o", full.parent
        ways = None
        while ways is None and directory != self.top and self.top in directory.parents:
            ways = self.make.ways(directory, name)
            if ways is None:
                name, directory = f"{directory.name}/{name}", directory.parent
        if ways is None:
            return None
        why = self._dead(ways)
        if why:
            return why
        # the directories above it
        while directory != self.top and self.top in directory.parents:
            parent = directory.parent
            ways = self.make.ways(parent, directory.name + "/")
            if ways is not None:
                why = self._dead(ways)
                if why:
                    return why
            directory = parent
        return None

    def _dead(self, ways: list[list[str]]) -> str | None:
        """The reason when every way needs a symbol that cannot be on."""
        reasons: set[str] = set()
        for way in ways:
            failed = None
            for sym in way:
                ok, why = self.judge.possible_symbol(sym)
                if not ok:
                    failed = why or {"BROKEN"}
                    break
            if failed is None:
                return None
            reasons |= failed
        if not ways:
            return None
        if reasons <= set(OFF):
            return ", ".join(sorted(OFF[w] for w in reasons)) or None
        # some way needs only a legacy bus: built, but for hardware nobody can test
        names = sorted(self.legacy[w] for w in reasons if w in self.legacy)
        return LEGACY_PREFIX + ", ".join(names)


def find_top(path: str) -> Path | None:
    """The kernel tree `path` is in: the nearest directory above with `Kconfig`, `Makefile`
    and `scripts/kconfig/`."""
    cur = Path(os.path.abspath(path))
    for d in [cur, *cur.parents]:
        if (
            (d / "Kconfig").is_file()
            and (d / "Makefile").is_file()
            and (d / "scripts" / "kconfig").is_dir()
        ):
            return d
    return None


FACTS_OFF = "dead-driver facts are off"


def not_read(path: str) -> str | None:
    """What is missing for the dead-driver facts of the kernel tree `path` is in, as one line
    naming it, or None (a whole tree, or no kernel tree at all). A partial tree (a directory
    with `drivers/` and `include/linux/` or `arch/`, without the top-level `Kconfig`,
    `Makefile` or `scripts/kconfig/`, as in an extract of drivers/ and include/ only) and a
    top-level Kconfig that cannot be read would otherwise change the answers silently."""
    top = find_top(path)
    if top is not None:
        try:
            with open(top / "Kconfig", "rb") as f:
                f.read(1)
        except OSError as exc:
            return f"{top}/Kconfig cannot be read ({exc.strerror or exc}): {FACTS_OFF}"
        return None
    cur = Path(os.path.abspath(path))
    for d in [cur, *cur.parents]:
        if (d / "drivers").is_dir() and ((d / "include" / "linux").is_dir()
                                         or (d / "arch").is_dir()):
            missing = [name for name, there in (
                ("Kconfig", (d / "Kconfig").is_file()), ("Makefile", (d / "Makefile").is_file()),
                ("scripts/kconfig/", (d / "scripts" / "kconfig").is_dir())) if not there]
            if "Kconfig" in missing and ((d / "Kconfig").exists() or (d / "Kconfig").is_symlink()):
                missing[missing.index("Kconfig")] = "readable Kconfig"
            return (f"{d}: a partial kernel tree (no top-level {', '.join(missing)}): "
                    f"{FACTS_OFF}")
    return None


def _fresh(index: KconfigIndex, top: Path) -> bool:
    for rel, entries in index.files.items():
        for _r, mtime, size in entries:
            try:
                st = (top / rel).stat()
            except OSError:
                return False
            if st.st_mtime != mtime or st.st_size != size:
                return False
    return bool(index.files)


def _cache_path(cache_dir: Path, top: Path) -> Path:
    digest = hashlib.sha256(str(top).encode()).hexdigest()[:16]
    return cache_dir / f"kconfig-{digest}.json"


def load(
    top: Path, cache_dir: Path | None = None, legacy: Mapping[str, str] | None = None
) -> DeadDrivers:
    """The dead-driver facts of the tree at `top`, the Kconfig index read from `cache_dir`
    when no Kconfig file changed since it was written."""
    index = None
    cached = _cache_path(cache_dir, top) if cache_dir is not None else None
    if cached is not None:
        try:
            raw = json.loads(cached.read_text())
            if raw.get("version") == _INDEX_VERSION:
                index = KconfigIndex(
                    defs=raw["defs"],
                    selects={k: [tuple(x) for x in v] for k, v in raw["selects"].items()},
                    files={k: [tuple(x) for x in v] for k, v in raw["files"].items()},
                )
                if not _fresh(index, top):
                    index = None
        except (OSError, ValueError, KeyError, TypeError):
            index = None
    if index is None:
        index = Reader(top).read()
        if cached is not None:
            try:
                cached.parent.mkdir(parents=True, exist_ok=True)
                write_text_atomic(cached, json.dumps({
                    "version": _INDEX_VERSION, "defs": index.defs,
                    "selects": index.selects, "files": index.files,
                }))  # fmt: skip
            except OSError:
                pass  # a cache we cannot write costs time, never the answer
    return DeadDrivers(top, index, legacy)


def notes_for(paths: Iterable[str]) -> list[str]:
    """`not_read` of each checked path, one line per tree."""
    out: list[str] = []
    for p in paths:
        note = not_read(p)
        if note is not None and note not in out:
            out.append(note)
    return out


def for_paths(paths: Iterable[str], cache_dir: Path | None = None) -> dict[Path, DeadDrivers]:
    """The dead-driver facts of each kernel tree the paths are in."""
    out: dict[Path, DeadDrivers] = {}
    for p in paths:
        top = find_top(p)
        if top is not None and top not in out:
            out[top] = load(top, cache_dir)
    return out

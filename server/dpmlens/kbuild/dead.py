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

or when it lives in `drivers/staging/**/deprecated/`. A symbol that a live symbol `select`s
is live whatever it depends on. Anything this reader does not understand counts as live: a
finding is only ever lowered on a fact read from the tree.

Kconfig is read by following `source` lines from the top `Kconfig` (`$(SRCARCH)` stands for
every `arch/*`): kconfiglib 14.1 (PyPI) stops at 6.x's `modules` keyword. The index is cached
by the files' sizes and mtimes (`load(top, cache_dir)`).
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from dpmlens.atomic import write_text_atomic

# atoms no real configuration enables, and how a finding's reason names them
_OFF = {
    "BROKEN": "depends on BROKEN",
    "COMPILE_TEST": "COMPILE_TEST only",
    "UNUSED_BOARD_FILES": "board marked UNUSED_BOARD_FILES",
}
DEPRECATED = "in drivers/staging/**/deprecated"
_INDEX_VERSION = 1


@dataclass
class KconfigIndex:
    """What Kconfig says about every symbol: each definition's dependency conjuncts, who
    selects it (and under which condition), each file's includers' conditions."""

    defs: dict[str, list[list[str]]] = field(default_factory=dict)  # sym -> [conjuncts]
    selects: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # sym -> [(by, if)]
    files: dict[str, list[tuple[str, float, int]]] = field(default_factory=dict)  # fingerprints


# --- Kconfig: reading ---------------------------------------------------------------------------

_SOURCE = re.compile(r'^(o?r?source)\s+"([^"]+)"')
_WORD = re.compile(r"^(\S+)\s*(.*)$")


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """(indent, line) with `\\` continuations joined; help text skipped."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        raw = lines[i]
        while raw.endswith("\\") and i + 1 < len(lines):
            i += 1
            raw = raw[:-1] + " " + lines[i]
        i += 1
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(raw.expandtabs(8)) - len(raw.expandtabs(8).lstrip())
        yield indent, stripped
        if stripped in ("help", "---help---"):
            # help text: every following line indented deeper than the first text line
            block = None
            while i < len(lines):
                t = lines[i]
                if not t.strip():
                    i += 1
                    continue
                ind = len(t.expandtabs(8)) - len(t.expandtabs(8).lstrip())
                if block is None:
                    if ind <= indent:
                        break
                    block = ind
                if ind < block:
                    break
                i += 1


def _strip_comment(line: str) -> str:
    out, quoted = [], False
    for ch in line:
        if ch == '"':
            quoted = not quoted
        elif ch == "#" and not quoted:
            break
        out.append(ch)
    return "".join(out).strip()


class _Reader:
    def __init__(self, top: Path) -> None:
        self.top = top
        self.index = KconfigIndex()
        self.seen: set[str] = set()

    def read(self) -> KconfigIndex:
        self._file("Kconfig", [])
        return self.index

    def _expand(self, name: str, here: str) -> list[str]:
        """A `source` argument -> tree-relative paths (`$(SRCARCH)`/`$SRCARCH`: all arches)."""
        name = re.sub(r"\$\(?(?:SRC)?ARCH\)?", "*", name)
        if "$" in name:
            return []
        pattern = str(self.top / name)
        hits = glob.glob(pattern) if "*" in name else [pattern]
        out = []
        for h in sorted(hits):
            if os.path.isfile(h):
                out.append(os.path.relpath(h, self.top))
        if not out and not name.startswith("/"):
            rel = os.path.join(os.path.dirname(here), name)  # rsource
            if os.path.isfile(self.top / rel):
                out.append(rel)
        return out

    def _file(self, rel: str, inherited: list[str]) -> None:
        key = rel + "\0" + "&&".join(inherited)
        if key in self.seen:
            return
        self.seen.add(key)
        path = self.top / rel
        try:
            st = path.stat()
            text = path.read_text("utf-8", "replace")
        except OSError:
            return
        self.index.files[rel] = [(rel, st.st_mtime, st.st_size)]
        stack: list[list[str]] = []  # enclosing if / menu / choice conditions
        current: list[str] | None = None  # the entry `depends on` lines apply to
        block: list[str] | None = None  # the menu/choice being opened (depends on -> stack)
        sym: str | None = None
        for _indent, line in _logical_lines(text):
            line = _strip_comment(line)
            m = _WORD.match(line)
            if m is None:
                continue
            word, rest = m.group(1), m.group(2)
            outer = inherited + [c for level in stack for c in level]
            if word in ("config", "menuconfig"):
                sym = rest.split()[0] if rest else None
                current = list(outer)
                block = None
                if sym:
                    self.index.defs.setdefault(sym, []).append(current)
            elif word in ("menu", "choice"):
                block = []
                stack.append(block)
                current, sym = None, None
            elif word in ("endmenu", "endchoice", "endif"):
                if stack:
                    stack.pop()
                current, sym, block = None, None, None
            elif word == "if":
                stack.append([rest])
                current, sym, block = None, None, None
            elif word == "depends" and rest.startswith("on"):
                expr = rest[2:].strip()
                if current is not None:
                    current.append(expr)
                elif block is not None:
                    block.append(expr)
            elif word in ("select", "imply") and sym and rest:
                parts = rest.split(None, 1)
                cond = ""
                if len(parts) > 1 and parts[1].startswith("if "):
                    cond = parts[1][3:].strip()
                deps = current or []
                full = " && ".join(f"({c})" for c in [*deps, cond] if c) or "y"
                self.index.selects.setdefault(parts[0], []).append((sym, full))
            elif word in ("comment", "mainmenu"):
                current, sym, block = None, None, None
            else:
                s = _SOURCE.match(line)
                if s is not None:
                    for target in self._expand(s.group(2), rel):
                        self._file(target, outer)


# --- Kconfig: evaluating ------------------------------------------------------------------------

_TOKEN = re.compile(r'\s*(&&|\|\||!=|<=|>=|[!()=<>]|"[^"]*"|[^\s!()=<>&|"]+)')


class _Expr:
    """`possible(expr)`: can some real configuration make it true? Over-approximates (a
    negation or a comparison is always possible), so "not possible" is a fact."""

    def __init__(self, judge: _Judge, text: str) -> None:
        self.judge = judge
        self.tokens = [t for t in _TOKEN.findall(text) if t]
        self.pos = 0

    def _peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def parse(self) -> tuple[bool, set[str]]:
        try:
            return self._or()
        except (IndexError, RecursionError):
            return True, set()

    def _or(self) -> tuple[bool, set[str]]:
        ok, why = self._and()
        while self._peek() == "||":
            self.pos += 1
            ok2, why2 = self._and()
            ok, why = (ok or ok2), (set() if ok or ok2 else why | why2)
        return ok, why

    def _and(self) -> tuple[bool, set[str]]:
        ok, why = self._cmp()
        while self._peek() == "&&":
            self.pos += 1
            ok2, why2 = self._cmp()
            if not ok2 and ok:
                ok, why = False, why2
            elif not ok2:
                why = why | why2
        return ok, why

    def _cmp(self) -> tuple[bool, set[str]]:
        left, left_why, name = self._unary()
        op = self._peek()
        if op in ("=", "!=", "<", ">", "<=", ">="):
            self.pos += 1
            _r, _w, right = self._unary()
            if op == "=" and right not in ("n", '"n"') and name is not None:
                return left, left_why
            return True, set()
        return left, left_why

    def _unary(self) -> tuple[bool, set[str], str | None]:
        tok = self.tokens[self.pos]
        self.pos += 1
        if tok == "!":
            self._unary()
            return True, set(), None
        if tok == "(":
            ok, why = self._or()
            if self._peek() == ")":
                self.pos += 1
            return ok, why, None
        if tok in ("n", '"n"'):
            return False, set(), tok
        ok, why = self.judge.possible_symbol(tok)
        return ok, why, tok


class _Judge:
    def __init__(self, index: KconfigIndex) -> None:
        self.index = index
        self.memo: dict[str, tuple[bool, set[str]]] = {}
        self.busy: set[str] = set()

    def possible(self, expr: str) -> tuple[bool, set[str]]:
        return _Expr(self, expr).parse()

    def possible_symbol(self, sym: str) -> tuple[bool, set[str]]:
        if sym in _OFF:
            return False, {sym}
        hit = self.memo.get(sym)
        if hit is not None:
            return hit
        if sym in self.busy or not re.fullmatch(r"[A-Za-z0-9_]+", sym):
            return True, set()  # a cycle, a literal, a number: assume it can be on
        defs = self.index.defs.get(sym)
        if not defs:
            return True, set()  # undefined: not a fact this reader states
        self.busy.add(sym)
        try:
            result: tuple[bool, set[str]] = (True, set())
            why: set[str] = set()
            for conjuncts in defs:
                failed = next(
                    (w for ok, w in (self.possible(c) for c in conjuncts) if not ok), None
                )
                if failed is None:
                    break
                why |= failed
            else:
                result = (False, why)
                for by, cond in self.index.selects.get(sym, ()):
                    if self.possible_symbol(by)[0] and self.possible(cond)[0]:
                        result = (True, set())
                        break
        finally:
            self.busy.discard(sym)
        self.memo[sym] = result
        return result


# --- Makefiles ----------------------------------------------------------------------------------

_ASSIGN = re.compile(
    r"^([A-Za-z0-9_.\-/]+?)-(\$\(CONFIG_([A-Za-z0-9_]+)\)|y|m|objs|obj)\s*[:+?]?=\s*(.*)$"
)


def _makefile_entries(directory: Path) -> list[tuple[str, str | None, list[str]]]:
    """(variable stem, CONFIG symbol or None, listed names) of each assignment."""
    for name in ("Makefile", "Kbuild"):
        path = directory / name
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

    def __init__(self, top: Path, index: KconfigIndex) -> None:
        self.top = top
        self.judge = _Judge(index)
        self.make = _Makefiles(top)
        self.memo: dict[str, str | None] = {}

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
        result = self._reason(full)
        self.memo[key] = result
        return result

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
        return ", ".join(sorted(_OFF[w] for w in reasons if w in _OFF)) or None


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


def load(top: Path, cache_dir: Path | None = None) -> DeadDrivers:
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
        index = _Reader(top).read()
        if cached is not None:
            try:
                cached.parent.mkdir(parents=True, exist_ok=True)
                write_text_atomic(cached, json.dumps({
                    "version": _INDEX_VERSION, "defs": index.defs,
                    "selects": index.selects, "files": index.files,
                }))  # fmt: skip
            except OSError:
                pass  # a cache we cannot write costs time, never the answer
    return DeadDrivers(top, index)


def for_paths(paths: Iterable[str], cache_dir: Path | None = None) -> dict[Path, DeadDrivers]:
    """The dead-driver facts of each kernel tree the paths are in."""
    out: dict[Path, DeadDrivers] = {}
    for p in paths:
        top = find_top(p)
        if top is not None and top not in out:
            out[top] = load(top, cache_dir)
    return out

"""What Kconfig says about whether a symbol can be enabled in a real build.

`Reader(top).read()` follows `source` lines from the tree's top `Kconfig` (`$(SRCARCH)` stands
for every `arch/*`; kconfiglib 14.1 from PyPI stops at 6.x's `modules` keyword) and records
each `config` entry's dependency conjuncts (its `depends on`, the enclosing `if`/`menu`/
`choice` conditions, the conditions of the `source` line that read its file) and who
`select`s/`implies` it. `Judge(index).possible_symbol(name)` answers whether some real
configuration can enable the symbol, and if not, which atoms (`OFF`) stop it: `BROKEN`,
`COMPILE_TEST` (an `X || COMPILE_TEST` lives as long as X does) and `UNUSED_BOARD_FILES`. A
symbol a live symbol selects is live whatever it depends on; what this reader does not
understand (a negation, a comparison, an undefined symbol, a cycle) counts as possible.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

# atoms no real configuration enables, and how a finding's reason names them
OFF = {
    "BROKEN": "depends on BROKEN",
    "COMPILE_TEST": "COMPILE_TEST only",
    "UNUSED_BOARD_FILES": "board marked UNUSED_BOARD_FILES",
}


@dataclass
class KconfigIndex:
    """What Kconfig says about every symbol: each definition's dependency conjuncts and who
    selects it (under which condition); `files`: the Kconfig files read, with their mtimes and
    sizes (what a cached index is checked against)."""

    defs: dict[str, list[list[str]]] = field(default_factory=dict)  # sym -> [conjuncts]
    selects: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # sym -> [(by, if)]
    files: dict[str, list[tuple[str, float, int]]] = field(default_factory=dict)  # fingerprints


# --- Kconfig: reading ---------------------------------------------------------------------------

_SOURCE = re.compile(r'^(o?r?source)\s+"([^"]+)"')
_WORD = re.compile(r"^(\S+)\s*(.*)$")


def _indent(line: str) -> int:
    lead = line[: len(line) - len(line.lstrip())]  # tabs expanded in the lead alone: same width
    return len(lead.expandtabs(8)) if "\t" in lead else len(lead)


def _logical_lines(text: str) -> Iterator[str]:
    """Lines with `\\` continuations joined, stripped; help text skipped."""
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
        yield stripped
        if stripped in ("help", "---help---"):
            # help text: every following line indented deeper than the first text line
            indent = _indent(raw)
            block = None
            while i < len(lines):
                t = lines[i]
                if not t.strip():
                    i += 1
                    continue
                ind = _indent(t)
                if block is None:
                    if ind <= indent:
                        break
                    block = ind
                if ind < block:
                    break
                i += 1


def _strip_comment(line: str) -> str:
    if "#" not in line:  # (most lines: the character walk below only for a '#')
        return line
    if '"' not in line:
        return line.split("#", 1)[0].strip()
    out, quoted = [], False
    for ch in line:
        if ch == '"':
            quoted = not quoted
        elif ch == "#" and not quoted:
            break
        out.append(ch)
    return "".join(out).strip()


class Reader:
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
        for line in _logical_lines(text):
            line = _strip_comment(line)
            m = _WORD.match(line)
            if m is None:
                continue
            word, rest = m.group(1), m.group(2)
            if word in ("config", "menuconfig"):
                sym = rest.split()[0] if rest else None
                current = _outer(inherited, stack)
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
                        self._file(target, _outer(inherited, stack))


def _outer(inherited: list[str], stack: list[list[str]]) -> list[str]:
    """The conditions around the current line: the `source` line's, then each enclosing
    if / menu / choice's (made only where an entry or a `source` needs them)."""
    return inherited + [c for level in stack for c in level]


# --- Kconfig: evaluating ------------------------------------------------------------------------

_TOKEN = re.compile(r'\s*(&&|\|\||!=|<=|>=|[!()=<>]|"[^"]*"|[^\s!()=<>&|"]+)')


class _Expr:
    """`possible(expr)`: can some real configuration make it true? Over-approximates (a
    negation or a comparison is always possible), so "not possible" is a fact."""

    def __init__(self, judge: Judge, text: str) -> None:
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


class Judge:
    """`legacy`: further atoms to count as off (buses of hardware nobody can test), which a
    verdict names apart from OFF's."""

    def __init__(self, index: KconfigIndex, legacy: frozenset[str] = frozenset()) -> None:
        self.index = index
        self.legacy = legacy
        self.memo: dict[str, tuple[bool, set[str]]] = {}
        self.busy: set[str] = set()

    def possible(self, expr: str) -> tuple[bool, set[str]]:
        return _Expr(self, expr).parse()

    def possible_symbol(self, sym: str) -> tuple[bool, set[str]]:
        if sym in OFF or sym in self.legacy:
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

"""What exists only with CONFIG_PM* on, for `deprecated-pm-ops-macro`: its fix drops the
`#ifdef CONFIG_PM*` around the callbacks, so they are compiled (then discarded as dead code)
in builds without PM too. That builds only if nothing they use is missing there.

Read from the preprocessor text, not by running cpp:

- `guard_at(source, offset)`: the innermost positive `#ifdef CONFIG_PM*` / `#if ...CONFIG_PM...`
  around an offset (the message names the guard that is there, CONFIG_PM or CONFIG_PM_SLEEP);
- `config_only(source, keep)`: the names declared in such a block's `#if` branch that its
  `#else` does not declare (no stub), or stubs as a `#define NAME NULL` (pm_clk_suspend in
  include/linux/pm_clock.h: a NULL callee does not compile); blocks holding an offset in `keep`
  (the ones the fix removes) are left out;
- `header_config_only(top)`: the same over the tree's `include/` (read once per tree and
  process, only the headers that name CONFIG_PM).
"""

from __future__ import annotations

import os
import re
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

_DIRECTIVE = re.compile(rb"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b(.*)$", re.M)
_PM = re.compile(r"\bCONFIG_PM(?:_\w+)?\b")  # not CONFIG_PMAC_BACKLIGHT
_DEFINE = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+(\w+)(\(?)[ \t]*(.*)$", re.M)
_COMMENT = re.compile(rb"/\*.*?\*/|//[^\n]*", re.S)
_PREPROC_LINE = re.compile(rb"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.M)
_IDENT = re.compile(rb"[A-Za-z_]\w*")
_KEYWORDS = frozenset(
    b"if else for while do switch case return sizeof typeof struct union enum static extern "
    b"inline const volatile unsigned signed int long short char void bool typedef register "
    b"__always_inline __init __exit __maybe_unused __must_check asmlinkage".split()
)


@dataclass(frozen=True)
class Block:
    """One `#if` ... `#endif` whose condition names CONFIG_PM*: the byte ranges of the branch
    compiled with it on (`on`) and of the one compiled with it off (`off`, may be empty)."""

    cond: str  # the directive as written: "#ifdef CONFIG_PM_SLEEP"
    on: tuple[int, int]
    off: tuple[int, int]


def blocks(source: bytes) -> list[Block]:
    """The CONFIG_PM* blocks of `source` whose polarity is clear (`#ifdef`/`#ifndef`, `#if`
    with `defined()`/`IS_ENABLED()` of it, negated or not; not a `||` of it with others)."""
    return _scan(source, True).blocks


def _blocks(source: bytes) -> list[Block]:
    out: list[Block] = []
    # per open #if: (directive text, polarity or None, start of the branch, split offsets)
    stack: list[tuple[str, bool | None, int, list[int]]] = []
    for m in _DIRECTIVE.finditer(source):
        kind = m.group(1).decode()
        rest = m.group(2).decode("latin-1")
        if kind in ("if", "ifdef", "ifndef"):
            stack.append((f"#{kind}{rest}".strip(), _polarity(kind, rest), m.end(), []))
        elif kind in ("elif", "else") and stack:
            stack[-1][3].append(m.start())
        elif kind == "endif" and stack:
            text, positive, start, splits = stack.pop()
            if positive is None:
                continue
            first_end = splits[0] if splits else m.start()
            other = (splits[0], m.start()) if splits else (m.start(), m.start())
            first = (start, first_end)
            out.append(Block(text, first, other) if positive else Block(text, other, first))
    return out


@dataclass(frozen=True)
class _Scan:
    """What `config_only` needs of one text, whatever its `keep` and `bodies`: read once per
    text (a 20 MB file has thousands of blocks and is asked once per table)."""

    blocks: list[Block]
    declares: list[set[str]]  # per block: the names its on-branch declares
    in_braces: list[bool]  # per block: starts inside a struct or function (members=False)
    stubs: frozenset[str]


# (source, members) -> its scan, for the last few texts (compared by identity: the model's
# source object is the same for every rule of one analysis)
_SCANS: list[tuple[bytes, bool, _Scan]] = []


def _scan(source: bytes, members: bool) -> _Scan:
    for src, mem, scan in _SCANS:
        if src is source and mem == members:
            return scan
    found = _blocks(source)
    stubs: set[str] = set()  # a stub may sit in a block of its own (`#if !defined(...)`)
    declares: list[set[str]] = []
    for b in found:
        off = source[b.off[0] : b.off[1]]
        stubs |= declared(off, members) - _null_macros(off)
        declares.append(declared(source[b.on[0] : b.on[1]], members))
    in_braces = [False] * len(found)
    if not members:
        code = _COMMENT.sub(lambda m: b" " * len(m.group()), source)
        # brace balance before each block's start, counted in one pass in offset order
        depth, at = 0, 0
        for i in sorted(range(len(found)), key=lambda i: found[i].on[0]):
            start = found[i].on[0]
            depth += code.count(b"{", at, start) - code.count(b"}", at, start)
            at = start
            in_braces[i] = depth > 0
    scan = _Scan(found, declares, in_braces, frozenset(stubs))
    _SCANS.insert(0, (source, members, scan))
    del _SCANS[4:]
    return scan


def _polarity(kind: str, rest: str) -> bool | None:
    cond = _COMMENT.sub(b"", rest.encode("latin-1")).decode("latin-1").strip()
    if not _PM.search(cond):
        return None
    if kind == "ifdef":
        return True
    if kind == "ifndef":
        return False
    if "||" in cond:
        return None
    negated = re.search(r"!\s*(?:defined|IS_ENABLED|IS_BUILTIN)?\s*\(?\s*CONFIG_PM", cond)
    return not negated


def guard_at(source: bytes, offset: int) -> str | None:
    """The innermost positive CONFIG_PM* directive whose on-branch holds `offset`."""
    best: Block | None = None
    for b in blocks(source):
        if b.on[0] <= offset < b.on[1] and (best is None or b.on[0] > best.on[0]):
            best = b
    return best.cond if best is not None else None


def config_only(
    source: bytes,
    keep: tuple[int, ...] = (),
    members: bool = True,
    bodies: tuple[tuple[int, int], ...] = (),
) -> set[str]:
    """Names that exist only with the CONFIG_PM* symbol on (see the module doc), from the
    blocks of `source` that hold none of the offsets in `keep`; with `members`, struct
    members too (a driver's own `#ifdef CONFIG_PM_SLEEP u32 saved[4]; #endif`; a header's
    are left out: `entry`, `completion` of struct dev_pm_info name other structs' members).
    Blocks inside a function body (`bodies`: byte ranges) declare locals: left out."""
    scan = _scan(source, members)
    firsts, reach = _intervals(bodies)
    names: set[str] = set()
    for b, names_on, nested in zip(scan.blocks, scan.declares, scan.in_braces, strict=True):
        if any(b.on[0] <= k < b.on[1] or b.off[0] <= k < b.off[1] for k in keep):
            continue
        if nested:
            continue  # inside a struct (or a function): members, not file-scope names
        i = bisect_right(firsts, b.on[0]) - 1
        if i >= 0 and reach[i] > b.on[0]:
            continue  # a body starts at or before it and ends after it
        names |= names_on
    return names - scan.stubs


_INTERVALS: list[tuple[tuple[tuple[int, int], ...], list[int], list[int]]] = []


def _intervals(bodies: tuple[tuple[int, int], ...]) -> tuple[list[int], list[int]]:
    """The ranges' starts in order, and the farthest end among each start and those before it
    (so "does a range hold x" is one bisection); the last few kept, by identity."""
    for given, firsts, reach in _INTERVALS:
        if given is bodies:
            return firsts, reach
    ordered = sorted(bodies)
    firsts = [lo for lo, _hi in ordered]
    reach, far = [], -1
    for _lo, hi in ordered:
        far = max(far, hi)
        reach.append(far)
    _INTERVALS.insert(0, (bodies, firsts, reach))
    del _INTERVALS[2:]
    return firsts, reach


def _null_macros(text: bytes) -> set[str]:
    return {
        m.group(1).decode()
        for m in _DEFINE.finditer(text)
        if not m.group(2) and m.group(3).strip() in (b"NULL", b"((void *)0)")
    }


def declared(text: bytes, members: bool = True) -> set[str]:
    """The names `text` declares at file scope: macros, functions (prototypes and bodies),
    variables, and (`members`) the members of the structs it defines."""
    names = {m.group(1).decode() for m in _DEFINE.finditer(text)}
    code = _PREPROC_LINE.sub(b"", _COMMENT.sub(b"", text))
    depth_fn = 0  # inside a function body: nothing there is declared at file scope
    stack: list[bool] = []  # per open brace: a function body?
    in_struct = 0  # open struct/union/enum bodies
    agg: list[bool] = []  # per open brace: such a body?
    stmt_start = 0
    i, n = 0, len(code)
    while i < n:
        ch = code[i : i + 1]
        if ch == b"{":
            head = code[stmt_start:i].rstrip()
            body = head.endswith(b")") and b"=" not in head
            aggregate = False
            if depth_fn == 0:
                if body:
                    names |= _names_of(head)
                elif not head.endswith(b"="):
                    stmt_start = i + 1  # a struct/union/enum body: its members are declared
                    aggregate = True
            stack.append(body)
            in_struct += aggregate
            agg.append(aggregate)
            depth_fn += body
            if depth_fn == 0:
                stmt_start = i + 1
        elif ch == b"}":
            if stack:
                depth_fn -= stack.pop()
                in_struct -= agg.pop()
            stmt_start = i + 1
        elif ch == b";" and depth_fn == 0 and (members or in_struct == 0):
            names |= _names_of(code[stmt_start:i])
            stmt_start = i + 1
        i += 1
    return names


def _names_of(stmt: bytes) -> set[str]:
    """The declared names of one declaration (`int a, b[4]`, `int (*cb)(void)`, `int f(x)`)."""
    stmt = re.sub(rb"=[^,]*", b"", stmt)  # initializers
    stmt = re.sub(rb"\[[^\]]*\]", b"", stmt)  # array sizes (`regs[ARRAY_SIZE(x)]`)
    out: set[str] = set()
    for part in _split_top(stmt):
        ptr = re.search(rb"\(\s*\*\s*(\w+)\s*\)", part)
        if ptr:
            out.add(ptr.group(1).decode())
            continue
        fn = re.search(rb"(\w+)\s*\(", part)
        if fn and fn.group(1) not in _KEYWORDS:
            out.add(fn.group(1).decode())
            continue
        idents = [x for x in _IDENT.findall(re.sub(rb":\s*\d+", b"", part))
                  if x not in _KEYWORDS]  # fmt: skip
        if len(idents) >= 2 or (idents and out):
            out.add(idents[-1].decode())
    return out


def _split_top(stmt: bytes) -> list[bytes]:
    parts, depth, start = [], 0, 0
    for i, c in enumerate(stmt):
        if c == 0x28:  # (
            depth += 1
        elif c == 0x29:
            depth -= 1
        elif c == 0x2C and depth == 0:  # ,
            parts.append(stmt[start:i])
            start = i + 1
    parts.append(stmt[start:])
    return parts


@lru_cache(maxsize=4)
def header_config_only(top: str) -> frozenset[str]:
    """The names the tree's headers (`include/`) declare only with a CONFIG_PM* symbol on."""
    names: set[str] = set()
    for root, _dirs, files in os.walk(Path(top) / "include"):
        for f in files:
            if not f.endswith(".h"):
                continue
            try:
                data = (Path(root) / f).read_bytes()
            except OSError:
                continue
            if b"CONFIG_PM" in data:
                names |= config_only(data, members=False)
    return frozenset(names)


_LOCAL_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]+"([^"\n]+)"', re.M)


def local_header_config_only(path: str, source: bytes) -> frozenset[str]:
    """The same for the file's own headers (`#include "sdhci-pltfm.h"` next to it, and the
    local headers those include: sdhci.h's `#ifdef CONFIG_PM` prototypes of
    sdhci_suspend_host())."""
    names: set[str] = set()
    here = Path(path).parent
    seen: set[Path] = set()
    todo = [(source, 0)]
    while todo:
        text, depth = todo.pop()
        for m in _LOCAL_INCLUDE.finditer(text):
            header = here / m.group(1).decode(errors="replace")
            if header in seen:
                continue
            seen.add(header)
            try:
                data = header.read_bytes()
            except (OSError, ValueError):
                continue
            if b"CONFIG_PM" in data:
                names |= config_only(data, members=False)
            if depth < 3:
                todo.append((data, depth + 1))
    return frozenset(names)

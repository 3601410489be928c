"""Split a very large C text into parts that can be parsed and analysed one at a time.

A generated or amalgamated source (tens of MB) parsed whole holds a tree-sitter tree of ~21x
its size; analysed in parts, memory follows the largest part. The text is cut into blocks at
top level, kernel style (after a column-0 `}`, before an `#include`, before a column-0 comment
that follows a blank line; never inside an `#if`), and blocks are packed into parts of about
`TARGET_BYTES`. Each part is then read with its context: the blocks elsewhere that define the
names it uses in code (comments and strings do not count; the nearest definition before the
use, and the body a prototype declares), what those use in turn, the blocks that set a member
the part calls through a pointer (`ops->resume(dev)`: `.resume = foo_resume`), and the other
callers of each function it holds or reads (a rule asks whether a helper is called outside PM).
Definitions are read from the text (a function body at column 0, a prototype, a #define, a
table, a tag, a typedef, an enumerator, a PM-ops or lock macro's name); an exported function is
an API and is not followed (as in a file of its own). `bench/parts_agreement.py` compares
findings in parts with the whole file's on real drivers split small.
"""


from __future__ import annotations

import re
from array import array
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass

# parts are packed up to about this many bytes (a part's tree is ~21x its text)
TARGET_BYTES = 256 << 10

_IF_DEPTH = re.compile(rb"^[ \t]*#[ \t]*(if|ifdef|ifndef|endif)\b", re.M)
_BOUNDARIES = (
    re.compile(rb"\n\}[^\n]*\n"),  # after a column-0 close brace (ends at the next line)
    re.compile(rb"\n(?=[ \t]*#[ \t]*include\b)"),  # before an #include
    re.compile(rb"\n\n(?=/[*/])"),  # before a column-0 comment after a blank line
    # before a column-0 declaration after a blank line (not a goto label; not a directive:
    # `#if 0` at column 0 inside a function body is kernel style too)
    re.compile(rb"\n\n(?=[A-Za-z_])(?![A-Za-z_]\w*:[^:])"),
)
_DEFS = (
    re.compile(rb"\n[ \t]*#[ \t]*define[ \t]+(\w+)"),
    # what a column-0 PM-ops or lock macro declares: DEFINE_SIMPLE_DEV_PM_OPS(foo_pm, ...)
    re.compile(
        rb"\n(?:static[ \t]+)?(?:const[ \t]+)?"
        rb"(?:[A-Z_]*PM_OPS|DEFINE_(?:RAW_)?(?:MUTEX|SPINLOCK))\([ \t]*(\w+)"
    ),
    # a table or struct initialised at file scope: `... name[] __maybe_unused = {`
    re.compile(
        rb"\n[A-Za-z_][^\n;{}()=]*[ \t*](\w+)[ \t]*(?:\[[^\]\n]*\][ \t]*)*"
        rb"(?:__\w+[ \t]*)*=[ \t]*\{"
    ),
    re.compile(rb"\n\}[ \t]*(\w+)[ \t]*;"),  # typedef struct { ... } name;
)
# a struct, union or enum defined at column 0: its tag
_TAG_DEF = re.compile(rb"\n(?:typedef[ \t]+)?(?:struct|union|enum)[ \t]+(\w+)[ \t]*\{")
# an exported function is an API: a use elsewhere reads it as a call out of the file, as it
# would be in a file of its own
_EXPORT = re.compile(rb"EXPORT_SYMBOL\w*\([ \t]*(\w+)")
# a declaration line in a function body (`\tint result = 0;`, `\tstruct device *dev;`): the
# name it declares; and a parameter (`(struct device *dev,`)
_LOCAL = re.compile(
    rb"\n\t+(?!return\b|else\b|case\b|goto\b)[A-Za-z_][\w \t*]*?[ \t*]\**(\w+)[ \t]*"
    rb"(?:\[[^\]\n]*\][ \t]*)?[;=,]"
)
_PARAM = re.compile(rb"[(,][ \t\n]*(?:const[ \t]+)?[A-Za-z_][\w \t*]*?[ \t*]\**(\w+)[ \t]*(?=[,)])")
# `static int foo(struct device *dev);`: a type before the name; macro names (all caps) are not
_PROTOTYPE = re.compile(rb"\n[A-Za-z_][^\n;{}()=]*[ \t*]([a-z_]\w*)[ \t]*\([^;{}]*\)[ \t]*;")
_LOCAL_INCLUDE = re.compile(rb'\n[ \t]*#[ \t]*include[ \t]*"[^"\n]+"')
_BODY = re.compile(rb"\n\{")  # a function body, kernel style
# `.suspend = foo_suspend,` sets a member a pointer call (`ops->suspend(dev)`) may go through
_DESIGNATOR = re.compile(rb"\.(\w+)[ \t]*=[ \t]*&?(\w+)")
_FIELD_CALL = re.compile(rb"(?:->|\.)[ \t]*(\w+)[ \t]*\(")
# a member set in more blocks than this is not followed through pointer calls (`.suspend` in an
# amalgamation of drivers: every driver's table)
_MAX_SETTERS = 8
# how far after a use, at most, the body of a function declared only in a header is looked for
# (a source file's length: in an amalgamation, further on is another file's function)
_FORWARD = 1 << 20
_NAME_CALL = re.compile(rb"(\w+)[ \t]*\(")
_ENUM = re.compile(rb"enum[^;{}()\w][^;{}()]*\{([^{}]*)\}")
_ENUMERATOR = re.compile(rb"(?:^|,)\s*(?:/\*.*?\*/\s*)?([A-Za-z_]\w*)", re.S)
# code words only: comments, strings and characters are matched and dropped (group 1 empty)
_WORDS = re.compile(
    rb"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'|(?<![.>\w])([A-Za-z_]\w*)",
    re.S,
)
_KEYWORDS = frozenset(
    b"auto break case char const continue default do double else enum extern float for goto if "
    b"inline int long register restrict return short signed sizeof static struct switch "
    b"typedef union unsigned void volatile while bool".split()
)


@dataclass(frozen=True)
class Piece:
    """Bytes `start`..`end` of the text (whole lines); `line` lines precede it."""

    start: int
    end: int
    line: int


@dataclass(frozen=True)
class Part:
    """A span of the text (`own`) and, after it, the blocks from elsewhere it reads
    (`context`, in text order): the text a part is analysed as."""

    own: Piece
    context: tuple[Piece, ...] = ()

    def text(self, source: bytes) -> bytes:
        out = [source[self.own.start : self.own.end]]
        if self.context and not out[0].endswith(b"\n"):
            out.append(b"\n")
        out += [source[c.start : c.end] for c in self.context]
        return b"".join(out)

    def lines(self, source: bytes) -> list[tuple[int, int]]:
        """(first line in the part's text, its line in the whole text), 1-based, per piece."""
        out = [(1, self.own.line + 1)]
        at = 1 + source.count(b"\n", self.own.start, self.own.end)
        if self.context and not source[self.own.start : self.own.end].endswith(b"\n"):
            at += 1
        for c in self.context:
            out.append((at, c.line + 1))
            at += source.count(b"\n", c.start, c.end)
        return out


def split(text: bytes, target: int = TARGET_BYTES) -> list[Part]:
    """`text` as consecutive spans of about `target` bytes cut at top level, each with the
    blocks elsewhere it reads."""
    cuts = _candidates(text)
    index = _Index(text, cuts)
    lines = [0]  # lines before each cut
    for a, b in zip(cuts, cuts[1:], strict=False):
        lines.append(lines[-1] + text.count(b"\n", a, b))
    includes = [(m.start() + 1, text.find(b"\n", m.end()) + 1 or len(text))
                for m in _LOCAL_INCLUDE.finditer(text)]
    out: list[Part] = []
    first = 0
    while first < len(cuts) - 1:
        last = first
        while last + 1 < len(cuts) - 1 and cuts[last + 2] - cuts[first] <= target:
            last += 1
        blocks = index.context(first, last)
        context = [Piece(cuts[b], cuts[b + 1], lines[b]) for b in blocks]
        # the local headers included before the part's end (the model reads their #defines)
        outside = set(range(first, last + 1)) | set(blocks)
        for start, end in includes:
            if start >= cuts[last + 1]:
                break
            b = bisect_right(cuts, start) - 1
            if b not in outside:
                context.append(Piece(start, end, lines[b] + text.count(b"\n", cuts[b], start)))
        context.sort(key=lambda c: c.start)
        out.append(Part(Piece(cuts[first], cuts[last + 1], lines[first]), tuple(context)))
        first = last + 1
    return out


class _Index:
    """Per block: the file-scope names it defines and uses, the members it calls through
    pointers, the functions whose body it holds and the blocks that call them."""

    def __init__(self, text: bytes, cuts: list[int]) -> None:
        self.cuts = cuts
        self.defs: dict[bytes, list[int]] = {}  # name -> sorted blocks defining it
        bodies: dict[bytes, list[int]] = {}  # name -> blocks holding its function body
        self.prototypes: set[tuple[int, bytes]] = set()
        # block -> the functions and tables it defines (their users elsewhere are read with it:
        # a helper's other callers, a driver struct's registration)
        defines: dict[int, list[bytes]] = {}
        for i, pattern in enumerate(_DEFS):
            for m in pattern.finditer(text):
                block = self._add(self.defs, m.group(1), m.start() + 1)
                if i in (1, 2):  # a table
                    defines.setdefault(block, []).append(m.group(1))
        tables = {name for names in defines.values() for name in names}
        holds: dict[int, list[bytes]] = {}  # block -> the functions whose body it holds
        for m in _TAG_DEF.finditer(text):  # (a tag and a variable of its name are not told
            self._add(self.defs, m.group(1), m.start() + 1)  # apart: both are read)
        for m in _PROTOTYPE.finditer(text):
            self.prototypes.add((self._add(self.defs, m.group(1), m.start() + 1), m.group(1)))
        params: dict[int, list[bytes]] = {}  # block -> those functions' parameters
        for name, at, names in _functions(text):
            self._add(self.defs, name, at)
            block = self._add(bodies, name, at)
            holds.setdefault(block, []).append(name)
            defines.setdefault(block, []).append(name)
            params.setdefault(block, []).extend(names)
        for m in _ENUM.finditer(text):
            for e in _ENUMERATOR.finditer(m.group(1)):
                self._add(self.defs, e.group(1), m.start())
        exported = frozenset(_EXPORT.findall(text))
        for k in [k for k in self.defs if k in _KEYWORDS or k.startswith(b"__") or k in exported]:
            del self.defs[k]  # (an exported function is read as a call out of the file)
        for where in (*self.defs.values(), *bodies.values()):
            where.sort()
        self.bodies = bodies
        # member -> (block, function) of each initializer setting it to a function
        self.setters: dict[bytes, list[tuple[int, bytes]]] = {}
        for m in _DESIGNATOR.finditer(text):
            if m.group(2) in bodies:
                setters = self.setters.setdefault(m.group(1), [])
                setter = (bisect_right(cuts, m.start()) - 1, m.group(2))
                if setter not in setters[-1:]:
                    setters.append(setter)
        # per block, the defined names it uses (a name's number in `names`) and the members
        # with setters it calls through pointers; the blocks that call each held function
        self.names = list(self.defs)
        number = {name: i for i, name in enumerate(self.names)}
        self.uses: list[array[int]] = []
        self.members: dict[int, list[bytes]] = {}
        self.callers: dict[int, list[int]] = {}
        referable = tables | bodies.keys()
        for j in range(len(cuts) - 1):
            start, end = cuts[j], cuts[j + 1]
            hits = number.keys() & set(_WORDS.findall(text, start, end))
            # names the block declares for itself (indented declarations: a function's
            # locals, a struct's members; parameters): there a use of one is that, not a
            # file-scope namesake (`result`, `lock`)
            hits.difference_update(_LOCAL.findall(text, start - 1 if start else 0, end))
            body = j in holds
            if body:
                hits.difference_update(params.get(j, ()))
                calls = [m for m in set(_FIELD_CALL.findall(text, start, end))
                         if m in self.setters]
                if calls:
                    self.members[j] = calls
            self.uses.append(array("i", sorted(number[w] for w in hits)))
            for name in hits.intersection(referable):
                # a use of a table (its registration); of a function: a call, or any use in a
                # block holding no function (a table: `.resume = foo`)
                if body and name not in tables and not _calls(text, name, start, end):
                    continue
                for b in self._read(name, j, j):
                    if name in defines.get(b, ()):
                        self.callers.setdefault(b, []).append(j)

    def _add(self, table: dict[bytes, list[int]], name: bytes, at: int) -> int:
        block = bisect_right(self.cuts, at) - 1
        where = table.setdefault(name, [])
        if block not in where[-2:]:  # (sorted at the end; several patterns add out of order)
            where.append(block)
        return block

    def context(self, first: int, last: int) -> list[int]:
        """The blocks outside `first`..`last` that define what those blocks use (and what the
        blocks found use in turn), that set a member they call through a pointer, and that
        call a function defined in any of those (not what such a caller uses in turn: a rule
        reads a helper's other callers, not theirs), sorted."""
        found: set[int] = set()
        todo = [(first, last, True)]
        while todo:
            lo, hi, callers = todo.pop()
            wanted: set[int] = set()
            tables: set[int] = set()  # the initializers a pointer call reads (not followed)
            targets: set[int] = set()  # the functions they set that member to
            calling: set[int] = set()
            for b in range(lo, hi + 1):
                for i in self.uses[b]:
                    wanted.update(self._read(self.names[i], lo, hi))
                for member in self.members.get(b, ()):
                    setters = self.setters[member]
                    if len(setters) <= _MAX_SETTERS:
                        for table, function in setters:
                            tables.add(table)
                            targets.update(self._read(function, table, table))
                if callers:
                    calling.update(self.callers.get(b, ()))
            for b in sorted(tables - found):
                if not first <= b <= last:
                    found.add(b)
            for b in sorted((wanted | calling | targets) - found):
                if not first <= b <= last:
                    found.add(b)
                    todo.append((b, b, callers and b in wanted and b not in targets))
        return sorted(found)

    def _read(self, word: bytes, lo: int, hi: int) -> list[int]:
        """The blocks a use of `word` in blocks lo..hi reads: its nearest definition before
        lo (none if lo..hi define it), and the body of a function only declared there."""
        at = self.defs.get(word)
        if at is None:
            return []
        k = bisect_right(at, hi) - 1
        if k < 0:  # used before any definition: a function declared in a header (its body
            found = self.bodies.get(word)  # follows within the same source file), or none
            if found and found[0] > hi and self.cuts[found[0]] - self.cuts[hi] <= _FORWARD:
                return [found[0]]
            return []
        out = [] if at[k] >= lo else [at[k]]
        if (at[k], word) in self.prototypes:  # the function the prototype declares
            found = self.bodies.get(word)
            if found is not None and not any(lo <= b <= hi for b in found):
                after = bisect_right(found, at[k])
                if after < len(found):
                    out.append(found[after])
        return out


def _calls(text: bytes, name: bytes, start: int, end: int) -> bool:
    """Whether text[start:end] has `name(` with no word character before it."""
    at = text.find(name + b"(", start, end)
    while at >= 0:
        if not (text[at - 1 : at].isalnum() or text[at - 1 : at] in (b"_", b".", b">")):
            return True
        at = text.find(name + b"(", at + 1, end)
    return False


def _candidates(text: bytes) -> list[int]:
    """Sorted block boundaries (0 and len(text) included), each outside every #if."""
    marks: list[int] = []
    depths: list[int] = []
    depth = 0
    for m in _IF_DEPTH.finditer(text):
        depth += -1 if m.group(1) == b"endif" else 1
        marks.append(m.start())
        depths.append(depth)
    found: set[int] = set()
    for pattern in _BOUNDARIES:
        found.update(m.end() for m in pattern.finditer(text))
    cuts = [0]
    for p in sorted(found):
        if 0 < p < len(text):
            i = bisect_right(marks, p - 1) - 1  # directives before p (a directive at p is after)
            if i < 0 or depths[i] <= 0:
                cuts.append(p)
    cuts.append(len(text))
    return cuts


def _functions(text: bytes) -> Iterable[tuple[bytes, int, list[bytes]]]:
    """(name, position of the `{`, parameter names) of each column-0 function body: the name
    is the first `name(` of the last column-0 line before it (`static int\nfoo(...)` too)."""
    for m in _BODY.finditer(text):
        end = m.start()
        start = text.rfind(b"\n", 0, end)
        for _ in range(8):  # the head's lines, back to the one that starts at column 0
            line_start = start + 1
            head = text[line_start : line_start + 1]
            if line_start < end and (head.isalpha() or head == b"_"):
                call = _NAME_CALL.search(text, line_start, text.find(b"\n", line_start, end + 1))
                if call is not None and text[call.start() - 2 : call.start()] != b"##":
                    yield call.group(1), end + 1, _PARAM.findall(text, call.end() - 1, end)
                break
            if start <= 0:
                break
            start = text.rfind(b"\n", 0, start)

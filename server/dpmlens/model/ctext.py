"""A small C tokenizer and initializer reader for text the tree-sitter tree gets wrong.

tree-sitter-c cannot know what kernel macros expand to, so comma-less PM macros inside an
initializer and `static DEFINE_*_PM_OPS(...)` at file scope come out as wrong nodes or ERRORs.
These helpers read such text directly: tokens carry absolute byte offsets (the text is decoded
as latin-1, one character per byte), comments and preprocessor lines are skipped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+|\\\r?\n)  # a stray line continuation counts as white space
  | (?P<comment>//[^\n]*|/\*.*?(?:\*/|\Z))
  | (?P<pp>(?<![^\n])[ \t]*\#(?:\\\r?\n|[^\n])*)
  | (?P<str>L?"(?:\\.|[^"\\\n])*"?)
  | (?P<chr>'(?:\\.|[^'\\\n])*'?)
  | (?P<ident>[A-Za-z_]\w*)
  | (?P<num>\.?\d(?:[eEpP][+-]|[\w.])*)
  | (?P<punct>->|<<=?|>>=?|\+\+|--|&&|\|\||[<>=!]=|\.\.\.|\#\#|[^\s])
    """,
    re.VERBOSE | re.DOTALL,
)

_SKIP = frozenset({"ws", "comment", "pp"})
_OPEN = {"(": ")", "{": "}", "[": "]"}
_CLOSE = frozenset(_OPEN.values())


@dataclass(frozen=True)
class Tok:
    kind: str  # ident | num | str | chr | punct
    text: str
    start: int  # absolute byte offset
    end: int


def tokens(text: str, pos: int = 0, base: int = 0) -> Iterator[Tok]:
    """Tokens of `text` from `pos` on (lazily); offsets are `base + position in text`."""
    for m in _TOKEN.finditer(text, pos):
        kind = m.lastgroup or "punct"
        if kind in _SKIP:
            continue
        yield Tok(kind, m.group(), base + m.start(), base + m.end())


def balanced(it: Iterator[Tok], first: Tok) -> list[Tok]:
    """Tokens from the opening bracket `first` through its matching close (or EOF)."""
    out = [first]
    stack = [_OPEN[first.text]]
    for tok in it:
        out.append(tok)
        if tok.kind != "punct":
            continue
        if tok.text in _OPEN:
            stack.append(_OPEN[tok.text])
        elif tok.text in _CLOSE:
            # tolerate mismatches (broken code): pop to the matching opener if any
            while stack and stack[-1] != tok.text:
                stack.pop()
            if stack:
                stack.pop()
            if not stack:
                break
    return out


@dataclass(frozen=True)
class Expr:
    """An expression written in the source: its text and byte range."""

    text: str
    start: int
    end: int
    toks: tuple[Tok, ...] = field(default=(), repr=False, compare=False)


@dataclass(frozen=True)
class Designated:
    """`.a.b = value` or `[i] = value` (path element "[i]") or `.a = { ... }`."""

    path: tuple[str, ...]
    value: Expr | None
    items: tuple[Item, ...] | None  # set when the value is a nested braced initializer
    start: int
    end: int


@dataclass(frozen=True)
class MacroCall:
    """`NAME(args)` standing as an item of its own (SET_SYSTEM_SLEEP_PM_OPS(a, b) ...)."""

    name: str
    args: tuple[Expr, ...]
    start: int
    end: int


@dataclass(frozen=True)
class Positional:
    value: Expr | None
    items: tuple[Item, ...] | None
    start: int
    end: int


Item = Designated | MacroCall | Positional


def _expr(toks: list[Tok], text: str, base: int) -> Expr | None:
    if not toks:
        return None
    s, e = toks[0].start, toks[-1].end
    return Expr(text[s - base : e - base], s, e, tuple(toks))


def split_args(toks: list[Tok], text: str, base: int) -> tuple[Expr, ...]:
    """Split `( a, b(c, d), e )` (tokens including the parentheses) at top-level commas."""
    args: list[Expr] = []
    cur: list[Tok] = []
    depth = 0
    for tok in toks[1:-1] if toks and toks[-1].text == _OPEN.get(toks[0].text) else toks[1:]:
        if tok.kind == "punct":
            if tok.text in _OPEN:
                depth += 1
            elif tok.text in _CLOSE:
                depth -= 1
            elif tok.text == "," and depth == 0:
                args.append(_expr(cur, text, base) or Expr("", tok.start, tok.start))
                cur = []
                continue
        cur.append(tok)
    if cur or args:
        args.append(_expr(cur, text, base) or Expr("", toks[-1].start, toks[-1].start))
    return tuple(args)


def read_initializer(toks: list[Tok], text: str, base: int) -> tuple[Item, ...]:
    """Items of a braced initializer given its tokens (from `{` through `}`).

    Handles designators, nested braces, and comma-less macro calls in any position
    (`SET_SYSTEM_SLEEP_PM_OPS(a, b) SET_RUNTIME_PM_OPS(c, d, e) .x = y`).
    """
    end = len(toks) - 1 if toks and toks[-1].text == "}" else len(toks)
    items, _ = _read_items(toks, 1, end, text, base, 0)
    return tuple(items)


# Nesting deeper than this is read as an opaque value (no recursion blow-up on odd input).
MAX_NESTING = 32


def _skip_group(toks: list[Tok], i: int, end: int) -> int:
    """Index just past the bracket group opening at i."""
    depth = 0
    while i < end:
        t = toks[i].text
        if toks[i].kind == "punct":
            if t in _OPEN:
                depth += 1
            elif t in _CLOSE:
                depth -= 1
                if depth <= 0:
                    return i + 1
        i += 1
    return end


def _read_items(
    toks: list[Tok], i: int, end: int, text: str, base: int, depth: int
) -> tuple[list[Item], int]:
    items: list[Item] = []
    while i < end:
        tok = toks[i]
        if tok.text == ",":
            i += 1
            continue
        start = tok.start
        # A macro call standing alone: IDENT ( ... ) followed by something that is not an
        # operator continuing an expression (",", "}", ".", "[", another IDENT, or the end).
        if tok.kind == "ident" and i + 1 < end and toks[i + 1].text == "(":
            j = _skip_group(toks, i + 1, end)
            nxt = toks[j] if j < end else None
            if nxt is None or nxt.text in (",", ".", "[") or nxt.kind == "ident":
                args = split_args(toks[i + 1 : j], text, base)
                items.append(MacroCall(tok.text, args, start, toks[j - 1].end))
                i = j
                continue
        path: list[str] = []
        while i < end and toks[i].text in (".", "["):
            if toks[i].text == "." and i + 1 < end and toks[i + 1].kind == "ident":
                path.append(toks[i + 1].text)
                i += 2
            else:
                j = _skip_group(toks, i, end)
                path.append(text[toks[i].start - base : toks[j - 1].end - base])
                i = j
        if path and i < end and toks[i].text == "=":
            i += 1
        value, nested, i = _read_value(toks, i, end, text, base, depth)
        last_end = toks[i - 1].end if i > 0 else start
        if path:
            items.append(Designated(tuple(path), value, nested, start, last_end))
        elif value is not None or nested is not None:
            items.append(Positional(value, nested, start, last_end))
        else:
            i += 1  # stray token: skip it
    return items, i


def _read_value(
    toks: list[Tok], i: int, end: int, text: str, base: int, depth: int
) -> tuple[Expr | None, tuple[Item, ...] | None, int]:
    if i < end and toks[i].text == "{":
        j = _skip_group(toks, i, end)
        if depth >= MAX_NESTING:
            return _expr(toks[i:j], text, base), None, j
        inner_end = j - 1 if toks[j - 1].text == "}" else j
        nested, _ = _read_items(toks, i + 1, inner_end, text, base, depth + 1)
        return None, tuple(nested), j
    cur: list[Tok] = []
    depth = 0
    while i < end:
        tok = toks[i]
        if tok.kind == "punct":
            if tok.text in _OPEN:
                depth += 1
            elif tok.text in _CLOSE:
                depth -= 1
            elif tok.text == "," and depth == 0:
                break
        elif depth == 0 and cur and tok.kind == "ident" and cur[-1].kind in ("ident", "num"):
            # `.a = x SET_RUNTIME_PM_OPS(...)`: a missing comma before a macro call
            break
        cur.append(tok)
        i += 1
    return _expr(cur, text, base), None, i


def strip_comments(text: str) -> str:
    """`text` without C comments (replaced by one space), e.g. a #define's value."""
    if "/*" not in text and "//" not in text:
        return text.strip()
    out = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        if kind == "comment":
            out.append(" ")
        else:
            out.append(m.group())
    return "".join(out).strip()


def word_byte(c: int) -> bool:
    """Is byte `c` part of a C identifier ([A-Za-z0-9_])?"""
    return c == 0x5F or 0x30 <= c <= 0x39 or 0x41 <= c <= 0x5A or 0x61 <= c <= 0x7A

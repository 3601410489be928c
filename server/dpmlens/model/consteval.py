"""eval_int(): integer constant expressions as written in delays (`msleep(10 + 40)`).

Literals (decimal, hex, octal, binary, U/L suffixes, char constants), + - * / % << >> & | ^ ~,
unary minus, parentheses, casts (ignored), object-like #defines (nested), BIT(n) and
msecs/usecs identity helpers are not expanded. Anything else gives None.
"""

from __future__ import annotations

from collections.abc import Mapping

from dpmlens.model import ctext

_TYPE_WORDS = frozenset(
    {
        "int", "unsigned", "signed", "long", "short", "char", "const", "volatile",
        "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64",
        "__u8", "__u16", "__u32", "__u64", "__s8", "__s16", "__s32", "__s64",
        "uint8_t", "uint16_t", "uint32_t", "uint64_t", "int8_t", "int16_t", "int32_t",
        "int64_t", "size_t", "ssize_t", "ulong", "uint", "bool",
    }
)  # fmt: skip
_BINARY = {
    "*": 10, "/": 10, "%": 10,
    "+": 9, "-": 9,
    "<<": 8, ">>": 8,
    "&": 5, "^": 4, "|": 3,
}  # fmt: skip
_MAX_DEPTH = 16  # nested #define expansions
_MAX_NESTING = 100  # parentheses / unary operators


class _Fail(Exception):
    pass


def parse_int_literal(text: str) -> int | None:
    """The value of a C integer literal (`0x10UL`, `010`, `0b11`, `1'000` not C), else None."""
    t = text.rstrip("uUlL")
    try:
        if t[:2] in ("0x", "0X"):
            return int(t[2:], 16)
        if t[:2] in ("0b", "0B"):
            return int(t[2:], 2)
        if len(t) > 1 and t[0] == "0":
            return int(t[1:], 8)
        return int(t, 10)
    except ValueError:
        return None


def eval_int(expr: str, defines: Mapping[str, str] | None = None) -> int | None:
    """Evaluate the integer constant expression `expr`, resolving identifiers in `defines`.

    Returns None when the expression is not a constant this evaluator understands (a variable,
    a function call, sizeof, division by zero, a #define cycle, ...). Division truncates
    towards zero like C.
    """
    try:
        return _eval(expr, defines or {}, 0)
    except (_Fail, RecursionError):
        return None


def _eval(expr: str, defines: Mapping[str, str], depth: int) -> int:
    if depth > _MAX_DEPTH:
        raise _Fail
    toks = list(ctext.tokens(expr))
    if not toks:
        raise _Fail
    p = _Parser(toks, defines, depth)
    value = p.expr(0)
    if p.i != len(toks):
        raise _Fail
    return value


class _Parser:
    def __init__(self, toks: list[ctext.Tok], defines: Mapping[str, str], depth: int) -> None:
        self.toks = toks
        self.defines = defines
        self.depth = depth
        self.i = 0
        self.nesting = 0

    def peek(self, k: int = 0) -> ctext.Tok | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def take(self) -> ctext.Tok:
        tok = self.peek()
        if tok is None:
            raise _Fail
        self.i += 1
        return tok

    def expect(self, text: str) -> None:
        if self.take().text != text:
            raise _Fail

    def expr(self, min_prec: int) -> int:
        left = self.unary()
        while True:
            tok = self.peek()
            if tok is None or tok.kind != "punct" or tok.text not in _BINARY:
                return left
            prec = _BINARY[tok.text]
            if prec < min_prec:
                return left
            self.i += 1
            right = self.expr(prec + 1)
            left = _apply(tok.text, left, right)

    def _is_cast(self) -> bool:
        # "(" type-words ")" followed by something that starts an operand; "(" already taken
        j = self.i
        saw_type = False
        while j < len(self.toks) and self.toks[j].kind == "ident":
            if self.toks[j].text not in _TYPE_WORDS:
                return False
            saw_type = True
            j += 1
        if not saw_type or j >= len(self.toks) or self.toks[j].text != ")":
            return False
        nxt = self.toks[j + 1] if j + 1 < len(self.toks) else None
        return nxt is not None and (nxt.kind in ("num", "ident", "chr") or nxt.text in "(-~+")

    def unary(self) -> int:
        self.nesting += 1
        if self.nesting > _MAX_NESTING:
            raise _Fail
        try:
            return self._unary()
        finally:
            self.nesting -= 1

    def _unary(self) -> int:
        tok = self.take()
        if tok.text == "(":
            if self._is_cast():
                while self.take().text != ")":
                    pass
                return self.unary()
            value = self.expr(0)
            self.expect(")")
            return value
        if tok.text == "-":
            return -self.unary()
        if tok.text == "+":
            return self.unary()
        if tok.text == "~":
            return ~self.unary()
        if tok.text == "!":
            return int(not self.unary())
        if tok.kind == "num":
            value = parse_int_literal(tok.text)
            if value is None:
                raise _Fail
            return value
        if tok.kind == "chr" and len(tok.text) == 3:
            return ord(tok.text[1])
        if tok.kind == "ident":
            nxt = self.peek()
            if tok.text == "BIT" and nxt is not None and nxt.text == "(":
                self.i += 1
                value = self.expr(0)
                self.expect(")")
                return 1 << value
            if tok.text in self.defines:
                return _eval(self.defines[tok.text], self.defines, self.depth + 1)
        raise _Fail


def _apply(op: str, a: int, b: int) -> int:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op in ("/", "%"):
        if b == 0:
            raise _Fail
        q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
        return q if op == "/" else a - q * b
    if op == "<<":
        if b < 0 or b > 128:
            raise _Fail
        return a << b
    if op == ">>":
        if b < 0:
            raise _Fail
        return a >> b
    if op == "&":
        return a & b
    if op == "^":
        return a ^ b
    if op == "|":
        return a | b
    raise _Fail

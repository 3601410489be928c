"""Evaluate a `#if`/`#elif` condition against a Kconfig: an int, or None when it depends on
something unknown (a macro from a header dpmlens does not read)."""

from __future__ import annotations

import re

from dpmlens.kbuild.kconfig import Kconfig

_TOKEN = re.compile(
    r"\s*(?:(?P<num>0[xX][0-9a-fA-F]+|\d+)[uUlL]*|(?P<id>[A-Za-z_]\w*)|"
    r"(?P<op>&&|\|\||==|!=|<=|>=|<<|>>|[-+*/%<>!()?:~&|^,]))"
)
_KCONFIG_FUNCS = {"IS_ENABLED", "IS_BUILTIN", "IS_MODULE", "IS_REACHABLE"}
_BINARY = [
    ("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", ">", "<=", ">="),
    ("<<", ">>"), ("+", "-"), ("*", "/", "%"),
]  # fmt: skip
_MAX_EXPANSION = 8


class _Syntax(Exception):
    pass


def tokenize(text: str) -> list[str] | None:
    text = re.sub(r"/\*.*?\*/|//.*", " ", text)
    out, pos = [], 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if m is None:
            return None
        out.append(m.group("num") or m.group("id") or m.group("op"))
        pos = m.end()
    return out


def evaluate(text: str, config: Kconfig, depth: int = 0) -> int | None:
    tokens = tokenize(text)
    if not tokens:
        return None
    parser = _Parser(tokens, config, depth)
    try:
        value = parser.ternary()
    except (_Syntax, IndexError, ValueError, RecursionError):
        return None
    return value if parser.pos == len(tokens) else None


class _Parser:
    def __init__(self, tokens: list[str], config: Kconfig, depth: int) -> None:
        self.t, self.pos, self.config, self.depth = tokens, 0, config, depth

    def peek(self) -> str | None:
        return self.t[self.pos] if self.pos < len(self.t) else None

    def take(self, want: str | None = None) -> str:
        tok = self.t[self.pos]
        if want is not None and tok != want:
            raise _Syntax(tok)
        self.pos += 1
        return tok

    def ternary(self) -> int | None:
        cond = self.binary(0)
        if self.peek() != "?":
            return cond
        self.take("?")
        yes = self.ternary()
        self.take(":")
        no = self.ternary()
        if cond is None:
            return yes if yes == no else None
        return yes if cond else no

    def binary(self, level: int) -> int | None:
        if level == len(_BINARY):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek() in _BINARY[level]:
            op = self.take()
            right = self.binary(level + 1)
            left = _apply(op, left, right)
        return left

    def unary(self) -> int | None:
        tok = self.take()
        if tok in ("!", "-", "+", "~"):
            v = self.unary()
            if v is None:
                return None
            return {"!": int(not v), "-": -v, "+": v, "~": ~v}[tok]
        if tok == "(":
            value = self.ternary()
            self.take(")")
            return value
        if tok[0].isdigit():
            octal = tok.startswith("0") and len(tok) > 1 and tok[1] not in "xX"
            return int(tok, 8) if octal else int(tok, 0)
        if tok == "defined":
            paren = self.peek() == "("
            if paren:
                self.take("(")
            name = self.take()
            if paren:
                self.take(")")
            known = self.config.is_set(name)
            return None if known is None else int(known)
        if tok in _KCONFIG_FUNCS and self.peek() == "(":
            self.take("(")
            name = self.take()
            self.take(")")
            return kconfig_call(tok, name, self.config)
        if not (tok[0].isalpha() or tok[0] == "_"):
            raise _Syntax(tok)
        if self.peek() == "(":  # a function-like macro dpmlens does not know
            raise _Syntax(tok)
        return self.identifier(tok)

    def identifier(self, name: str) -> int | None:
        if name in self.config.macros:
            if self.depth >= _MAX_EXPANSION:
                return None
            return evaluate(self.config.macros[name] or "0", self.config, self.depth + 1)
        if self.config.is_set(name) is False:
            return 0  # an unset CONFIG_ symbol, as cpp reads any undefined name
        return None


def kconfig_call(func: str, symbol: str, config: Kconfig) -> int | None:
    if func in ("IS_ENABLED", "IS_REACHABLE"):
        return config.enabled(symbol)
    if func == "IS_BUILTIN":
        return config.builtin(symbol)
    return config.module(symbol)


def _apply(op: str, a: int | None, b: int | None) -> int | None:
    if op == "&&":
        if a == 0 or b == 0:
            return 0
        return None if a is None or b is None else 1
    if op == "||":
        if a or b:
            return 1
        return None if a is None or b is None else 0
    if a is None or b is None:
        return None
    if op in ("/", "%") and b == 0:
        return None
    if op in ("<<", ">>") and not 0 <= b < 64:
        return None
    return {
        "|": lambda: a | b, "^": lambda: a ^ b, "&": lambda: a & b,
        "==": lambda: int(a == b), "!=": lambda: int(a != b), "<": lambda: int(a < b),
        ">": lambda: int(a > b), "<=": lambda: int(a <= b), ">=": lambda: int(a >= b),
        "<<": lambda: a << b, ">>": lambda: a >> b,
        "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
        "/": lambda: int(a / b), "%": lambda: a % b,
    }[op]()  # fmt: skip

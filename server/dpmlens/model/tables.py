"""`struct dev_pm_ops` tables in every form (designated, member macros, table macros), read
from the text with `ctext` (immune to tree-sitter's macro misparses).
(Part of the model builder: `TablesMixin` is mixed into `build._Builder`.)"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import tree_sitter as ts

from dpmlens.core.findings import Span
from dpmlens.model import ctext
from dpmlens.model.buses import DRIVER_STRUCTS
from dpmlens.model.phases import PHASES
from dpmlens.model.pm_macros import MEMBER_MACROS, POINTER_WRAPPERS, TABLE_MACROS
from dpmlens.model.types import PmMember, PmTable

_STRUCT_DECL = re.compile(
    rb"struct\s+(dev_pm_ops|" + b"|".join(k.encode() for k in DRIVER_STRUCTS) + rb")\b"
)
_QUALIFIERS = frozenset(
    {
        "const",
        "volatile",
        "static",
        "__maybe_unused",
        "__initdata",
        "__initconst",
        "__refdata",
        "__refconst",
        "__ro_after_init",
        "__used",
        "__read_mostly",
        "__devinitdata",
        "__exitdata",
    }
)


def strip_pointer(toks: tuple[ctext.Tok, ...] | list[ctext.Tok]) -> list[ctext.Tok]:
    """Tokens of `pm_ptr(&x)`, `pm_sleep_ptr(x)`, `&x`, `(x)` reduced to those of `x`."""
    t = list(toks)
    while t:
        if (
            len(t) >= 3
            and t[0].kind == "ident"
            and t[0].text in POINTER_WRAPPERS
            and t[1].text == "("
            and t[-1].text == ")"
        ):
            t = t[2:-1]
        elif t[0].text == "&":
            t = t[1:]
        elif len(t) >= 2 and t[0].text == "(" and t[-1].text == ")":
            t = t[1:-1]
        else:
            break
    return t


class TablesMixin:
    source: bytes
    text: str
    _struct_hits: list[re.Match[bytes]] | None

    if TYPE_CHECKING:  # provided by the builder or another mixin

        def span(self, start: int, end: int) -> Span:  # provided by the builder
            ...

        def context(self, offset: int) -> ts.Node | None:  # provided by the builder
            ...

        def config_guard(self, node: ts.Node | None) -> str | None:  # provided by the builder
            ...

    def struct_hits(self) -> list[re.Match[bytes]]:
        """`struct <dev_pm_ops or a driver type>` occurrences (one regex pass, cached)."""
        if self._struct_hits is None:
            self._struct_hits = list(_STRUCT_DECL.finditer(self.source))
        return self._struct_hits

    def tables(self) -> dict[str, PmTable]:
        tables: dict[str, PmTable] = {}
        src = self.source
        if b"dev_pm_ops" in src:
            for m in self.struct_hits():
                if m.group(1) != b"dev_pm_ops":
                    continue
                t = self._struct_table(m.start(), m.end())
                if t is not None:
                    tables.setdefault(t.name, t)
        pos = src.find(b"PM_OPS")
        while pos >= 0:
            t = self._macro_table(pos)
            if t is not None:
                tables.setdefault(t.name, t)
            pos = src.find(b"PM_OPS", pos + 6)
        return tables

    def _declarator(
        self, after: int, allow_array: bool = False
    ) -> tuple[str | None, str, list[ctext.Tok]]:
        """Read `name [attrs] = {...}` after a struct type: (name, declarator text, init toks).

        With `allow_array`, `name[...] = {...}` is accepted too and the declarator text ends
        with "[]". Pointers, prototypes and declarations without initializer give None.
        """
        it = ctext.tokens(self.text, after)
        name: str | None = None
        words: list[str] = []
        for tok in it:
            if tok.kind == "ident":
                words.append(tok.text)
                if name is None and tok.text not in _QUALIFIERS:
                    name = tok.text
                continue
            if tok.text == "[" and allow_array and name is not None and "[]" not in words:
                ctext.balanced(it, tok)
                words.append("[]")
                continue
            if tok.text == "=":
                brace = next(it, None)
                if brace is None or brace.text != "{":
                    return None, "", []
                return name, " ".join(words), ctext.balanced(it, brace)
            return None, "", []  # ';', '*', '(', '[': not an initialized variable
        return None, "", []

    def _struct_table(self, start: int, type_end: int) -> PmTable | None:
        node = self.context(start)
        if node is None:
            return None
        name, decl, toks = self._declarator(type_end)
        if name is None:
            return None
        items = ctext.read_initializer(toks, self.text, 0)
        stmt = self._statement_start(start)
        head = self.source[stmt:start]
        return PmTable(
            name=name,
            span=self.span(stmt, toks[-1].end),
            macro=None,
            members=tuple(self._members(items)),
            maybe_unused=b"__maybe_unused" in head or "__maybe_unused" in decl,
            under_config_ifdef=self.config_guard(node) is not None,
        )

    def _macro_table(self, pos: int) -> PmTable | None:
        src = self.source
        start = pos
        while start > 0 and (chr(src[start - 1]).isalnum() or src[start - 1] == 0x5F):
            start -= 1
        macro = src[start : pos + 6].decode("latin-1")
        spec = TABLE_MACROS.get(macro)
        if spec is None:
            return None
        it = ctext.tokens(self.text, pos + 6)
        paren = next(it, None)
        if paren is None or paren.text != "(":
            return None
        node = self.context(start)
        if node is None:
            return None
        call = ctext.balanced(it, paren)
        args = ctext.split_args(call, self.text, 0)
        if spec.name_arg >= len(args):
            return None
        name = args[spec.name_arg].text
        end = call[-1].end
        members = self._macro_members(macro, args) if spec.fills else []
        if spec.takes_initializer:
            eq = next(it, None)
            brace = next(it, None)
            if eq is None or eq.text != "=" or brace is None or brace.text != "{":
                return None
            toks = ctext.balanced(it, brace)
            members = self._members(ctext.read_initializer(toks, self.text, 0))
            end = toks[-1].end
        stmt = self._statement_start(start)
        head = src[stmt:start]
        return PmTable(
            name=name,
            span=self.span(stmt, end),
            macro=macro,
            members=tuple(members),
            maybe_unused=spec.maybe_unused or b"__maybe_unused" in head,
            under_config_ifdef=self.config_guard(node) is not None,
            exported=spec.exported,
        )

    def _statement_start(self, offset: int) -> int:
        """Start of the line holding `offset`, past its indentation."""
        ls = self.source.rfind(b"\n", 0, offset) + 1
        while ls < offset and self.source[ls] in b" \t":
            ls += 1
        return ls

    def _member(self, member: str, expr: ctext.Expr | None, via: str) -> PmMember:
        if expr is None:
            return PmMember(member, None, self.span(0, 0), via)
        toks = strip_pointer(expr.toks) if expr.toks else []
        if len(toks) == 1 and toks[0].kind == "ident" and toks[0].text != "NULL":
            return PmMember(member, toks[0].text, self.span(toks[0].start, toks[0].end), via)
        return PmMember(member, None, self.span(expr.start, expr.end), via)

    def _members(self, items: tuple[ctext.Item, ...]) -> list[PmMember]:
        out: list[PmMember] = []
        for it in items:
            if isinstance(it, ctext.Designated):
                if len(it.path) == 1 and it.path[0] in PHASES and it.value is not None:
                    out.append(self._member(it.path[0], it.value, "designated"))
            elif isinstance(it, ctext.MacroCall) and it.name in MEMBER_MACROS:
                out.extend(self._macro_members(it.name, it.args))
        return out

    def _macro_members(self, macro: str, args: tuple[ctext.Expr, ...]) -> list[PmMember]:
        fills = MEMBER_MACROS.get(macro) or TABLE_MACROS[macro].fills
        out = []
        for member, src in fills:
            if isinstance(src, str):
                fn = None if src == "NULL" else src
                out.append(PmMember(member, fn, self.span(args[0].start, args[0].end), macro))
            elif src < len(args):
                out.append(self._member(member, args[src], macro))
        return out

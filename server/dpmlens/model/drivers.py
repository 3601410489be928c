"""Driver structs (`struct platform_driver foo = {...}` and 80 other types): registered name,
probe, `.pm` table, legacy bus callbacks, and how the driver is registered.
(Part of the model builder: `DriversMixin` is mixed into `build._Builder`.)"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from dpmlens.core.findings import Span
from dpmlens.model import ctext, words
from dpmlens.model.buses import DRIVER_STRUCTS, LEGACY_CALLBACKS, NAME_PATHS, PM_PATHS, PROBE_PATHS
from dpmlens.model.ctext import word_byte as _word
from dpmlens.model.tables import TablesMixin, strip_pointer
from dpmlens.model.types import DriverStruct

_REGISTRATION = re.compile(
    r"(?:\w*module_\w*driver\w*|builtin_\w*driver\w*|\w*register\w*|\w+_add_driver"
    r"|platform_driver_probe|platform_create_bundle|\w+_init_driver)"
)
# an array initializer still open at the end of a text window: `name[] = { &a,`
_OPEN_ARRAY = re.compile(r"(\w+)\s*\[[^\]]*\]\s*=\s*\{[^;{}]*$")
# how far before a `{` the declaration of the driver array it opens is looked for
_ARRAY_LOOKBACK = 300


class DriversMixin(TablesMixin):
    defs: dict[str, str]

    if TYPE_CHECKING:  # provided by the builder or another mixin

        def resolve_string(self, e: ctext.Expr) -> str | None:  # provided by NamesMixin
            ...

    def drivers(self) -> list[DriverStruct]:
        out: list[DriverStruct] = []
        for m in self.struct_hits():
            stype = m.group(1).decode("latin-1")
            if stype == "dev_pm_ops":
                continue
            out.extend(self._drivers_at(stype, m.start(), m.end()))
        return out

    def _drivers_at(self, stype: str, start: int, type_end: int) -> list[DriverStruct]:
        """The driver struct declared at `start`, or each element of a driver array
        (`static struct phy_driver foo_drivers[] = { {...}, {...} };`, named `foo_drivers[i]`).
        """
        if self.context(start) is None:
            return []
        var, decl, toks = self._declarator(type_end, allow_array=True)
        if var is None:
            return []
        items = ctext.read_initializer(toks, self.text, 0)
        registration = self._registration(var)
        stmt = self._statement_start(start)
        if not decl.endswith("[]"):
            return [self._driver(stype, var, items, self.span(stmt, toks[-1].end), registration)]
        out = []
        elements = [x for x in items if not isinstance(x, ctext.MacroCall) and x.items is not None]
        for i, el in enumerate(elements):
            assert el.items is not None
            span = self.span(el.start, el.end)
            out.append(self._driver(stype, f"{var}[{i}]", el.items, span, registration))
        return out

    def _driver(
        self,
        stype: str,
        var: str,
        items: tuple[ctext.Item, ...],
        span: Span,
        registration: str | None,
    ) -> DriverStruct:
        fields: dict[tuple[str, ...], ctext.Expr] = {}
        _flatten(items, (), fields)
        name = name_span = None
        for p in NAME_PATHS:
            if p in fields:
                e = fields[p]
                name, name_span = self.resolve_string(e), self.span(e.start, e.end)
                break
        legacy: dict[str, str] = {}
        legacy_spans: dict[str, Span] = {}
        for member in LEGACY_CALLBACKS:
            e = fields.get((member,))
            fn = self._ident(e)
            if e is not None and fn is not None:
                legacy[member] = fn
                tok = strip_pointer(e.toks)[0]
                legacy_spans[member] = self.span(tok.start, tok.end)
        return DriverStruct(
            var_name=var,
            struct_type=stype,
            bus=DRIVER_STRUCTS[stype],
            name=name,
            name_span=name_span,
            probe=next((self._ident(fields[p]) for p in PROBE_PATHS if p in fields), None),
            pm=next((self._pm_table(fields[p]) for p in PM_PATHS if p in fields), None),
            legacy=legacy,
            span=span,
            registration=registration,
            legacy_spans=legacy_spans,
        )

    def _ident(self, e: ctext.Expr | None) -> str | None:
        if e is None:
            return None
        toks = strip_pointer(e.toks)
        if len(toks) == 1 and toks[0].kind == "ident" and toks[0].text != "NULL":
            return toks[0].text
        return None

    def _pm_table(self, e: ctext.Expr) -> str | None:
        """The dev_pm_ops variable a `.pm` value names, through wrappers and #defines."""
        seen: set[str] = set()
        name = self._ident(e)
        while name is not None and name in self.defs and name not in seen:
            seen.add(name)
            toks = list(ctext.tokens(self.defs[name]))
            toks = strip_pointer(toks)
            if len(toks) == 1 and toks[0].kind == "ident" and toks[0].text != "NULL":
                name = toks[0].text
            else:
                return None
        return name

    def _registration(self, var: str, depth: int = 0) -> str | None:
        """The call or module_*_driver() macro that registers driver variable `var`.

        `var` may be any argument of the call (`coresight_init_driver("x", &a, &var, ...)`),
        or an element of an array that is registered as a whole
        (`static struct platform_driver * const drivers[] = { &a, &var };` +
        `platform_register_drivers(drivers, ...)`).
        """
        src = self.source
        for pos in words.positions(src, var):
            fn, opener = _enclosing_opener(src, pos)
            if opener == 0x28 and fn:  # inside a call's argument list
                if (
                    "unregister" not in fn
                    and _REGISTRATION.fullmatch(fn)
                    and self.context(pos) is not None
                ):
                    return fn
            elif opener == 0x7B and depth == 0:  # inside `{ ... }`: a driver array?
                window = src[max(0, pos - _ARRAY_LOOKBACK) : pos].decode("latin-1")
                array = _OPEN_ARRAY.search(window)
                if array is not None and self.context(pos) is not None:
                    found = self._registration(array.group(1), depth + 1)
                    if found is not None:
                        return found
        return None


def _enclosing_opener(src: bytes, pos: int, limit: int = 400) -> tuple[str, int]:
    """The innermost bracket still open before `pos` in the same statement.

    Returns (identifier before it, the bracket byte: '(' 0x28, '{' 0x7B) or ("", 0) when a
    statement boundary (';' or '}' at depth 0) or the scan limit comes first. Ignores
    brackets in strings and comments (good enough for `register(&drv)` shapes).
    """
    depth = 0
    i = pos - 1
    stop = max(0, pos - limit)
    while i >= stop:
        c = src[i]
        if c == 0x29 or c == 0x5D:  # ) ]
            depth += 1
        elif c == 0x28 or c == 0x5B:  # ( [
            if depth == 0:
                if c == 0x5B:
                    return "", 0
                j = i - 1
                while j >= 0 and src[j] in b" \t\n":
                    j -= 1
                k = j
                while k >= 0 and _word(src[k]):
                    k -= 1
                return src[k + 1 : j + 1].decode("latin-1"), c
            depth -= 1
        elif c == 0x7B:  # {
            if depth == 0:
                return "", c
            depth -= 1
        elif c == 0x7D:  # }
            if depth == 0:
                return "", 0
            depth += 1
        elif c == 0x3B and depth == 0:  # ;
            return "", 0
        i -= 1
    return "", 0


def _flatten(
    items: tuple[ctext.Item, ...], prefix: tuple[str, ...], out: dict[tuple[str, ...], ctext.Expr]
) -> None:
    for it in items:
        if isinstance(it, ctext.Designated):
            path = prefix + it.path
            if it.items is not None:
                _flatten(it.items, path, out)
            elif it.value is not None:
                out.setdefault(path, it.value)

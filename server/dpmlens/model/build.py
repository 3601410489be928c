"""build_model(): the PM model of one C file.

Functions and #defines come from a Python walk over the top level of the tree (and #if
blocks); call sites from the `calls` query, per function and only when asked. dev_pm_ops
tables and driver structs are located by cheap byte searches (`struct dev_pm_ops`,
`..._PM_OPS(`), checked against the tree (not in a comment or a #define body), and their
initializers are read from the text with `ctext`, which is immune to tree-sitter's macro
misparses. Callbacks whose definitions the tree lost are recovered by text.
"""

from __future__ import annotations

import os
import re
from bisect import bisect_right
from functools import lru_cache

import tree_sitter as ts

from dpmlens.findings import Span
from dpmlens.model import ctext
from dpmlens.model.buses import (
    DRIVER_STRUCTS,
    LEGACY_CALLBACKS,
    NAME_PATHS,
    PM_PATHS,
    PROBE_PATHS,
)
from dpmlens.model.phases import PHASES
from dpmlens.model.pm_macros import MEMBER_MACROS, POINTER_WRAPPERS, TABLE_MACROS
from dpmlens.model.types import (
    CallSite,
    DriverStruct,
    FileModel,
    FunctionDef,
    PmMember,
    PmTable,
)
from dpmlens.syntax.parser import LineIndex, captures, load_query, node_span, parse

_STRUCT_DECL = re.compile(
    rb"struct\s+(dev_pm_ops|" + b"|".join(k.encode() for k in DRIVER_STRUCTS) + rb")\b"
)
_STRING_ARRAY = re.compile(rb"char\s+(\w+)\s*\[\s*\w*\s*\]\s*=\s*((?:\"(?:[^\"\\\n]|\\.)*\"\s*)+)")
_LOCAL_INCLUDE = re.compile(rb'#[ \t]*include[ \t]*"([^"\n]+\.h)"')
_HEADER_DEFINE = re.compile(rb"#[ \t]*define[ \t]+(\w+)[ \t]+([^\n]*[^\\\n])$", re.M)
_MAX_HEADER = 1 << 20
_CONFIG_PM = re.compile(r"\bCONFIG_PM(?:_SLEEP)?\b")
_REGISTRATION = re.compile(
    r"(?:\w*module_\w*driver\w*|builtin_\w*driver\w*|\w*register\w*|\w+_add_driver"
    r"|platform_driver_probe|platform_create_bundle|\w+_init_driver)"
)
# an array initializer still open at the end of a text window: `name[] = { &a,`
_OPEN_ARRAY = re.compile(r"(\w+)\s*\[[^\]]*\]\s*=\s*\{[^;{}]*$")
_STATIC = re.compile(rb"\bstatic\b")
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
_SKIP_CONTEXT = frozenset({"comment", "preproc_def", "preproc_function_def", "string_literal"})
_CONTAINERS = frozenset(
    {
        "preproc_if",
        "preproc_ifdef",
        "preproc_else",
        "preproc_elif",
        "preproc_elifdef",
        "ERROR",
        "declaration_list",
    }
)
_DECLARATORS = frozenset(
    {"pointer_declarator", "parenthesized_declarator", "attributed_declarator"}
)
_GUARD_TYPES = frozenset({"preproc_ifdef", "preproc_if", "preproc_elif", "preproc_elifdef"})


def build_model(path: str, source: bytes, tree: ts.Tree | None = None) -> FileModel:
    """The PM model of the C file `path` with contents `source`.

    `tree` is an up-to-date tree for `source` (the language server passes its incrementally
    reparsed tree); without it the source is parsed here. Never raises on odd C: broken parts
    of the tree are local, and tables/drivers are read from the text. Call sites are
    extracted lazily (see `FileModel`): `model.calls_in(fn)` only looks at `fn`.
    """
    if tree is None:
        tree = parse(source)
    b = _Builder(path, source, tree)
    b.top_level(tree.root_node)
    b.string_arrays()
    tables = b.tables()
    drivers = b.drivers()
    b.recover_callbacks(tables, drivers)
    b.text, b._struct_hits = "", None  # only needed while building; the model keeps `b`
    return FileModel(
        path=path,
        source=source,
        functions=b.funcs,
        calls=b.all_calls,
        pm_tables=tables,
        drivers=drivers,
        defines=b.defs,
        tree=tree,
        loader=b,
    )


def kbuild_modname(path: str) -> str:
    """KBUILD_MODNAME as kbuild derives it for a single-file module: the file stem, '-' -> '_'."""
    stem = os.path.splitext(os.path.basename(path))[0]
    return stem.replace("-", "_")


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


class _Builder:
    """Builds one FileModel; stays attached to it as its `loader` (lazy call sites)."""

    def __init__(self, path: str, source: bytes, tree: ts.Tree) -> None:
        self.path = path
        self.source = source
        self.tree = tree
        self.text = source.decode("latin-1")
        self._lines: LineIndex | None = None
        self.funcs: dict[str, FunctionDef] = {}
        self.func_nodes: dict[str, list[ts.Node]] = {}
        self.func_starts: list[int] = []
        self.func_ranges: list[tuple[int, int, str]] = []
        self.defs: dict[str, str] = {}
        self.strings: dict[str, str] = {}
        self.recovered: dict[str, tuple[int, int]] = {}  # name -> text range (see recover_)
        self._header_defs: dict[str, str] | None = None
        self._struct_hits: list[re.Match[bytes]] | None = None

    # -- tree-based parts ---------------------------------------------------------------

    def top_level(self, root: ts.Node) -> None:
        """Collect function definitions and #defines from the top level (and #if blocks).

        A Python walk over top-level items only: much cheaper than a query over every node.
        #defines inside function bodies are not collected.
        """
        defs: list[ts.Node] = []
        names: list[ts.Node] = []
        guarded: list[bool] = []
        # (node, inside a positive CONFIG_PM guard): guards are tracked on the way down
        # because Node.parent is not free in tree-sitter (it re-walks from the root)
        stack: list[tuple[ts.Node, bool]] = [(root, False)]
        while stack:
            node, flag = stack.pop()
            inner = flag
            alt_start = -1
            if node.type in _GUARD_TYPES:
                inner = flag or self._is_pm_guard(node)
                alt = node.child_by_field_name("alternative")
                alt_start = alt.start_byte if alt is not None else -1
            for ch in node.children:
                ty = ch.type
                f = flag if ch.start_byte == alt_start else inner
                if ty == "function_definition":
                    n = _function_name(ch)
                    if n is not None:
                        defs.append(ch)
                        names.append(n)
                        guarded.append(f)
                elif ty == "preproc_def":
                    self._define(ch)
                elif ty in _CONTAINERS:
                    stack.append((ch, f))
        order = sorted(range(len(defs)), key=lambda i: defs[i].start_byte)
        self.functions(
            [defs[i] for i in order], [names[i] for i in order], [guarded[i] for i in order]
        )

    def functions(self, defs: list[ts.Node], names: list[ts.Node], guarded: list[bool]) -> None:
        src = self.source
        for d, n, g in zip(defs, names, guarded, strict=True):
            name = src[n.start_byte : n.end_byte].decode("latin-1")
            line_start = src.rfind(b"\n", 0, d.start_byte) + 1
            head = src[line_start : n.start_byte]
            fd = FunctionDef(
                name=name,
                span=node_span(d),
                name_span=node_span(n),
                is_static=b"static" in head and _STATIC.search(head) is not None,
                start_byte=d.start_byte,
                end_byte=d.end_byte,
                maybe_unused=b"__maybe_unused" in head,
                under_config_ifdef=g,
            )
            # keep the first definition (the CONFIG_PM branch usually comes first)
            self.funcs.setdefault(name, fd)
            self.func_nodes.setdefault(name, []).append(d)
            self.func_ranges.append((d.start_byte, d.end_byte, name))
        self.func_starts = [r[0] for r in self.func_ranges]

    def recover_callbacks(self, tables: dict[str, PmTable], drivers: list[DriverStruct]) -> None:
        """Find callbacks whose definition tree-sitter lost in an ERROR region, by text.

        A macro the grammar cannot know (`foo_for_each_port(i)` used as a loop) can wreck
        the tree for the following functions (drivers/usb/host/ohci-at91.c). For each table
        or legacy callback with no definition in the tree, look for `name(...) {` in the
        text, take the body by brace matching, and re-parse that function on its own for its
        calls (see `_snippet_calls`).
        """
        names = {m.function for t in tables.values() for m in t.members if m.function}
        names.update(fn for d in drivers for fn in d.legacy.values())
        missing = sorted(n for n in names if n not in self.funcs)
        for name in missing:
            # no leading \b: a literal prefix lets `re` scan fast; the boundary is checked below
            pat = re.escape(name.encode()) + rb"\s*\([^;{}]*\)\s*\{"
            for m in re.finditer(pat, self.source):
                if m.start() > 0 and _word(self.source[m.start() - 1]):
                    continue
                if self.context(m.start()) is None:
                    continue
                it = ctext.tokens(self.text, m.end() - 1)
                first = next(it, None)
                if first is None or first.text != "{":
                    continue
                body = ctext.balanced(it, first)
                end = body[-1].end
                name_line = self.source.rfind(b"\n", 0, m.start()) + 1
                # the return type may sit on the line above (`static int __maybe_unused\n`)
                start = name_line
                if self.source[name_line : m.start()].strip() == b"" and name_line > 0:
                    start = self.source.rfind(b"\n", 0, name_line - 1) + 1
                head = self.source[start : m.start()]
                self.funcs[name] = FunctionDef(
                    name=name,
                    span=self.span(start, end),
                    name_span=self.span(m.start(), m.start() + len(name)),
                    is_static=_STATIC.search(head) is not None,
                    start_byte=start,
                    end_byte=end,
                    maybe_unused=b"__maybe_unused" in head,
                    under_config_ifdef=self.config_guard(self.context(m.start())) is not None,
                )
                self.recovered[name] = (start, end)
                self.func_ranges.append((start, end, name))
                break
        if self.recovered:
            self.func_ranges.sort()
            self.func_starts = [r[0] for r in self.func_ranges]

    def _snippet_calls(self, name: str) -> list[CallSite]:
        """Calls of a recovered function: its text parsed alone, offsets mapped back."""
        start, end = self.recovered[name]
        snippet = self.source[start:end]
        sub = parse(snippet)
        line0 = self.span(start, start).line - 1
        out: list[CallSite] = []
        for c in captures(load_query("calls"), sub.root_node).get("call", []):
            fn, args_node = c.child(0), c.child(1)
            if fn is None or args_node is None:
                continue
            cs, ce, fe = c.start_point, c.end_point, fn.end_point
            out.append(
                CallSite(
                    callee=snippet[c.start_byte : fn.end_byte].decode("latin-1"),
                    caller=name,
                    span=Span(cs[0] + 1 + line0, cs[1] + 1, ce[0] + 1 + line0, ce[1] + 1),
                    callee_span=Span(cs[0] + 1 + line0, cs[1] + 1, fe[0] + 1 + line0, fe[1] + 1),
                    args=tuple(
                        snippet[a.start_byte : a.end_byte].decode("latin-1")
                        for a in args_node.named_children
                        if a.type != "comment"
                    ),
                    start_byte=c.start_byte + start,
                    end_byte=c.end_byte + start,
                )
            )
        return out

    def caller_at(self, offset: int) -> str | None:
        i = bisect_right(self.func_starts, offset) - 1
        if i >= 0:
            start, end, name = self.func_ranges[i]
            if start <= offset < end:
                return name
        return None

    def _define(self, node: ts.Node) -> None:
        n = node.child_by_field_name("name")
        v = node.child_by_field_name("value")
        if n is None or v is None:
            return
        src = self.source
        name = src[n.start_byte : n.end_byte].decode("latin-1")
        if name in self.defs:
            return
        value = src[v.start_byte : v.end_byte].decode("latin-1")
        if "\\\n" in value or "\\\r\n" in value:
            value = value.replace("\\\r\n", " ").replace("\\\n", " ")
        self.defs[name] = ctext.strip_comments(value)

    def all_calls(self) -> list[CallSite]:
        """Every call through an identifier in the file, in document order."""
        calls = self._calls(captures(load_query("calls"), self.tree.root_node).get("call", []))
        if self.recovered:
            ranges = list(self.recovered.values())
            calls = [c for c in calls if not any(s <= c.start_byte < e for s, e in ranges)]
            for name in self.recovered:
                calls.extend(self._snippet_calls(name))
            calls.sort(key=lambda c: c.start_byte)
        return calls

    def calls_of(self, function: str) -> list[CallSite]:
        """The calls inside the definition(s) of `function`, in document order."""
        if function in self.recovered:
            return self._snippet_calls(function)
        q = load_query("calls")
        out: list[CallSite] = []
        for d in self.func_nodes.get(function, ()):
            out.extend(self._calls(captures(q, d).get("call", []), function))
        return out

    def calls_named(self, names: frozenset[str]) -> list[CallSite]:
        """Calls to any of `names`: text search for each name, then the tree at each hit."""
        src = self.source
        root = self.tree.root_node
        nodes: list[ts.Node] = []
        for pos, end in _name_hits(src, names):
            if (pos > 0 and _word(src[pos - 1])) or (end < len(src) and _word(src[end])):
                continue
            ident = root.descendant_for_byte_range(pos, end)
            call = ident.parent if ident is not None else None
            if (
                call is not None
                and call.type == "call_expression"
                and call.start_byte == pos
                and ident.type == "identifier"
            ):
                nodes.append(call)
        calls = self._calls(nodes)
        if self.recovered:
            ranges = list(self.recovered.values())
            calls = [c for c in calls if not any(s <= c.start_byte < e for s, e in ranges)]
            for fn in self.recovered:
                calls.extend(c for c in self._snippet_calls(fn) if c.callee in names)
        calls.sort(key=lambda c: c.start_byte)
        return calls

    def callee_names(self) -> frozenset[str]:
        src = self.source
        return frozenset(
            src[c.start_byte : c.child(0).end_byte].decode("latin-1")
            for c in captures(load_query("calls"), self.tree.root_node).get("call", [])
        )

    def _calls(self, nodes: list[ts.Node], caller: str | None = None) -> list[CallSite]:
        """CallSites for call_expression nodes; `caller` when all are in that function.

        Callee, caller and start are read now; spans, arguments and end on first use
        (`_TreeCall`): most call sites are only ever filtered by callee.
        """
        src = self.source
        caller_at = self.caller_at
        out: list[CallSite] = []
        append = out.append
        for c in nodes:
            fn = c.child(0)
            if fn is None or c.child_count < 2:
                continue
            start = c.start_byte
            append(
                _TreeCall(
                    c,
                    src[start : fn.end_byte].decode("latin-1"),
                    caller if caller is not None else caller_at(start),
                    start,
                    src,
                )
            )
        return out

    def context(self, offset: int) -> ts.Node | None:
        """The node at `offset`, or None when it lies in a comment, string or #define body."""
        node = self.tree.root_node.descendant_for_byte_range(offset, offset + 1)
        n = node
        while n is not None:
            if n.type in _SKIP_CONTEXT:
                return None
            n = n.parent
        return node

    def _is_pm_guard(self, p: ts.Node) -> bool:
        """Whether #ifdef/#if/#elif node `p` is a positive CONFIG_PM / CONFIG_PM_SLEEP test."""
        head = self.source[p.start_byte : p.start_byte + 200].split(b"\n", 1)[0]
        cond = head.decode("latin-1")
        return bool(_CONFIG_PM.search(cond)) and "ifndef" not in cond and "!" not in cond

    def config_guard(self, node: ts.Node | None) -> str | None:
        """The `#ifdef CONFIG_PM*` / `#if ...CONFIG_PM...` condition enclosing `node`, if any."""
        child, p = node, node.parent if node is not None else None
        while p is not None:
            if p.type in _GUARD_TYPES:
                alt = p.child_by_field_name("alternative")
                in_alt = (
                    alt is not None and child is not None and child.start_byte >= alt.start_byte
                )
                if not in_alt and self._is_pm_guard(p):
                    head = self.source[p.start_byte : p.start_byte + 200].split(b"\n", 1)[0]
                    return head.decode("latin-1").strip()
            child, p = p, p.parent
        return None

    # -- text-based parts ---------------------------------------------------------------

    def string_arrays(self) -> None:
        for m in _STRING_ARRAY.finditer(self.source):
            name = m.group(1).decode("latin-1")
            parts = re.findall(rb'"((?:[^"\\\n]|\\.)*)"', m.group(2))
            self.strings.setdefault(name, b"".join(parts).decode("latin-1"))

    def span(self, start: int, end: int) -> Span:
        if self._lines is None:
            self._lines = LineIndex(self.source)
        return self._lines.span(start, end)

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

    def resolve_string(self, e: ctext.Expr) -> str | None:
        """The string an expression denotes: literals, #defines, char arrays, KBUILD_MODNAME."""
        return self._string_toks(list(e.toks), set())

    def _string_toks(self, toks: list[ctext.Tok], seen: set[str]) -> str | None:
        toks = strip_pointer(toks)
        if not toks:
            return None
        parts: list[str] = []
        for tok in toks:
            if tok.kind == "str":
                parts.append(_unquote(tok.text))
            elif tok.kind == "ident":
                if tok.text == "KBUILD_MODNAME":
                    parts.append(kbuild_modname(self.path))
                elif tok.text in self.strings:
                    parts.append(self.strings[tok.text])
                elif tok.text not in seen and (
                    tok.text in self.defs or tok.text in self.header_defines()
                ):
                    value = self.defs.get(tok.text) or self.header_defines()[tok.text]
                    sub = self._string_toks(list(ctext.tokens(value)), seen | {tok.text})
                    if sub is None:
                        return None
                    parts.append(sub)
                else:
                    return None
            else:
                return None
        return "".join(parts)

    def header_defines(self) -> dict[str, str]:
        """Object-like #defines of the `#include "local.h"` headers next to this file.

        Only read when a driver name is not resolved in the file itself (DRV_NAME is often
        defined in the driver's own header); headers are looked up relative to the file's
        directory, one level deep, and silently skipped when absent or unreadable.
        """
        if self._header_defs is not None:
            return self._header_defs
        defs: dict[str, str] = {}
        self._header_defs = defs
        base = os.path.dirname(self.path)
        for m in _LOCAL_INCLUDE.finditer(self.source):
            hpath = os.path.join(base, m.group(1).decode("latin-1"))
            try:
                with open(hpath, "rb") as fh:
                    text = fh.read(_MAX_HEADER)
            except OSError:
                continue
            for d in _HEADER_DEFINE.finditer(text):
                name = d.group(1).decode("latin-1")
                defs.setdefault(name, ctext.strip_comments(d.group(2).decode("latin-1")))
        return defs

    def _registration(self, var: str, depth: int = 0) -> str | None:
        """The call or module_*_driver() macro that registers driver variable `var`.

        `var` may be any argument of the call (`coresight_init_driver("x", &a, &var, ...)`),
        or an element of an array that is registered as a whole
        (`static struct platform_driver * const drivers[] = { &a, &var };` +
        `platform_register_drivers(drivers, ...)`).
        """
        src = self.source
        needle = var.encode()
        pos = src.find(needle)
        while pos >= 0:
            end = pos + len(needle)
            if (pos == 0 or not _word(src[pos - 1])) and (end >= len(src) or not _word(src[end])):
                fn, opener = _enclosing_opener(src, pos)
                if opener == 0x28 and fn:  # inside a call's argument list
                    if (
                        "unregister" not in fn
                        and _REGISTRATION.fullmatch(fn)
                        and self.context(pos) is not None
                    ):
                        return fn
                elif opener == 0x7B and depth == 0:  # inside `{ ... }`: a driver array?
                    window = src[max(0, pos - 300) : pos].decode("latin-1")
                    array = _OPEN_ARRAY.search(window)
                    if array is not None and self.context(pos) is not None:
                        found = self._registration(array.group(1), depth + 1)
                        if found is not None:
                            return found
            pos = src.find(needle, end)
        return None


class _TreeCall(CallSite):
    """A CallSite backed by its tree node: `span`, `callee_span`, `args` and `end_byte` are
    read from the node on first use and cached. Compares, hashes, prints and pickles like a
    plain CallSite, and `dataclasses.replace()` works on it.
    """

    def __init__(self, *args: object, **fields: object) -> None:
        d = self.__dict__
        if fields:  # dataclass-style construction (dataclasses.replace)
            d.update(
                callee=fields["callee"],
                caller=fields["caller"],
                start_byte=fields["start_byte"],
                _node=None,
                _src=b"",
                _span=fields["span"],
                _callee_span=fields["callee_span"],
                _args=fields["args"],
                _end=fields["end_byte"],
            )
            return
        node, callee, caller, start, src = args
        d.update(callee=callee, caller=caller, start_byte=start, _node=node, _src=src)

    @property  # type: ignore[override]
    def span(self) -> Span:
        d = self.__dict__
        v = d.get("_span")
        if v is None:
            v = d["_span"] = node_span(d["_node"])
        return v

    @property  # type: ignore[override]
    def callee_span(self) -> Span:
        d = self.__dict__
        v = d.get("_callee_span")
        if v is None:
            v = d["_callee_span"] = node_span(d["_node"].child(0))
        return v

    @property  # type: ignore[override]
    def args(self) -> tuple[str, ...]:
        d = self.__dict__
        v = d.get("_args")
        if v is None:
            src = d["_src"]
            v = d["_args"] = tuple(
                src[a.start_byte : a.end_byte].decode("latin-1")
                for a in d["_node"].child(1).named_children
                if a.type != "comment"
            )
        return v

    @property  # type: ignore[override]
    def end_byte(self) -> int:
        d = self.__dict__
        v = d.get("_end")
        if v is None:
            v = d["_end"] = d["_node"].end_byte
        return v

    def _fields(self) -> tuple[object, ...]:
        return _fields_of(self)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CallSite):
            return NotImplemented
        if self.start_byte != other.start_byte or self.callee != other.callee:
            return False
        return self._fields() == _fields_of(other)

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return repr(CallSite(*self._fields()))  # type: ignore[arg-type]

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:
        return (CallSite, self._fields())


def _fields_of(c: CallSite) -> tuple[object, ...]:
    return (c.callee, c.caller, c.span, c.callee_span, c.args, c.start_byte, c.end_byte,
            c.via_pointer)  # fmt: skip


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


def _function_name(defn: ts.Node) -> ts.Node | None:
    """The identifier a function_definition defines (through pointer/paren declarators)."""
    d = defn.child_by_field_name("declarator")
    for _ in range(6):
        if d is None:
            return None
        if d.type == "function_declarator":
            inner = d.child_by_field_name("declarator")
            while inner is not None and inner.type in _DECLARATORS:
                inner = inner.child_by_field_name("declarator") or (
                    inner.named_children[0] if inner.named_children else None
                )
            return inner if inner is not None and inner.type == "identifier" else None
        if d.type in _DECLARATORS:
            d = d.child_by_field_name("declarator") or (
                d.named_children[0] if d.named_children else None
            )
        else:
            return None
    return None


def _name_hits(src: bytes, names: frozenset[str]) -> list[tuple[int, int]]:
    """(start, end) of every occurrence of any of `names` in `src`, in order.

    One `find` pass per anchor (a substring shared by several names, `sleep` for msleep,
    usleep_range, fsleep, ...) instead of one per name; each hit is then compared in place.
    """
    out: set[tuple[int, int]] = set()
    for anchor, placed in _anchors(names):
        pos = src.find(anchor)
        while pos >= 0:
            for needle, offset in placed:
                start = pos - offset
                if start >= 0 and src.startswith(needle, start):
                    out.add((start, start + len(needle)))
            pos = src.find(anchor, pos + 1)
    return sorted(out)


@lru_cache(maxsize=256)
def _anchors(names: frozenset[str]) -> tuple[tuple[bytes, tuple[tuple[bytes, int], ...]], ...]:
    """Anchors covering `names` (greedy: the substring of >= 5 bytes, or a whole shorter name,
    in the most names not yet covered, the longest on ties), each with (name, offset of the
    anchor in it) for every place it occurs in each name it covers."""
    todo = sorted({n.encode("latin-1") for n in names if n})
    out = []
    while todo:
        best: bytes = b""
        best_cover: list[bytes] = []
        candidates = {
            n[i:j]
            for n in todo
            for i in range(len(n))
            for j in range(i + min(5, len(n)), len(n) + 1)
        }
        for c in candidates:
            cover = [n for n in todo if c in n]
            if (len(cover), len(c), c) > (len(best_cover), len(best), best):
                best, best_cover = c, cover
        placed = []
        for n in best_cover:
            at = n.find(best)
            while at >= 0:
                placed.append((n, at))
                at = n.find(best, at + 1)
        out.append((best, tuple(placed)))
        todo = [n for n in todo if n not in best_cover]
    return tuple(out)


def _word(c: int) -> bool:
    return c == 0x5F or 0x30 <= c <= 0x39 or 0x41 <= c <= 0x5A or 0x61 <= c <= 0x7A


def _unquote(lit: str) -> str:
    if lit.startswith("L"):
        lit = lit[1:]
    body = lit[1:-1] if lit.endswith('"') and len(lit) >= 2 else lit[1:]
    return body.replace('\\"', '"').replace("\\\\", "\\")


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

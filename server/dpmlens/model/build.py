"""build_model(): the PM model of one C file.

Functions and #defines come from a Python walk over the top level of the tree (and #if
blocks); call sites from the `calls` query, per function and only when asked. dev_pm_ops
tables and driver structs are located by cheap byte searches (`struct dev_pm_ops`,
`..._PM_OPS(`), checked against the tree (not in a comment or a #define body), and their
initializers are read from the text with `ctext`, which is immune to tree-sitter's macro
misparses. Callbacks whose definitions the tree lost are recovered by text.

The builder is split by concern, one mixin per module: `calls` (call sites), `tables`
(dev_pm_ops), `drivers` (driver structs, registration), `names` (strings, KBUILD_MODNAME),
`headers` (local #includes); this module holds the walk over the tree (functions, #defines,
#ifdef CONFIG_PM guards, recovered callbacks) and `build_model`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import tree_sitter as ts

from dpmlens.core.findings import Span
from dpmlens.model import ctext
from dpmlens.model.calls import CallsMixin
from dpmlens.model.consteval import eval_int
from dpmlens.model.ctext import word_byte as _word
from dpmlens.model.drivers import DriversMixin
from dpmlens.model.headers import HeadersMixin
from dpmlens.model.names import NamesMixin, kbuild_modname
from dpmlens.model.tables import strip_pointer
from dpmlens.model.types import DriverStruct, FileModel, FunctionDef, PmTable
from dpmlens.syntax.parser import LineIndex, node_span, parse

__all__ = ["build_model", "kbuild_modname", "strip_pointer"]

_ENUM_HOLDERS = frozenset({"declaration", "type_definition", "enum_specifier"})
_CONFIG_PM = re.compile(r"\bCONFIG_PM(?:_SLEEP)?\b")
_GUARD_HEAD = 200  # bytes of an #if/#ifdef read for its first line (the condition)
_STATIC = re.compile(rb"\bstatic\b")
_SKIP_CONTEXT = frozenset({"comment", "preproc_def", "preproc_function_def", "string_literal"})
# the nodes the top-level walk descends into (incremental.py compares the same items)
TOP_LEVEL_CONTAINERS = frozenset(
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


def text_searches(model: FileModel) -> list[re.Pattern[bytes]]:
    """The searches over the whole text that the build made for `model`'s tables, drivers
    and headers (model/footprint.py: an edit that matches none of them, inside one
    function's body, leaves those parts of the model as they were)."""
    from dpmlens.model.headers import _LOCAL_INCLUDE
    from dpmlens.model.tables import _STRUCT_DECL

    words = {t.name for t in model.pm_tables.values()}
    words.update(d.var_name for d in model.drivers)
    # callbacks without a definition in the tree are looked for by text (recover_callbacks)
    named = {m.function for t in model.pm_tables.values() for m in t.members if m.function}
    named.update(fn for d in model.drivers for fn in d.legacy.values())
    words.update(n for n in named if n not in model.functions)
    # (the string arrays are read at file scope only: no search of a function's body)
    out = [_STRUCT_DECL, re.compile(rb"PM_OPS"), _LOCAL_INCLUDE]
    out += [re.compile(re.escape(w.encode("latin-1", "replace"))) for w in sorted(words)]
    return out


class NotBuilt(BaseException):
    """A part of the model that `build_model(..., functions_only=True)` left out was read.
    (Not an Exception: a rule's `except Exception` must not turn it into a quiet answer.)"""


class _NotBuiltTables(dict[str, PmTable]):
    def _refuse(self, *_args: object, **_kw: object) -> None:
        raise NotBuilt("the PM tables")

    __getitem__ = __iter__ = __len__ = __contains__ = __bool__ = _refuse  # type: ignore[assignment]
    get = items = keys = values = _refuse  # type: ignore[assignment]


class _NotBuiltDrivers(list[DriverStruct]):
    def _refuse(self, *_args: object, **_kw: object) -> None:
        raise NotBuilt("the driver structs")

    __getitem__ = __iter__ = __len__ = __contains__ = __bool__ = _refuse  # type: ignore[assignment]


def build_model(
    path: str, source: bytes, tree: ts.Tree | None = None, *, functions_only: bool = False,
    builder: Callable[[str, bytes, ts.Tree], _Builder] | None = None,
) -> FileModel:  # fmt: skip
    """The PM model of the C file `path` with contents `source`.

    `tree` is an up-to-date tree for `source` (the language server passes its incrementally
    reparsed tree); without it the source is parsed here. Never raises on odd C: broken
    parts of the tree are local, and tables/drivers are read from the text. Call sites are
    extracted lazily (see `FileModel`): `model.calls_in(fn)` only looks at `fn`.
    `functions_only`: the functions the tree has, #defines and call sites; not the PM tables,
    the driver structs, nor the callbacks found by text where the tree lost them.
    `builder`: makes the builder in place of `_Builder` (model/spliced.py).
    """
    if tree is None:
        tree = parse(source)
    b = (builder or _Builder)(path, source, tree)
    b.top_level(tree.root_node)
    if functions_only:
        # (incremental.py, judging an edit inside one function that left the file's
        # top-level items and its table and driver texts as they were: reading the tables
        # or drivers raises NotBuilt, and the judgement falls back to a full analysis)
        b.text = ""
        return FileModel(
            path=path, source=source, functions=b.funcs, calls=b.all_calls,
            pm_tables=_NotBuiltTables(), drivers=_NotBuiltDrivers(), defines=b.defs,
            tree=tree, loader=b,
        )  # fmt: skip
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


class _Builder(CallsMixin, DriversMixin, NamesMixin, HeadersMixin):
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
                elif ty in _ENUM_HOLDERS:
                    self._enumerators(ch)
                elif ty in TOP_LEVEL_CONTAINERS:
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

    def _enumerators(self, node: ts.Node) -> None:
        """`enum { NoWait = 0, WaitNoSleep, WaitSleep };` at file scope: each enumerator is an
        integer constant like an object-like #define (so `typhoon_reset(io, WaitNoSleep)`
        binds a value the call walker can decide `if (wait_type == WaitSleep)` with)."""
        lists = [c for c in node.children if c.type == "enumerator_list"]
        for c in node.children:
            if c.type == "enum_specifier":
                lists += [g for g in c.children if g.type == "enumerator_list"]
        src = self.source
        for lst in lists:
            nxt: int | None = 0
            for e in lst.named_children:
                if e.type != "enumerator":
                    continue
                n, v = e.child_by_field_name("name"), e.child_by_field_name("value")
                if n is None:
                    continue
                name = src[n.start_byte : n.end_byte].decode("latin-1")
                if v is not None:
                    nxt = eval_int(src[v.start_byte : v.end_byte].decode("latin-1"), self.defs)
                if nxt is None:
                    continue  # an unknown value: the ones after it are unknown too
                self.defs.setdefault(name, str(nxt))
                nxt += 1

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
        head = self.source[p.start_byte : p.start_byte + _GUARD_HEAD].split(b"\n", 1)[0]
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
                    head = self.source[p.start_byte : p.start_byte + _GUARD_HEAD].split(b"\n", 1)[0]
                    return head.decode("latin-1").strip()
            child, p = p, p.parent
        return None

    def span(self, start: int, end: int) -> Span:
        if self._lines is None:
            self._lines = LineIndex(self.source)
        return self._lines.span(start, end)


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

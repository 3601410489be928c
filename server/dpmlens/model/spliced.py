"""A model of an edited text without reparsing the document: the last parse for the file's
top level, a fresh parse of the one edited function for its body.

tree-sitter's reparse of a document re-runs error recovery in every function holding an ERROR
node (hub.c has 19), however small the edit: most of a judged keystroke's time
(engine/incremental.py). When every edit since the last parse lies inside one function's body
and the function parses alone (incremental._parses_alone), the document's new tree is the old
one with that function's subtree replaced. So:

- the top level (functions, #defines, the PM tables' places) is read from the old tree as
  `Tree.edit` moved it: its nodes outside the edited body keep their kinds and get their new
  offsets (their `text` is gone: py-tree-sitter drops the source on an edit, and the builder
  reads the source by offsets, not node texts);
- the edited function is parsed alone (`included_ranges`) together with the heads and `#endif`s
  of the `#if` blocks around it, at its offsets in the new text, so that a walk up from one of
  its nodes meets the same `#ifdef`s as in the document's tree.

Anything that would read a node of the old tree beyond that (a rule asking for a node outside
the edited function, every call of the file, another definition's body by the tree) raises
`NotSpliced`: the caller parses the document after all.
"""

from __future__ import annotations

import threading
from bisect import bisect_right
from dataclasses import dataclass

import tree_sitter as ts

from dpmlens.core.findings import Span
from dpmlens.model.build import NotBuilt, _Builder, build_model
from dpmlens.model.types import CallSite, FileModel, FunctionDef
from dpmlens.syntax.parser import LANGUAGE, captures, load_query

# the `#if` blocks a function may sit in for its subtree to be parsed alone with their heads
_BLOCKS = frozenset({"preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif",
                     "preproc_elifdef"})  # fmt: skip
_HEAD_FIELD = {"preproc_if": "condition", "preproc_elif": "condition",
               "preproc_ifdef": "name", "preproc_elifdef": "name"}  # fmt: skip
_LOCAL = threading.local()


class NotSpliced(NotBuilt):
    """A spliced model was asked for what only a parse of the whole document has."""


def _parser() -> ts.Parser:
    p = getattr(_LOCAL, "parser", None)
    if p is None:
        p = _LOCAL.parser = ts.Parser(LANGUAGE)
    return p


@dataclass(frozen=True)
class Shift:
    """Edits inside the body of the function at [start, end) (ending on line `end_line`,
    1-based) that add `delta` bytes and `lines` lines; `kept`: none reached its last line."""

    start: int
    end: int
    delta: int
    end_line: int
    lines: int
    kept: bool

    def then(self, nxt: Shift) -> Shift | None:
        """This shift and `nxt` as one, when `nxt` edits the same function; else None."""
        if nxt.start != self.start or nxt.end != self.end + self.delta:
            return None
        return Shift(self.start, self.end, self.delta + nxt.delta, self.end_line,
                     self.lines + nxt.lines, self.kept and nxt.kept)  # fmt: skip


@dataclass(frozen=True)
class Top:
    """The top level of a model as build.top_level reads it (each function's definition and
    place, the #defines), carried over edits inside function bodies instead of read again
    from the tree (~4 ms on lpfc_init.c's 254 functions)."""

    funcs: dict[str, FunctionDef]
    ranges: list[tuple[int, int, str]]  # every definition's (start, end, name), in order
    defs: dict[str, str]

    @staticmethod
    def of(model: FileModel) -> Top | None:
        b = model.loader
        if not isinstance(b, _Builder) or b.recovered:
            return None
        return Top(dict(b.funcs), list(b.func_ranges), dict(b.defs))

    def moved(self, shifts: list[Shift]) -> Top | None:
        """This top level after `shifts`, in order; None when a function starts on the line
        where an edited one ends, or an edit reached the last line of its function (their
        columns would move: read the tree again)."""
        funcs: dict[str, FunctionDef] = {}
        for name, fd in self.funcs.items():
            start, end, line, end_line = fd.start_byte, fd.end_byte, fd.span.line, fd.span.end_line
            lines = 0  # (the name's lines move with the start's)
            for sh in shifts:
                if end <= sh.start:
                    continue
                if start >= sh.end:
                    if line <= sh.end_line:
                        return None
                    start, end = start + sh.delta, end + sh.delta
                    line, end_line, lines = line + sh.lines, end_line + sh.lines, lines + sh.lines
                elif start == sh.start and end == sh.end and sh.kept:
                    end, end_line = end + sh.delta, end_line + sh.lines
                else:
                    return None
            if end != fd.end_byte or end_line != fd.span.end_line:
                sp, ns = fd.span, fd.name_span
                fd = FunctionDef(
                    fd.name, Span(line, sp.column, end_line, sp.end_column),
                    Span(ns.line + lines, ns.column, ns.end_line + lines, ns.end_column),
                    fd.is_static, start, end, fd.maybe_unused, fd.under_config_ifdef,
                )  # fmt: skip
            funcs[name] = fd
        ranges = self.ranges
        for sh in shifts:
            ranges = [(_at(a, sh), _at(b, sh), n) for a, b, n in ranges]
        return Top(funcs, ranges, self.defs)


def _at(offset: int, sh: Shift) -> int:
    return offset + sh.delta if offset >= sh.end else offset


class _Alone:
    """Functions of the new text parsed alone (with their `#if` heads), at their offsets: the
    edited one, and those others that earlier edits since the last parse wrote into, when
    something reads them. By (start, end); None: it did not parse alone as in `old`."""

    def __init__(self, source: bytes, old: ts.Tree, fresh: list[tuple[int, int]]) -> None:
        self.source, self.old = source, old
        self.ranges = sorted(fresh)  # the functions whose nodes come from a parse alone
        self._parsed: dict[tuple[int, int], ts.Node | None] = {}
        # with `every`, the other functions' too (each checked against the old tree's)
        self.starts: list[int] = []
        self.functions: list[tuple[int, int]] = []

    def unedited(self, start: int, end: int) -> tuple[int, int] | None:
        """The function, none of `ranges`, holding [start, end), when `every` set them."""
        i = bisect_right(self.starts, start) - 1
        if i >= 0 and self.functions[i][0] <= start and end <= self.functions[i][1]:
            return self.functions[i]
        return None

    def node_unedited(self, lo: int, hi: int) -> ts.Node:
        """An unedited function parsed alone, when its tree is the old tree's (the same
        nodes: py-tree-sitter drops the old tree's text on `edit`, the parse has it)."""
        if (lo, hi) not in self._parsed:
            fn = _parse_alone(self.source, self.old, lo, hi)
            was = _definition(self.old, lo, hi)
            if fn is not None and (
                was is None or fn.descendant_count != was.descendant_count or str(fn) != str(was)
            ):
                fn = None
            self._parsed[lo, hi] = fn
        fn = self._parsed[lo, hi]
        if fn is None:
            raise NotSpliced("a function that parses alone otherwise than in the document")
        return fn

    def holding(self, start: int, end: int) -> tuple[int, int] | None:
        """The fresh function holding [start, end); raises NotSpliced when the range reaches
        into one without lying inside it."""
        for lo, hi in self.ranges:
            if lo <= start and end <= hi:
                return lo, hi
            if start < hi and end > lo:
                raise NotSpliced("a range across an edited function")
        return None

    def node(self, lo: int, hi: int) -> ts.Node:
        if (lo, hi) not in self._parsed:
            self._parsed[lo, hi] = _parse_alone(self.source, self.old, lo, hi)
        fn = self._parsed[lo, hi]
        if fn is None:
            raise NotSpliced("an edited function that does not parse alone")
        return fn


class _Root:
    """The root of a spliced tree: nodes inside the functions parsed alone only."""

    def __init__(self, alone: _Alone) -> None:
        self._alone = alone

    def descendant_for_byte_range(self, start: int, end: int) -> ts.Node | None:
        alone = self._alone
        hit = alone.holding(start, end)
        if hit is not None:
            return alone.node(*hit).descendant_for_byte_range(start, end)
        hit = alone.unedited(start, end)
        if hit is None:
            raise NotSpliced("a node outside the functions")
        return alone.node_unedited(*hit).descendant_for_byte_range(start, end)

    def descendant_for_point_range(
        self, start: tuple[int, int], end: tuple[int, int]
    ) -> ts.Node | None:
        """A node of the top level outside every function (a driver struct's initializer,
        found by its span: rules/lifetime.py) from the old tree, whose offsets and points
        are the new text's there; its text is gone (read the source by its offsets). A node
        in or around a function: NotSpliced."""
        alone = self._alone
        node = alone.old.root_node.descendant_for_point_range(start, end)
        if node is None:
            return None
        lo, hi = node.start_byte, node.end_byte
        if not alone.functions or node.type == "translation_unit" or any(
            a < hi and lo < b for a, b in (*alone.ranges, *alone.functions)
        ):  # (`functions`: known with `every` only)
            raise NotSpliced("a node by its points in or around a function")
        return node

    def __getattr__(self, name: str) -> object:
        raise NotSpliced(f"the tree's root ({name})")


class SplicedTree:
    """Stands for the document's tree in a spliced model (`model.tree`)."""

    def __init__(self, alone: _Alone) -> None:
        self.root_node = _Root(alone)

    def __getattr__(self, name: str) -> object:
        raise NotSpliced(f"the tree ({name})")


class _Nodes(dict[str, list[ts.Node]]):
    """The builder's `func_nodes`, looked up when asked: a function parsed alone gives its own
    node, any other the old tree's (its offsets are right, its text gone)."""

    def __init__(self, ranges: list[tuple[int, int, str]], alone: _Alone) -> None:
        super().__init__()
        self._ranges: dict[str, list[tuple[int, int]]] = {}
        for start, end, name in ranges:
            self._ranges.setdefault(name, []).append((start, end))
        self._alone = alone

    def get(self, name: str, default: object = None) -> list[ts.Node] | object:  # type: ignore[override]
        return self[name] if name in self._ranges else default

    def __contains__(self, name: object) -> bool:
        return name in self._ranges

    def __getitem__(self, name: str) -> list[ts.Node]:
        nodes = super().get(name)
        if nodes is None:
            nodes = [self._node(s, e) for s, e in self._ranges[name]]
            self[name] = nodes
        return nodes

    def _node(self, start: int, end: int) -> ts.Node:
        if self._alone.holding(start, end) is not None:
            return self._alone.node(start, end)
        node = self._alone.old.root_node.descendant_for_byte_range(start, end)
        while node is not None and node.type != "function_definition":
            node = node.parent
        if node is None or node.start_byte != start or node.end_byte != end:
            raise NotSpliced("a definition the old tree does not have")
        return node


def spliced_model(
    path: str, source: bytes, old: ts.Tree, lo: int, hi: int,
    dirty: list[tuple[int, int]], functions_only: bool, top: Top | None = None,
    every: bool = False,
) -> FileModel | None:  # fmt: skip
    """The model of `source` whose function at [lo, hi) was edited, from `old` (the last
    parse, `Tree.edit`ed by every edit since, each inside the body of that function or of
    one at `dirty`: functions decided before parsing) and parses of those functions alone;
    None when the edited one does not parse alone as it sits in `old`, or the build reads
    what those parses do not give. `top`: the top level
    of `source` (carried over from the last model), else read from `old`. `every`: a node
    of any other function is one of that function parsed alone too (a rerun's walks read
    many), when that parse has the old tree's nodes.)"""
    alone = _Alone(source, old, [(lo, hi), *dirty])
    try:
        alone.node(lo, hi)
    except NotSpliced:
        return None

    def builder(p: str, s: bytes, t: ts.Tree) -> _SplicedBuilder:
        return _SplicedBuilder(p, s, t, alone, top)

    try:
        model = build_model(path, source, old, functions_only=functions_only, builder=builder)
    except NotSpliced:  # the build read a node the parses alone do not give
        return None
    loader = model.loader
    assert isinstance(loader, _SplicedBuilder)
    if loader.recovered:
        return None
    loader.func_nodes = _Nodes(loader.func_ranges, alone)
    if every:
        alone.functions = [(a, b) for a, b, _n in loader.func_ranges]
        alone.starts = [a for a, _b in alone.functions]
    spliced = SplicedTree(alone)
    loader.tree = spliced  # type: ignore[assignment]
    model.tree = spliced
    return model


def _definition(tree: ts.Tree, lo: int, hi: int) -> ts.Node | None:
    node = tree.root_node.descendant_for_byte_range(lo, hi)
    while node is not None and node.type != "function_definition":
        node = node.parent
    if node is None or node.start_byte != lo or node.end_byte != hi:
        return None
    return node


def _parse_alone(source: bytes, old: ts.Tree, lo: int, hi: int) -> ts.Node | None:
    """The function definition at [lo, hi) of `source`, parsed alone with the heads of the
    `#if` blocks that hold it in `old`; None when it does not sit in `old` as a definition at
    the file's top level or in `#if` blocks, or its parse differs in shape from there."""
    node = old.root_node.descendant_for_byte_range(lo, hi)
    while node is not None and node.type != "function_definition":
        node = node.parent
    if node is None or node.start_byte != lo or node.end_byte != hi:
        return None
    blocks: list[ts.Node] = []  # innermost first
    up = node.parent
    while up is not None and up.type != "translation_unit":
        if up.type not in _BLOCKS:
            return None
        blocks.append(up)
        up = up.parent
    if up is None:
        return None
    ranges = _ranges(blocks, node)
    if ranges is None:
        return None
    parser = _parser()
    parser.included_ranges = ranges
    try:
        fresh = parser.parse(source)
    finally:
        parser.included_ranges = []
    return _same_shape(fresh, blocks, lo, hi)


def _ranges(blocks: list[ts.Node], fn: ts.Node) -> list[ts.Range] | None:
    """The ranges to parse: each block's head (its directive and condition, to its first
    item), the function `fn`, each `#if`'s `#endif`; None when a block's shape is not that.
    (Their points are the old tree's: `Tree.edit` moved them as it moved the offsets.)"""
    heads: list[ts.Range] = []
    ends: list[ts.Range] = []
    for block in reversed(blocks):  # outermost first
        children = block.children
        field = _HEAD_FIELD.get(block.type)
        head = block.child_by_field_name(field) if field else (children[0] if children else None)
        if head is None:
            return None
        first = next(
            (c for c in children if c.start_byte >= head.end_byte and c.is_named
             and c.type != "comment"),
            None,
        )  # fmt: skip
        if first is None or first.start_byte > fn.start_byte:
            return None
        heads.append(ts.Range(block.start_point, first.start_point, block.start_byte,
                              first.start_byte))  # fmt: skip
        if block.type in ("preproc_if", "preproc_ifdef"):
            last = children[-1]
            if last.type != "#endif" or last.is_missing:
                return None
            ends.append(ts.Range(last.start_point, last.end_point, last.start_byte,
                                 last.end_byte))  # fmt: skip
    whole = ts.Range(fn.start_point, fn.end_point, fn.start_byte, fn.end_byte)
    out = heads + [whole] + sorted(ends, key=lambda r: r.start_byte)
    if any(r.start_byte >= r.end_byte for r in out) or any(
        a.end_byte > b.start_byte for a, b in zip(out, out[1:], strict=False)
    ):
        return None
    return out


def _same_shape(fresh: ts.Tree, blocks: list[ts.Node], lo: int, hi: int) -> ts.Node | None:
    """The function's node in `fresh`, when its ancestors there are `blocks`' kinds and hold
    no error beside it."""
    node = fresh.root_node.descendant_for_byte_range(lo, hi)
    while node is not None and node.type != "function_definition":
        node = node.parent
    if node is None or node.start_byte != lo or node.end_byte != hi:
        return None
    child, up = node, node.parent
    for block in blocks:
        if up is None or up.type != block.type or up.is_error:
            return None
        if any(c != child and (c.has_error or c.is_missing) for c in up.children):
            return None
        child, up = up, up.parent
    if up is None or up.type != "translation_unit" or up.parent is not None:
        return None
    if any(c != child and (c.has_error or c.is_missing) for c in up.children):
        return None
    return node


class _SplicedBuilder(_Builder):
    """build's _Builder on the old tree, but for call sites in the functions parsed alone
    (their fresh nodes) and whatever reads every call of the file (refused)."""

    def __init__(
        self, path: str, source: bytes, tree: ts.Tree, alone: _Alone, top: Top | None
    ) -> None:
        super().__init__(path, source, tree)
        self._old_root = tree.root_node
        self._alone, self._top = alone, top

    def top_level(self, root: ts.Node) -> None:
        top = self._top
        if top is None:
            super().top_level(root)
            return
        self.funcs, self.func_ranges, self.defs = dict(top.funcs), list(top.ranges), dict(top.defs)
        self.func_starts = [r[0] for r in self.func_ranges]

    def _node_at(self, start: int, end: int) -> ts.Node | None:
        # call sites found by text: in an edited function, its fresh node; elsewhere the old
        # tree's, whose offsets are right (call sites read the source by offsets, not texts)
        hit = self._alone.holding(start, end)
        if hit is not None:
            return self._alone.node(*hit).descendant_for_byte_range(start, end)
        return self._old_root.descendant_for_byte_range(start, end)

    def all_calls(self) -> list[CallSite]:
        raise NotSpliced("every call of the file")

    def callee_names(self) -> frozenset[str]:
        # the old tree's calls but in the edited functions, theirs from their parses alone
        src, fresh = self.source, self._alone.ranges
        query = load_query("calls")
        calls = [
            c for c in captures(query, self._old_root).get("call", [])
            if not any(lo <= c.start_byte < hi for lo, hi in fresh)
        ]  # fmt: skip
        for lo, hi in fresh:
            calls += captures(query, self._alone.node(lo, hi)).get("call", [])
        return frozenset(src[c.start_byte : c.child(0).end_byte].decode("latin-1") for c in calls)

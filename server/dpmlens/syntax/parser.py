"""tree-sitter C parsing: one parser per process, incremental reparse, spans, query helpers.

Columns in every `Span` built here are 1-based *byte* columns, like tree-sitter points; kernel
sources are almost all ASCII, and the LSP layer converts to UTF-16 where it must.
"""

from __future__ import annotations

from bisect import bisect_right
from functools import cache

import tree_sitter as ts
import tree_sitter_c as tsc

from dpmlens.findings import Span
from dpmlens.paths import grammars_dir

LANGUAGE = ts.Language(tsc.language())
_PARSER = ts.Parser(LANGUAGE)


def parse(source: bytes, old_tree: ts.Tree | None = None) -> ts.Tree:
    """Parse C `source`; pass the previous tree (already `.edit()`ed) to reparse incrementally."""
    if old_tree is None:
        return _PARSER.parse(source)
    return _PARSER.parse(source, old_tree)


@cache
def load_query(name: str) -> ts.Query:
    """Compile `grammars/<name>.scm` (cached). Raises ValueError naming the file on a bad query."""
    path = grammars_dir() / f"{name}.scm"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{path}: cannot read query file: {exc.strerror}") from None
    try:
        return ts.Query(LANGUAGE, text)
    except ts.QueryError as exc:
        raise ValueError(f"{path}: invalid tree-sitter query: {exc}") from None


def captures(query: ts.Query, node: ts.Node) -> dict[str, list[ts.Node]]:
    """Captures of `query` under `node`, each list sorted into document order."""
    found = ts.QueryCursor(query).captures(node)
    for nodes in found.values():
        nodes.sort(key=lambda n: n.start_byte)
    return found


def matches(query: ts.Query, node: ts.Node) -> list[dict[str, list[ts.Node]]]:
    """Matches of `query` under `node` (capture name -> nodes), in document order."""
    found = [m for _i, m in ts.QueryCursor(query).matches(node)]
    found.sort(key=lambda m: min(ns[0].start_byte for ns in m.values()))
    return found


def node_span(node: ts.Node) -> Span:
    """The 1-based, end-exclusive span of a node."""
    s, e = node.start_point, node.end_point
    return Span(s[0] + 1, s[1] + 1, e[0] + 1, e[1] + 1)


def has_error(tree: ts.Tree) -> bool:
    """True when the tree holds ERROR or MISSING nodes somewhere."""
    return tree.root_node.has_error


class LineIndex:
    """Byte offset -> 1-based (line, byte column), for spans of text found without the tree.

    The first few lookups count newlines on demand (C-speed `bytes.count`), which is cheaper
    than indexing every line when a file needs only a few spans; after that a full index of
    line starts is built once and searched.
    """

    _ON_DEMAND = 16

    def __init__(self, source: bytes) -> None:
        self._src = source
        self._asked = 0
        self._starts: list[int] | None = None

    def _index(self) -> list[int]:
        starts = [0]
        find = self._src.find
        pos = find(b"\n")
        while pos >= 0:
            starts.append(pos + 1)
            pos = find(b"\n", pos + 1)
        return starts

    def point(self, offset: int) -> tuple[int, int]:
        src = self._src
        if self._starts is None:
            self._asked += 1
            if self._asked <= self._ON_DEMAND:
                line = 1 + src.count(b"\n", 0, offset)
                return line, offset - (src.rfind(b"\n", 0, offset) + 1) + 1
            self._starts = self._index()
        line = bisect_right(self._starts, offset) - 1
        return line + 1, offset - self._starts[line] + 1

    def span(self, start: int, end: int) -> Span:
        line, col = self.point(start)
        end_line, end_col = self.point(end)
        return Span(line, col, end_line, end_col)

"""tree-sitter C parsing: one parser per process, incremental reparse, spans, query helpers.

Columns in every `Span` built here are 1-based *byte* columns, like tree-sitter points; kernel
sources are almost all ASCII, and the LSP layer converts to UTF-16 where it must.
"""

from __future__ import annotations

import threading
from bisect import bisect_right
from collections import OrderedDict
from functools import cache

import tree_sitter as ts
import tree_sitter_c as tsc

from dpmlens.core.findings import Span
from dpmlens.core.paths import grammars_dir

LANGUAGE = ts.Language(tsc.language())
_LOCAL = threading.local()  # a tree-sitter Parser must not be shared between threads


def _parser() -> ts.Parser:
    p = getattr(_LOCAL, "parser", None)
    if p is None:
        p = _LOCAL.parser = ts.Parser(LANGUAGE)
    return p


def parse(source: bytes, old_tree: ts.Tree | None = None) -> ts.Tree:
    """Parse C `source`; pass the previous tree (already `.edit()`ed) to reparse incrementally.

    Safe to call from several threads (one parser per thread).
    """
    if old_tree is None:
        return _parser().parse(source)
    return _parser().parse(source, old_tree)


class TreeCache:
    """Parses of files kept across analyses, by path, each checked against its text.

    The rules follow helpers into other files through tree-less models (the editor's workspace
    index ships no trees); a rule that needs such a file's nodes would otherwise parse it again
    on every keystroke in the file that calls it. Bounded (least recently used goes first).
    """

    def __init__(self, size: int = 16) -> None:
        self._size = size
        self._trees: OrderedDict[str, tuple[bytes, ts.Tree]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, path: str, source: bytes) -> ts.Tree:
        with self._lock:
            hit = self._trees.get(path)
            if hit is not None and (hit[0] is source or hit[0] == source):
                self._trees.move_to_end(path)
                return hit[1]
        tree = parse(source)
        with self._lock:
            self._trees[path] = (source, tree)
            self._trees.move_to_end(path)
            while len(self._trees) > self._size:
                self._trees.popitem(last=False)
        return tree


OTHER_FILES = TreeCache()


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

    Newlines are counted on demand (C-speed `bytes.count`) from the nearest offset already
    resolved, so a file needing a few spans pays for a few short scans, never for an index
    of every line.
    """

    def __init__(self, source: bytes) -> None:
        self._src = source
        self._offsets = [0]  # sorted checkpoints
        self._lines = [1]  # line number at each checkpoint

    def point(self, offset: int) -> tuple[int, int]:
        src = self._src
        i = bisect_right(self._offsets, offset) - 1
        base = self._offsets[i]
        line = self._lines[i] + src.count(b"\n", base, offset)
        if base != offset:
            self._offsets.insert(i + 1, offset)
            self._lines.insert(i + 1, line)
        return line, offset - (src.rfind(b"\n", 0, offset) + 1) + 1

    def span(self, start: int, end: int) -> Span:
        line, col = self.point(start)
        end_line, end_col = self.point(end)
        return Span(line, col, end_line, end_col)

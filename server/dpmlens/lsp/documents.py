"""Text synchronisation with incremental tree-sitter reparsing.

Each open document keeps its UTF-8 bytes and its tree. An LSP content change is applied to the
bytes and described to the tree with `Tree.edit()`; the reparse (with the old tree, so only the
edited region is parsed again) is deferred until someone needs the tree, so a burst of edits
costs one parse. Only the latest tree is kept: memory does not grow with the number of edits.

Positions: LSP columns are counted in the negotiated encoding (UTF-16 unless the client offers
UTF-8); trees and `Span`s count bytes. The conversions live here.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import tree_sitter as ts
from lsprotocol import types
from pygls.uris import to_fs_path

from dpmlens.core.findings import Span
from dpmlens.engine.incremental import Stale
from dpmlens.lsp.analysis import Analysis
from dpmlens.model.types import FileModel
from dpmlens.syntax.parser import parse

UTF8 = types.PositionEncodingKind.Utf8
UTF16 = types.PositionEncodingKind.Utf16
UTF32 = types.PositionEncodingKind.Utf32

_NEWLINE = re.compile(rb"\n")
# Surrogates UTF-8 cannot hold. U+DC80..U+DCFF stay: "surrogateescape" keeps them as the raw
# bytes 0x80..0xFF, and the column conversions below read them back the same way.
_LONE_SURROGATE = re.compile("[\ud800-\udc7f\udd00-\udfff]")


def encode_text(text: str) -> tuple[bytes, int]:
    """Document text -> UTF-8 bytes, and how many lone UTF-16 surrogates were replaced.

    JSON lets a client send "\\ud800" alone (an editor buffer can hold one); dropping the
    edit would leave our copy of the document out of step with the editor's for good.
    U+FFFD is one UTF-16 unit, as the surrogate was, so later positions still line up."""
    try:
        return text.encode("utf-8", "surrogateescape"), 0
    except UnicodeEncodeError:
        clean, n = _LONE_SURROGATE.subn("\ufffd", text)
        return clean.encode("utf-8", "surrogateescape"), n


def line_starts(source: bytes) -> list[int]:
    starts = [0]
    starts.extend(m.end() for m in _NEWLINE.finditer(source))
    return starts


def line_at(source: bytes, starts: list[int], line: int) -> bytes:
    """0-based `line` of `source` (whose `line_starts` are `starts`) without its newline;
    b"" past the end."""
    if line < 0 or line >= len(starts):
        return b""
    end = starts[line + 1] - 1 if line + 1 < len(starts) else len(source)
    return source[starts[line] : end]


def col_to_byte(line: bytes, col: int, encoding: str) -> int:
    """LSP column (in `encoding` units) -> byte offset within `line` (clamped to the line)."""
    if col <= 0:
        return 0
    if encoding == UTF8 or line.isascii():
        return min(col, len(line))
    text = line.decode("utf-8", "surrogateescape")
    if encoding == UTF32:
        return len(text[:col].encode("utf-8", "surrogateescape"))
    units = 0
    for i, ch in enumerate(text):
        if units >= col:
            return len(text[:i].encode("utf-8", "surrogateescape"))
        units += 2 if ord(ch) > 0xFFFF else 1
    return len(line)


def byte_to_col(line: bytes, byte: int, encoding: str) -> int:
    """Byte offset within `line` -> LSP column in `encoding` units."""
    byte = max(0, min(byte, len(line)))
    if encoding == UTF8 or line.isascii():
        return byte
    prefix = line[:byte].decode("utf-8", "surrogateescape")
    if encoding == UTF32:
        return len(prefix)
    return sum(2 if ord(ch) > 0xFFFF else 1 for ch in prefix)


@dataclass
class Document:
    uri: str
    path: str
    version: int | None
    source: bytes
    tree: ts.Tree | None = None
    dirty: bool = True  # tree edited (or absent) but not reparsed yet
    edits: int = 0
    _starts: list[int] | None = field(default=None, repr=False)
    # the ranges edited since the last parse (in the current text): edits decided before
    # parsing (incremental.analyze_early) pile up, spread over the file
    _edited: list[tuple[int, int]] = field(default_factory=list, repr=False)

    # -- positions --------------------------------------------------------------------------

    @property
    def starts(self) -> list[int]:
        if self._starts is None:
            self._starts = line_starts(self.source)
        return self._starts

    def line_bytes(self, line: int) -> bytes:
        """0-based line without its newline; b"" past the end."""
        return line_at(self.source, self.starts, line)

    def offset_of(self, pos: types.Position, encoding: str) -> int:
        starts = self.starts
        if pos.line >= len(starts):
            return len(self.source)
        return starts[pos.line] + col_to_byte(self.line_bytes(pos.line), pos.character, encoding)

    def position_of_point(self, row: int, byte_col: int, encoding: str) -> types.Position:
        """0-based (row, byte column) -> LSP Position."""
        return types.Position(
            line=row, character=byte_to_col(self.line_bytes(row), byte_col, encoding)
        )

    def span_to_range(self, span: Span, encoding: str) -> types.Range:
        return types.Range(
            start=self.position_of_point(span.line - 1, span.column - 1, encoding),
            end=self.position_of_point(span.end_line - 1, span.end_column - 1, encoding),
        )

    def point_of_position(self, pos: types.Position, encoding: str) -> tuple[int, int]:
        """LSP Position -> 0-based (row, byte column)."""
        return pos.line, col_to_byte(self.line_bytes(pos.line), pos.character, encoding)

    # -- edits -----------------------------------------------------------------------------

    def apply_change(self, change: types.TextDocumentContentChangeEvent, encoding: str) -> int:
        """Apply one TextDocumentContentChangeEvent (ranged or whole-text); returns the number
        of lone surrogates replaced in its text."""
        text, replaced = encode_text(change.text)
        if not isinstance(change, types.TextDocumentContentChangePartial):
            self.source = text
            self.tree = None
            self.dirty = True
            self._starts = None
            self.edits += 1
            return replaced
        rng = change.range
        start = self.offset_of(rng.start, encoding)
        end = max(start, self.offset_of(rng.end, encoding))
        start_point = self._point_at(start)
        old_end_point = self._point_at(end)
        nl = text.count(b"\n")
        if nl:
            new_end_point = (start_point[0] + nl, len(text) - text.rfind(b"\n") - 1)
        else:
            new_end_point = (start_point[0], start_point[1] + len(text))
        self.source = self.source[:start] + text + self.source[end:]
        self._shift_lines(start, end, text, start_point[0], old_end_point[0])
        self._note_edit(start, end, start + len(text))
        if self.tree is not None:
            self.tree.edit(
                start_byte=start,
                old_end_byte=end,
                new_end_byte=start + len(text),
                start_point=start_point,
                old_end_point=old_end_point,
                new_end_point=new_end_point,
            )
        self.dirty = True
        self.edits += 1
        return replaced

    def _point_at(self, offset: int) -> tuple[int, int]:
        from bisect import bisect_right

        starts = self.starts
        row = bisect_right(starts, offset) - 1
        return row, offset - starts[row]

    def _shift_lines(self, start: int, end: int, text: bytes, row0: int, row1: int) -> None:
        """Update the line table in place: a one-character edit must not rescan the file."""
        starts = self._starts
        if starts is None:
            return
        delta = len(text) - (end - start)
        new = [start + m.end() for m in _NEWLINE.finditer(text)]
        tail = starts[row1 + 1 :]
        if delta:
            tail = [s + delta for s in tail]
        starts[row0 + 1 :] = new + tail

    def _note_edit(self, start: int, old_end: int, new_end: int) -> None:
        delta = new_end - old_end
        kept: list[tuple[int, int]] = []
        lo, hi = start, new_end
        for s0, e0 in self._edited:
            if e0 < start:  # before the edit
                kept.append((s0, e0))
            elif s0 > old_end:  # after it: moved
                kept.append((s0 + delta, e0 + delta))
            else:  # touching it: merged (what of it the edit kept)
                lo, hi = min(lo, s0), max(hi, e0 + delta if e0 > old_end else new_end)
        kept.append((lo, hi))
        self._edited = sorted(kept)

    def stale(self) -> Stale | None:
        """The last tree as edited since it was parsed, with the ranges those edits wrote,
        while the document is not parsed again (incremental.Stale); None when it is current
        or there is none."""
        if not self.dirty or self.tree is None:
            return None
        return Stale(self.tree, tuple(self._edited))

    def tree_later(self) -> Callable[[], ts.Tree]:
        """What gives, when called, the tree of the text the document has now: its own tree
        (a copy: later edits change it in place) while it still has that text, else a parse
        of that text. An analysis decided before parsing needs a tree only for hover or
        CodeLens."""
        source = self.source

        def tree() -> ts.Tree:
            return self.ensure_tree().copy() if self.source is source else parse(source)

        return tree

    def ensure_tree(self) -> ts.Tree:
        """The up-to-date tree: reparses (incrementally when an old tree exists) if needed.

        tree-sitter's error recovery depends on the old tree: where the incremental tree has
        an ERROR or MISSING node in what changed, a fresh parse of the same text can differ
        (and so can the findings: test_fuzz_model found one), so that text is parsed afresh.
        An edit that leaves correct code parses incrementally."""
        if self.dirty or self.tree is None:
            old, edited = self.tree, list(self._edited)
            tree = parse(self.source, old)
            if old is not None and tree.root_node.has_error:
                spans = [(r.start_byte, r.end_byte) for r in old.changed_ranges(tree)]
                spans += edited
                if any(_error_within(tree.root_node, lo, hi) for lo, hi in spans):
                    tree = parse(self.source)
            self.tree, self.dirty, self._edited = tree, False, []
        return self.tree


def _error_within(node: ts.Node, lo: int, hi: int) -> bool:
    """Is there an ERROR/MISSING node overlapping bytes [lo, hi] (touching counts)?"""
    stack = [node]
    while stack:
        n = stack.pop()
        if n.start_byte > hi or n.end_byte < lo or not (n.has_error or n.is_missing):
            continue
        if n.is_error or n.is_missing:
            return True
        stack.extend(n.children)
    return False


class DocumentStore:
    """Open documents by URI (only C sources and headers are tracked), and the latest
    analysis of each (written by diagnostics.py, read by the index and the trace mapping)."""

    def __init__(self) -> None:
        self.docs: dict[str, Document] = {}
        self.analyses: dict[str, Analysis] = {}
        self.last_replaced = 0  # lone surrogates replaced by the last open()
        self.surrogates_logged = False

    def get(self, uri: str) -> Document | None:
        return self.docs.get(uri)

    def open(self, uri: str, version: int | None, text: str) -> Document:
        path = to_fs_path(uri) or uri
        source, self.last_replaced = encode_text(text)
        doc = Document(uri=uri, path=path, version=version, source=source)
        self.docs[uri] = doc
        return doc

    def close(self, uri: str) -> None:
        self.docs.pop(uri, None)

    def by_path(self, path: str) -> Document | None:
        for doc in self.docs.values():
            if doc.path == path:
                return doc
        return None

    def model_of(self, path: str) -> FileModel | None:
        """The model of the latest analysis of the open document at `path`, if any."""
        doc = self.by_path(path)
        res = self.analyses.get(doc.uri) if doc is not None else None
        return res.model if res is not None else None


def is_c_document(uri: str, language_id: str | None = None) -> bool:
    if language_id in ("c", "cpp"):
        return True
    return uri.endswith((".c", ".h"))

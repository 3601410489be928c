"""Call sites of a file: the `calls` query per function or for the whole tree, text search
for given names, and `TreeCall`, a CallSite that reads its span and arguments lazily.
(Part of the model builder: `CallsMixin` is mixed into `build._Builder`.)"""

from __future__ import annotations

from bisect import bisect_right
from functools import lru_cache
from typing import TYPE_CHECKING

import tree_sitter as ts

from dpmlens.core.findings import Span
from dpmlens.model.ctext import word_byte as _word
from dpmlens.model.types import CallSite
from dpmlens.syntax.parser import captures, load_query, node_span, parse


class CallsMixin:
    source: bytes
    tree: ts.Tree
    recovered: dict[str, tuple[int, int]]
    func_nodes: dict[str, list[ts.Node]]
    func_starts: list[int]
    func_ranges: list[tuple[int, int, str]]

    if TYPE_CHECKING:  # provided by the builder or another mixin

        def span(self, start: int, end: int) -> Span:  # provided by the builder
            ...

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
        """Calls to any of `names`: text search for each name, then the tree at each hit.
        Kept per set of names (rules ask for the same ones once per table or callback)."""
        memo: dict[frozenset[str], list[CallSite]] = self.__dict__.setdefault("_named", {})
        found = memo.get(names)
        if found is None:
            found = memo[names] = self._calls_named(names)
        return list(found)

    def _calls_named(self, names: frozenset[str]) -> list[CallSite]:
        src = self.source
        node_at = self._node_at
        nodes: list[ts.Node] = []
        for pos, end in _name_hits(src, names):
            if (pos > 0 and _word(src[pos - 1])) or (end < len(src) and _word(src[end])):
                continue
            ident = node_at(pos, end)
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

    def _node_at(self, start: int, end: int) -> ts.Node | None:
        """The smallest node of the tree over [start, end) (model/spliced.py: of two trees)."""
        return self.tree.root_node.descendant_for_byte_range(start, end)

    def callee_names(self) -> frozenset[str]:
        src = self.source
        return frozenset(
            src[c.start_byte : c.child(0).end_byte].decode("latin-1")
            for c in captures(load_query("calls"), self.tree.root_node).get("call", [])
        )

    def _calls(self, nodes: list[ts.Node], caller: str | None = None) -> list[CallSite]:
        """CallSites for call_expression nodes; `caller` when all are in that function.

        Callee, caller and start are read now; spans, arguments and end on first use
        (`TreeCall`): most call sites are only ever filtered by callee.
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
                TreeCall(
                    c,
                    src[start : fn.end_byte].decode("latin-1"),
                    caller if caller is not None else caller_at(start),
                    start,
                    src,
                )
            )
        return out


class TreeCall(CallSite):
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


def anchors(names: frozenset[str]) -> tuple[bytes, ...]:
    """Substrings one of which each of `names` holds (what `_name_hits` searches for)."""
    return tuple(a for a, _placed in _anchors(names))


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

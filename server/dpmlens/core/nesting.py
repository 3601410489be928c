"""How deeply a C file nests its brackets, from the bytes (no tree), for the analysis budget.

The rules walk the tree recursively and look at each node's ancestors (tree-sitter finds a
parent from the root down), so their cost grows with the square of the depth: 10,000 nested
braces took 17 s and 50,000 over two minutes. Real drivers nest a few dozen levels; a file
deeper than `limits.NESTING_DEPTH` is not analyzed and is named as skipped.

Brackets inside comments and strings count too: they shift the depth by a few levels, never
by hundreds, which the limit's margin absorbs.
"""

from __future__ import annotations

from array import array
from itertools import accumulate

from dpmlens.core import limits
from dpmlens.core.text_change import changed_region

_OPEN, _CLOSE = b"{([", b"})]"
_DROP = bytes(b for b in range(256) if b not in _OPEN + _CLOSE)
# opening bracket -> +1, closing -> -1 (0xff as a signed byte)
_STEP = bytes(1 if b in _OPEN else 0xFF if b in _CLOSE else 0 for b in range(256))


def max_depth(source: bytes, at_least: int = 0) -> int:
    """The deepest bracket nesting in `source`; 0 when even the count of opening brackets
    stays below `at_least` (the common case: nothing to compute)."""
    bound = depth_bound(source, at_least - 1)
    return bound if bound >= at_least else 0


def depth_bound(source: bytes, limit: int) -> int:
    """At least the nesting depth of `source`: its count of opening brackets when that is
    within `limit`, else the depth itself."""
    opening = sum(source.count(bytes([b])) for b in _OPEN)
    if opening <= limit:
        return opening
    steps = array("b", source.translate(None, _DROP).translate(_STEP))
    return max(0, max(accumulate(steps), default=0))


def too_deep(source: bytes) -> str | None:
    """None, or the one-line reason a file is not analyzed."""
    return _reason(depth_bound(source, int(limits.NESTING_DEPTH.value)))


def _reason(depth: int) -> str | None:
    limit = int(limits.NESTING_DEPTH.value)
    if depth <= limit:
        return None
    return (f"too deeply nested to analyze ({depth} levels of brackets, the limit is {limit}; "
            f"set {limits.NESTING_DEPTH.env} to raise it)")


class EditedNesting:
    """`too_deep` for a document that changes by edits, without counting a 200 KB text on
    every keystroke: an edit that replaces k bytes by m can deepen the nesting by at most
    k + m levels (each byte it adds opens at most one; each it removes closed at most one),
    so a bound carried from the last count decides until it reaches the limit."""

    def __init__(self) -> None:
        self._source: bytes | None = None
        self._bound = 0  # >= the nesting depth of _source

    def too_deep(self, source: bytes) -> str | None:
        limit = int(limits.NESTING_DEPTH.value)
        if self._source is not None:
            lo, old_hi, new_hi = changed_region(self._source, source)
            bound = self._bound + (old_hi - lo) + (new_hi - lo)
            if bound <= limit:
                self._source, self._bound = source, bound
                return None
        self._source, self._bound = source, depth_bound(source, limit)
        return _reason(self._bound)

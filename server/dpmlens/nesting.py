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

from dpmlens import limits

_OPEN, _CLOSE = b"{([", b"})]"
_DROP = bytes(b for b in range(256) if b not in _OPEN + _CLOSE)
# opening bracket -> +1, closing -> -1 (0xff as a signed byte)
_STEP = bytes(1 if b in _OPEN else 0xFF if b in _CLOSE else 0 for b in range(256))


def max_depth(source: bytes, at_least: int = 0) -> int:
    """The deepest bracket nesting in `source`; a quick lower bound when even the count of
    opening brackets stays below `at_least` (the common case: nothing to compute)."""
    opening = sum(source.count(bytes([b])) for b in _OPEN)
    if opening < at_least:
        return 0
    steps = array("b", source.translate(None, _DROP).translate(_STEP))
    return max(0, max(accumulate(steps), default=0))


def too_deep(source: bytes) -> str | None:
    """None, or the one-line reason a file is not analyzed."""
    limit = int(limits.NESTING_DEPTH.value)
    depth = max_depth(source, limit + 1)
    if depth <= limit:
        return None
    return (f"too deeply nested to analyze ({depth} levels of brackets, the limit is {limit}; "
            f"set {limits.NESTING_DEPTH.env} to raise it)")

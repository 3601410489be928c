"""Byte offsets <-> 1-based spans for edits computed on the raw text."""

from __future__ import annotations

from bisect import bisect_right
from functools import cached_property
from itertools import accumulate

from dpmlens.core.findings import Span


class Positions:
    def __init__(self, source: bytes) -> None:
        self.source = source

    @cached_property
    def starts(self) -> list[int]:
        """The offset of each line (on first use: callers often need no position at all)."""
        # The offset after each "\n"; accumulate/map keep the loop in C (big files).
        lengths = map(len, self.source.split(b"\n")[:-1])
        return list(accumulate(map((1).__add__, lengths), initial=0))

    def offset(self, line: int, column: int) -> int:
        return self.starts[line - 1] + column - 1

    def point(self, offset: int) -> tuple[int, int]:
        line = bisect_right(self.starts, offset) - 1
        return line + 1, offset - self.starts[line] + 1

    def span(self, start: int, end: int) -> Span:
        line, col = self.point(start)
        end_line, end_col = self.point(end)
        return Span(line, col, end_line, end_col)

    def range(self, span: Span) -> tuple[int, int]:
        return self.offset(span.line, span.column), self.offset(span.end_line, span.end_column)

"""Apply a Fix's TextEdits to a source buffer (used by tests and by `--fix`-style callers)."""

from __future__ import annotations

from collections.abc import Iterable

from dpmlens.core.findings import TextEdit
from dpmlens.rules.textpos import Positions


def apply_edits(source: bytes, edits: Iterable[TextEdit]) -> bytes:
    """Apply non-overlapping edits (1-based, end-exclusive byte columns) to `source`."""
    pos = Positions(source)
    ranges = sorted(
        ((*pos.range(e.span), e.new_text.encode()) for e in edits), key=lambda r: r[0], reverse=True
    )
    out = source
    last_start = len(source) + 1
    for start, end, new in ranges:
        if end > last_start:
            raise ValueError("overlapping edits")
        out = out[:start] + new + out[end:]
        last_start = start
    return out

"""Plain-text tables of the text reports: columns padded to the widest cell."""

from __future__ import annotations


def table(rows: list[list[str]], right: set[int]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for r in rows:
        cells = [c.rjust(widths[i]) if i in right else c.ljust(widths[i]) for i, c in enumerate(r)]
        out.append("  ".join(cells).rstrip())
    return "\n".join(out)

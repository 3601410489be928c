"""The one duration formatter of dpmlens' text: the trace outputs (tables, critical path,
what-if, the HTML timeline's script), the language server's CodeLens, hover and logs,
`dpmlens check`'s summary, and (the same rules in TypeScript, extension/src/protocol.ts
formatDuration) the editor's tree view; tested against test-fixtures/durations.json.

Data stays in microseconds everywhere; only text goes through `format_us`. A module of its
own, outside dpmlens.traces (which re-exports it), so that `dpmlens check` does not import
the trace package for it. Values quoted from the source or a spec table keep their own form
(the delay rules' rules/delay_spec.py fmt_ms: "150 ms").
"""

from __future__ import annotations


def format_us(us: float) -> str:
    """2,410,000 -> "2.41 s", 5,500 -> "5.50 ms", 42 -> "42 us", 4.5 -> "4.5 us", nan -> "-"."""
    if us != us:
        return "-"
    if abs(us) >= 1e6:
        return f"{us / 1e6:.2f} s"
    if abs(us) >= 1e3:
        return f"{us / 1e3:.2f} ms"
    return f"{us:.0f} us" if us == int(us) or abs(us) >= 10 else f"{us:.1f} us"


def signed_us(us: float) -> str:
    """A change: "+1.20 ms", "-320 ms"."""
    return ("+" if us > 0 else "") + format_us(us)

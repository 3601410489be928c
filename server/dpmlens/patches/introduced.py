"""What a patch introduces: findings after it that were absent before it and that it touches.

Findings are matched across the edit by rule + function + message (line references in the
message normalized away, as the baseline does), counted, never by line: a patch that adds ten
lines above an old finding moves it, it does not introduce it. A finding is the patch's when
its own lines or any step of its call chain is on a line the patch adds (or right after a line
it removes): wiring a helper into a noirq callback is responsible for the call in the helper.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from dpmlens.core.findings import Finding, Span
from dpmlens.engine.baseline import normalize_message


def match_key(finding: Finding) -> tuple[str, str, str]:
    return (finding.rule, finding.function or "", normalize_message(finding.message))


def _hits(span: Span, lines: set[int]) -> bool:
    return any(n in lines for n in range(span.line, max(span.end_line, span.line) + 1))


def touches(finding: Finding, path: str, lines: set[int]) -> bool:
    if finding.path == path and _hits(finding.span, lines):
        return True
    return any(step.path == path and _hits(step.span, lines) for step in finding.chain)


def introduced(
    before: Iterable[Finding], after: Iterable[Finding], path: str, lines: set[int]
) -> list[Finding]:
    """The findings of `after` not in `before` that touch `lines` (new-side lines of `path`)."""
    old = Counter(match_key(f) for f in before)
    out = []
    for f in sorted(after, key=Finding.sort_key):
        key = match_key(f)
        if old[key] > 0:
            old[key] -= 1
        elif touches(f, path, lines):
            out.append(f)
    return out

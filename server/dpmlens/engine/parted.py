"""A very large C text analysed in parts (`syntax/parts.py`), one part's tree at a time.

Each part is analysed as the text of its own span followed by the blocks from elsewhere that
define what it uses; the findings' lines are moved back to the whole text's. A finding the
rules place in another part's lines (a delay in a helper a callback of this part reaches)
is kept unless that part reports the same rule at the same place itself.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import replace
from typing import Any

from dpmlens.config.settings import Config
from dpmlens.core import limits
from dpmlens.core.findings import ChainStep, Finding, Fix, Span, TextEdit
from dpmlens.syntax.parts import TARGET_BYTES, Part, split
from dpmlens.syntax.prefilter import WordFilter


def analyze_sized(
    path: str, source: bytes, config: Config, rules: list[Any], prefilter: WordFilter
) -> list[Finding]:
    """The findings of one source (`check`, `cc`): analysed whole below
    `DPMLENS_WHOLE_SOURCE_BYTES`, from there on in parts of a sixteenth of that, one part's
    tree at a time."""
    from dpmlens.engine.analyze import analyze_model, rules_for
    from dpmlens.model.build import build_model

    whole = int(limits.WHOLE_SOURCE_BYTES.value)
    if len(source) >= whole:
        return analyze_parts(path, source, config, rules, prefilter, max(4096, whole // 16))
    return analyze_model(build_model(path, source), config, None, rules_for(source, rules))


def analyze_parts(
    path: str,
    source: bytes,
    config: Config,
    rules: list[Any],
    prefilter: WordFilter,
    target: int = TARGET_BYTES,
) -> list[Finding]:
    """The findings of `path` (whole-text lines), in parts of about `target` bytes (those the
    prefilter rejects are not analysed)."""
    from dpmlens.engine.analyze import analyze_model, rules_for
    from dpmlens.model.build import build_model

    owned: dict[tuple[str, int, int], Finding] = {}
    elsewhere: dict[tuple[str, int, int], Finding] = {}
    for part in split(source, target):
        text = part.text(source)
        if not prefilter.matches(text):
            continue
        found = analyze_model(build_model(path, text), config, None, rules_for(text, rules))
        move = _Lines(part, source, path)
        first, last = part.own.line + 1, part.own.line + source.count(
            b"\n", part.own.start, part.own.end
        )
        for f in found:
            f = move.finding(f)
            key = (f.rule, f.span.line, f.span.column)
            if first <= f.span.line <= last:
                owned.setdefault(key, f)
            else:
                elsewhere.setdefault(key, f)
    for key, f in elsewhere.items():
        owned.setdefault(key, f)
    return sorted(owned.values(), key=Finding.sort_key)


class _Lines:
    """Lines of a part's text -> lines of the whole text."""

    def __init__(self, part: Part, source: bytes, path: str) -> None:
        pieces = part.lines(source)
        self.starts = [p for p, _ in pieces]
        self.whole = [w for _, w in pieces]
        self.path = path

    def line(self, n: int) -> int:
        i = max(0, bisect_right(self.starts, n) - 1)
        return self.whole[i] + n - self.starts[i]

    def span(self, s: Span) -> Span:
        return Span(self.line(s.line), s.column, self.line(s.end_line), s.end_column)

    def finding(self, f: Finding) -> Finding:
        chain = tuple(self._step(c) for c in f.chain)
        fixes = tuple(
            Fix(x.title, tuple(self._edit(e) for e in x.edits)) for x in f.fixes
        )
        return replace(f, span=self.span(f.span), chain=chain, fixes=fixes)

    def _step(self, c: ChainStep) -> ChainStep:
        return replace(c, span=self.span(c.span)) if c.path == self.path else c

    def _edit(self, e: TextEdit) -> TextEdit:
        return replace(e, span=self.span(e.span)) if e.path == self.path else e

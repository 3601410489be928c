"""Where a whole word ([A-Za-z0-9_]+, the C identifier bytes) occurs in a text.

Rules and the model builder look names up in the file's text (a driver variable's
registration, the callers of a helper). One `bytes.find` pass per name is the cheapest way for
a file of ordinary size, but a file's names grow with its length, so on an amalgamated source
(20 MB of drivers in one file) those passes become quadratic. Each text therefore counts the
bytes searched in it; once that reaches `_INDEX_AFTER` times its length, one pass lists every
word's positions and later look-ups read that list. Both ways give the same positions.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field

_WORD = re.compile(rb"[A-Za-z0-9_]+")
# passes over the whole text paid before it is indexed (the index of a 1.3 MB text costs as
# much as ~350 finds of a rare word; a common word's pass costs more, its hits read in Python)
_INDEX_AFTER = 128


def _is_word(c: int) -> bool:
    return c == 0x5F or 0x30 <= c <= 0x39 or 0x41 <= c <= 0x5A or 0x61 <= c <= 0x7A


@dataclass
class _Text:
    source: bytes
    searched: int = 0  # bytes scanned by find passes so far
    index: dict[bytes, array[int]] | None = None  # 8 bytes a position, not a 36-byte int
    memo: dict[bytes, Sequence[int]] = field(default_factory=dict)


# the last few texts, compared by identity (one analysis asks about one source object)
_TEXTS: list[_Text] = []


def _text(source: bytes) -> _Text:
    for t in _TEXTS:
        if t.source is source:
            return t
    t = _Text(source)
    _TEXTS.insert(0, t)
    del _TEXTS[3:]
    return t


_NONE: Sequence[int] = ()


def positions(source: bytes, word: str | bytes) -> Sequence[int]:
    """Start offsets, in order, of `word` as a whole word in `source` (no word byte right
    before or after it). `word` is an identifier (anything else finds nothing)."""
    needle = word.encode("latin-1") if isinstance(word, str) else word
    if _WORD.fullmatch(needle) is None:
        return _NONE
    t = _text(source)
    if t.index is None and t.searched >= _INDEX_AFTER * max(1, len(source)):
        index: dict[bytes, array[int]] = {}
        for m in _WORD.finditer(source):
            at = index.get(m.group())
            if at is None:
                at = index[m.group()] = array("q")
            at.append(m.start())
        t.index = index
        t.memo.clear()
    if t.index is not None:
        return t.index.get(needle, _NONE)
    memo = t.memo.get(needle)
    if memo is not None:
        return memo
    t.searched += len(source)
    found: list[int] = []
    n = len(source)
    pos = source.find(needle)
    while pos >= 0:
        end = pos + len(needle)
        if (pos == 0 or not _is_word(source[pos - 1])) and (end >= n or not _is_word(source[end])):
            found.append(pos)
        pos = source.find(needle, end)
    t.memo[needle] = found
    return found


_SPACE = frozenset(b" \t\n\r\x0b\x0c")  # what a regex's \s matches in bytes


def spaces_before(source: bytes, p: int) -> int:
    """The offset just after the last non-space byte before `p` (p itself when none)."""
    while p > 0 and source[p - 1] in _SPACE:
        p -= 1
    return p

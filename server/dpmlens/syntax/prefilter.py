"""A byte-level prefilter: files that fail it cannot hold anything a rule reports.

This module knows no rule and no PM word: a `WordFilter` is built by the engine from what the
enabled checkers ask for (`rules.plugin.Keywords`) and from what the model needs to find PM
callbacks (`model.keywords`). It decides with substring searches only:

- `words`: any one keeps the file;
- `gated`: words that keep a file only when it also names one of `gate` as a whole word
  (spec quantity names such as D3hot matter only next to a delay call: the amdgpu register
  headers name D3HOT fields by the thousand);
- `legacy`: words common outside PM (`.suspend`), which keep a file only when the regex
  `legacy_decl` (a driver struct declaration) also matches.

Speed: Python's `in` scans ~2 GB/s per word, so ten words cost ten passes. Words sharing an
anchor byte (`_` in almost every C identifier we look for) are searched in one regex pass whose
pattern starts with that literal (`_(?:pm_ops|runtime_get_sync|...)`), as fast as one `in`;
a hit is confirmed with the exact words. Measured on linux-6.12 drivers/: see docs/model.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

_ANCHOR = b"_"


@dataclass(frozen=True)
class WordFilter:
    words: tuple[bytes, ...] = ()
    gated: tuple[bytes, ...] = ()
    gate: tuple[bytes, ...] = ()
    legacy: tuple[bytes, ...] = ()
    legacy_decl: bytes = b""

    def matches(self, source: bytes) -> bool:
        """True when `source` may hold something the checkers care about."""
        if _any(self._words, source):
            return True
        if self.gated and _any(self._gated, source):
            gate_subs, names = self._gate
            if any(g in source for g in gate_subs) and names.search(source) is not None:
                return True
        if self.legacy and self._legacy.search(source) is not None:
            return self._legacy_decl.search(source) is not None
        return False

    def union(self, other: WordFilter) -> WordFilter:
        def merge(a: tuple[bytes, ...], b: tuple[bytes, ...]) -> tuple[bytes, ...]:
            return tuple(dict.fromkeys((*a, *b)))

        decl = self.legacy_decl or other.legacy_decl
        if self.legacy_decl and other.legacy_decl and self.legacy_decl != other.legacy_decl:
            decl = b"(?:" + self.legacy_decl + b")|(?:" + other.legacy_decl + b")"
        return WordFilter(
            merge(self.words, other.words),
            merge(self.gated, other.gated),
            merge(self.gate, other.gate),
            merge(self.legacy, other.legacy),
            decl,
        )

    # compiled forms (computed once per filter; dataclass(frozen) allows cached_property)
    @cached_property
    def _words(self) -> _Search:
        return _Search.of(_minimal(self.words))

    @cached_property
    def _gated(self) -> _Search:
        return _Search.of(_minimal(self.gated))

    @cached_property
    def _gate(self) -> tuple[tuple[bytes, ...], re.Pattern[bytes]]:
        return _delay_gate(self.gate)

    @cached_property
    def _legacy(self) -> re.Pattern[bytes]:
        return re.compile(b"|".join(re.escape(w) for w in self.legacy) or b"(?!)")

    @cached_property
    def _legacy_decl(self) -> re.Pattern[bytes]:
        return re.compile(self.legacy_decl or b"(?!)")


@dataclass(frozen=True)
class _Search:
    """Words split into one anchored regex (words holding `_`) and plain `in` tests."""

    anchored: re.Pattern[bytes] | None
    confirm: tuple[bytes, ...]  # the anchored words, tested exactly after a regex hit
    plain: tuple[bytes, ...]

    @staticmethod
    def of(words: tuple[bytes, ...]) -> _Search:
        with_anchor = [w for w in words if _ANCHOR in w]
        plain = tuple(w for w in words if _ANCHOR not in w)
        if len(with_anchor) < 2:  # one word: `in` is as fast as the regex
            return _Search(None, (), tuple(with_anchor) + plain)
        tails = sorted({w[w.index(_ANCHOR) + 1 :] for w in with_anchor}, key=len, reverse=True)
        pattern = re.escape(_ANCHOR) + b"(?:" + b"|".join(re.escape(t) for t in tails) + b")"
        return _Search(re.compile(pattern), tuple(with_anchor), plain)


def _any(search: _Search, source: bytes) -> bool:
    if any(w in source for w in search.plain):
        return True
    if search.anchored is not None and search.anchored.search(source) is not None:
        return any(w in source for w in search.confirm)
    return False


def _minimal(words: tuple[bytes, ...]) -> tuple[bytes, ...]:
    """Drop words that contain another word of the list (the shorter one already decides)."""
    uniq = tuple(dict.fromkeys(w for w in words if w))
    return tuple(w for w in uniq if not any(o != w and o in w for o in uniq))


def _delay_gate(names: tuple[bytes, ...]) -> tuple[tuple[bytes, ...], re.Pattern[bytes]]:
    """(substrings one of which every name holds: `sleep`, `delay` and any name holding
    neither; a regex matching the names as whole words)."""
    gate = [w for w in (b"sleep", b"delay") if any(w in n for n in names)]
    gate += [n for n in names if not any(w in n for w in gate)]
    words = b"|".join(re.escape(n) for n in names) or b"(?!)"
    return tuple(gate), re.compile(rb"(?<![\w])(?:" + words + rb")(?![\w])")

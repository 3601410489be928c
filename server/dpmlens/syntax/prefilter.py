"""A byte-level prefilter: files that fail it cannot hold anything a rule reports.

This module knows no rule and no PM word: a `WordFilter` is built by the engine from what the
enabled checkers ask for (`rules.plugin.Keywords`) and from what the model needs to find PM
callbacks (`model.keywords`). It decides with substring searches only:

- `words`: any one keeps the file;
- `gated`: words that keep a file only when it also names one of `gate` as a whole word
  (spec quantity names such as D3hot matter only next to a delay call: the amdgpu register
  headers name D3HOT fields by the thousand);
- `legacy`: words common outside PM (`.suspend`), which keep a file only when the regex
  `legacy_decl` (a driver struct declaration) also matches;
- `clauses`: each a conjunction of word groups; a clause keeps the file when every group has
  a word in it (the balance rules' set-up words count only beside a driver's `.probe`).

Speed: Python's `in` scans ~1.3 GB/s per word, so ten words cost ten passes; a regex runs as
fast only when its pattern starts with a literal. So the `words` (nine with the subsystem ops
types) share one pass of `_(?:pm_ops|runtime_get_sync|cm_ops|...)` (the anchor `_` is in each;
a hit is confirmed with the exact words): 0.27 s per 157 MB where nine `in` tests take 1.1 s.
The gated words are searched only in the quarter of files that pass the gate, grouped by first
byte (`D3hot|D3cold|...`). Measured on a third of linux-6.12 drivers/ (10,507 files, 157 MB of
.c): 0.55 s of CPU for the whole filter.

Where Hyperscan is installed (Linux x86-64 wheels: `hyperscan` on PyPI), `matches` makes one
SIMD pass for every word, gate and declaration at once instead: 0.21 s where the passes above
take 1.41 s, on a third of drivers/ (346 MB with headers), same decision for every file
(`fast_filter.py`; tests compare both paths). Set DPMLENS_NO_HYPERSCAN=1 to use the passes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from dpmlens.syntax.fast_filter import FastFilters, compiled

_ANCHOR = b"_"


@dataclass(frozen=True)
class WordFilter:
    words: tuple[bytes, ...] = ()
    gated: tuple[bytes, ...] = ()
    gate: tuple[bytes, ...] = ()
    legacy: tuple[bytes, ...] = ()
    legacy_decl: bytes = b""
    clauses: tuple[tuple[tuple[bytes, ...], ...], ...] = ()

    def matches(self, source: bytes) -> bool:
        """True when `source` may hold something the checkers care about."""
        fast = self._fast
        if fast is not None:
            return fast.matches(source)
        return self.matches_by_passes(source)

    def matches_by_passes(self, source: bytes) -> bool:
        """`matches` with Python's own searches, one pass per group of words."""
        if _any(self._words, source):
            return True
        if self.gated:
            # cheapest first: `sleep`/`delay` substrings, then the spec words, then the names
            gate_subs, names = self._gate
            if (
                any(g in source for g in gate_subs)
                and _any(self._gated, source)
                and names.search(source) is not None
            ):
                return True
        if (
            self.legacy
            and self._legacy.search(source) is not None
            and self._legacy_decl.search(source) is not None
        ):
            return True
        if self.clauses and _any(self._clause_heads, source):
            # one pass for every clause's first group; the rest only in the files it keeps
            return any(all(any(w in source for w in g) for g in c) for c in self.clauses)
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
            tuple(dict.fromkeys((*self.clauses, *other.clauses))),
        )

    # compiled forms (computed once per filter; dataclass(frozen) allows cached_property);
    # never pickled: a worker rebuilds them from the words
    def __getstate__(self) -> dict[str, object]:
        return {f: getattr(self, f) for f in self.__dataclass_fields__}

    def __setstate__(self, state: dict[str, object]) -> None:
        for key, value in state.items():
            object.__setattr__(self, key, value)

    @cached_property
    def _fast(self) -> FastFilters | None:
        return compiled((self,))

    @cached_property
    def _words(self) -> _Search:
        return _Search.of(_minimal(self.words))

    @cached_property
    def _gated(self) -> _Search:
        # searched in few files (after the gate): grouping by first byte beats the `_` anchor
        return _Search.of(_minimal(self.gated), anchor=False)

    @cached_property
    def _gate(self) -> tuple[tuple[bytes, ...], re.Pattern[bytes]]:
        return _delay_gate(self.gate)

    @cached_property
    def _clause_heads(self) -> _Search:
        return _Search.of(_minimal(tuple(w for c in self.clauses for w in c[0])))

    @cached_property
    def _legacy(self) -> re.Pattern[bytes]:
        return re.compile(b"|".join(re.escape(w) for w in self.legacy) or b"(?!)")

    @cached_property
    def _legacy_decl(self) -> re.Pattern[bytes]:
        return re.compile(self.legacy_decl or b"(?!)")


@dataclass(frozen=True)
class _Search:
    """Words as few scans: one regex per shared first byte (`D3hot|D3HOT|D3cold`: a pattern
    that starts with a literal runs as fast as one `in`), plain `in` for a lone word.
    Anchored words (holding `_`) share one regex `_(?:tail|...)`, confirmed exactly."""

    anchored: re.Pattern[bytes] | None
    confirm: tuple[bytes, ...]  # the anchored words, tested exactly after a regex hit
    plain: tuple[bytes, ...]
    grouped: tuple[re.Pattern[bytes], ...]

    @staticmethod
    def of(words: tuple[bytes, ...], anchor: bool = True) -> _Search:
        with_anchor = [w for w in words if anchor and _ANCHOR in w]
        rest = [w for w in words if w not in with_anchor]
        if len(with_anchor) < 2:  # one word: `in` is as fast as the regex
            rest += with_anchor
            with_anchor = []
        by_first: dict[int, list[bytes]] = {}
        for w in rest:
            by_first.setdefault(w[0], []).append(w)
        plain = tuple(g[0] for g in by_first.values() if len(g) == 1)
        grouped = tuple(
            re.compile(b"|".join(re.escape(w) for w in sorted(g, key=len, reverse=True)))
            for g in by_first.values()
            if len(g) > 1
        )
        if not with_anchor:
            return _Search(None, (), plain, grouped)
        tails = sorted({w[w.index(_ANCHOR) + 1 :] for w in with_anchor}, key=len, reverse=True)
        pattern = re.escape(_ANCHOR) + b"(?:" + b"|".join(re.escape(t) for t in tails) + b")"
        return _Search(re.compile(pattern), tuple(with_anchor), plain, grouped)


def _any(search: _Search, source: bytes) -> bool:
    if any(w in source for w in search.plain):
        return True
    if any(g.search(source) is not None for g in search.grouped):
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

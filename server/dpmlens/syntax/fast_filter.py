"""Prefilter decisions in one Hyperscan pass, where Hyperscan is available.

`WordFilter.matches` (prefilter.py) keeps a file when it holds one of `words`; or one of
`gated` and one of the `gate` names as a whole word; or one of `legacy` and the `legacy_decl`
regex; or a word of every group of one of its `clauses`. Python needs a pass over the file per
group of words (~1.4 s per third of drivers/); Hyperscan matches all of them in one SIMD pass
(~0.2 s), reporting each pattern at most once.

`compiled(filters)` puts the patterns of one or several filters in one database, one id per
group of patterns (a filter's words, its gate, a clause's group...; a group several hold,
once), and each filter's decision over the ids a scan finds. One filter (the engine's
prefilter) stops the scan as soon as it is decided; several (`FilterSet`: each rule's own
filter) take the whole file.
Without the `hyperscan` package (it has wheels for Linux x86-64 only), on a CPU it does not
support, or with DPMLENS_NO_HYPERSCAN=1 set, `compiled` returns None and the filters make
their passes in Python: same decisions.
"""

from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol


class Filter(Protocol):
    """The words of a filter (prefilter.WordFilter)."""

    @property
    def words(self) -> tuple[bytes, ...]: ...
    @property
    def gated(self) -> tuple[bytes, ...]: ...
    @property
    def gate(self) -> tuple[bytes, ...]: ...
    @property
    def legacy(self) -> tuple[bytes, ...]: ...
    @property
    def legacy_decl(self) -> bytes: ...
    @property
    def clauses(self) -> tuple[tuple[tuple[bytes, ...], ...], ...]: ...


@dataclass(frozen=True)
class _Decision:
    """One filter's decision over the ids a scan found (WordFilter.matches's four ways). Each
    group of one filter's patterns reports one id (-1: the filter has no such group), so a
    decision asked on every match of the prefilter's scan is a few set lookups."""

    words: int
    gated: int
    gate: int
    legacy: int
    decl: int
    clauses: tuple[frozenset[int], ...]  # each clause as the ids of its groups

    def __call__(self, seen: set[int]) -> bool:
        return (
            self.words in seen
            or (self.gated in seen and self.gate in seen)
            or (self.legacy in seen and self.decl in seen)
            or any(c <= seen for c in self.clauses)
        )


class FastFilters:
    def __init__(self, db: Any, hs: Any, decisions: tuple[_Decision, ...]) -> None:
        self._db, self._hs, self._decisions = db, hs, decisions
        self._local = threading.local()  # a scratch space must not be shared between threads

    def matches(self, source: bytes) -> bool:
        """The first filter's decision, the scan stopped as soon as it is known."""
        decide = self._decisions[0]
        seen = self._scan(source, decide)
        return decide(seen)

    def which(self, source: bytes) -> tuple[bool, ...]:
        """Each filter's decision, from one scan of the whole file."""
        seen = self._scan(source, None)
        return tuple(d(seen) for d in self._decisions)

    def _scan(self, source: bytes, stop: _Decision | None) -> set[int]:
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = self._hs.Scratch(self._db)
        seen: set[int] = set()

        def on_match(pid: int, _start: int, _end: int, _flags: int, _ctx: object) -> bool:
            seen.add(pid)
            return stop is not None and stop(seen)  # True stops the scan

        with contextlib.suppress(self._hs.ScanTerminated):
            self._db.scan(source, match_event_handler=on_match, scratch=scratch)
        return seen


def compiled(filters: tuple[Filter, ...]) -> FastFilters | None:
    """The filters in one database, or None where Hyperscan cannot run (then Python decides)."""
    if os.environ.get("DPMLENS_NO_HYPERSCAN"):
        return None
    return _compile(filters)


# the filters -> their database (a filter is hashed by its words): compiling one costs ~60 ms,
# and `dpmlens cc` with a build's configuration makes new Rule objects, so new filters of the
# same words, per file (kbuild.pm_config.with_configured_hz)
@lru_cache(maxsize=16)
def _compile(filters: tuple[Filter, ...]) -> FastFilters | None:
    try:
        import hyperscan as hs
    except ImportError:
        return None
    patterns: list[tuple[bytes, int]] = []  # a word several filters hold: once per group
    groups: dict[tuple[bytes, ...], int] = {}  # a group several clauses or filters share: one id

    def group(pats: list[bytes]) -> int:
        if not pats:
            return -1
        key = tuple(pats)
        if key not in groups:
            groups[key] = len(groups)
            patterns.extend((p, groups[key]) for p in pats)
        return groups[key]

    def lit(words: tuple[bytes, ...]) -> list[bytes]:
        return [literal_pattern(w) for w in words if w]

    decisions = []
    for f in filters:
        gated = bool(f.gate) and bool(f.gated)
        decisions.append(_Decision(
            words=group(lit(f.words)),
            gated=group(lit(f.gated)) if gated else -1,
            gate=group([whole_word_pattern(w) for w in f.gate if w]) if gated else -1,
            legacy=group(lit(f.legacy)) if f.legacy_decl else -1,
            decl=group([f.legacy_decl]) if f.legacy_decl else -1,
            clauses=tuple(frozenset(group(lit(g)) for g in c) for c in f.clauses),
        ))  # fmt: skip
    if not patterns:
        return None
    db = hs.Database(mode=hs.HS_MODE_BLOCK)
    try:
        db.compile(
            expressions=[p for p, _i in patterns],
            ids=[i for _p, i in patterns],
            elements=len(patterns),
            flags=[hs.HS_FLAG_SINGLEMATCH] * len(patterns),
        )
    except hs.HyperscanError:  # e.g. a CPU without SSSE3, or a pattern it cannot take
        return None
    return FastFilters(db, hs, tuple(decisions))


def whole_word_pattern(word: bytes) -> bytes:
    r"""`word` as a whole word, as the Python path's (?<![\w])name(?![\w]); names start and
    end in \w."""
    return rb"\b" + literal_pattern(word) + rb"\b"


def literal_pattern(word: bytes) -> bytes:
    """`word` as a Hyperscan pattern matching exactly those bytes."""
    return b"".join(
        bytes([c]) if (c < 0x80 and chr(c).isalnum()) or c == 0x5F else b"\\x%02x" % c for c in word
    )

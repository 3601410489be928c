"""Which of several byte prefilters a file passes, in one scan.

The engine's prefilter (the union of every rule's words) decides whether a file is parsed at
all; once it is, each rule's own filter says whether that rule can report anything in it. On
6.12's `drivers/` 20,659 of 47,648 rule runs over the parsed files are of rules whose words the
file lacks (a file kept for a balance rule's `pm_runtime_enable` runs the delay analysis for
nothing): same findings without them, ~18% less rule time.

With Hyperscan every distinct pattern of every filter is one id of one database; a scan of the
whole file (no early stop: each pattern reports once) gives the ids present, from which each
filter's decision follows as `WordFilter.matches` makes it. Without Hyperscan each filter
decides by its own passes.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from dpmlens.syntax.fast_filter import literal_pattern, whole_word_pattern
from dpmlens.syntax.prefilter import WordFilter

_Ids = frozenset[int]


@dataclass(frozen=True)
class _Decision:
    """One filter's decision over the ids a scan found (WordFilter.matches's four ways)."""

    words: _Ids
    gated: _Ids
    gate: _Ids
    legacy: _Ids
    decl: _Ids
    clauses: tuple[tuple[_Ids, ...], ...]

    def __call__(self, seen: set[int]) -> bool:
        if not self.words.isdisjoint(seen):
            return True
        if self.gate and not self.gated.isdisjoint(seen) and not self.gate.isdisjoint(seen):
            return True
        if self.decl and not self.legacy.isdisjoint(seen) and not self.decl.isdisjoint(seen):
            return True
        return any(all(not g.isdisjoint(seen) for g in c) for c in self.clauses)


@dataclass(frozen=True)
class FilterSet:
    filters: tuple[WordFilter, ...]

    def which(self, source: bytes) -> tuple[bool, ...]:
        """For each filter, whether `source` passes it."""
        fast = self._fast
        if fast is None:
            return tuple(f.matches(source) for f in self.filters)
        seen = fast.found(source)
        return tuple(d(seen) for d in fast.decisions)

    @cached_property
    def _fast(self) -> _FastSet | None:
        if os.environ.get("DPMLENS_NO_HYPERSCAN"):
            return None
        return _FastSet.compile(self.filters)


class _FastSet:
    def __init__(self, db: Any, hs: Any, decisions: tuple[_Decision, ...]) -> None:
        self._db, self._hs, self.decisions = db, hs, decisions
        self._local = threading.local()  # a scratch space must not be shared between threads

    def found(self, source: bytes) -> set[int]:
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = self._hs.Scratch(self._db)
        seen: set[int] = set()

        def on_match(pid: int, _start: int, _end: int, _flags: int, _ctx: object) -> None:
            seen.add(pid)

        self._db.scan(source, match_event_handler=on_match, scratch=scratch)
        return seen

    @staticmethod
    def compile(filters: tuple[WordFilter, ...]) -> _FastSet | None:
        try:
            import hyperscan as hs
        except ImportError:
            return None
        ids: dict[bytes, int] = {}  # pattern -> its id (a word several filters hold is one)

        def of(patterns: list[bytes]) -> _Ids:
            return frozenset(ids.setdefault(p, len(ids)) for p in patterns)

        def lit(words: tuple[bytes, ...]) -> _Ids:
            return of([literal_pattern(w) for w in words if w])

        decisions = []
        for f in filters:
            gate = of([whole_word_pattern(w) for w in f.gate if w]) if f.gated else frozenset()
            decl = of([f.legacy_decl]) if f.legacy_decl else frozenset()
            decisions.append(_Decision(
                words=lit(f.words),
                gated=lit(f.gated) if gate else frozenset(),
                gate=gate,
                legacy=lit(f.legacy) if decl else frozenset(),
                decl=decl,
                clauses=tuple(tuple(lit(g) for g in c) for c in f.clauses),
            ))  # fmt: skip
        if not ids:
            return None
        db = hs.Database(mode=hs.HS_MODE_BLOCK)
        try:
            db.compile(
                expressions=list(ids),
                ids=list(ids.values()),
                elements=len(ids),
                flags=[hs.HS_FLAG_SINGLEMATCH] * len(ids),
            )
        except hs.HyperscanError:  # e.g. a CPU without SSSE3: each filter decides alone
            return None
        return _FastSet(db, hs, tuple(decisions))

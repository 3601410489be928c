"""The prefilter's decision in one Hyperscan pass, where Hyperscan is available.

`WordFilter.matches` (prefilter.py) keeps a file when it holds one of `words`; or one of
`gated` and one of the `gate` names as a whole word; or one of `legacy` and the `legacy_decl`
regex; or a word of every group of one of its `clauses`. Python needs a pass over the file per
group of words (~1.4 s per third of drivers/);
Hyperscan matches all of them in one SIMD pass (~0.2 s), reporting each pattern at most once
and stopping as soon as the decision is known. Without the `hyperscan` package (it has wheels
for Linux x86-64 only), on a CPU it does not support, or with DPMLENS_NO_HYPERSCAN=1 set,
`fast_filter` returns None and the prefilter makes its passes in Python: same decisions.
"""

from __future__ import annotations

import contextlib
import os
import threading
from functools import lru_cache
from typing import Any

# pattern kinds (the ids Hyperscan reports); a clause's groups take the ids from _GROUPS on
_WORD, _GATED, _GATE, _LEGACY, _DECL, _GROUPS = range(6)


class FastFilter:
    def __init__(self, db: Any, hs: Any, clauses: tuple[frozenset[int], ...] = ()) -> None:
        self._db = db
        self._hs = hs
        self._clauses = clauses  # each clause as the ids of its groups
        self._local = threading.local()  # a scratch space must not be shared between threads

    def matches(self, source: bytes) -> bool:
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = self._hs.Scratch(self._db)
        seen: set[int] = set()
        clauses = self._clauses

        def on_match(kind: int, _start: int, _end: int, _flags: int, _ctx: object) -> bool:
            seen.add(kind)
            return _decided(seen, clauses)  # True stops the scan

        with contextlib.suppress(self._hs.ScanTerminated):
            self._db.scan(source, match_event_handler=on_match, scratch=scratch)
        return _decided(seen, clauses)


def _decided(seen: set[int], clauses: tuple[frozenset[int], ...]) -> bool:
    return (
        _WORD in seen
        or (_GATED in seen and _GATE in seen)
        or (_LEGACY in seen and _DECL in seen)
        or any(c <= seen for c in clauses)
    )



def fast_filter(
    words: tuple[bytes, ...],
    gated: tuple[bytes, ...],
    gate: tuple[bytes, ...],
    legacy: tuple[bytes, ...],
    legacy_decl: bytes,
    clauses: tuple[tuple[tuple[bytes, ...], ...], ...] = (),
) -> FastFilter | None:
    """A compiled filter, or None where Hyperscan cannot run (then Python decides)."""
    if os.environ.get("DPMLENS_NO_HYPERSCAN"):
        return None
    return _compile(words, gated, gate, legacy, legacy_decl, clauses)


# the words -> their compiled filter: a database is a function of its patterns, and compiling
# one costs ~60 ms. `dpmlens cc` with a build's configuration makes new Rule objects per file
# (kbuild.pm_config.with_configured_hz), so the engine's per-rule-set cache misses there: the
# cc worker (kbuild/worker.py) compiled a database for every file.
@lru_cache(maxsize=16)
def _compile(
    words: tuple[bytes, ...],
    gated: tuple[bytes, ...],
    gate: tuple[bytes, ...],
    legacy: tuple[bytes, ...],
    legacy_decl: bytes,
    clauses: tuple[tuple[tuple[bytes, ...], ...], ...] = (),
) -> FastFilter | None:
    try:
        import hyperscan as hs
    except ImportError:
        return None
    patterns: list[tuple[bytes, int]] = [(literal_pattern(w), _WORD) for w in words if w]
    if gate:
        patterns += [(literal_pattern(w), _GATED) for w in gated if w]
        patterns += [(whole_word_pattern(w), _GATE) for w in gate if w]
    if legacy_decl:
        patterns += [(literal_pattern(w), _LEGACY) for w in legacy if w]
        patterns.append((legacy_decl, _DECL))
    groups: dict[tuple[bytes, ...], int] = {}  # a group shared by clauses is one id
    for clause in clauses:
        for g in clause:
            if g not in groups:
                groups[g] = _GROUPS + len(groups)
                patterns += [(literal_pattern(w), groups[g]) for w in g if w]
    ids = tuple(frozenset(groups[g] for g in c) for c in clauses)
    if not patterns:
        return None
    db = hs.Database(mode=hs.HS_MODE_BLOCK)
    try:
        db.compile(
            expressions=[p for p, _k in patterns],
            ids=[k for _p, k in patterns],
            elements=len(patterns),
            flags=[hs.HS_FLAG_SINGLEMATCH] * len(patterns),
        )
    except hs.HyperscanError:  # e.g. a CPU without SSSE3, or a pattern it cannot take
        return None
    return FastFilter(db, hs, ids)


def whole_word_pattern(word: bytes) -> bytes:
    r"""`word` as a whole word, as the Python path's (?<![\w])name(?![\w]); names start and
    end in \w."""
    return rb"\b" + literal_pattern(word) + rb"\b"


def literal_pattern(word: bytes) -> bytes:
    """`word` as a Hyperscan pattern matching exactly those bytes."""
    return b"".join(
        bytes([c]) if (c < 0x80 and chr(c).isalnum()) or c == 0x5F else b"\\x%02x" % c for c in word
    )

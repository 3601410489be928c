"""A byte-level prefilter: files with none of these words hold no PM construct worth parsing.

The keyword list is data: `PM_KEYWORDS` covers dev_pm_ops tables and their macros, legacy bus
callbacks, runtime PM calls, and the spec quantities / padded constants that delay rules report
anywhere (`USB_RESUME_TIMEOUT`, comments naming TRSTRCY, ...). Rules that need more words pass
them in `extra`; `keywords_for(extra)` gives the combined tuple.
"""

from __future__ import annotations

from collections.abc import Iterable

# Ordered by how often they decide a hit on drivers/ (most frequent first) so that the common
# case stops after one or two substring searches.
PM_KEYWORDS: tuple[bytes, ...] = (
    b"dev_pm_ops",
    b"PM_OPS",
    b".suspend",
    b".resume",
    b"pm_runtime_",
    b"RESUME_TIMEOUT",  # USB_RESUME_TIMEOUT and friends
    b"TRSTRCY",
    b"TRSMRCY",
    b"TDRSMDN",
    b"TDRSTR",
    b"D3hot",
)


def keywords_for(extra: Iterable[bytes | str] = ()) -> tuple[bytes, ...]:
    """PM_KEYWORDS plus `extra` words (str or bytes), without duplicates."""
    out = list(dict.fromkeys(PM_KEYWORDS))
    for word in extra:
        b = word.encode() if isinstance(word, str) else word
        if b and b not in out:
            out.append(b)
    return tuple(out)


def may_contain_pm(source: bytes, keywords: tuple[bytes, ...] | None = None) -> bool:
    """True when `source` contains any PM keyword (substring search, no parsing)."""
    words = keywords if keywords is not None else PM_KEYWORDS
    return any(word in source for word in words)

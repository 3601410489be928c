"""Where two versions of a text differ: the one region an edit (or several close ones) changed."""

from __future__ import annotations


def changed_region(old: bytes, new: bytes) -> tuple[int, int, int]:
    """(start, old end, new end) of the one region where `old` and `new` differ; memcmp-speed
    bisection instead of a byte loop over a 200 KB file."""
    n = min(len(old), len(new))
    lo, hi = 0, n
    while lo < hi:  # longest common prefix
        mid = (lo + hi + 1) // 2
        if old[lo:mid] == new[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    prefix = lo
    limit = n - prefix
    lo, hi = 0, limit
    while lo < hi:  # longest common suffix not overlapping the prefix
        mid = (lo + hi + 1) // 2
        if old[len(old) - mid : len(old) - lo] == new[len(new) - mid : len(new) - lo]:
            lo = mid
        else:
            hi = mid - 1
    return prefix, len(old) - lo, len(new) - lo

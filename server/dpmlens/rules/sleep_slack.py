"""How long msleep() really sleeps, from the 6.12 sources.

`msleep(m)` (kernel/time/timer.c) is `schedule_timeout_uninterruptible(msecs_to_jiffies(m))`;
its timer cannot fire early because `calc_index()` rounds every timer up to the next bucket of
its wheel level: at level 0 (timeouts under 63 jiffies, all of the short sleeps here) that is
one more jiffy. So msleep(m) returns after at most `(msecs_to_jiffies(m) + 1)` jiffies (6.1
and older add one more jiffy in msleep() itself). `usleep_range(min, max)` is an hrtimer that
fires by `max`.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache

HZ_VALUES = (100, 250, 1000)  # the kernel's common CONFIG_HZ choices (kernel/Kconfig.hz)


def msecs_to_jiffies(ms: int, hz: int) -> int:
    """include/linux/jiffies.h `_msecs_to_jiffies`: ms * HZ / 1000 rounded up, for every HZ
    (HZ dividing 1000 divides by 1000 / HZ; HZ=300's MSEC_TO_HZ_MUL32/ADJ32 round up too)."""
    return (ms * hz + 999) // 1000


def msleep_worst_ms(ms: int, hz: int, extra: int = 0) -> float:
    """The longest msleep(ms) can take at `hz` (level-0 wheel timeouts, i.e. ms < 63 jiffies);
    `extra` jiffies more on kernels whose msleep() adds its own (before 6.12: one)."""
    return (msecs_to_jiffies(ms, hz) + 1 + extra) * 1000 / hz


def worst_case_text(ms: int, first_hz: int, extra: int = 0) -> str:
    """`8 ms at HZ=250 (20 ms at HZ=100, 2 ms at HZ=1000)`: the configured HZ first."""
    others = [hz for hz in HZ_VALUES if hz != first_hz]
    head = f"{msleep_worst_ms(ms, first_hz, extra):g} ms at HZ={first_hz}"
    rest = ", ".join(f"{msleep_worst_ms(ms, hz, extra):g} ms at HZ={hz}" for hz in others)
    return f"{head} ({rest})"


# msleep() lost its own extra jiffy in 6.12 ("timers: Remove historical extra jiffie for
# timeout in msleep()"): 6.1's kernel/time/timer.c sleeps msecs_to_jiffies(m) + 1, 6.12's
# kernel/time/sleep_timeout.c msecs_to_jiffies(m), both plus calc_index()'s round-up.
_NO_EXTRA_JIFFY_FROM = (6, 12)
_VERSION = re.compile(rb"^VERSION = (\d+)\s*\nPATCHLEVEL = (\d+)", re.M)
_MAKEFILE_HEAD = 4096  # bytes of the top Makefile read: VERSION and PATCHLEVEL come first


def extra_jiffies(path: str) -> int:
    """1 for a file of a kernel tree older than 6.12 (read from the tree's top Makefile), 0
    otherwise or when no tree is found (the current kernel's behaviour)."""
    return extra_jiffies_of(tree_version(os.path.dirname(os.path.abspath(path))))


def extra_jiffies_of(version: tuple[int, int] | None) -> int:
    """msleep()'s own extra jiffy on a kernel of this (VERSION, PATCHLEVEL): 1 before 6.12,
    0 from 6.12 or when unknown."""
    return 1 if version is not None and version < _NO_EXTRA_JIFFY_FROM else 0


@lru_cache(maxsize=256)
def tree_version(directory: str) -> tuple[int, int] | None:
    """(VERSION, PATCHLEVEL) of the kernel tree holding `directory`, from its top Makefile."""
    parent = os.path.dirname(directory)
    try:
        with open(os.path.join(directory, "Makefile"), "rb") as fh:
            m = _VERSION.search(fh.read(_MAKEFILE_HEAD))
        if m is not None:
            return int(m.group(1)), int(m.group(2))
    except OSError:
        pass
    if parent == directory:
        return None
    return tree_version(parent)

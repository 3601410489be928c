"""How long msleep() really sleeps, from the 6.12 sources.

`msleep(m)` (kernel/time/timer.c) is `schedule_timeout_uninterruptible(msecs_to_jiffies(m))`;
its timer cannot fire early because `calc_index()` rounds every timer up to the next bucket of
its wheel level: at level 0 (timeouts under 63 jiffies, all of the short sleeps here) that is
one more jiffy. So msleep(m) returns after at most `(msecs_to_jiffies(m) + 1)` jiffies (6.1
and older add one more jiffy in msleep() itself). `usleep_range(min, max)` is an hrtimer that
fires by `max`.
"""

from __future__ import annotations

HZ_VALUES = (100, 250, 1000)  # the kernel's common CONFIG_HZ choices (kernel/Kconfig.hz)


def msecs_to_jiffies(ms: int, hz: int) -> int:
    """include/linux/jiffies.h `_msecs_to_jiffies` for HZ dividing 1000: rounded up."""
    per = 1000 // hz
    return (ms + per - 1) // per


def msleep_worst_ms(ms: int, hz: int) -> float:
    """The longest msleep(ms) can take at `hz` (level-0 wheel timeouts, i.e. ms < 63 jiffies)."""
    return (msecs_to_jiffies(ms, hz) + 1) * 1000 / hz


def worst_case_text(ms: int, first_hz: int) -> str:
    """`8 ms at HZ=250 (20 ms at HZ=100, 2 ms at HZ=1000)`: the configured HZ first."""
    others = [hz for hz in HZ_VALUES if hz != first_hz]
    head = f"{msleep_worst_ms(ms, first_hz):g} ms at HZ={first_hz}"
    rest = ", ".join(f"{msleep_worst_ms(ms, hz):g} ms at HZ={hz}" for hz in others)
    return f"{head} ({rest})"

"""rules/pm_guards.config_only reads a text's CONFIG_PM blocks once (issue 29: per table it was
quadratic in a 20 MB file): the same names as the direct reading, block by block, with `keep`,
function bodies and (for headers) blocks inside braces left out."""

from __future__ import annotations

from pathlib import Path

import pytest
from kernel_trees import K612

from dpmlens.rules import pm_guards


def _direct(source: bytes, keep: tuple[int, ...] = (), members: bool = True,
            bodies: tuple[tuple[int, int], ...] = ()) -> set[str]:
    """config_only as it read before: every block, every test against the whole text."""
    names: set[str] = set()
    stubs: set[str] = set()
    code = None if members else pm_guards._COMMENT.sub(lambda m: b" " * len(m.group()), source)
    for b in pm_guards._blocks(source):
        off = source[b.off[0] : b.off[1]]
        stubs |= pm_guards.declared(off, members) - pm_guards._null_macros(off)
        if any(b.on[0] <= k < b.on[1] or b.off[0] <= k < b.off[1] for k in keep):
            continue
        if code is not None and code.count(b"{", 0, b.on[0]) > code.count(b"}", 0, b.on[0]):
            continue
        if any(lo <= b.on[0] < hi for lo, hi in bodies):
            continue
        names |= pm_guards.declared(source[b.on[0] : b.on[1]], members)
    return names - stubs


_TEXT = b"""
#ifdef CONFIG_PM_SLEEP
static int saved;
static int foo_suspend(struct device *dev) { return 0; }
#else
#define foo_suspend NULL
#endif
struct foo {
#ifdef CONFIG_PM
	u32 regs[4];
#endif
};
static int helper(void)
{
#ifdef CONFIG_PM
	struct foo_state local;
#endif
	return 0;
}
#if IS_ENABLED(CONFIG_PM)
void pm_only(void);
#ifdef CONFIG_PM_SLEEP
void sleep_only(void);
#endif
#endif
#ifndef CONFIG_PM
static inline void stubbed(void) {}
#else
void stubbed(void);
#endif
"""


def _bodies(text: bytes) -> tuple[tuple[int, int], ...]:
    start = text.index(b"static int helper")
    return ((start, text.index(b"}\n#if IS_ENABLED") + 1),)


@pytest.mark.parametrize("members", [True, False])
def test_the_same_names_as_the_direct_reading(members: bool) -> None:
    text = bytes(_TEXT)
    bodies = _bodies(text)
    for keep in ((), (text.index(b"foo_suspend(struct"),), (text.index(b"sleep_only"),)):
        got = pm_guards.config_only(text, keep, members=members, bodies=bodies)
        assert got == _direct(text, keep, members, bodies), (keep, members)
    assert "local" not in pm_guards.config_only(text, bodies=bodies)
    assert "local" in pm_guards.config_only(text)  # without the body: a file-scope name
    assert "regs" not in pm_guards.config_only(text, members=False)  # inside a struct


def test_the_same_names_on_real_headers_and_drivers() -> None:
    files = [K612 / "include/linux/pm.h", K612 / "include/linux/pm_runtime.h",
             K612 / "include/linux/pm_clock.h", K612 / "drivers/mmc/host/sdhci.h",
             K612 / "drivers/usb/core/hub.c", K612 / "drivers/mmc/host/sdhci.c"]
    if not all(f.is_file() for f in files):
        pytest.skip(f"{K612} not found (set DPMLENS_LINUX)")
    for f in files:
        text = Path(f).read_bytes()
        assert pm_guards.config_only(text, members=False) == _direct(text, members=False), f
        starts = [i for i in range(0, len(text), 4096)]
        bodies = tuple((s, s + 1000) for s in starts)
        keep = tuple(starts[::7])
        assert pm_guards.config_only(text, keep, bodies=bodies) == _direct(text, keep, True,
                                                                          bodies), f

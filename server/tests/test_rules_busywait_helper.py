"""busy-wait-in-pm-callback points at the driver's own sleep helper only when it is one: a
wrapper that passes its time to both a sleeping and a spinning delay (radeon_msleep()), never
a function that happens to sleep here and spin there (the callback itself, in the demo)."""

from __future__ import annotations

from dpmlens.config.settings import Config
from dpmlens.core.findings import Severity
from dpmlens.engine.analyze import analyze_source

_TAIL = b"""
static const struct dev_pm_ops foo_pm_ops = {
\tSYSTEM_SLEEP_PM_OPS(foo_suspend, foo_resume)
};
static struct platform_driver foo_driver = {
\t.driver = { .name = "foo", .pm = pm_sleep_ptr(&foo_pm_ops) },
};
"""


def _busy(src: bytes) -> list[tuple[Severity, str]]:
    found = analyze_source("foo.c", src + _TAIL, Config())
    return [(f.severity, f.message) for f in found if f.rule == "busy-wait-in-pm-callback"]


def test_the_drivers_own_wrapper_is_named() -> None:
    src = b"""#include <linux/delay.h>
static void foo_msleep(unsigned int ms)
{
\tif (in_atomic())
\t\tmdelay(ms);
\telse
\t\tmsleep(ms);
}
static int foo_suspend(struct device *dev) { return 0; }
static int foo_resume(struct device *dev)
{
\tmdelay(20);
\treturn 0;
}
"""
    [(severity, message)] = _busy(src)
    # 20 ms once per system resume: quiet (a hint left out of CI output), still named right
    assert severity == Severity.HINT and "use foo_msleep()" in message


def test_a_function_that_sleeps_and_spins_different_times_is_no_helper() -> None:
    src = b"""#include <linux/delay.h>
static int foo_suspend(struct device *dev) { return 0; }
static int foo_resume(struct device *dev)
{
\tmsleep(2);
\tmdelay(50);
\treturn 0;
}
"""
    [(severity, message)] = _busy(src)
    assert severity == Severity.WARNING and message.endswith("use msleep() or fsleep()")

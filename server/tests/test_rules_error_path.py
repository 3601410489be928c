"""A delay that runs only when something failed (followed in its block by `return -E...`: a
poll that timed out) is quiet: not a cost of every resume (issue 20's second round found the
atomisp power-up's `msleep(10)` after its timeout reported as paid on every transition)."""

from __future__ import annotations

from dpmlens.config.settings import Config
from dpmlens.engine.analyze import analyze_source
from dpmlens.rules.severity_policy import is_quiet

_TAIL = b"""
static const struct dev_pm_ops foo_pm_ops = {
\tRUNTIME_PM_OPS(foo_suspend, foo_resume, NULL)
};
static struct platform_driver foo_driver = {
\t.driver = { .name = "foo", .pm = pm_ptr(&foo_pm_ops) },
};
"""


def _power(after_loop: bytes) -> bytes:
    return (
        b"#include <linux/delay.h>\n"
        b"static int foo_power(struct foo *foo, bool on)\n{\n"
        b"\tunsigned long timeout = jiffies + msecs_to_jiffies(50);\n"
        b"\tdo {\n\t\tif (readl(foo->base) == on)\n\t\t\treturn 0;\n"
        b"\t\tif (time_after(jiffies, timeout))\n\t\t\tbreak;\n"
        b"\t\tusleep_range(100, 150);\n\t} while (1);\n"
        + after_loop
        + b"}\n"
        b"static int foo_suspend(struct device *dev) { return 0; }\n"
        b"static int foo_resume(struct device *dev)\n{\n"
        b"\treturn foo_power(dev_get_drvdata(dev), true);\n}\n"
        + _TAIL
    )


def _msleeps(src: bytes) -> list[tuple[bool, str]]:
    found = analyze_source("foo.c", src, Config())
    return [(is_quiet(f), f.message) for f in found if f.rule == "msleep-under-20ms"]


def test_a_sleep_after_a_timed_out_poll_is_quiet() -> None:
    src = _power(b"\tif (on)\n\t\tmsleep(10);\n\tdev_err(foo->dev, \"timeout\\n\");\n"
                 b"\treturn -EBUSY;\n")  # fmt: skip
    [(quiet, message)] = _msleeps(src)
    assert quiet and "only on an error path (returns -EBUSY)" in message


def test_a_sleep_on_the_way_to_success_is_not() -> None:
    src = _power(b"\tif (on)\n\t\tmsleep(10);\n\tdev_err(foo->dev, \"slow\\n\");\n"
                 b"\treturn 0;\n")  # fmt: skip
    [(_quiet, message)] = _msleeps(src)  # (a runtime msleep is quiet anyway: a few ms)
    assert "error path" not in message

"""Running the real `dpmlens` CLI in tests: in-process (fast) or as a child process."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from dpmlens.cli import main

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "test-fixtures" / "demo"

# A driver with one certain finding: enable_irq_wake() reached from a noirq callback.
NOIRQ_WAKE = """\
#include <linux/interrupt.h>
#include <linux/platform_device.h>
#include <linux/pm.h>

struct foo { int irq; };

static int foo_suspend_noirq(struct device *dev)
{
	struct foo *foo = dev_get_drvdata(dev);

	enable_irq_wake(foo->irq);
	return 0;
}

static int foo_resume_noirq(struct device *dev)
{
	struct foo *foo = dev_get_drvdata(dev);

	disable_irq_wake(foo->irq);
	return 0;
}

static const struct dev_pm_ops foo_pm_ops = {
	NOIRQ_SYSTEM_SLEEP_PM_OPS(foo_suspend_noirq, foo_resume_noirq)
};

static struct platform_driver foo_driver = {
	.driver = {
		.name = "foo",
		.pm = pm_sleep_ptr(&foo_pm_ops),
	},
};
module_platform_driver(foo_driver);
"""
NOIRQ_WAKE_LINE = 11  # the enable_irq_wake() call


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def err_lines(self) -> list[str]:
        return self.err.splitlines()


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> Result:
    code = main(list(args))
    captured = capsys.readouterr()
    return Result(code, captured.out, captured.err)


def run_process(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> Result:
    done = subprocess.run(
        [sys.executable, "-m", "dpmlens.cli", *args],
        cwd=cwd, capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=300,
    )  # fmt: skip
    return Result(done.returncode, done.stdout, done.stderr)


def write_driver(path: Path, text: str = NOIRQ_WAKE) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def slow_driver(path: Path, functions: int = 40_000) -> Path:
    """A real file that takes seconds to analyze (~8 s here: 0.1 s/1000 functions of parse,
    model and rules), with no trick: the budget must stop it wherever it is."""
    body = "".join(f"static int foo{n}_suspend(struct device *dev)\n{{\n"
                   f"\tstruct foo *foo = dev_get_drvdata(dev);\n\tif (foo->x{n})\n"
                   "\t\tmsleep(5);\n\tenable_irq_wake(foo->irq);\n"
                   "\treturn pm_runtime_get_sync(dev);\n}\n" for n in range(functions))
    return write_driver(path, "#include <linux/pm.h>\nstruct foo { int irq; };\n" + body)

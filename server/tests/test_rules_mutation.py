"""Recall on real drivers: inject one bug of a rule's class into the PM callback of a real
linux-6.12 driver and check the rule reports it at the injected line.

The files are a fixed random sample (seed below) of drivers with a system-sleep callback in
the file; each mutant is parsed and analysed exactly as `dpmlens check` does. A rule whose
recall on the mutants falls under its floor fails the test. Skips without the kernel tree.
"""

from __future__ import annotations

import fnmatch
import random
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from kernel_trees import K612
from model_helpers import KERNEL

from dpmlens.config.settings import Config
from dpmlens.engine.analyze import analyze_source
from dpmlens.model.build import build_model
from dpmlens.model.callgraph import pm_callbacks
from dpmlens.rules.loader import find_rule, load_rules

DRIVERS = KERNEL / "drivers"
SEED = 20261122
SAMPLE = 60

pytestmark = pytest.mark.skipif(
    not DRIVERS.is_dir(), reason=f"linux-source-6.12 not extracted at {K612}"
)

# rule -> (phases of the callback to mutate, the statement injected at the top of its body)
MUTANTS: dict[str, tuple[frozenset[str], Callable[[str], str]]] = {
    "busy-wait-in-pm-callback": (frozenset({"resume", "suspend"}), lambda dev: "mdelay(20);"),
    "msleep-under-20ms": (frozenset({"resume"}), lambda dev: "msleep(2);"),
    "wake-setup-in-noirq": (frozenset({"suspend_noirq"}), lambda dev: "enable_irq_wake(42);"),
    "runtime-pm-while-disabled": (
        frozenset({"suspend_late", "suspend_noirq"}),
        lambda dev: f"if (pm_runtime_resume_and_get({dev}) < 0) return -EIO;",
    ),
}
# Floors: the injected bug must be found in at least this share of the mutants (the rules
# stay silent on purpose where the driver makes the bug harmless: a lock held around the
# callback's body, a .prepare that runtime-resumes the device, ...).
FLOOR = {
    "busy-wait-in-pm-callback": 0.9,
    "msleep-under-20ms": 0.9,
    "wake-setup-in-noirq": 0.9,
    "runtime-pm-while-disabled": 0.7,
}


def _candidates() -> list[Path]:
    files = sorted(DRIVERS.rglob("*.c"))
    random.Random(SEED).shuffle(files)
    out = []
    for path in files:
        src = path.read_bytes()
        if b"dev_pm_ops" in src or b"PM_OPS" in src:
            out.append(path)
        if len(out) >= SAMPLE * 8:
            break
    return out


def _inject(
    path: Path, phases: frozenset[str], stmt: Callable[[str], str]
) -> tuple[bytes, int] | None:
    """The file with the statement at the top of its first callback in `phases`, and the
    1-based line of the injected statement."""
    src = path.read_bytes()
    model = build_model(str(path), src)
    for fn, roles in pm_callbacks(model).items():
        if not any(r.member in phases for r in roles) or fn not in model.functions:
            continue
        d = model.functions[fn]
        body = src[d.start_byte : d.end_byte]
        brace = body.find(b"{")
        params = re.search(rb"\(\s*struct\s+device\s*\*\s*(\w+)\s*\)", body[:brace])
        if brace < 0 or params is None:
            continue
        # after the declarations at the top of the body (C90 style in most drivers)
        at = d.start_byte + brace + 1
        line_end = src.find(b"\n", at)
        text = f"\n\t{stmt(params.group(1).decode())}".encode()
        mutated = src[:line_end] + text + src[line_end:]
        line = src[:line_end].count(b"\n") + 2
        return mutated, line
    return None


@pytest.mark.parametrize("rule", sorted(MUTANTS))
def test_injected_bugs_are_found_in_real_drivers(rule: str) -> None:
    phases, stmt = MUTANTS[rule]
    tried = found = 0
    missed: list[str] = []
    options = find_rule(load_rules(), rule).options  # type: ignore[union-attr]
    skip_paths = getattr(options, "skip_paths", ())
    skip_sources = [re.compile(p.encode()) for p in getattr(options, "skip_sources", ())]
    for path in _candidates():
        # files the rule leaves alone by design (irqchip/GPIO/pinctrl providers) are no test
        if any(fnmatch.fnmatch(str(path), p) for p in skip_paths) or any(
            r.search(path.read_bytes()) for r in skip_sources
        ):
            continue
        mutant = _inject(path, phases, stmt)
        if mutant is None:
            continue
        source, line = mutant
        tried += 1
        hits = [
            f
            for f in analyze_source(str(path), source, Config())
            if f.rule == rule and f.line == line
        ]
        if hits:
            found += 1
        else:
            missed.append(f"{path.relative_to(DRIVERS)}:{line}")
        if tried >= SAMPLE:
            break
    assert tried >= 10, f"only {tried} drivers with a {sorted(phases)} callback in the sample"
    recall = found / tried
    print(f"{rule}: {found}/{tried} injected bugs found")  # `pytest -s` shows the figures
    print(f"  missed: {missed[:10]}")
    assert recall >= FLOOR[rule], f"{rule}: {found}/{tried}; missed: {missed[:10]}"

"""Sanity run of build_model over real driver files (skips without the kernel tree).

Not a benchmark: it checks that nothing raises on real code and that the counts are plausible
(every prefiltered file that spells a table macro yields a table, drivers get names, ...).
"""

from __future__ import annotations

import re

import pytest
from model_helpers import KERNEL

from dpmlens.engine.analyze import prefilter
from dpmlens.model.build import build_model
from dpmlens.model.callgraph import pm_callbacks
from dpmlens.model.walker import Walker

DRIVERS = KERNEL / "drivers"
_TABLE_MACRO = re.compile(
    rb"^\s*(?:static\s+)?(?:const\s+)?(?:DEFINE_SIMPLE|SIMPLE)_DEV_PM_OPS\(", re.M
)


def _sample(n: int) -> list:
    if not DRIVERS.is_dir():
        pytest.skip(f"{DRIVERS} not found: install and extract linux-source-6.12 to run this")
    files = sorted(
        p
        for sub in ("i2c", "input", "usb/host", "mmc/host", "spi")
        for p in (DRIVERS / sub).rglob("*.c")
    )
    picked = []
    for p in files:
        src = p.read_bytes()
        if prefilter().matches(src):
            picked.append((p, src))
        if len(picked) >= n:
            break
    return picked


def test_build_model_on_300_real_files() -> None:
    sample = _sample(300)
    assert len(sample) >= 250
    tables = drivers = named = callbacks = macro_files = macro_hits = 0
    for path, src in sample:
        m = build_model(str(path), src)
        tables += len(m.pm_tables)
        drivers += len(m.drivers)
        named += sum(1 for d in m.drivers if d.name)
        cbs = pm_callbacks(m)
        callbacks += len(cbs)
        for fn in list(cbs)[:3]:
            if fn in m.functions:
                for reached in Walker(m).reach(fn):
                    assert reached.call.callee
        if _TABLE_MACRO.search(src):
            macro_files += 1
            macro_hits += any(t.macro for t in m.pm_tables.values())
        for t in m.pm_tables.values():
            assert t.members or t.macro, (path, t.name)
    assert macro_hits == macro_files
    assert tables >= 150 and drivers >= 150 and callbacks >= 300
    assert named / drivers > 0.9

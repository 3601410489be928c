"""The walker's text test before a helper's call sites are read (`walker._may_call`): it may
say "maybe" where there is no call, never "no" where there is one. Checked on every function
of the real excerpts in test-fixtures/ (and of real 6.12 files when the tree is there) for the
names the balance and delay rules walk towards."""

from __future__ import annotations

from pathlib import Path

import pytest
from kernel_trees import K612

from dpmlens.model import walker as walker_mod
from dpmlens.model.build import build_model

FIXTURES = Path(__file__).resolve().parents[2] / "test-fixtures"
NAMES = [
    frozenset({"pm_runtime_enable", "pm_runtime_disable", "devm_pm_runtime_enable",
               "device_init_wakeup", "dev_pm_set_wake_irq", "dev_pm_clear_wake_irq",
               "pm_runtime_use_autosuspend", "pm_runtime_get_sync", "pm_runtime_put"}),
    frozenset({"msleep", "usleep_range", "mdelay", "udelay", "fsleep"}),
]
REAL = ["drivers/i2c/busses/i2c-qcom-cci.c", "drivers/spi/spi-cadence-quadspi.c",
        "drivers/usb/dwc3/core.c", "drivers/rtc/rtc-cmos.c"]


def _check(path: Path) -> int:
    model = build_model(str(path), path.read_bytes())
    w = walker_mod.Walker(model)
    said_no = 0
    for fn in list(model.functions):
        for names in NAMES:
            if not walker_mod._may_call(model, fn, names):
                said_no += 1
                assert not any(c.callee in names for c in w.calls_in(model, fn)), (path, fn)
    return said_no


def test_may_call_never_hides_a_call_in_the_fixtures() -> None:
    files = sorted(FIXTURES.rglob("*.c"))
    assert len(files) > 20
    assert sum(_check(p) for p in files) > 100  # the test says "no" often, and is right


@pytest.mark.parametrize("rel", REAL)
def test_may_call_never_hides_a_call_in_real_files(rel: str) -> None:
    path = K612 / rel
    if not path.is_file():
        pytest.skip(f"no kernel tree at {K612} (apt-get install linux-source-6.12)")
    assert _check(path) > 0

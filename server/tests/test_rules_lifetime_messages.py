"""The balance rules' messages on real excerpts: the fix each one offers is the patch a
maintainer would take (issue 30, blind round 2's not-accepted findings). The excerpts are in
test-fixtures/rules/history/ (their markers are checked by tests/test_rules_fixtures.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dpmlens.config.settings import Config
from dpmlens.core.findings import Finding
from dpmlens.engine.analyze import analyze_source

HISTORY = Path(__file__).resolve().parents[2] / "test-fixtures" / "rules" / "history"


def _findings(name: str, rule: str) -> list[Finding]:
    path = HISTORY / name
    return [f for f in analyze_source(str(path), path.read_bytes(), Config()) if f.rule == rule]


def test_remove_that_refuses_has_no_unbind_leg_and_no_devm_fix() -> None:
    (f,) = _findings("sh-mtu2-6.1.c", "runtime-pm-enable-not-undone")
    assert "when probe fails" in f.message
    assert "unbind" not in f.message and "devm_" not in f.message


def test_pinned_builtin_driver_is_quiet_and_says_why() -> None:
    (f,) = _findings("clk-dra7-atl-6.12.c", "runtime-pm-enable-not-undone")
    assert "quiet" in f.tags
    assert "suppress_bind_attrs" in f.message and "-EPROBE_DEFER" in f.message


def test_helper_undo_is_named_instead_of_a_bare_put() -> None:
    (f,) = _findings("msm-dsi-phy-6.1.c", "runtime-pm-usage-unbalanced-in-probe")
    assert "add dsi_phy_disable_resource() on the error paths" in f.message
    assert "put_noidle" not in f.message
    assert all("put_noidle" not in s.note for s in f.chain)


def test_autosuspend_fix_goes_after_the_disabling_helper() -> None:
    (f,) = _findings("trf7970a-6.1.c", "runtime-pm-autosuspend-not-undone")
    assert "right after pm_runtime_disable()" in f.message
    assert "after the call of trf7970a_shutdown(), which disables it" in f.message
    assert "not inside it: trf7970a_suspend() calls it too" in f.message


def test_shared_label_and_the_ladders_own_get_are_named() -> None:
    (f,) = _findings("spi-cadence-quadspi-6.12.c", "runtime-pm-usage-unbalanced-in-probe")
    assert "new label just above probe_setup_failed:" in f.message
    assert "own pm_runtime_get_sync() takes another count" in f.message


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("tegra-nvdec-6.12.c", "runtime-pm-autosuspend-not-undone"),
        ("acpi-button-6.12.c", "wakeup-source-not-undone"),
    ],
)
def test_undone_by_the_framework_or_owned_by_the_core(name: str, rule: str) -> None:
    assert _findings(name, rule) == []


def test_a_helper_whose_last_step_is_the_set_up_leaks_only_at_unbind() -> None:
    (f,) = _findings("hid-google-hammer-6.12.c", "wakeup-source-not-undone")
    assert "at unbind: cbas_ec_remove() has no device_init_wakeup(dev, false)" in f.message
    assert "when probe fails" not in f.message


def test_a_remove_the_parser_lost_makes_no_unbind_claim() -> None:
    (f,) = _findings("ohci-at91-6.1.c", "wakeup-source-not-undone")
    assert "when probe fails (return usb_hcd_at91_probe(...))" in f.message
    assert "unbind" not in f.message and "ohci_hcd_at91_drv_remove" not in f.message


def test_no_remove_at_all_is_info_naming_both_choices() -> None:
    (f,) = _findings("hidma-mgmt-6.12.c", "runtime-pm-enable-not-undone")
    assert str(f.severity) == "info"
    assert "the driver has no .remove" in f.message and "suppress_bind_attrs" in f.message


def test_an_enable_that_gives_back_probe_s_own_disable_is_no_set_up() -> None:
    assert not _findings("mlx90632-6.1.c", "runtime-pm-enable-not-undone")

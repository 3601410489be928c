"""The third blind round of issue 20 (the maintainer's question: would a patch be taken?):
a subsystem's documented patch policy, a deprecated-macro conversion that would not build,
and the real files the judges rejected or called debatable.

Synthetic trees show the mechanisms (built from the patterns, not copied); the real-tree tests
skip when the trees are not extracted in /work/linux.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kernel_trees import LINUX as LINUX_ROOT

from dpmlens.config.settings import Config
from dpmlens.core.findings import Finding, Severity
from dpmlens.engine.analyze import analyze_source
from dpmlens.rules import pm_guards
from dpmlens.rules.severity_policy import QUIET_TAG

LINUX = LINUX_ROOT

_NIC = b"""
#include <linux/pci.h>
#include <linux/delay.h>

static void nic_phy_reset(void __iomem *regs)
{
	writel(1, regs);
	mdelay(100);
	writel(0, regs);
}

static int nic_resume(struct device *dev)
{
	nic_phy_reset(dev_get_drvdata(dev));
	return 0;
}

static int nic_runtime_resume(struct device *dev)
{
	%s
	return 0;
}

static DEFINE_RUNTIME_DEV_PM_OPS(nic_pm_ops, NULL, nic_runtime_resume, NULL);
static const struct dev_pm_ops nic2_pm_ops = {
	SYSTEM_SLEEP_PM_OPS(NULL, nic_resume)
};
"""


def _findings(path: Path, rule: str, text: bytes | None = None) -> list[Finding]:
    data = path.read_bytes() if text is None else text
    return [f for f in analyze_source(str(path), data, Config()) if f.rule == rule]


@pytest.mark.parametrize(
    ("where", "quiet"),
    [("drivers/net/ethernet/acme/nic.c", True), ("drivers/net/wireless/acme/nic.c", False),
     ("drivers/misc/acme/nic.c", False)],
)  # fmt: skip
def test_netdev_policy_quiets_once_per_sleep_latency(where: str, quiet: bool) -> None:
    """Once per system resume, 100 ms of busy-waiting: a warning, except under netdev's
    documented policy (drivers/net/, not the wireless tree)."""
    found = _findings(Path(where), "busy-wait-in-pm-callback", _NIC % b"")
    assert len(found) == 1
    assert (QUIET_TAG in found[0].tags) is quiet
    assert (found[0].severity == Severity.WARNING) is not quiet
    if quiet:
        assert "maintainer-netdev.rst" in found[0].message


def test_netdev_policy_keeps_runtime_costs() -> None:
    """The same wait on every runtime resume keeps the table's runtime row."""
    text = _NIC % b"nic_phy_reset(dev_get_drvdata(dev));"
    found = _findings(Path("drivers/net/ethernet/acme/nic.c"), "busy-wait-in-pm-callback", text)
    assert found and all(f.severity == Severity.WARNING for f in found)


def _tree(root: Path) -> Path:
    (root / "scripts" / "kconfig").mkdir(parents=True)
    (root / "Kconfig").write_text("mainmenu \"t\"\n")
    (root / "Makefile").write_text("")
    inc = root / "include" / "linux"
    inc.mkdir(parents=True)
    (inc / "gateclk.h").write_text(
        "#ifdef CONFIG_PM_CLK\nextern int gate_clk_suspend(struct device *dev);\n"
        "extern int gate_clk_add(struct device *dev);\n#else\n"
        "static inline int gate_clk_add(struct device *dev) { return 0; }\n"
        "#define gate_clk_suspend\tNULL\n#endif\n"
    )
    (inc / "vbus.h").write_text(
        "struct vbus_dev {\n#ifdef CONFIG_PM_SLEEP\n\tint entry;\n#endif\n};\n"
        "#ifdef CONFIG_PM_SLEEP\nint vbus_freeze(struct vbus_dev *d);\n#endif\n"
    )
    return root


_DRV = """
#include <linux/platform_device.h>

#ifdef CONFIG_PM
static int gate_suspend(struct device *dev)
{
	%s
}
#endif

static const struct dev_pm_ops gate_pm_ops = {
	SET_SYSTEM_SLEEP_PM_OPS(gate_suspend, NULL)
};
"""


@pytest.mark.parametrize(
    ("body", "reported"),
    [("return gate_clk_suspend(dev);", False),  # a NULL-macro stub without PM_CLK
     ("return vbus_freeze(dev_get_drvdata(dev));", False),  # declared only under PM_SLEEP
     ("return gate_clk_add(dev);", True),  # an inline stub exists
     ("struct vbus_dev *v = dev_get_drvdata(dev); return v->entry;", True)],  # a member
)  # fmt: skip
def test_deprecated_needs_a_buildable_patch(tmp_path: Path, body: str, reported: bool) -> None:
    top = _tree(tmp_path / "linux")
    path = top / "drivers" / "misc" / "gate.c"
    path.parent.mkdir(parents=True)
    path.write_text(_DRV % body)
    pm_guards.header_config_only.cache_clear()
    found = _findings(path, "deprecated-pm-ops-macro")
    assert bool(found) is reported, body
    if found:
        assert "hidden behind #ifdef CONFIG_PM:" in found[0].message


_HOST = """
#include <linux/platform_device.h>
#include "host-pltfm.h"

static int __maybe_unused host_runtime_suspend(struct device *dev)
{
	return 0;
}

#ifdef CONFIG_PM_SLEEP
static int host_suspend(struct device *dev)
{
	return %s(dev_get_drvdata(dev));
}
#endif

static const struct dev_pm_ops host_pm_ops = {
	SET_RUNTIME_PM_OPS(host_runtime_suspend, NULL, NULL)
	SET_SYSTEM_SLEEP_PM_OPS(host_suspend, NULL)
};
"""


@pytest.mark.parametrize(("call", "reported"), [("host_lib_suspend", False),
                                                ("host_lib_reset", True)])
def test_deprecated_reads_the_drivers_own_headers(tmp_path: Path, call: str,
                                                  reported: bool) -> None:
    """A library's suspend helper declared only under `#ifdef CONFIG_PM` in a local header
    that another local header includes (sdhci-pltfm.h -> sdhci.h) blocks the patch; the
    message names every SET_ macro of the table and each way its callbacks hide."""
    top = _tree(tmp_path / "linux")
    d = top / "drivers" / "mmc"
    d.mkdir(parents=True)
    (d / "host-pltfm.h").write_text('#include "host-lib.h"\n')
    (d / "host-lib.h").write_text("int host_lib_reset(void *h);\n#ifdef CONFIG_PM\n"
                                  "int host_lib_suspend(void *h);\n#endif\n")
    path = d / "host.c"
    path.write_text(_HOST % call)
    pm_guards.header_config_only.cache_clear()
    found = _findings(path, "deprecated-pm-ops-macro")
    assert bool(found) is reported
    if found:
        msg = found[0].message
        assert "SET_RUNTIME_PM_OPS() and SET_SYSTEM_SLEEP_PM_OPS()" in msg
        assert "#ifdef CONFIG_PM_SLEEP and __maybe_unused" in msg


def test_guard_is_named_as_written() -> None:
    src = b"#if defined(CONFIG_PM_SLEEP) && defined(X)\nint a;\n#else\nint b;\n#endif\n"
    guard = pm_guards.guard_at(src, src.index(b"int a"))
    assert guard == "#if defined(CONFIG_PM_SLEEP) && defined(X)"
    assert pm_guards.guard_at(src, src.index(b"int b")) is None
    neg = b"#ifndef CONFIG_PM\n#define foo_resume NULL\n#else\nint foo_resume(void);\n#endif\n"
    assert pm_guards.config_only(neg) == {"foo_resume"}
    pmac = b"#ifdef CONFIG_PMAC_BACKLIGHT\nint pmac_level;\n#endif\n"
    assert pm_guards.blocks(pmac) == []  # CONFIG_PMAC_* is not CONFIG_PM*
    local = b"static int f(void)\n{\n#ifdef CONFIG_PM\n\tint ret;\n#endif\n\treturn 0;\n}\n"
    assert pm_guards.config_only(local, bodies=((0, len(local)),)) == set()  # a local
    member = b"struct m {\n\tint a;\n#ifdef CONFIG_PM\n\tu32 regs[ARRAY_SIZE(x)];\n#endif\n};\n"
    assert pm_guards.config_only(member) == {"regs"}


K12 = LINUX / "linux-source-6.12"
K61 = LINUX / "linux-source-6.1"


@pytest.mark.skipif(not K12.exists(), reason=f"no 6.12 tree at {K12}")
def test_real_612() -> None:
    # pm_clk_suspend()/pm_clk_resume() are NULL without CONFIG_PM_CLK: the #ifdef must stay
    assert _findings(K12 / "drivers/clk/mmp/clk-audio.c", "deprecated-pm-ops-macro") == []
    # the failed get leaks no more than the kept one: no put of the file is this reference's
    assert _findings(K12 / "drivers/gpu/drm/stm/ltdc.c", "get-sync-without-put-on-error") == []
    panfrost = _findings(K12 / "drivers/gpu/drm/panfrost/panfrost_job.c",
                         "get-sync-without-put-on-error")  # fmt: skip
    assert [f.severity for f in panfrost] == [Severity.INFO]  # judged a real leak: kept
    dl2k = _findings(K12 / "drivers/net/ethernet/dlink/dl2k.c", "busy-wait-in-pm-callback")
    assert dl2k and all(QUIET_TAG in f.tags for f in dl2k)
    ath9k = _findings(K12 / "drivers/net/wireless/ath/ath9k/hif_usb.c", "busy-wait-in-pm-callback")
    assert any(f.severity == Severity.WARNING for f in ath9k)


@pytest.mark.skipif(not K61.exists(), reason=f"no 6.1 tree at {K61}")
def test_real_61() -> None:
    # virtio_device_freeze/restore are declared only under CONFIG_PM_SLEEP (virtio.h)
    assert _findings(K61 / "drivers/virtio/virtio_pci_common.c", "deprecated-pm-ops-macro") == []
    gpmi = _findings(K61 / "drivers/mtd/nand/raw/gpmi-nand/gpmi-nand.c",
                     "deprecated-pm-ops-macro")  # fmt: skip
    assert len(gpmi) == 1 and "#ifdef CONFIG_PM_SLEEP" in gpmi[0].message
    assert "#ifdef CONFIG_PM:" not in gpmi[0].message and "CONFIG_PM " not in gpmi[0].message

"""The README's kbuild recipe on a real configured tree: `make C=2 CHECK="dpmlens cc"` over
drivers/rtc/ of linux 6.12 after `make defconfig`, what reaches the build log, `--fail-level`
stopping make, the hint for CHECK="dpmlens", and findings true to the configuration
(CONFIG_PM_SLEEP, CONFIG_HZ) on real drivers.

The tree is /work/linux/linux-source-6.12 (read-only: copied, then configured), or a tree
already configured and prepared (`make defconfig && make prepare`) named by
DPMLENS_KBUILD_TREE. Skipped, saying so, when neither is there or make/gcc are missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kernel_trees import K612

KERNEL = Path(os.environ.get("DPMLENS_KERNEL_612", str(K612)))
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    given = os.environ.get("DPMLENS_KBUILD_TREE")
    if given:
        path = Path(given)
        if not (path / "include" / "generated" / "autoconf.h").is_file():
            pytest.skip(f"DPMLENS_KBUILD_TREE={given} is not configured and prepared")
        return path
    if not (KERNEL / "Makefile").is_file():
        pytest.skip(f"no kernel tree at {KERNEL} (apt-get install linux-source-6.12, README)")
    for tool in ("make", "gcc", "flex", "bison"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed: cannot configure a kernel tree")
    path = tmp_path_factory.mktemp("kbuild") / "linux"
    subprocess.run(["cp", "-a", str(KERNEL), str(path)], check=True)
    for target in (["defconfig"], ["-j2", "prepare"]):
        done = subprocess.run(["nice", "make", "-s", *target], cwd=path, capture_output=True,
                              text=True, timeout=1800, check=False)  # fmt: skip
        if done.returncode != 0:
            pytest.skip(f"make {' '.join(target)} failed on this machine: {done.stderr[-300:]}")
    return path


def _make(tree: Path, check: str, *targets: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(["nice", "make", "-j2", "C=2", f"CHECK={check}", *targets], cwd=tree,
                          env=env, capture_output=True, text=True, timeout=1800,
                          check=False)  # fmt: skip


def test_make_c2_check_dpmlens_cc_over_drivers_rtc(tree: Path) -> None:
    done = _make(tree, "dpmlens cc", "drivers/rtc/")
    assert done.returncode == 0, done.stderr[-2000:]
    checked = [ln.split()[-1] for ln in done.stdout.splitlines() if ln.startswith("  CHECK ")]
    assert "drivers/rtc/rtc-cmos.c" in checked and len(checked) >= 5
    # defconfig builds rtc-cmos, whose SIMPLE_DEV_PM_OPS is deprecated: an info finding, printed
    # as `info:` (never `note:`, which is kept for call-chain steps)
    line = next(ln for ln in done.stderr.splitlines() if "dpmlens-deprecated-pm-ops-macro" in ln)
    assert line.startswith("drivers/rtc/rtc-cmos.c:") and ": info: SIMPLE_DEV_PM_OPS(" in line
    # --fail-level stops the build at the first file with a finding at that level
    done = _make(tree, "dpmlens cc --fail-level info", "drivers/rtc/rtc-cmos.o")
    assert done.returncode != 0 and "dpmlens-deprecated-pm-ops-macro" in done.stderr


def test_check_dpmlens_without_cc_gets_a_hint(tree: Path) -> None:
    done = _make(tree, "dpmlens", "drivers/rtc/rtc-cmos.o")
    assert done.returncode != 0
    assert "the kernel build's checker is `dpmlens cc`" in done.stderr, done.stderr[-1500:]
    assert "invalid choice" not in done.stderr


def _cc(tree: Path, kconfig_h: Path, *files: str) -> str:
    # DPMLENS_ALL_COSTS: also the small costs the severity policy leaves out (bu21029's msleep)
    env = {**os.environ, "DPMLENS_ALL_COSTS": "1"}
    done = subprocess.run([str(BIN / "dpmlens"), "cc", f"-I{tree}/include", "-include",
                           str(kconfig_h), "-D__KERNEL__", "-O2", *files], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=300, check=True)  # fmt: skip
    return done.stderr


def test_findings_follow_the_configuration(tree: Path, tmp_path: Path) -> None:
    """imx_keypad.c wires its noirq callbacks with SET_NOIRQ_SYSTEM_SLEEP_PM_OPS, bu21029_ts.c
    its resume with DEFINE_SIMPLE_DEV_PM_OPS + pm_sleep_ptr(): with the tree's defconfig
    (CONFIG_PM_SLEEP=y, CONFIG_HZ=1000) both are reported and the msleep() arithmetic is at
    HZ=1000; the same .config without CONFIG_PM_SLEEP compiles both out."""
    files = ("drivers/input/keyboard/imx_keypad.c", "drivers/input/touchscreen/bu21029_ts.c")
    autoconf = (tree / "include" / "generated" / "autoconf.h").read_text()
    assert "#define CONFIG_PM_SLEEP 1" in autoconf and "#define CONFIG_HZ 1000" in autoconf
    out = _cc(tree, tree / "include" / "linux" / "kconfig.h", *files)
    assert "imx_keypad.c:539:3: warning: enable_irq_wake() in the suspend_noirq callback" in out
    assert "bu21029_ts.c:278:3: hint: msleep(START_DELAY_MS) = 2 ms" in out
    assert "up to 3 ms at HZ=1000 (20 ms at HZ=100, 8 ms at HZ=250)" in out
    # the same configuration without CONFIG_PM_SLEEP
    generated = tmp_path / "include" / "generated"
    generated.mkdir(parents=True)
    (generated / "autoconf.h").write_text("".join(
        ln + "\n" for ln in autoconf.splitlines() if not ln.startswith("#define CONFIG_PM_SLEEP")))
    kconfig_h = tmp_path / "kconfig.h"
    kconfig_h.write_text((tree / "include" / "linux" / "kconfig.h").read_text())
    out = subprocess.run([str(BIN / "dpmlens"), "cc", f"-I{tmp_path}/include",
                          f"-I{tree}/include", "-include", str(kconfig_h), *files], cwd=tree,
                         capture_output=True, text=True, timeout=300, check=True).stderr
    assert "enable_irq_wake" not in out and "msleep(" not in out, out
    # the deprecated macro is still in the source, and still said
    assert "SET_NOIRQ_SYSTEM_SLEEP_PM_OPS() in imx_kbd_pm_ops" in out

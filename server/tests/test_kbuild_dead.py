"""kbuild/dead.py: drivers no real build enables, from a tree's Kconfig and Makefiles.

A small synthetic tree shows each mechanism; the real 6.12 and 6.1 trees (skipped when absent)
show the facts the issue-20 judges met: a `COMPILE_TEST # nothing uses this` driver, a BROKEN
one, boards marked UNUSED_BOARD_FILES, staging's deprecated media drivers.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from kernel_trees import LINUX as LINUX_ROOT

from dpmlens.kbuild import dead, kconfig_deps

LINUX = LINUX_ROOT


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


TREE = {
    "Makefile": "obj-y += drivers/\n",
    "scripts/kconfig/.keep": "",
    "Kconfig": 'mainmenu "test"\n\nconfig BROKEN\n\tbool\n\nconfig COMPILE_TEST\n\tbool "ct"\n'
    'config PCI\n\tbool "pci"\n\nconfig PCMCIA\n\tbool "pcmcia"\n\n'
    'source "drivers/Kconfig"\n',
    "drivers/Kconfig": 'menu "Drivers"\nsource "drivers/foo/Kconfig"\n\n'
    'menu "Old"\n\tdepends on BROKEN\nsource "drivers/old/Kconfig"\nendmenu\n'
    'config BAR\n\tbool "bar"\n\tdepends on PCI && BROKEN\nendmenu\n',
    "drivers/foo/Kconfig": """\
config FOO_LIVE
	tristate "live"
	depends on PCI || COMPILE_TEST
	select FOO_SEL
	help
\t  A help text is not read:\n\t  depends on BROKEN

config FOO_CT
	tristate "compile test only"
	depends on COMPILE_TEST # nothing uses this

config FOO_BROKEN
	tristate "broken"
	depends on PCI
	depends on BROKEN

config FOO_SEL
	tristate
	depends on COMPILE_TEST

config FOO_CHILD
	tristate "child of a broken one"
	depends on FOO_BROKEN && PCI

config FOO_CARD
	tristate "a 16-bit PC card only"
	depends on PCMCIA && PCI

config FOO_EITHER
	tristate "a PC card or a PCI board"
	depends on PCMCIA || PCI

if BROKEN
config FOO_IF
	tristate "under if BROKEN"
endif
""",
    "drivers/old/Kconfig": 'config OLD_THING\n\ttristate "old"\n',
    "drivers/Makefile": "obj-y += foo/\nobj-$(CONFIG_BAR) += bar/\nobj-y += old/\n",
    "drivers/foo/Makefile": """\
obj-$(CONFIG_FOO_LIVE) += live.o
obj-$(CONFIG_FOO_CT) += ct.o both.o
obj-$(CONFIG_FOO_LIVE) += both.o
obj-$(CONFIG_FOO_BROKEN) += br.o
obj-$(CONFIG_FOO_SEL) += sel.o
obj-$(CONFIG_FOO_CHILD) += comp.o
comp-objs := part.o \\
	other.o
obj-$(CONFIG_FOO_IF) += sub/inner.o
obj-$(CONFIG_FOO_CARD) += card.o
obj-$(CONFIG_FOO_EITHER) += either.o
""",
    "drivers/bar/Makefile": "obj-y += x.o\n",
    "drivers/old/Makefile": "obj-$(CONFIG_OLD_THING) += thing.o\n",
}


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    _write(tmp_path, TREE)
    return tmp_path


@pytest.mark.parametrize(
    "rel, reason",
    [
        ("drivers/foo/live.c", None),
        ("drivers/foo/ct.c", "COMPILE_TEST only"),
        ("drivers/foo/both.c", None),  # FOO_LIVE builds it too
        ("drivers/foo/br.c", "depends on BROKEN"),
        ("drivers/foo/sel.c", None),  # COMPILE_TEST only, but a live symbol selects it
        ("drivers/foo/part.c", "depends on BROKEN"),  # composite of a BROKEN-dependent one
        ("drivers/foo/sub/inner.c", "depends on BROKEN"),  # `if BROKEN` block, parent Makefile
        ("drivers/bar/x.c", "depends on BROKEN"),  # the directory's symbol
        ("drivers/old/thing.c", "depends on BROKEN"),  # a menu's `depends on` over `source`
        ("drivers/foo/unknown.c", None),  # no Makefile names it: not a fact
        ("drivers/staging/media/deprecated/cam/cam.c", dead.DEPRECATED),
    ],
)
def test_synthetic_tree(tree: Path, rel: str, reason: str | None) -> None:
    facts = dead.load(tree)
    assert facts.reason(str(tree / rel)) == reason


LEGACY = {"PCMCIA": "a PCMCIA card"}


@pytest.mark.parametrize(
    "rel, reason",
    [
        ("drivers/foo/card.c", dead.LEGACY_PREFIX + "a PCMCIA card"),
        ("drivers/foo/either.c", None),  # a PCI board builds it too
        ("drivers/foo/ct.c", "COMPILE_TEST only"),  # dead stays dead
        ("drivers/foo/live.c", None),
    ],
)
def test_legacy_buses(tree: Path, rel: str, reason: str | None) -> None:
    assert dead.load(tree, legacy=LEGACY).reason(str(tree / rel)) == reason
    if reason and reason.startswith(dead.LEGACY_PREFIX):
        assert dead.load(tree).reason(str(tree / rel)) is None  # only when asked


def test_find_top(tree: Path) -> None:
    assert dead.find_top(str(tree / "drivers" / "foo")) == tree
    assert dead.find_top("/") is None


def test_index_is_cached_by_mtime(tree: Path, tmp_path_factory: pytest.TempPathFactory,
                                  monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    cache = tmp_path_factory.mktemp("cache")
    assert dead.load(tree, cache).reason(str(tree / "drivers/foo/ct.c"))
    calls = []
    real = kconfig_deps.Reader.read

    def counting(self: kconfig_deps.Reader) -> kconfig_deps.KconfigIndex:
        calls.append(1)
        return real(self)

    monkeypatch.setattr(kconfig_deps.Reader, "read", counting)
    assert dead.load(tree, cache).reason(str(tree / "drivers/foo/ct.c")) == "COMPILE_TEST only"
    assert calls == []  # read from the cache
    kconfig = tree / "drivers/foo/Kconfig"
    kconfig.write_text(kconfig.read_text().replace("depends on COMPILE_TEST # nothing", "# "))
    os.utime(kconfig, (1, 1))
    assert dead.load(tree, cache).reason(str(tree / "drivers/foo/ct.c")) is None
    assert calls == [1]  # a changed Kconfig file is read again


def test_a_broken_cache_file_is_ignored(
    tree: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    cache = tmp_path_factory.mktemp("cache")
    dead.load(tree, cache)
    [written] = cache.glob("kconfig-*.json")
    written.write_text("{not json")
    assert dead.load(tree, cache).reason(str(tree / "drivers/foo/br.c")) == "depends on BROKEN"


def _real(version: str) -> Path:
    top = LINUX / f"linux-source-{version}"
    if not (top / "Kconfig").is_file():
        pytest.skip(f"no kernel tree at {top} (apt-get install linux-source-{version})")
    return top


@pytest.mark.parametrize(
    "version, rel, reason",
    [
        ("6.12", "drivers/usb/host/isp1362-hcd.c", "COMPILE_TEST only"),
        ("6.12", "drivers/staging/greybus/camera.c", "depends on BROKEN"),
        ("6.12", "drivers/usb/host/ehci-pci.c", None),
        ("6.12", "sound/soc/codecs/wm8962.c", None),
        ("6.12", "drivers/video/fbdev/aty/atyfb_base.c", None),
        ("6.1", "drivers/video/backlight/tosa_lcd.c", "board marked UNUSED_BOARD_FILES"),
        ("6.1", "drivers/staging/media/deprecated/meye/meye.c", dead.DEPRECATED),
        ("6.1", "drivers/net/phy/at803x.c", None),
    ],
)
def test_real_trees(version: str, rel: str, reason: str | None) -> None:
    top = _real(version)
    assert dead.load(top).reason(str(top / rel)) == reason


@pytest.mark.parametrize(
    "version, rel, legacy",
    [
        ("6.12", "drivers/net/ethernet/smsc/smc91c92_cs.c", True),  # depends on PCMCIA
        ("6.1", "drivers/net/ethernet/smsc/smc91c92_cs.c", True),
        ("6.12", "drivers/net/ethernet/smsc/smc91x.c", False),
        ("6.12", "drivers/video/fbdev/aty/atyfb_base.c", False),  # PCI; only a branch is PMAC
    ],
)
def test_real_trees_legacy(version: str, rel: str, legacy: bool) -> None:
    from dpmlens.rules.severity_policy import policy

    top = _real(version)
    reason = dead.load(top, legacy=policy().legacy_symbols).reason(str(top / rel))
    assert (reason is not None and reason.startswith(dead.LEGACY_PREFIX)) == legacy, reason


# --- platform drivers only dead board files instantiate (kbuild/board_devices.py) ----------


def test_name_only_names() -> None:
    from dpmlens.kbuild import board_devices

    plain = b'static struct platform_driver d = {\n .driver = { .name = "foo-bat", },\n};\n'
    assert board_devices.name_only_names(plain) == ["foo-bat"]
    ids = plain + b'static const struct platform_device_id ids[] = {\n { "foo-a" }, { }\n};\n'
    assert board_devices.name_only_names(ids) == ["foo-a", "foo-bat"]
    # a match table, another bus's driver, a name from a macro: not a name-only driver
    assert board_devices.name_only_names(plain + b".of_match_table = x,") is None
    assert board_devices.name_only_names(plain + b"static struct i2c_driver i = {};") is None
    macro = b"static struct platform_driver d = { .driver = { .name = DRV_NAME, }, };"
    assert board_devices.name_only_names(macro) is None


@pytest.mark.parametrize(
    "version, rel, board",
    [
        # built on an S3C64XX kernel without ARCH_MULTIPLATFORM (S3C_ADC depends on
        # !ARCH_MULTIPLATFORM, which EXPERT may turn off), but only the S3C24XX boards h1940
        # and rx1950 declare "s3c-adc-battery" (ARCH_S3C24XX depends on UNUSED_BOARD_FILES)
        ("6.1", "drivers/power/supply/s3c_adc_battery.c", "arch/arm/mach-s3c/mach-h1940.c"),
        ("6.1", "drivers/input/mouse/navpoint.c", "arch/arm/mach-pxa/hx4700.c"),
        ("6.1", "drivers/power/supply/da9030_battery.c", "arch/arm/mach-pxa/cm-x300.c"),
        # a live declaration keeps it live: pxa930-trkball, an MFD cell (wm831x-on)
        ("6.1", "drivers/input/mouse/pxa930_trkball.c", None),
        ("6.1", "drivers/input/misc/wm831x-on.c", None),
        ("6.12", "drivers/input/misc/wm831x-on.c", None),
    ],
)
def test_real_trees_board_only_devices(version: str, rel: str, board: str | None) -> None:
    top = _real(version)
    facts = dead.load(top)
    facts.prepare([str(top / rel)])
    reason = facts.reason(str(top / rel))
    if board is None:
        assert reason is None
    else:
        assert reason is not None and board in reason and "UNUSED_BOARD_FILES" in reason
        assert facts.reason(str(top / board)) == "board marked UNUSED_BOARD_FILES"

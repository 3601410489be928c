"""Driver structs: registered name (every spelling), bus, probe, .pm, legacy, registration."""

from __future__ import annotations

import pytest
from model_helpers import build

from dpmlens.model.build import kbuild_modname


def _driver(src: str, path: str = "drivers/misc/foo-bar.c"):
    m = build(src, path)
    assert len(m.drivers) == 1, m.drivers
    return m.drivers[0]


@pytest.mark.parametrize(
    ("decl", "init", "name"),
    [
        ("", '.driver = { .name = "foo" },', "foo"),
        ("", '.driver.name = "foo",', "foo"),
        ('#define DRV_NAME "foo-drv"\n', ".driver = { .name = DRV_NAME },", "foo-drv"),
        (
            '#define BASE "foo"\n#define DRV_NAME BASE "-x" /* comment */\n',
            ".driver = { .name = DRV_NAME },",
            "foo-x",
        ),
        ('static const char drv_name[] = "foo-arr";\n', ".driver.name = drv_name,", "foo-arr"),
        ('static const char drv_name[16] = "sized";\n', ".driver.name = drv_name,", "sized"),
        ("", ".driver = { .name = KBUILD_MODNAME },", "foo_bar"),
        ("#define DRV_NAME KBUILD_MODNAME\n", ".driver = { .name = DRV_NAME },", "foo_bar"),
        ("", '.driver = { .name = "a" "b" },', "ab"),
        ("", ".driver = { .name = some_function() },", None),
    ],
)
def test_platform_driver_name(decl: str, init: str, name: str | None) -> None:
    d = _driver(f"{decl}static struct platform_driver foo_driver = {{\n\t{init}\n}};\n")
    assert d.name == name
    assert d.bus == "platform" and d.var_name == "foo_driver"
    if name is not None:
        assert d.name_span is not None and d.name_span.line == decl.count("\n") + 2


def test_kbuild_modname_from_path() -> None:
    assert kbuild_modname("drivers/usb/host/xhci-pci.c") == "xhci_pci"
    assert kbuild_modname("foo.c") == "foo"


def test_pci_driver_top_level_name_and_legacy_callbacks() -> None:
    d = _driver(
        """
static struct pci_driver foo_pci_driver = {
	.name		= "foo_pci",
	.id_table	= foo_ids,
	.probe		= foo_probe,
	.remove		= foo_remove,
	.suspend	= foo_legacy_suspend,
	.resume		= foo_legacy_resume,
	.driver.pm	= &foo_pm_ops,
};
module_pci_driver(foo_pci_driver);
"""
    )
    assert (d.name, d.bus, d.probe, d.pm) == ("foo_pci", "pci", "foo_probe", "foo_pm_ops")
    assert d.legacy == {"suspend": "foo_legacy_suspend", "resume": "foo_legacy_resume"}
    assert d.legacy_spans["suspend"].line == 7
    assert d.registration == "module_pci_driver"


@pytest.mark.parametrize(
    ("pm", "expected"),
    [
        ("&foo_pm", "foo_pm"),
        ("pm_ptr(&foo_pm)", "foo_pm"),
        ("pm_sleep_ptr(&foo_pm)", "foo_pm"),
        ("pm_sleep_ptr(foo_pm_ptr)", "foo_pm_ptr"),
        ("FOO_PM_OPS", "foo_pm"),
        ("NULL", None),
    ],
)
def test_pm_pointer_forms(pm: str, expected: str | None) -> None:
    d = _driver(
        f"""
#ifdef CONFIG_PM
#define FOO_PM_OPS (&foo_pm)
#else
#define FOO_PM_OPS NULL
#endif
static struct i2c_driver foo_driver = {{
	.driver = {{
		.name = "foo",
		.pm = {pm},
	}},
	.probe = foo_probe,
}};
"""
    )
    assert d.pm == expected
    assert d.bus == "i2c"


@pytest.mark.parametrize(
    ("reg", "expected"),
    [
        ("module_platform_driver(foo_driver);", "module_platform_driver"),
        ("module_platform_driver_probe(foo_driver, foo_probe);", "module_platform_driver_probe"),
        ("builtin_platform_driver(foo_driver);", "builtin_platform_driver"),
        (
            "static int __init foo_init(void)\n"
            "{\n\treturn platform_driver_register(&foo_driver);\n}",
            "platform_driver_register",
        ),
        (
            "module_driver(foo_driver, platform_driver_register, platform_driver_unregister);",
            "module_driver",
        ),
        ("static void f(void) { platform_driver_unregister(&foo_driver); }", None),
        ("drm_module_platform_driver(foo_driver);", "drm_module_platform_driver"),
        (
            'static int __init f(void)\n{\n\treturn coresight_init_driver("foo", &a_driver,'
            " &foo_driver, THIS_MODULE);\n}",
            "coresight_init_driver",
        ),
        (
            "static struct platform_driver * const drivers[] = {\n\t&a_driver,\n\t&foo_driver,\n};"
            "\nstatic int __init f(void)\n{\n"
            "\treturn platform_register_drivers(drivers, ARRAY_SIZE(drivers));\n}",
            "platform_register_drivers",
        ),
        (
            "static int __init f(void)\n{\n\tif (platform_driver_register(&foo_driver))\n"
            "\t\treturn -ENODEV;\n\treturn 0;\n}",
            "platform_driver_register",
        ),
        ("static void f(void) { usb_driver_claim_interface(&foo_driver, i, NULL); }", None),
        ("/* module_platform_driver(foo_driver); */", None),
    ],
)
def test_registration(reg: str, expected: str | None) -> None:
    d = _driver(f'static struct platform_driver foo_driver = {{ .driver.name = "foo" }};\n{reg}\n')
    assert d.registration == expected


@pytest.mark.parametrize(
    ("stype", "bus", "name", "body"),
    [
        (
            "usb_driver",
            "usb",
            "u",
            '.name = "u", .suspend = u_s, .resume = u_r, .reset_resume = u_rr',
        ),
        ("spi_driver", "spi", "s", '.driver = { .name = "s", .pm = &s_pm }'),
        ("serio_driver", "serio", "k", '.driver = { .name = "k" }'),
        ("hid_driver", "hid", "h", '.name = "h", .suspend = h_s'),
        ("acpi_driver", "acpi", "a", '.name = "a", .ops = { .add = a_add }, .drv.pm = &a_pm'),
        ("sdio_driver", "sdio", "sd", '.name = "sd", .drv = { .pm = &sd_pm }'),
        ("amba_driver", "amba", "am", '.drv = { .name = "am" }, .probe = am_probe'),
        ("scsi_driver", "scsi", "sc", '.gendrv = { .name = "sc", .pm = &sc_pm }'),
    ],
)
def test_other_buses(stype: str, bus: str, name: str, body: str) -> None:
    d = _driver(f"static struct {stype} x_driver = {{ {body} }};\n")
    assert d.bus == bus and d.struct_type == stype and d.name == name
    if stype == "usb_driver":
        assert d.legacy == {"suspend": "u_s", "resume": "u_r", "reset_resume": "u_rr"}
    if stype == "acpi_driver":
        assert (d.probe, d.pm, d.name) == ("a_add", "a_pm", "a")
    if stype == "sdio_driver":
        assert d.pm == "sd_pm"


def test_driver_pointer_arrays_are_not_drivers() -> None:
    m = build(
        """
static struct platform_driver * const drivers[] = { &a_driver, &b_driver };
extern struct platform_driver c_driver;
"""
    )
    assert m.drivers == []


def test_driver_arrays() -> None:
    m = build(
        """
static struct phy_driver foo_phy_drivers[] = {
	{
		.phy_id		= 0x1,
		.name		= "Foo PHY A",
		.suspend	= foo_phy_suspend,
		.resume		= genphy_resume,
	}, {
		.name		= "Foo PHY B",
		.suspend	= genphy_suspend,
	},
	FOO_PHY_ENTRY(3),
};
module_phy_driver(foo_phy_drivers);
"""
    )
    assert [(d.var_name, d.name, d.legacy, d.registration) for d in m.drivers] == [
        (
            "foo_phy_drivers[0]",
            "Foo PHY A",
            {"suspend": "foo_phy_suspend", "resume": "genphy_resume"},
            "module_phy_driver",
        ),
        ("foo_phy_drivers[1]", "Foo PHY B", {"suspend": "genphy_suspend"}, "module_phy_driver"),
    ]
    assert m.drivers[0].bus == "mdio_bus" and m.drivers[0].span.line == 3
    assert m.drivers[0].legacy_spans["suspend"].line == 6

"""Each tree-sitter-c misparse of kernel PM macros (grammars/VERSION.md), with the model right.

Every test first asserts the misparse is still there (so a grammar upgrade that fixes it is
noticed) and then that build_model reads the construct correctly anyway.
"""

from __future__ import annotations

from model_helpers import NOIRQ, SYSTEM, build, members, runtime, sleep

from dpmlens.syntax.parser import parse


def _types(src: str) -> str:
    return str(parse(src.encode()).root_node)


def test_commaless_macro_then_designated_member() -> None:
    src = """
static const struct dev_pm_ops foo_pm = {
	SET_NOIRQ_SYSTEM_SLEEP_PM_OPS(foo_s, foo_r)
	.runtime_suspend = foo_rs,
};
"""
    tree = _types(src)
    assert "assignment_expression left: (field_expression" in tree  # the misparse
    m = build(src)
    assert members(m, "foo_pm") == {**sleep(NOIRQ, "foo_s", "foo_r"), "runtime_suspend": "foo_rs"}


def test_two_commaless_macros_in_a_row() -> None:
    src = """
static const struct dev_pm_ops foo_pm = {
	SET_SYSTEM_SLEEP_PM_OPS(foo_s, foo_r)
	SET_RUNTIME_PM_OPS(foo_rs, foo_rr, NULL)
};
"""
    assert "ERROR" in _types(src)
    m = build(src)
    assert members(m, "foo_pm") == {
        **sleep(SYSTEM, "foo_s", "foo_r"),
        **runtime("foo_rs", "foo_rr", None),
    }


def test_static_define_simple_swallowing_next_macro() -> None:
    src = """
static int foo_s(struct device *dev) { return 0; }
static int foo_r(struct device *dev) { return 0; }
static DEFINE_SIMPLE_DEV_PM_OPS(foo_pm, foo_s, foo_r);
module_platform_driver(foo_driver);
static struct platform_driver foo_driver = {
	.driver = { .name = "foo", .pm = pm_sleep_ptr(&foo_pm) },
};
"""
    tree = _types(src)
    assert "macro_type_specifier" in tree and "ERROR" in tree
    m = build(src)
    assert members(m, "foo_pm") == {**sleep(SYSTEM, "foo_s", "foo_r"), **runtime(None, None, None)}
    (d,) = m.drivers
    assert d.registration == "module_platform_driver" and d.pm == "foo_pm"
    assert set(m.functions) == {"foo_s", "foo_r"}


def test_maybe_unused_function_still_defined() -> None:
    src = "static int __maybe_unused foo_s(struct device *dev)\n{\n\treturn bar(dev);\n}\n"
    assert "ERROR" in _types(src)
    m = build(src)
    f = m.functions["foo_s"]
    assert f.maybe_unused and f.is_static
    assert [c.callee for c in m.calls_in("foo_s")] == ["bar"]


def test_macro_after_designated_member_without_comma() -> None:
    # `.prepare = x` followed by a macro needs a comma in C; tolerate its absence anyway
    m = build(
        """
static const struct dev_pm_ops foo_pm = {
	.prepare = foo_prepare
	SET_SYSTEM_SLEEP_PM_OPS(foo_s, foo_r)
};
"""
    )
    assert members(m, "foo_pm") == {"prepare": "foo_prepare", **sleep(SYSTEM, "foo_s", "foo_r")}


def test_unterminated_table_does_not_crash() -> None:
    m = build("static const struct dev_pm_ops foo_pm = {\n\t.suspend = foo_s,\n")
    assert members(m, "foo_pm") == {"suspend": "foo_s"}


def test_stray_line_continuations_in_initializer() -> None:
    # drivers/gpu/drm/arm/malidp_drv.c writes its table with trailing backslashes
    m = build(
        "static const struct dev_pm_ops foo_pm = {\n"
        "\tSET_SYSTEM_SLEEP_PM_OPS(foo_s, foo_r) \\\n"
        "\tSET_RUNTIME_PM_OPS(foo_rs, foo_rr, NULL)\n"
        "};\n"
    )
    assert members(m, "foo_pm") == {
        **sleep(SYSTEM, "foo_s", "foo_r"),
        **runtime("foo_rs", "foo_rr", None),
    }


def test_callback_lost_in_error_region_is_recovered() -> None:
    # an unknown loop macro (drivers/usb/host/ohci-at91.c: at91_for_each_port) wrecks the tree
    src = """static void foo_remove(struct platform_device *pdev)
{
	struct foo_data	*pdata = dev_get_platdata(&pdev->dev);
	int			i;

	if (pdata) {
		foo_for_each_port(i)
			foo_set_power(pdata, i, 0);
	}
}

static int __maybe_unused
foo_suspend(struct device *dev)
{
	msleep(10 + 5);
	return foo_helper(dev);
}
static SIMPLE_DEV_PM_OPS(foo_pm, foo_suspend, NULL);
"""
    assert "function_definition" not in _types(src)  # the misparse: no definition at all
    m = build(src)
    f = m.functions["foo_suspend"]
    assert f.maybe_unused and f.is_static
    assert (f.span.line, f.name_span.line, f.name_span.column, f.span.end_line) == (12, 13, 1, 17)
    calls = m.calls_in("foo_suspend")
    assert [(c.callee, c.args, c.span.line, c.span.column) for c in calls] == [
        ("msleep", ("10 + 5",), 15, 2),
        ("foo_helper", ("dev",), 16, 9),
    ]
    assert m.calls_to("msleep") == calls[:1]
    full = build(src)
    assert [c for c in full.calls if c.caller == "foo_suspend"] == calls
    assert m.source[calls[0].start_byte : calls[0].end_byte] == b"msleep(10 + 5)"

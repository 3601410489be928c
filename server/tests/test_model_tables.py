"""One test per dev_pm_ops form: designated initializers and every kernel macro."""

from __future__ import annotations

import pytest
from model_helpers import LATE, NOIRQ, SYSTEM, build, members, runtime, sleep


def test_designated_initializer_with_wrappers_and_null() -> None:
    m = build(
        """
static const struct dev_pm_ops foo_pm = {
	.suspend = foo_suspend,
	.resume = pm_sleep_ptr(foo_resume),
	.suspend_noirq = pm_ptr(&foo_suspend_noirq),
	.runtime_idle = NULL,
	.prepare = foo_prepare
};
"""
    )
    t = m.pm_tables["foo_pm"]
    assert t.macro is None and not t.maybe_unused and not t.exported
    assert members(m, "foo_pm") == {
        "suspend": "foo_suspend",
        "resume": "foo_resume",
        "suspend_noirq": "foo_suspend_noirq",
        "runtime_idle": None,
        "prepare": "foo_prepare",
    }
    assert all(x.via == "designated" for x in t.members)
    resume = next(x for x in t.members if x.member == "resume")
    assert (resume.span.line, resume.span.column, resume.span.end_column) == (4, 25, 35)


def test_designated_non_static_and_nested_ifdef() -> None:
    m = build(
        """
const struct dev_pm_ops bar_pm_ops = {
#ifdef CONFIG_PM_SLEEP
	.suspend = bar_suspend,
	.resume = bar_resume,
#endif
};
"""
    )
    assert members(m, "bar_pm_ops") == {"suspend": "bar_suspend", "resume": "bar_resume"}


@pytest.mark.parametrize(
    ("macro", "kind"),
    [
        ("SET_SYSTEM_SLEEP_PM_OPS", SYSTEM),
        ("SYSTEM_SLEEP_PM_OPS", SYSTEM),
        ("SET_LATE_SYSTEM_SLEEP_PM_OPS", LATE),
        ("LATE_SYSTEM_SLEEP_PM_OPS", LATE),
        ("SET_NOIRQ_SYSTEM_SLEEP_PM_OPS", NOIRQ),
        ("NOIRQ_SYSTEM_SLEEP_PM_OPS", NOIRQ),
    ],
)
@pytest.mark.parametrize("comma", [",", ""])
def test_sleep_member_macros(macro: str, kind, comma: str) -> None:
    m = build(
        f"""
static const struct dev_pm_ops foo_pm = {{
	{macro}(foo_s, foo_r){comma}
}};
"""
    )
    assert members(m, "foo_pm") == sleep(kind, "foo_s", "foo_r")
    assert {x.via for x in m.pm_tables["foo_pm"].members} == {macro}


@pytest.mark.parametrize("macro", ["SET_RUNTIME_PM_OPS", "RUNTIME_PM_OPS"])
def test_runtime_member_macros(macro: str) -> None:
    m = build(
        f"""
static const struct dev_pm_ops foo_pm = {{
	{macro}(foo_rs, foo_rr, NULL)
}};
"""
    )
    assert members(m, "foo_pm") == runtime("foo_rs", "foo_rr", None)


def test_mixed_macros_and_designated_in_any_order() -> None:
    m = build(
        """
static const struct dev_pm_ops foo_pm = {
	.prepare = foo_prepare,
	SYSTEM_SLEEP_PM_OPS(foo_s, foo_r)
	LATE_SYSTEM_SLEEP_PM_OPS(foo_sl, foo_re)
	RUNTIME_PM_OPS(foo_rs, foo_rr, foo_ri)
	.complete = foo_complete,
};
"""
    )
    assert members(m, "foo_pm") == {
        "prepare": "foo_prepare",
        **sleep(SYSTEM, "foo_s", "foo_r"),
        **sleep(LATE, "foo_sl", "foo_re"),
        **runtime("foo_rs", "foo_rr", "foo_ri"),
        "complete": "foo_complete",
    }


@pytest.mark.parametrize("static", ["static ", ""])
def test_define_simple_dev_pm_ops(static: str) -> None:
    m = build(f"{static}DEFINE_SIMPLE_DEV_PM_OPS(foo_pm, foo_s, foo_r);\n")
    t = m.pm_tables["foo_pm"]
    assert t.macro == "DEFINE_SIMPLE_DEV_PM_OPS" and not t.maybe_unused
    assert members(m, "foo_pm") == {**sleep(SYSTEM, "foo_s", "foo_r"), **runtime(None, None, None)}


def test_simple_dev_pm_ops_is_maybe_unused() -> None:
    m = build("static SIMPLE_DEV_PM_OPS(foo_pm, foo_s, foo_r);\n")
    t = m.pm_tables["foo_pm"]
    assert t.macro == "SIMPLE_DEV_PM_OPS" and t.maybe_unused
    assert members(m, "foo_pm") == sleep(SYSTEM, "foo_s", "foo_r")


def test_define_noirq_dev_pm_ops() -> None:
    m = build("static DEFINE_NOIRQ_DEV_PM_OPS(foo_pm, foo_s, foo_r);\n")
    assert members(m, "foo_pm") == sleep(NOIRQ, "foo_s", "foo_r")


def test_define_runtime_dev_pm_ops_uses_force_suspend() -> None:
    m = build("static DEFINE_RUNTIME_DEV_PM_OPS(foo_pm, foo_rs, foo_rr, NULL);\n")
    assert members(m, "foo_pm") == {
        **sleep(SYSTEM, "pm_runtime_force_suspend", "pm_runtime_force_resume"),
        **runtime("foo_rs", "foo_rr", None),
    }


def test_universal_dev_pm_ops() -> None:
    m = build("static UNIVERSAL_DEV_PM_OPS(foo_pm, foo_s, foo_r, foo_i);\n")
    t = m.pm_tables["foo_pm"]
    assert t.maybe_unused and t.macro == "UNIVERSAL_DEV_PM_OPS"
    assert members(m, "foo_pm") == {
        **sleep(SYSTEM, "foo_s", "foo_r"),
        **runtime("foo_s", "foo_r", "foo_i"),
    }


def test_underscore_define_dev_pm_ops() -> None:
    m = build("static _DEFINE_DEV_PM_OPS(foo_pm, a_s, a_r, b_s, b_r, b_i);\n")
    assert members(m, "foo_pm") == {**sleep(SYSTEM, "a_s", "a_r"), **runtime("b_s", "b_r", "b_i")}


@pytest.mark.parametrize(
    "macro",
    [
        "EXPORT_SIMPLE_DEV_PM_OPS",
        "EXPORT_GPL_SIMPLE_DEV_PM_OPS",
    ],
)
def test_export_simple(macro: str) -> None:
    m = build(f"{macro}(foo_pm, foo_s, foo_r);\n")
    t = m.pm_tables["foo_pm"]
    assert t.exported and t.macro == macro
    assert members(m, "foo_pm") == sleep(SYSTEM, "foo_s", "foo_r")


@pytest.mark.parametrize(
    "macro", ["EXPORT_NS_SIMPLE_DEV_PM_OPS", "EXPORT_NS_GPL_SIMPLE_DEV_PM_OPS"]
)
def test_export_ns_simple(macro: str) -> None:
    m = build(f"{macro}(foo_pm, foo_s, foo_r, FOO_NS);\n")
    assert members(m, "foo_pm") == sleep(SYSTEM, "foo_s", "foo_r")


@pytest.mark.parametrize(
    ("macro", "extra"),
    [
        ("EXPORT_RUNTIME_DEV_PM_OPS", ""),
        ("EXPORT_GPL_RUNTIME_DEV_PM_OPS", ""),
        ("EXPORT_NS_RUNTIME_DEV_PM_OPS", ", FOO"),
        ("EXPORT_NS_GPL_RUNTIME_DEV_PM_OPS", ", FOO"),
    ],
)
def test_export_runtime(macro: str, extra: str) -> None:
    m = build(f"{macro}(foo_pm, foo_rs, foo_rr, NULL{extra});\n")
    assert m.pm_tables["foo_pm"].exported
    assert members(m, "foo_pm") == runtime("foo_rs", "foo_rr", None)


@pytest.mark.parametrize(
    ("head", "name"),
    [
        ("EXPORT_GPL_DEV_PM_OPS(foo_pm)", "foo_pm"),
        ("EXPORT_DEV_PM_OPS(foo_pm)", "foo_pm"),
        ("EXPORT_NS_GPL_DEV_PM_OPS(foo_pm, FOO_NS)", "foo_pm"),
        ("EXPORT_GPL_DEV_SLEEP_PM_OPS(foo_pm)", "foo_pm"),
    ],
)
def test_export_dev_pm_ops_with_initializer(head: str, name: str) -> None:
    m = build(
        f"""
{head} = {{
	SYSTEM_SLEEP_PM_OPS(foo_s, foo_r)
	RUNTIME_PM_OPS(foo_rs, foo_rr, NULL)
}};
"""
    )
    t = m.pm_tables[name]
    assert t.exported
    assert members(m, name) == {
        **sleep(SYSTEM, "foo_s", "foo_r"),
        **runtime("foo_rs", "foo_rr", None),
    }


def test_maybe_unused_and_config_guard_on_tables() -> None:
    m = build(
        """
#ifdef CONFIG_PM_SLEEP
static const struct dev_pm_ops a_pm = { SET_SYSTEM_SLEEP_PM_OPS(a_s, a_r) };
#endif
static const struct dev_pm_ops __maybe_unused b_pm = { .suspend = b_s };
static const struct dev_pm_ops c_pm __maybe_unused = { .suspend = c_s };
#ifndef CONFIG_PM
static const struct dev_pm_ops d_pm = { .suspend = d_s };
#else
static const struct dev_pm_ops e_pm = { .suspend = e_s };
#endif
#if IS_ENABLED(CONFIG_PM)
static SIMPLE_DEV_PM_OPS(f_pm, f_s, f_r);
#endif
"""
    )
    t = m.pm_tables
    assert t["a_pm"].under_config_ifdef and not t["a_pm"].maybe_unused
    assert t["b_pm"].maybe_unused and not t["b_pm"].under_config_ifdef
    assert t["c_pm"].maybe_unused
    assert not t["d_pm"].under_config_ifdef
    assert not t["e_pm"].under_config_ifdef  # the #else of #ifndef: not a positive guard
    assert t["f_pm"].under_config_ifdef


def test_tables_in_comments_and_define_bodies_are_ignored() -> None:
    m = build(
        """
/* static const struct dev_pm_ops bogus_pm = { .suspend = x }; */
// static SIMPLE_DEV_PM_OPS(bogus2_pm, a, b);
#define MY_PM(name) static SIMPLE_DEV_PM_OPS(name, a, b)
#define MY_PM2(name) static const struct dev_pm_ops name = { .suspend = x }
static SIMPLE_DEV_PM_OPS(real_pm, a, b);
"""
    )
    assert list(m.pm_tables) == ["real_pm"]


def test_pointer_declarations_are_not_tables() -> None:
    m = build(
        """
static const struct dev_pm_ops *foo_ops;
extern const struct dev_pm_ops bar_pm;
int f(const struct dev_pm_ops *ops);
"""
    )
    assert m.pm_tables == {}


def test_function_guards_and_maybe_unused() -> None:
    m = build(
        """
#ifdef CONFIG_PM_SLEEP
static int a_s(struct device *dev) { return 0; }
#ifdef CONFIG_OF
static int b_s(struct device *dev) { return 0; }
#endif
#else
static int c_s(struct device *dev) { return 0; }
#endif
#ifndef CONFIG_PM
static int d_s(struct device *dev) { return 0; }
#endif
#if IS_ENABLED(CONFIG_PM) && defined(CONFIG_OF)
static int e_s(struct device *dev) { return 0; }
#elif defined(CONFIG_PM_SLEEP)
static int f_s(struct device *dev) { return 0; }
#endif
static int __maybe_unused g_s(struct device *dev) { return 0; }
int h_s(struct device *dev) { return 0; }
"""
    )
    guarded = {n for n, f in m.functions.items() if f.under_config_ifdef}
    assert guarded == {"a_s", "b_s", "e_s", "f_s"}
    assert {n for n, f in m.functions.items() if f.maybe_unused} == {"g_s"}
    assert {n for n, f in m.functions.items() if not f.is_static} == {"h_s"}

"""Quick fixes produce exactly the edit a kernel developer would write."""

from __future__ import annotations

from dpmlens.config.settings import Config
from dpmlens.engine.analyze import analyze_source
from dpmlens.rules.fixes import apply_edits


def _fixed(source: str, rule: str, index: int = 0) -> str:
    findings = [f for f in analyze_source("t.c", source.encode(), Config()) if f.rule == rule]
    assert findings, f"no {rule} finding"
    assert findings[0].fixes, f"no fix for {rule}"
    return apply_edits(source.encode(), findings[0].fixes[index].edits).decode()


def test_get_sync_becomes_resume_and_get_with_plain_error_check() -> None:
    src = """static int f(struct device *dev)
{
	int ret;

	ret = pm_runtime_get_sync(dev);
	if (ret < 0)
		return ret;
	pm_runtime_put(dev);
	return 0;
}
"""
    assert _fixed(src, "get-sync-without-put-on-error") == src.replace(
        "pm_runtime_get_sync(dev);\n\tif (ret < 0)", "pm_runtime_resume_and_get(dev);\n\tif (ret)"
    )


def test_get_sync_fix_not_offered_when_positive_value_is_used() -> None:
    src = """static int f(struct device *dev)
{
	int ret;

	ret = pm_runtime_get_sync(dev);
	if (ret < 0)
		return ret;
	if (ret == 1)
		dev_dbg(dev, "was active\\n");
	pm_runtime_put(dev);
	return 0;
}
"""
    (finding,) = [
        f
        for f in analyze_source("t.c", src.encode(), Config())
        if f.rule == "get-sync-without-put-on-error"
    ]
    assert finding.fixes == ()


def test_direct_if_form_only_renames() -> None:
    src = """static int f(struct device *dev)
{
	if (pm_runtime_get_sync(dev) < 0)
		return -EIO;
	return 0;
}
"""
    assert _fixed(src, "get-sync-without-put-on-error") == src.replace(
        "pm_runtime_get_sync", "pm_runtime_resume_and_get"
    )


def test_simple_dev_pm_ops_conversion() -> None:
    src = """static int __maybe_unused a_suspend(struct device *dev)
{
	return 0;
}

static int __maybe_unused a_resume(struct device *dev)
{
	return 0;
}

static SIMPLE_DEV_PM_OPS(a_pm_ops, a_suspend, a_resume);

static struct platform_driver a_driver = {
	.driver = {
		.name = "a",
		.pm = &a_pm_ops,
	},
};
"""
    expected = (
        src.replace("int __maybe_unused a_", "int a_")
        .replace("static SIMPLE_DEV_PM_OPS", "static DEFINE_SIMPLE_DEV_PM_OPS")
        .replace(".pm = &a_pm_ops", ".pm = pm_sleep_ptr(&a_pm_ops)")
    )
    assert _fixed(src, "deprecated-pm-ops-macro") == expected


def test_set_pm_ops_conversion_uses_pm_ptr_with_runtime_callbacks() -> None:
    src = """static int __maybe_unused b_suspend(struct device *dev)
{
	return 0;
}

static int __maybe_unused b_resume(struct device *dev)
{
	return 0;
}

static const struct dev_pm_ops b_pm_ops = {
	SET_SYSTEM_SLEEP_PM_OPS(b_suspend, b_resume)
	SET_RUNTIME_PM_OPS(b_suspend, b_resume, NULL)
};

static struct platform_driver b_driver = {
	.driver = {
		.name = "b",
		.pm = &b_pm_ops,
	},
};
"""
    expected = (
        src.replace("int __maybe_unused b_", "int b_")
        .replace("SET_SYSTEM_SLEEP_PM_OPS", "SYSTEM_SLEEP_PM_OPS")
        .replace("SET_RUNTIME_PM_OPS", "RUNTIME_PM_OPS")
        .replace(".pm = &b_pm_ops", ".pm = pm_ptr(&b_pm_ops)")
    )
    assert _fixed(src, "deprecated-pm-ops-macro") == expected


def test_no_conversion_fix_under_ifdef() -> None:
    src = """#ifdef CONFIG_PM_SLEEP
static int c_suspend(struct device *dev)
{
	return 0;
}
#endif

static const struct dev_pm_ops c_pm_ops = {
	SET_SYSTEM_SLEEP_PM_OPS(c_suspend, NULL)
};
"""
    findings = [
        f
        for f in analyze_source("t.c", src.encode(), Config())
        if f.rule == "deprecated-pm-ops-macro"
    ]
    assert findings and findings[0].fixes == ()


def test_msleep_fixes() -> None:
    src = """static int d_resume(struct device *dev)
{
	msleep(5);
	return 0;
}
static int d_suspend(struct device *dev)
{
	return 0;
}
static DEFINE_SIMPLE_DEV_PM_OPS(d_pm_ops, d_suspend, d_resume);
"""
    # one fix: wakes by 6 ms, never later than msleep(5) at any HZ (6 ms at HZ=1000); not
    # fsleep(5000), which is usleep_range(5000, 10000) up to 6.12
    assert "\tusleep_range(5000, 6000);\n" in _fixed(src, "msleep-under-20ms", 0)
    # an expression keeps its precedence; a member chain needs no parentheses
    expr = src.replace("msleep(5);", "msleep(D_MS-1);").replace(
        "static int d_resume", "#define D_MS 3\nstatic int d_resume"
    )
    assert "usleep_range((D_MS-1) * USEC_PER_MSEC, ((D_MS-1) + 1) * USEC_PER_MSEC)" in _fixed(
        expr, "msleep-under-20ms"
    )


def test_state_query_rename() -> None:
    src = """static int e_suspend_noirq(struct device *dev)
{
	if (pm_runtime_suspended(dev))
		return 0;
	return 0;
}
static int e_resume_noirq(struct device *dev)
{
	return 0;
}
static DEFINE_NOIRQ_DEV_PM_OPS(e_pm_ops, e_suspend_noirq, e_resume_noirq);
"""
    assert "if (pm_runtime_status_suspended(dev))" in _fixed(
        src, "runtime-pm-state-query-while-disabled"
    )

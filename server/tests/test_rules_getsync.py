"""get-sync-without-put-on-error: where the result goes, the callback slot table, quick fixes
applied and re-checked on real tree-sitter parses."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from model_helpers import KERNEL

from dpmlens.config.settings import Config
from dpmlens.core.findings import Finding, Severity
from dpmlens.engine.analyze import analyze_source
from dpmlens.rules.callback_release import load_release_table
from dpmlens.rules.fixes import apply_edits
from dpmlens.rules.loader import RuleError
from dpmlens.rules.ops_slots import Slot, slots_by_function
from dpmlens.syntax.parser import parse

RULE = "get-sync-without-put-on-error"


def _findings(src: str) -> list[Finding]:
    return [f for f in analyze_source("t.c", src.encode(), Config()) if f.rule == RULE]


def _fixed(src: str) -> str:
    """Apply the one finding's fix; the result must parse and no longer be reported."""
    (finding,) = _findings(src)
    assert finding.fixes, "no fix offered"
    out = apply_edits(src.encode(), finding.fixes[0].edits).decode()
    assert not parse(out.encode()).root_node.has_error
    assert _findings(out) == []
    return out


# --- quick fixes, applied -----------------------------------------------------------------

_PWM = """static int foo_request(struct pwm_chip *chip, struct pwm_device *pwm)
{
	return pm_runtime_get_sync(pwmchip_parent(chip));
}

static const struct pwm_ops foo_ops = {
	.request = foo_request,
};
"""


def test_returned_from_unreleased_slot_is_renamed() -> None:
    (finding,) = _findings(_PWM)
    assert finding.severity == Severity.WARNING
    assert "pwm_ops.request()" in finding.message
    assert _fixed(_PWM) == _PWM.replace("pm_runtime_get_sync", "pm_runtime_resume_and_get")


def test_returned_from_unknown_function_is_left_to_its_callers() -> None:
    assert _findings(_PWM.replace("struct pwm_ops", "struct foo_ops")) == []


def test_test_a_few_statements_later_is_fixed_with_its_condition() -> None:
    src = """static int f(struct foo *foo)
{
	int ret;

	ret = pm_runtime_get_sync(foo->dev);
	mutex_lock(&foo->lock);
	if (ret < 0) {
		mutex_unlock(&foo->lock);
		return ret;
	}
	ret = readl(foo->regs);
	mutex_unlock(&foo->lock);
	pm_runtime_put(foo->dev);
	return ret;
}
"""
    assert _fixed(src) == src.replace(
        "pm_runtime_get_sync(foo->dev)", "pm_runtime_resume_and_get(foo->dev)"
    ).replace("if (ret < 0)", "if (ret)")


def test_test_after_ifdef_else_only_renames() -> None:
    """`if (ret < 0)` also tests what the #else branch assigned: it is left as it is."""
    src = """static int f(struct foo *foo)
{
	int ret;

#ifdef CONFIG_PM
	ret = pm_runtime_get_sync(foo->dev);
#else
	ret = foo_clk_enable(foo);
#endif
	if (ret < 0)
		return ret;
	writel(1, foo->regs);
	pm_runtime_put(foo->dev);
	return 0;
}
"""
    assert _fixed(src) == src.replace("pm_runtime_get_sync", "pm_runtime_resume_and_get")


def test_warn_on_goto_label_without_put_is_renamed() -> None:
    src = """static irqreturn_t f(int irq, void *data)
{
	struct foo *foo = data;
	int ret;

	ret = pm_runtime_get_sync(foo->dev);
	if (WARN_ON(ret < 0))
		goto out;
	writel(1, foo->regs);
	pm_runtime_put(foo->dev);
out:
	return IRQ_HANDLED;
}
"""
    assert _fixed(src) == src.replace("pm_runtime_get_sync", "pm_runtime_resume_and_get")


@pytest.mark.parametrize(
    ("why", "body"),
    [
        ("the positive value is read", "if (ret < 0)\n\t\treturn ret;\n\tif (ret == 1)\n\t\tx();"),
        ("success test", "if (ret >= 0)\n\t\tx();\n\telse\n\t\treturn ret;"),
        ("-EACCES goes on", "if (ret < 0 && ret != -EACCES)\n\t\treturn ret;"),
    ],
)
def test_no_fix_where_the_edit_would_change_behaviour(why: str, body: str) -> None:
    src = f"""static int f(struct foo *foo)
{{
	int ret;

	ret = pm_runtime_get_sync(foo->dev);
	{body}
	pm_runtime_put(foo->dev);
	return 0;
}}
"""
    (finding,) = _findings(src)
    assert finding.severity == Severity.WARNING and finding.fixes == (), why


# --- paired callbacks: the release half does the put ---------------------------------------

_ENABLE = """static void foo_enable(struct drm_bridge *bridge)
{
	struct foo *foo = to_foo(bridge);
	int ret;

	ret = pm_runtime_get_sync(foo->dev);
	if (ret < 0)
		return;
	writel(1, foo->regs);
}

static void foo_disable(struct drm_bridge *bridge)
{
	pm_runtime_put(to_foo(bridge)->dev);
}

static const struct STRUCT foo_funcs = {
	.enable = foo_enable,
	.disable = foo_disable,
};
"""


def test_paired_enable_is_silent_and_unknown_void_is_info() -> None:
    assert _findings(_ENABLE.replace("STRUCT", "drm_bridge_funcs")) == []
    (finding,) = _findings(_ENABLE.replace("STRUCT", "foo_funcs"))
    assert finding.severity == Severity.INFO and finding.fixes == ()


def test_paired_enable_that_puts_itself_still_leaks() -> None:
    src = _ENABLE.replace("STRUCT", "drm_bridge_funcs").replace(
        "writel(1, foo->regs);\n", "writel(1, foo->regs);\n\tpm_runtime_put(foo->dev);\n"
    )
    (finding,) = _findings(src)
    assert finding.severity == Severity.WARNING
    _fixed(src)


# --- the slot lookup ----------------------------------------------------------------------


def _slots(src: str, known: dict[str, str] | None = None) -> dict[str, list[Slot]]:
    return slots_by_function(parse(src.encode()).root_node, known)


def test_slots_from_initializers_arrays_and_assignments() -> None:
    src = """
static const struct pwm_ops a_ops = { .request = a_req, .free = a_free };
static struct platform_driver a_driver = {
	.probe = a_probe,
	.driver = { .name = "a", .pm = &a_pm },
};
static struct foo_desc descs[] = { { .enable = d0_on }, { .enable = d1_on } };
static int setup(struct input_dev *input, struct foo *foo)
{
	input->open = a_open;
	foo->dma.device_alloc_chan_resources = a_alloc;
	foo->x.cb = a_other;
	return 0;
}
"""
    slots = _slots(src, {"device_alloc_chan_resources": "dma_device"})
    assert slots["a_req"] == [Slot("pwm_ops", "request", "a_ops")]
    assert slots["a_probe"] == [Slot("platform_driver", "probe", "a_driver")]
    assert "a_pm" not in slots  # nested initializer of another struct type
    assert slots["d1_on"] == [Slot("foo_desc", "enable", "descs[1]")]
    assert slots["a_open"] == [Slot("input_dev", "open", "input")]
    assert slots["a_alloc"] == [Slot("dma_device", "device_alloc_chan_resources", "foo->dma")]
    assert "a_other" not in slots  # base of unknown type, member not in the table
    assert slots["a_free"] == [Slot("pwm_ops", "free", "a_ops")]


# --- the table ----------------------------------------------------------------------------


def test_table_facts_match_globs_and_pairs() -> None:
    table = load_release_table()
    assert table.unreleased("i2c_driver", "probe") is not None
    assert table.unreleased("pwm_ops", "free") is None
    fact = table.pairing("drm_bridge_funcs", "atomic_pre_enable")
    assert fact is not None and fact.release == "atomic_post_disable"
    assert table.unique_members()["device_alloc_chan_resources"] == "dma_device"
    assert "probe" not in table.unique_members()  # glob type: never guessed


def test_every_citation_points_at_the_member_in_linux_6_12() -> None:
    table = load_release_table()
    facts = [*table.not_released, *table.paired]
    assert facts
    checked = 0
    for fact in facts:
        m = re.match(r"([\w./-]+\.[ch]):(\d+)(?:-(\d+))?", fact.cite)
        assert m, f"{fact.slot}: citation {fact.cite!r} is not file:line"
        path = KERNEL / m.group(1)
        if not path.is_file():
            continue  # only drivers/ and include/ are extracted here
        lines = path.read_text(errors="replace").splitlines()
        first, last = int(m.group(2)), int(m.group(3) or m.group(2))
        cited = "\n".join(lines[first - 1 : last])
        word = fact.member.split("_")[-1] if fact.member != "probe" else "probe"
        assert word in cited, f"{fact.slot}: {m.group(0)} does not mention {word!r}"
        checked += 1
    if checked == 0:
        pytest.skip(f"{KERNEL} not found: extract linux-source-6.12 to check the citations")


def test_broken_table_is_one_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "tables").mkdir()
    (tmp_path / "tables" / "callback-release.yaml").write_text(
        "paired:\n  - slot: drm_bridge_funcs.enable\n    cite: x.c:1\n"
    )
    with pytest.raises(RuleError, match="callback-release.yaml.*needs 'release'"):
        load_release_table(tmp_path)


# --- is the positive value read after the test? --------------------------------------------

_AFTER = """static int f(struct foo *foo)
{
	int ret;

	ret = pm_runtime_get_sync(foo->dev);
	if (ret < 0)
		goto out;
	AFTER
	pm_runtime_put(foo->dev);
	return 0;
out:
	return ret;
}
"""


@pytest.mark.parametrize(
    ("after", "fixable"),
    [
        # a goto that sets the value first (cdn-dp shape)
        ("if (!foo->rate) {\n\t\tret = -EINVAL;\n\t\tgoto out;\n\t}", True),
        # a write and read inside a block (venus shape), then the label is not reached
        ("if (foo->v4) {\n\t\tret = foo_ctl(foo);\n\t\tif (ret)\n\t\t\treturn ret;\n\t}", True),
        # a goto that carries the value 1 to `return ret;`
        ("if (!foo->rate)\n\t\tgoto out;", False),
        # a conditional write does not hide the read after it
        ("if (foo->v4)\n\t\tret = foo_ctl(foo);\n\tfoo->last = ret;", False),
    ],
)
def test_fix_only_when_the_value_is_dead_after_the_test(after: str, fixable: bool) -> None:
    src = _AFTER.replace("AFTER", after)
    (finding,) = _findings(src)
    assert bool(finding.fixes) is fixable
    if fixable:
        _fixed(src)

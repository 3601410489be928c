"""Fixed-delay totals are the worst single path through the callback and its helpers:
exclusive branches count once, `if`s without `else` are named as conditional, loops are no
fixed total (rules/delay_paths.py, as delay-beyond-spec words it)."""

from __future__ import annotations

from pathlib import Path

import tree_sitter as ts

from dpmlens.config.settings import Config
from dpmlens.engine.analyze import analyze_source
from dpmlens.rules import cnav
from dpmlens.rules.delay_paths import (
    PathCost,
    error_exit,
    only_when,
    path_conditions,
    path_cost,
)
from dpmlens.syntax.parser import parse

FIXTURES = Path(__file__).resolve().parents[2] / "test-fixtures" / "rules"


def _cost(body: str) -> PathCost:
    """The path cost of `void f(void) {body}` where msleep(N) costs N ms."""
    tree = parse(f"void f(int a, int b)\n{{\n{body}\n}}\n".encode())
    func = tree.root_node.named_children[0]

    def leaf(call: ts.Node) -> PathCost | None:
        if cnav.text(call.child_by_field_name("function")) != "msleep":
            return None
        args = call.child_by_field_name("arguments")
        return PathCost(float(cnav.text(args).strip("()")))

    return path_cost(func.child_by_field_name("body"), leaf)


def test_sequence_adds_and_exclusive_branches_count_once() -> None:
    assert _cost("msleep(10); msleep(20);").fixed == 30
    assert _cost("if (a) msleep(100); else msleep(200); msleep(5);").fixed == 205
    assert _cost("if (a) msleep(10); else if (b) msleep(30); else msleep(20);").fixed == 30
    assert _cost("x = a ? msleep(7) : msleep(9);").fixed == 9
    switch = "switch (a) { case 1: msleep(50); break; case 2: msleep(80); break; }"
    assert _cost(switch).fixed == 80


def test_if_without_else_is_conditional_and_named() -> None:
    cost = _cost("msleep(10);\nif (a & QUIRK_SLOW)\n\tmsleep(1500);")
    assert cost.fixed == 10
    assert cost.conditional == (("a & QUIRK_SLOW", 1500.0),)
    # two blocks under the same condition add up; exclusive ones do not
    cost = _cost("if (a) msleep(500);\nmsleep(1);\nif (a) msleep(1500);")
    assert cost.fixed == 1 and cost.conditional == (("a", 2000.0),)
    cost = _cost("if (b) { if (a) msleep(500); } else { if (a) msleep(1500); }")
    assert cost.conditional == (("a", 1500.0),)
    # the else-less tail of an else-if chain keeps its own condition
    cost = _cost("if (a) msleep(10); else if (b) msleep(40);")
    assert cost.fixed == 10 and cost.conditional == (("b", 40.0),)


def test_loops_are_no_fixed_total() -> None:
    for body in (
        "while (a--) { msleep(30); }",
        "do { msleep(30); } while (a);",
        "for (a = 0; a < 3; a++) { if (ready(x)) break; msleep(30); }",  # a poll
        "for (a = 0; !ready(x); a++) msleep(30);",
    ):
        cost = _cost(body)
        assert cost.fixed == 0 and cost.looped and not cost.repeated, body
    assert not _cost("for (a = 0; a < 3; a++) b++;").looped


def test_a_counted_loop_repeats_its_body_per_iteration() -> None:
    # issue 31 (max310x): a loop over the ports pays the body's wait on every iteration
    cost = _cost("for (a = 0; a < s->nr; a++) { b(); msleep(30); msleep(20); }")
    assert cost.fixed == 0 and not cost.looped
    assert cost.repeated == (("for (a = 0; a < s->nr; a++)", 50.0),)
    # a conditional wait in it is no count per iteration
    cost = _cost("for (a = 0; a < 3; a++) { msleep(30); if (q) msleep(100); }")
    assert cost.repeated == (("for (a = 0; a < 3; a++)", 30.0),) and cost.looped
    # under an if, the loop's cost is no fixed count of the cycle either
    assert _cost("if (q) for (a = 0; a < 3; a++) msleep(30);").looped


def test_callback_total_follows_helpers_and_names_conditions() -> None:
    path = FIXTURES / "delay-beyond-spec-paths.c"
    found = [
        f
        for f in analyze_source(str(path), path.read_bytes(), Config())
        if f.rule == "delay-beyond-spec"
    ]
    assert found
    # 200 (worst of if/else) + 80 (worst switch case) + 40 (helper) = 320; not the 3,180 ms
    # that adding up every delay gives
    # the loop runs only past `if (baz->model == 7) { ...; return 0; }` (a variant's normal
    # way out): no count per cycle, so it is named as not counted
    cycle = (
        "the longest path through baz_resume() waits 320 ms in fixed delays per resume,"
        " + 1800 ms only with `baz->quirks & BAZ_QUIRK_SLOW_WAKE`, + 1000 ms only with `ret`,"
        " + 350 ms under 3 other conditions (waits in loops not counted)"
    )
    assert all(f.message.endswith(cycle) for f in found), found[0].message
    assert any(
        "msleep(30) waits 30 ms on each iteration of `for (i = 0; i < 3; i++)` with"
        " `!(baz->model == 7)`" in f.message
        for f in found
    )
    assert any("msleep(60) waits 60 ms only with `ret == 2`" in f.message for f in found)
    assert any("msleep(250) waits 250 ms only with `baz->model == 7`" in f.message for f in found)


def test_a_helper_called_on_both_branches_counts_once() -> None:
    src = b"""
static void q_wait(void) { msleep(50); }
static int q_resume(struct device *dev)
{
	if (dev->power.x)
		q_wait();
	else
		q_wait();
	q_wait();
	if (dev->power.y)
		udelay(50);
	return 0;
}
static int q_suspend(struct device *dev) { return 0; }
static DEFINE_SIMPLE_DEV_PM_OPS(q_pm_ops, q_suspend, q_resume);
"""
    found = [f for f in analyze_source("q.c", src, Config()) if f.rule == "delay-beyond-spec"]
    assert found
    assert found[0].message.endswith(
        "the longest path through q_resume() waits 100 ms in fixed delays per resume"
    ), "a sub-millisecond conditional wait is not worth naming"


def _call(src: str, name: str = "msleep") -> ts.Node:
    tree = parse(src.encode())
    stack = [tree.root_node]
    while stack:
        n = stack.pop()
        if n.type == "call_expression" and cnav.text(n.child_by_field_name("function")) == name:
            return n
        stack.extend(n.children)
    raise AssertionError(f"no call to {name}")


def test_error_exits_passed_are_the_success_path() -> None:
    # issue 31 (pcie-mediatek-gen3): the second mdelay(100) is not "when `!(err)`"
    src = """int f(struct x *p) {
        int err = init(p);
        if (err) { dev_err(p->dev, "no\\n"); return err; }
        err = on(p);
        if (err)
            goto err_phy_on;
        if (p->mode == 3)
            return 0;
        msleep(100);
        return 0;
    err_phy_on:
        return err;
    }"""
    assert path_conditions(_call(src)) == ["!(p->mode == 3)"]
    assert error_exit(_call(src, "dev_err").parent.parent.parent)  # the first `if`


def test_a_poll_returning_its_count_is_no_error_exit() -> None:
    src = """int f(struct x *p) {
        int i;
        for (i = 0; i < 10; i++) {
            if ((readl(p->base) & 1) == 1)
                return i;
            msleep(10);
        }
        return -ETIMEDOUT;
    }"""
    assert path_conditions(_call(src)) == ["!((readl(p->base) & 1) == 1)"]


def test_a_caller_constant_decides_the_condition() -> None:
    src = "void f(struct p *port, int on) { update(port); if (on) msleep(50); }"
    call = _call(src)

    def decide(n: ts.Node) -> int | None:
        return 1 if cnav.text(n).strip("() ") == "on" else None

    assert only_when(call) == "on"
    assert only_when(call, decide) is None
    assert path_conditions(call, decide) == []


def test_a_goto_to_a_label_that_returns_0_is_a_normal_exit() -> None:
    # i740fb_resume(): `if (par->ref_count == 0) goto fail;` ... `fail: unlock; return 0;`
    src = """int f(struct p *par) {
        lock(par);
        if (par->ref_count == 0)
            goto fail;
        msleep(50);
    fail:
        unlock(par);
        return 0;
    }"""
    assert path_conditions(_call(src)) == ["!(par->ref_count == 0)"]


def test_a_wait_in_either_branch_of_an_if_else_names_its_branch() -> None:
    """airo_pci_resume() (6.1 airo.c:5672): `if (prev_state != PCI_D1) {...} else {...;
    msleep(100); }` waits only when the device resumed from D1; a judge found the hint's
    "waits 100 ms in the resume callback" false, as if every resume paid it."""
    src = b"""
static int r_resume(struct device *dev)
{
	int prev_state = dev->power.x;

	if (prev_state != 1) {
		r_reset(dev);
	} else {
		r_ack(dev);
		msleep(100);
	}
	if (prev_state == 3)
		msleep(60);
	else
		r_other(dev);
	return 0;
}
static int r_suspend(struct device *dev) { return 0; }
static DEFINE_SIMPLE_DEV_PM_OPS(r_pm_ops, r_suspend, r_resume);
"""
    found = [f for f in analyze_source("r.c", src, Config()) if f.rule == "delay-beyond-spec"]
    messages = sorted(f.message for f in found)
    assert len(messages) == 2, messages
    assert messages[0].startswith("msleep(100) waits 100 ms only with `!(prev_state != 1)`")
    assert messages[1].startswith("msleep(60) waits 60 ms only with `prev_state == 3`")


def test_a_pointer_call_through_a_field_of_another_struct_type_reaches_no_initializer() -> None:
    """isp1362-hcd.c (6.12): `isp1362_hcd->board->reset(dev, 1)` calls the board's hook
    (`struct isp1362_platform_data *board`), not the `.reset = isp1362_hc_reset` of the file's
    `struct hc_driver`; a judge found the chain through it false. `->soc->power_up()` with
    `soc` of the initializer's own type still reaches its targets."""
    src = b"""
struct hc_driver { int (*reset)(struct device *); };
struct board_data { void (*reset)(struct device *, int); };
struct soc_data { int (*power_up)(struct device *); };
struct priv { struct board_data *board; const struct soc_data *soc; };
static int h_reset(struct device *dev) { msleep(80); return 0; }
static int h_power_up(struct device *dev) { msleep(70); return 0; }
static const struct hc_driver h_driver = { .reset = h_reset };
static const struct soc_data h_soc = { .power_up = h_power_up };
static int h_resume(struct device *dev)
{
	struct priv *p = dev_get_drvdata(dev);

	p->board->reset(dev, 1);
	return p->soc->power_up(dev);
}
static int h_suspend(struct device *dev) { return 0; }
static DEFINE_SIMPLE_DEV_PM_OPS(h_pm_ops, h_suspend, h_resume);
"""
    found = [f for f in analyze_source("h.c", src, Config()) if f.rule == "delay-beyond-spec"]
    assert [f.message.split(" waits")[0] for f in found] == ["msleep(70)"], found


def test_an_ifndef_that_returns_is_a_condition_of_what_follows() -> None:
    """aty128_pci_suspend_late() (6.12 aty128fb.c:2371) returns 0 at once unless
    CONFIG_PPC_PMAC: the busy-wait after it runs only on PowerMac builds."""
    body = _call(
        "static int s(struct device *dev)\n{\n#ifndef CONFIG_PPC_PMAC\n\treturn 0;\n#endif\n"
        "\tif (dev->x)\n\t\treturn 0;\n\tmdelay(100);\n\treturn 0;\n}\n",
        "mdelay",
    )
    assert path_conditions(body) == ["#ifdef CONFIG_PPC_PMAC", "!(dev->x)"]


def test_a_wait_before_a_pcie_host_s_reset_gpio_is_t_pvperl(tmp_path: Path) -> None:
    """imx6 (6.1 pci-imx6.c:759): msleep(100) right before the reset GPIO is released, in a
    PCIe host driver, is the power-stable-to-PERST# wait (at its minimum: no finding); the
    same lines in another driver state no spec minimum."""
    src = b"""
static void p_deassert(struct p *p)
{
	msleep(100);
	gpio_set_value_cansleep(p->reset_gpio, 1);
}
static int p_resume_noirq(struct device *dev) { p_deassert(dev_get_drvdata(dev)); return 0; }
static const struct dev_pm_ops p_pm = { .resume_noirq = p_resume_noirq };
"""
    pci = analyze_source("drivers/pci/controller/p.c", src, Config())
    other = analyze_source("drivers/input/touchscreen/p.c", src, Config())
    assert not [f for f in pci if f.rule == "delay-beyond-spec"]
    assert [f for f in other if f.rule == "delay-beyond-spec"]


def test_a_device_that_needs_extra_time_admits_no_margin() -> None:
    """tifm_7xx1.c:100 (6.12): "xd needs some extra time before power on" states what the
    card needs; "20 ms extra, to be safe" admits a margin (a judge found the first misread)."""
    def message(comment: str) -> str:
        src = f"""
static int t_resume(struct device *dev)
{{
	/* {comment} */
	msleep(40);
	return 0;
}}
static int t_suspend(struct device *dev) {{ return 0; }}
static DEFINE_SIMPLE_DEV_PM_OPS(t_pm_ops, t_suspend, t_resume);
""".encode()
        (f,) = [f for f in analyze_source("t.c", src, Config()) if f.rule == "delay-beyond-spec"]
        return f.message

    assert "no known spec minimum" in message("xd needs some extra time before power on")
    assert "admits padding" not in message("xd needs some extra time before power on")
    assert 'admits padding ("extra")' in message("20 ms extra, just for this board")


def test_a_wait_past_an_early_return_is_paid_only_past_it() -> None:
    """tifm_7xx1_toggle_sock_power(): `if (!(OCCUPIED & s_state)) return 0;` before the
    waits: an empty socket pays none of them, so the loop over sockets has no count per
    cycle and the per-iteration wait names the condition (r8, tifm_7xx1.c:108)."""
    cost = _cost("msleep(5);\nif (!(a & 4))\n\treturn 0;\nmsleep(20);")
    assert cost.fixed == 5 and cost.conditional == (("a & 4", 20.0),)
    # an error exit passed is the success path: what follows stays fixed
    assert _cost("if (a)\n\treturn -EIO;\nmsleep(20);").fixed == 20
    # a loop past the early return is no count per cycle any more
    looped = _cost("if (a == 2)\n\treturn 0;\nfor (b = 0; b < 4; b++)\n\tmsleep(10);")
    assert looped.looped and not looped.repeated and not looped.fixed
    # a null guard on a local pointer is no state a device is in: what follows stays fixed
    assert _cost("if (!a)\n\treturn 0;\nmsleep(20);").fixed == 20
    path = FIXTURES / "delay-beyond-spec-early-return.c"
    found = [f for f in analyze_source(str(path), path.read_bytes(), Config())
             if f.rule == "delay-beyond-spec"]  # fmt: skip
    assert len(found) == 1, [f.message for f in found]
    assert "on each iteration of `for (i = 0; i < fm->nr; i++)` with" in found[0].message
    assert "`sock_state & SOCK_OCCUPIED`" in found[0].message
    assert "per iteration of" not in found[0].message.split(";")[-1]


def test_a_legacy_resume_that_returns_after_a_suspend_waits_only_after_hibernation() -> None:
    """isp1362_resume(): `if (power_state.event == PM_EVENT_SUSPEND) { ...; return 0; }`
    with its suspend storing the message it got: the waits after it run on thaw/restore only,
    and the message says so and prices them per resume from hibernation (r8)."""
    path = FIXTURES / "busy-wait-in-pm-callback-legacy-state.c"
    found = {f.line: f for f in analyze_source(str(path), path.read_bytes(), Config())}
    spin = next(f for f in found.values() if f.rule == "busy-wait-in-pm-callback")
    assert "only when it resumes from hibernation (thaw/restore)" in spin.message
    assert "paid once per system resume" not in spin.message
    short = next(f for f in found.values() if f.rule == "msleep-under-20ms")
    assert "only when it resumes from hibernation" in short.message


_EITHER = b"""
#include <linux/delay.h>
#include <linux/pci.h>

struct hba { int cardtype; int pm; void __iomem *regs; };

static void hba_stop(struct hba *hba, int how)
{
	writel(how, hba->regs);
	msleep(30);
}

static int hba_suspend(struct device *dev)
{
	struct hba *hba = dev_get_drvdata(dev);

	if ((hba->cardtype == 1 || hba->cardtype == 2) && hba->pm)
		hba_stop(hba, 3);
	else
		hba_stop(hba, 0);
	return 0;
}

static int hba_resume(struct device *dev)
{
	return 0;
}

static DEFINE_SIMPLE_DEV_PM_OPS(hba_pm_ops, hba_suspend, hba_resume);
static struct pci_driver hba_driver = { .name = "hba", .driver.pm = pm_sleep_ptr(&hba_pm_ops) };
module_pci_driver(hba_driver);
"""


def test_a_helper_called_in_both_branches_is_reached_without_their_condition() -> None:
    """stex_suspend(): `if (A) stex_hba_stop(hba, x); else stex_hba_stop(hba, y);` reaches
    the helper's wait either way, so A is no condition of it (r9, stex.c:1910)."""
    found = [f for f in analyze_source("hba.c", _EITHER, Config())
             if f.rule == "delay-beyond-spec"]  # fmt: skip
    assert found and all("only with" not in f.message for f in found), found[0].message
    assert "waits 30 ms in fixed delays per suspend" in found[0].message


def test_a_constant_whose_comment_names_a_datasheet_timing_parameter_has_a_known_minimum() -> None:
    """r10, pac1921.c:60-61: `/* Time to first communication after power up (tINT_T) */`
    over `#define PAC1921_POWERUP_TIME_MS 20`: the wait is that parameter, no hint."""
    src = b"""
#include <linux/delay.h>
#include <linux/regulator/consumer.h>
/* Time to first communication after power up (tINT_T) */
#define PM_POWERUP_MS		20
#define PM_OTHER_MS		20

static int pm_resume(struct device *dev)
{
	struct pm_priv *priv = dev_get_drvdata(dev);
	int ret = regulator_enable(priv->vdd);

	if (ret)
		return ret;
	msleep(PM_POWERUP_MS);
	msleep(PM_OTHER_MS);
	return 0;
}

static DEFINE_SIMPLE_DEV_PM_OPS(pm_ops, NULL, pm_resume);
static struct i2c_driver pm_driver = { .driver = { .name = "pm", .pm = pm_sleep_ptr(&pm_ops) } };
module_i2c_driver(pm_driver);
"""
    found = [f for f in analyze_source("pm.c", src, Config()) if f.rule == "delay-beyond-spec"]
    assert [f.message.split(" ")[0] for f in found] == ["msleep(PM_OTHER_MS)"]

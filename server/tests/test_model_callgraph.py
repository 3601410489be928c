"""pm_callbacks roles (tables, legacy, subsystem ops) and the call walker: depth, cycles,
chains, the cross-file resolver, path-aware pruning and calls through function pointers."""

from __future__ import annotations

from model_helpers import build

from dpmlens.core.findings import ChainStep
from dpmlens.model.callgraph import pm_callbacks
from dpmlens.model.types import FileModel, FunctionDef
from dpmlens.model.walker import Walker, chain_steps

SRC = """
static int level3(int x) { return enable_irq_wake(x); }
static int level2(int x) { return level3(x); }
static int level1(int x) { udelay(5); return level2(x); }
static int ping(int n);
static int pong(int n) { return n ? ping(n - 1) : msleep(1); }
static int ping(int n) { return pong(n); }
static int foo_suspend_noirq(struct device *dev)
{
	level1(1);
	ping(3);
	return external_helper(dev);
}
static int foo_resume_noirq(struct device *dev) { return 0; }
static int foo_rt(struct device *dev) { return 0; }
static const struct dev_pm_ops foo_pm = {
	NOIRQ_SYSTEM_SLEEP_PM_OPS(foo_suspend_noirq, foo_resume_noirq)
	RUNTIME_PM_OPS(foo_rt, foo_rt, NULL)
};
static struct platform_driver foo_driver = {
	.driver = { .name = "foo", .pm = pm_ptr(&foo_pm) },
	.suspend = foo_legacy,
};
"""


def _reach(model: FileModel, fn: str, depth: int = 3, resolver=None) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for r in Walker(model, depth, resolver).reach(fn):
        out.setdefault(r.call.callee, r.functions())
    return out


def test_pm_callbacks_roles() -> None:
    m = build(SRC)
    cbs = pm_callbacks(m)
    assert [r.member for r in cbs["foo_suspend_noirq"]] == [
        "suspend_noirq",
        "freeze_noirq",
        "poweroff_noirq",
    ]
    r = cbs["foo_suspend_noirq"][0]
    assert (r.table, r.via, r.driver, r.driver_name, r.bus, r.legacy) == (
        "foo_pm",
        "NOIRQ_SYSTEM_SLEEP_PM_OPS",
        "foo_driver",
        "foo",
        "platform",
        False,
    )
    assert {r.member for r in cbs["foo_rt"]} == {"runtime_suspend", "runtime_resume"}
    (legacy,) = cbs["foo_legacy"]
    assert legacy.legacy and legacy.member == "suspend" and legacy.via == "legacy"
    assert legacy.span.line == 22


def test_depth_limits_helpers() -> None:
    m = build(SRC)
    assert set(_reach(m, "foo_suspend_noirq", depth=0)) == {"level1", "ping", "external_helper"}
    d1 = _reach(m, "foo_suspend_noirq", depth=1)
    assert d1["udelay"] == ["foo_suspend_noirq", "level1"] and "level3" not in d1
    d3 = _reach(m, "foo_suspend_noirq", depth=3)
    assert d3["enable_irq_wake"] == ["foo_suspend_noirq", "level1", "level2", "level3"]


def test_cycles_terminate_and_no_function_reentered_on_its_path() -> None:
    m = build(SRC)
    reached = list(Walker(m, 50).reach("foo_suspend_noirq"))
    funcs = [r.call.caller for r in reached]
    # ping(3) binds n = 3 all the way down: pong's `n ? ping(n - 1) : msleep(1)` never sleeps
    assert funcs.count("ping") == 1 and funcs.count("pong") == 1
    assert "msleep" not in {r.call.callee for r in reached}
    unbound = build(SRC.replace("ping(3);", "ping(x);"))
    chain = next(
        r for r in Walker(unbound, 50).reach("foo_suspend_noirq") if r.call.callee == "msleep"
    )
    assert chain.functions() == ["foo_suspend_noirq", "ping", "pong"]


def test_chain_steps_point_at_each_call() -> None:
    m = build(SRC)
    r = next(r for r in Walker(m).reach("foo_suspend_noirq") if r.call.callee == "enable_irq_wake")
    root = m.functions["foo_suspend_noirq"]
    steps = chain_steps(r, root.name, m.path, root.name_span, "suspend_noirq callback")
    assert all(isinstance(s, ChainStep) for s in steps)
    assert [s.function for s in steps] == [
        "foo_suspend_noirq",
        "foo_suspend_noirq",
        "level1",
        "level2",
        "level3",
    ]
    assert steps[0].note == "suspend_noirq callback"
    assert steps[1].note == "calls level1()" and steps[-1].note == "calls enable_irq_wake()"
    assert [s.span.line for s in steps] == [8, 10, 4, 3, 2]
    assert steps[-1].span == r.call.span


class _Resolver:
    def __init__(self, other: FileModel) -> None:
        self.other = other
        self.asked: list[str] = []

    def lookup(self, name: str) -> tuple[FileModel, FunctionDef] | None:
        self.asked.append(name)
        f = self.other.functions.get(name)
        return (self.other, f) if f is not None else None


def test_resolver_follows_into_other_files() -> None:
    m = build(SRC)
    other = build(
        "int external_helper(struct device *dev) { return msleep(50); }\n", "drivers/misc/b.c"
    )
    res = _Resolver(other)
    reached = list(Walker(m, 3, res).reach("foo_suspend_noirq"))
    r = next(r for r in reached if r.call.callee == "msleep" and r.model.path.endswith("b.c"))
    assert r.functions() == ["foo_suspend_noirq", "external_helper"]
    assert r.call.args == ("50",)
    root = m.functions["foo_suspend_noirq"]
    steps = chain_steps(r, root.name, m.path, root.name_span, "")
    assert steps[-1].path == "drivers/misc/b.c"
    assert "level1" not in res.asked  # same-file helpers are not looked up elsewhere


def test_lazy_calls_match_full_list() -> None:
    lazy = build(SRC)
    per_function = {f: lazy.calls_in(f) for f in lazy.functions}
    full = build(SRC)
    assert full.calls  # forces the whole-file list
    for f, calls in per_function.items():
        assert full.calls_in(f) == calls
    # file-scope "calls" are the macros tree-sitter sees in initializers
    assert {c.callee for c in full.calls if c.caller is None} == {
        "NOIRQ_SYSTEM_SLEEP_PM_OPS",
        "RUNTIME_PM_OPS",
        "pm_ptr",
    }


def test_calls_to_and_callee_names_match_full_list() -> None:
    lazy = build(SRC)
    names = lazy.callee_names()
    picked = lazy.calls_to("msleep", "enable_irq_wake", "pm_ptr", "not_called")
    full = build(SRC)
    assert names == {c.callee for c in full.calls}
    assert picked == [c for c in full.calls if c.callee in ("msleep", "enable_irq_wake", "pm_ptr")]
    assert full.calls_to("msleep") == [c for c in full.calls if c.callee == "msleep"]
    # a name inside a comment or as a plain identifier is not a call
    m = build("/* msleep(1) */\nvoid f(void) { int msleep = 2; g(msleep); }\n")
    assert m.calls_to("msleep") == [] and [c.callee for c in m.calls_to("g")] == ["g"]


def test_call_sites_behave_like_plain_call_sites() -> None:
    import pickle
    from dataclasses import fields, replace

    from dpmlens.model.types import CallSite

    (c,) = build(SRC).calls_to("udelay")
    plain = CallSite(**{f.name: getattr(c, f.name) for f in fields(CallSite)})
    assert plain == c and c == plain and hash(plain) == hash(c)
    assert {c, plain} == {c}
    back = pickle.loads(pickle.dumps(c))
    assert type(back) is CallSite and back == c
    assert (c.args, c.span.line, c.callee_span.end_column) == (("5",), 4, 34)
    assert repr(c) == repr(plain)
    moved = replace(c, caller="elsewhere")
    assert moved.caller == "elsewhere" and moved.span == c.span and moved != c


PATHS = """
#define MODE_FULL 2
static void full_reset(struct foo *f) { msleep(100); }
static void light_reset(struct foo *f) { usleep_range(10, 20); }
static void foo_set_suspend(struct foo *f, bool suspend)
{
	if (suspend) {
		light_reset(f);
	} else {
		full_reset(f);
	}
	if (!suspend)
		return;
	enable_irq_wake(f->irq);
}
static void foo_mode(struct foo *f, int mode)
{
	switch (mode) {
	case 1:
		mdelay(1);
		break;
	case MODE_FULL:
		mdelay(2);
		/* fall through */
	case 3:
		mdelay(3);
		break;
	default:
		mdelay(4);
	}
	if (mode == 1 && f->quirk)
		udelay(5);
}
static void foo_changes(struct foo *f, int on)
{
	on = !on;
	if (on)
		pm_runtime_get_sync(f->dev);
}
static int foo_suspend(struct device *dev)
{
	struct foo *f = dev_get_drvdata(dev);

	foo_set_suspend(f, true);
	foo_mode(f, MODE_FULL);
	foo_changes(f, 1);
	return 0;
}
static int foo_resume(struct device *dev)
{
	foo_set_suspend(dev_get_drvdata(dev), false);
	return 0;
}
"""


def _callees(model: FileModel, fn: str) -> list[str]:
    return [r.call.callee for r in Walker(model).reach(fn)]


def test_constant_arguments_prune_dead_branches() -> None:
    m = build(PATHS)
    down = _callees(m, "foo_suspend")
    assert "usleep_range" in down and "msleep" not in down and "enable_irq_wake" in down
    up = _callees(m, "foo_resume")
    # resume: the else branch, and the early `if (!suspend) return;` stops before the wake call
    assert "msleep" in up and "usleep_range" not in up and "enable_irq_wake" not in up


def test_switch_cases_follow_the_bound_value_and_fall_through() -> None:
    m = build(PATHS)
    assert [c for c in _callees(m, "foo_suspend") if c in ("mdelay", "udelay")] == [
        "mdelay",
        "mdelay",
    ]  # case MODE_FULL (2) and its fall-through into case 3; not 1, not default
    delays = [r for r in Walker(m).reach("foo_suspend") if r.call.callee == "mdelay"]
    assert [r.call.args for r in delays] == [("2",), ("3",)]


def test_a_parameter_the_helper_changes_is_not_bound() -> None:
    m = build(PATHS)
    assert "pm_runtime_get_sync" in _callees(m, "foo_suspend")  # `on = !on` in the helper


POINTERS = """
struct soc_ops { int (*power_up)(struct pcie *p); int (*power_down)(struct pcie *p); };
static int a_power_up(struct pcie *p) { return pm_runtime_get_sync(p->dev); }
static int b_power_up(struct pcie *p) { return 0; }
static int a_power_down(struct pcie *p) { return 0; }
static const struct soc_ops a_ops = { .power_up = a_power_up, .power_down = a_power_down };
static const struct soc_ops b_ops = { .power_up = &b_power_up };
static struct soc_ops mutable_ops = { .power_down = b_power_up };
static int foo_resume_noirq(struct device *dev)
{
	struct pcie *pcie = dev_get_drvdata(dev);

	pcie->soc->power_up(pcie);
	return pcie->soc->power_down(pcie);
}
"""


def test_calls_through_static_const_ops_reach_each_target() -> None:
    m = build(POINTERS)
    reached = list(Walker(m).reach("foo_resume_noirq"))
    via = [(r.call.callee, r.call.via_pointer) for r in reached if r.call.via_pointer]
    # the non-const struct's power_down = b_power_up is not a target (it may be changed)
    assert via == [("a_power_up", "power_up"), ("b_power_up", "power_up"),
                   ("a_power_down", "power_down")]  # fmt: skip
    get = next(r for r in reached if r.call.callee == "pm_runtime_get_sync")
    assert get.functions() == ["foo_resume_noirq", "a_power_up"]
    hop = get.hops[0].call
    assert hop.span.line == 13 and m.source[hop.start_byte : hop.end_byte] == (
        b"pcie->soc->power_up(pcie)"
    )


SUBSYS = """
static int icm_suspend_noirq(struct tb *tb) { return 0; }
static int icm_runtime_resume(struct tb *tb) { return 0; }
static const struct tb_cm_ops icm_ops = {
	.suspend_noirq = icm_suspend_noirq,
	.runtime_resume = icm_runtime_resume,
	.handle_event = icm_handle_event,
};
"""


def test_subsystem_ops_members_are_callbacks_of_their_phase() -> None:
    roles = pm_callbacks(build(SUBSYS))
    (r,) = roles["icm_suspend_noirq"]
    assert (r.member, r.table, r.via) == ("suspend_noirq", "icm_ops", "tb_cm_ops.suspend_noirq")
    assert r.span.line == 5
    assert [x.member for x in roles["icm_runtime_resume"]] == ["runtime_resume"]
    assert "icm_handle_event" not in roles

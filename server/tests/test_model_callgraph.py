"""pm_callbacks roles and reachable_calls depth, cycles, chains and the cross-file resolver."""

from __future__ import annotations

from model_helpers import build

from dpmlens.findings import ChainStep
from dpmlens.model.callgraph import chain_steps, pm_callbacks, reachable_calls
from dpmlens.model.types import FileModel, FunctionDef

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
    return {
        c.callee: [h.function for h in hops]
        for hops, c in reachable_calls(model, fn, depth=depth, resolver=resolver)
    }


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


def test_cycles_terminate_and_each_function_entered_once() -> None:
    m = build(SRC)
    pairs = list(reachable_calls(m, "foo_suspend_noirq", depth=50))
    funcs = [hops[-1].function for hops, _ in pairs]
    assert funcs.count("ping") == 1 and funcs.count("pong") == 2  # pong calls ping and msleep
    chain = next(hops for hops, c in pairs if c.callee == "msleep")
    assert [h.function for h in chain] == ["foo_suspend_noirq", "ping", "pong"]


def test_chain_steps_point_at_each_call() -> None:
    m = build(SRC)
    hops, call = next(
        (h, c) for h, c in reachable_calls(m, "foo_suspend_noirq") if c.callee == "enable_irq_wake"
    )
    steps = chain_steps(hops, call, root_note="suspend_noirq callback")
    assert all(isinstance(s, ChainStep) for s in steps)
    assert [s.function for s in steps] == ["foo_suspend_noirq", "level1", "level2", "level3"]
    assert steps[0].note == "suspend_noirq callback: calls level1()"
    assert steps[-1].note == "calls enable_irq_wake()"
    assert [s.span.line for s in steps] == [10, 4, 3, 2]
    assert steps[-1].span == call.span


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
    pairs = list(reachable_calls(m, "foo_suspend_noirq", resolver=res))
    hops, call = next(
        (h, c) for h, c in pairs if c.callee == "msleep" and h[-1].path.endswith("b.c")
    )
    assert [h.function for h in hops] == ["foo_suspend_noirq", "external_helper"]
    assert call.args == ("50",)
    steps = chain_steps(hops, call)
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

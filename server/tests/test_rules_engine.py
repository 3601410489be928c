"""engine.analyze_source/analyze_model: configuration, chains, the resolver, spec overrides,
and the canonical real-kernel case (drivers/usb/core/hub.c) when the tree is present."""

from __future__ import annotations

from pathlib import Path

import pytest
from kernel_trees import K612

from dpmlens.config.settings import Config, RuleSetting
from dpmlens.core.findings import Severity
from dpmlens.engine.analyze import analyze_model, analyze_source
from dpmlens.model.build import build_model

FIXTURES = Path(__file__).resolve().parents[2] / "test-fixtures" / "rules"
KERNEL = K612


def _fixture(name: str, config: Config | None = None):
    path = FIXTURES / name
    return analyze_source(str(path), path.read_bytes(), config or Config())


def test_chain_names_callback_helper_and_call() -> None:
    findings = [f for f in _fixture("wake-setup-in-noirq.c") if f.rule == "wake-setup-in-noirq"]
    first = findings[0]
    assert "via foo_set_wake()" in first.message
    assert [s.function for s in first.chain] == [
        "foo_suspend_noirq",
        "foo_suspend_noirq",
        "foo_set_wake",
    ]
    assert first.chain[0].note == "suspend_noirq callback"
    assert first.chain[1].note == "calls foo_set_wake()"
    assert first.function == "foo_set_wake" and first.phase == "suspend_noirq"


def test_rules_can_be_disabled_restricted_and_reweighted() -> None:
    off = Config(rules={"wake-setup-in-noirq": RuleSetting(enabled=False)})
    assert not [
        f for f in _fixture("wake-setup-in-noirq.c", off) if f.rule == "wake-setup-in-noirq"
    ]
    only = Config(only_rules={"asymmetric-pm-callbacks"})
    assert {f.rule for f in _fixture("asymmetric-pm-callbacks.c", only)} == {
        "asymmetric-pm-callbacks"
    }
    louder = Config(rules={"deprecated-pm-ops-macro": RuleSetting(severity=Severity.ERROR)})
    found = _fixture("deprecated-pm-ops-macro.c", louder)
    assert found and all(f.severity == Severity.ERROR for f in found)


def test_helper_depth_limits_the_chain() -> None:
    shallow = Config(helper_depth=0)
    found = [
        f for f in _fixture("wake-setup-in-noirq.c", shallow) if f.rule == "wake-setup-in-noirq"
    ]
    assert not any("via" in f.message for f in found)


def test_spec_override_moves_the_minimum() -> None:
    base = [f for f in _fixture("delay-beyond-spec.c") if "TRSTRCY" in f.message]
    assert base and "40 ms beyond the 10 ms TRSTRCY minimum" in base[0].message
    relaxed = Config(spec_overrides={"TRSTRCY": 50.0})
    assert not [f for f in _fixture("delay-beyond-spec.c", relaxed) if "TRSTRCY" in f.message]


def test_resolver_follows_a_helper_into_another_file(tmp_path: Path) -> None:
    helper_src = b"""
void bar_arm_wake(struct bar *bar)
{
	enable_irq_wake(bar->irq);
}
"""
    main_src = b"""
static int bar_suspend_noirq(struct device *dev)
{
	bar_arm_wake(dev_get_drvdata(dev));
	return 0;
}
static int bar_resume_noirq(struct device *dev)
{
	return 0;
}
static const struct dev_pm_ops bar_pm_ops = {
	NOIRQ_SYSTEM_SLEEP_PM_OPS(bar_suspend_noirq, bar_resume_noirq)
};
"""
    helper = build_model(str(tmp_path / "bar-wake.c"), helper_src)
    main = build_model(str(tmp_path / "bar.c"), main_src)

    class Resolver:
        def lookup(self, name: str):
            fn = helper.functions.get(name)
            return (helper, fn) if fn else None

    assert not [f for f in analyze_model(main, Config()) if f.rule == "wake-setup-in-noirq"]
    found = [
        f for f in analyze_model(main, Config(), Resolver()) if f.rule == "wake-setup-in-noirq"
    ]
    assert len(found) == 1
    assert found[0].path == helper.path and found[0].line == 4
    assert [s.path for s in found[0].chain] == [main.path, main.path, helper.path]


def test_broken_and_empty_sources_do_not_raise() -> None:
    assert analyze_source("empty.c", b"", Config()) == []
    garbage = b"static int x(struct device *dev { msleep(1); \xff\xfe }}}} SIMPLE_DEV_PM_OPS(("
    analyze_source("garbage.c", garbage, Config())


@pytest.mark.skipif(
    not (KERNEL / "drivers/usb/core/hub.c").is_file(),
    reason=f"linux-source-6.12 not extracted at {K612}",
)
def test_hub_c_padded_usb_delays_are_reported() -> None:
    path = KERNEL / "drivers/usb/core/hub.c"
    found = [
        f
        for f in analyze_source(str(path), path.read_bytes(), Config())
        if f.rule == "delay-beyond-spec"
    ]
    reset = [f for f in found if "reset_recovery_time" in f.message]
    # the default branch of a quirk opt-out (USB_PORT_QUIRK_FAST_ENUM): a cost, not a defect
    assert reset and reset[0].severity == Severity.HINT
    assert "40 ms beyond the 10 ms TRSTRCY minimum" in reset[0].message
    assert "150 ms with `reset_recovery_time += 100`" in reset[0].message
    resume = [f for f in found if "USB_RESUME_TIMEOUT" in f.message]
    assert len(resume) >= 2
    assert all("20 ms beyond the 20 ms TDRSMDN minimum" in f.message for f in resume)


def test_prefilter_keywords_cover_spec_linked_delays() -> None:
    from dpmlens.engine.analyze import prefilter

    pf = prefilter()
    for word in (b"TRSTRCY", b"TATTDB", b"USB_RESUME_TIMEOUT", b"PCI_PM_D3COLD_WAIT"):
        assert word in pf.gated
    assert b"dev_pm_ops" in pf.words and b"pm_runtime_get_sync" in pf.words
    # a file whose only PM content is a padded spec delay still gets analyzed
    src = b"static void f(void)\n{\n\t/* TATTDB */\n\tmsleep(200);\n}\n"
    assert pf.matches(src)

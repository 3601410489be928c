"""build_model on the complete fixture drivers in test-fixtures/model/."""

from __future__ import annotations

from model_helpers import FIXTURES, NOIRQ, members, runtime, sleep

from dpmlens.model.build import build_model
from dpmlens.model.callgraph import pm_callbacks
from dpmlens.model.consteval import eval_int
from dpmlens.model.walker import Walker


def _load(rel: str):
    path = FIXTURES / rel
    return build_model(str(path), path.read_bytes())


def test_full_driver() -> None:
    m = _load("full_driver.c")
    assert set(m.functions) == {
        "foo_arm_wake",
        "foo_suspend_noirq",
        "foo_resume_noirq",
        "foo_runtime_suspend",
        "foo_runtime_resume",
        "foo_probe",
    }
    f = m.functions["foo_suspend_noirq"]
    assert f.maybe_unused and f.is_static and f.name_span.line == 19
    assert members(m, "foo_pm_ops") == {
        **sleep(NOIRQ, "foo_suspend_noirq", "foo_resume_noirq"),
        **runtime("foo_runtime_suspend", "foo_runtime_resume", None),
    }
    (d,) = m.drivers
    assert (d.name, d.bus, d.probe, d.pm, d.registration) == (
        "full_driver",
        "platform",
        "foo_probe",
        "foo_pm_ops",
        "module_platform_driver",
    )
    assert d.span is not None and (d.span.line, d.span.end_line) == (55, 61)
    roles = pm_callbacks(m)
    assert roles["foo_suspend_noirq"][0].driver_name == "full_driver"
    wake = [
        (r.functions(), r.call.span.line)
        for r in Walker(m).reach("foo_suspend_noirq")
        if r.call.callee == "enable_irq_wake"
    ]
    assert wake == [(["foo_suspend_noirq", "foo_arm_wake"], 16)]
    (sleep_call,) = m.calls_to("msleep")
    assert sleep_call.caller == "foo_resume_noirq"
    assert eval_int(sleep_call.args[0], m.defines) == 50


def test_driver_name_and_delay_from_local_header() -> None:
    m = _load("header_name/drv.c")
    (d,) = m.drivers
    assert d.name == "hdr-named" and d.pm == "hdr_pm"
    assert "DRV_NAME" not in m.defines  # the header's defines stay out of the file model
    (call,) = m.calls_to("msleep")
    assert eval_int(call.args[0], m.defines) is None
    assert eval_int(call.args[0], m.all_defines()) == 20

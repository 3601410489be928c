"""Mapping measured callbacks onto the driver source (real build_model, real files)."""

from __future__ import annotations

from pathlib import Path

import pytest
from kernel_trees import K612
from traces_helpers import FIXTURES

from dpmlens.traces import aggregate, build_index, load_traces, map_to_source
from dpmlens.traces.source.mapping import module_names

SRC = FIXTURES / "src"
KERNEL = K612


def _mapped():  # noqa: ANN202
    stats = aggregate(load_traces([FIXTURES / "ftrace_basic.txt"]))
    index = build_index(SRC, {s.driver for s in stats})
    return stats, map_to_source(stats, index)


def test_module_names_from_makefile() -> None:
    assert module_names(str(SRC)) == {"foo": "foo", "bar": "bar", "bar_main": "bar",
                                      "bar_hw": "bar"}


def test_driver_member_maps_directly() -> None:
    _, rep = _mapped()
    src = rep.mappings[("foo", "0-0055", "suspend")].source
    assert (Path(src.path).name, src.line, src.function, src.via) == ("foo.c", 5, "foo_suspend",
                                                                      None)
    assert rep.mappings[("foo", "0-0055", "resume")].source.line == 10


def test_bus_layer_is_attributed_and_marked_across_files() -> None:
    _, rep = _mapped()
    # KBUILD_MODNAME of bar_main.c is "bar" (Makefile), bar_suspend is defined in bar_hw.c
    src = rep.mappings[("bar", "0000:00:1f.0", "suspend")].source
    assert (Path(src.path).name, src.line, src.function, src.via, src.table) == (
        "bar_hw.c", 6, "bar_suspend", "bus", "bar_pm_ops")
    noirq = rep.mappings[("bar", "0000:00:1f.0", "suspend_noirq")].source
    assert (Path(noirq.path).name, noirq.function) == ("bar_main.c", "bar_suspend_noirq")


def test_unmapped_reasons() -> None:
    _, rep = _mapped()
    reason = {k: m.reason for k, m in rep.mappings.items() if m.source is None}
    assert reason == {
        ("bar", "0000:00:1f.0", "resume_noirq"):
            "'bar_pm_ops' has no .resume_noirq (the time is spent in the bus callback itself)",
        ("foo", "0-0055", "prepare"): "'foo_pm_ops' has no .prepare",
        ("foo", "0-0055", "complete"): "'foo_pm_ops' has no .complete",
        ("", "platform", "resume"):
            "no driver name in the trace (device without driver, bus or class)",
    }


def test_mapped_totals() -> None:
    stats, rep = _mapped()
    assert (rep.mapped_callbacks, rep.unmapped_callbacks) == (4, 4)
    assert (rep.mapped_samples, rep.total_samples) == (7, 11)
    # 11000 + 8000 + 7000 + 500 of 11000 + 8000 + 7000 + 500 + 300 + 20 + 10 + 5
    assert (rep.mapped_us, rep.total_us) == (26500.0, 26835.0)


def test_unknown_driver(tmp_path: Path) -> None:
    p = tmp_path / "t.txt"
    p.write_text("# tracer: nop\n"
                 " a-1 [000] .... 1.000000: device_pm_callback_start: nosuch 1-1, parent: usb1, "
                 "driver [suspend]\n"
                 " a-1 [000] .... 1.000010: device_pm_callback_end: nosuch 1-1, err=0\n"
                 " a-1 [000] .... 1.100000: device_pm_callback_start: tty ttyS0, parent: none, "
                 "class [suspend]\n"
                 " a-1 [000] .... 1.100010: device_pm_callback_end: tty ttyS0, err=0\n")
    stats = aggregate(load_traces([p]))
    rep = map_to_source(stats, build_index(SRC, {s.driver for s in stats}))
    assert {k[0]: m.reason for k, m in rep.mappings.items()} == {
        "nosuch": "driver name not found in source",
        "tty": "'tty' is a bus or class name: no driver was bound",
    }


def test_real_kernel_tree_multi_file_module() -> None:
    realtek = KERNEL / "drivers" / "net" / "ethernet" / "realtek"
    if not realtek.is_dir():
        pytest.skip(f"kernel tree not found at {KERNEL}")
    p = FIXTURES.parent / "traces" / "ftrace_basic.txt"
    stats = [s for s in aggregate(load_traces([p])) if s.driver == "bar"]
    # the same callbacks, renamed to a real driver: r8169 (KBUILD_MODNAME in r8169_main.c)
    renamed = [type(s)(**{**s.__dict__, "driver": "r8169"}) for s in stats]
    rep = map_to_source(renamed, build_index(realtek, {"r8169"}))
    src = rep.mappings[("r8169", "0000:00:1f.0", "suspend")].source
    assert src is not None and src.function == "rtl8169_suspend" and src.via == "bus"
    assert Path(src.path).name == "r8169_main.c"


def test_index_from_prebuilt_models_uses_makefile_names() -> None:
    from dpmlens.model.build import build_model
    from dpmlens.traces import SourceIndex

    idx = SourceIndex("workspace")
    for name in ("foo.c", "bar_main.c", "bar_hw.c"):
        idx.add_model(build_model(str(SRC / name), (SRC / name).read_bytes()))
    assert sorted(idx.drivers) == ["bar", "foo"]  # not "bar_main"
    stats = aggregate(load_traces([FIXTURES / "ftrace_basic.txt"]))
    rep = map_to_source(stats, idx)
    assert rep.mapped_callbacks == 4
    assert rep.mappings[("bar", "0000:00:1f.0", "suspend")].source.function == "bar_suspend"

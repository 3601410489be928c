"""Import fixes of issue 9: names with spaces, kernel steps, firmware, the per-cycle account."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from traces_helpers import FIXTURES
from traces_helpers import shared_traces as shared

from dpmlens.traces import load_traces
from dpmlens.traces.analysis.steps import accounts, step_rows, step_summary
from dpmlens.traces.model.names import candidates, spaced_driver_names, split
from dpmlens.traces.model.traceset import resolve_names

TIMELINE = FIXTURES / "timeline"
LINE = "bash-100 [000] .... {ts:.6f}: {text}\n"


def _ftrace(tmp_path: Path, name: str, events: list[tuple[float, str]]) -> Path:
    p = tmp_path / name
    p.write_text("# tracer: nop\n" + "".join(LINE.format(ts=t, text=x) for t, x in events))
    return p


def _one_callback(head: str, parent: str = "none") -> list[tuple[float, str]]:
    return [(1.0, f"device_pm_callback_start: {head}, parent: {parent}, bus [suspend]"),
            (1.001, f"device_pm_callback_end: {head}, err=0")]


def _names(t) -> set[tuple[str, str]]:  # noqa: ANN001 - TraceSet
    return {(s.driver, s.device) for s in t.samples()}


# -- names with spaces ----------------------------------------------------------------------

def test_i8042_kbd_by_the_kernels_driver_names() -> None:
    # drivers/input/serio/i8042-acpipnpio.h: .name = "i8042 kbd" (a pnp_driver)
    assert split("i8042 kbd 00:04", set()) == ("i8042 kbd", "00:04",
                                               "'i8042 kbd' is a known driver name")


def test_int3400_thermal_by_the_kernels_driver_names() -> None:
    drv, dev, how = split("int3400 thermal INT3400:00", set())
    assert (drv, dev) == ("int3400 thermal", "INT3400:00") and "known driver" in how


def test_fixed_mdio_bus_by_the_bus_name() -> None:
    # drivers/net/phy/fixed_phy.c registers platform device "Fixed MDIO bus" id 0, no driver:
    # dev_driver_string() prints the bus name
    drv, dev, how = split("platform Fixed MDIO bus.0", set())
    assert (drv, dev) == ("platform", "Fixed MDIO bus.0") and "bus or class" in how


def test_a_device_named_elsewhere_wins_over_the_first_word() -> None:
    drv, dev, how = split("acme widget ctl 3-0001", {"3-0001"})
    assert (drv, dev) == ("acme widget ctl", "3-0001") and "named elsewhere" in how
    # no evidence at all: the first word, and it says so
    assert split("acme widget ctl 3-0001", set()) == ("acme", "widget ctl 3-0001",
                                                      "guessed: first word as the driver")


def test_source_tree_driver_names_decide() -> None:
    assert split("acme widget 3-0001", set(), {"acme widget"})[:2] == ("acme widget", "3-0001")


def test_candidates_and_single_space() -> None:
    assert candidates("a b c") == [("a", "b c"), ("a b", "c")]
    assert split("r8169 0000:02:00.0", set())[:2] == ("r8169", "0000:02:00.0")


def test_table_cites_the_kernel_source() -> None:
    names = spaced_driver_names()
    assert {"i8042 kbd", "i8042 aux", "int3400 thermal", "Generic PHY"} <= names
    text = (Path(__file__).parents[1] / "dpmlens" / "traces" / "model" /
            "spaced-driver-names.yaml").read_text()
    assert '"i8042 kbd": "linux-6.12 drivers/input/serio/i8042-acpipnpio.h:1578' in text


def test_fixture_capture_resolves_every_case() -> None:
    t = load_traces([TIMELINE / "test_mem_ftrace.txt"])
    got = _names(t)
    assert ("i8042 kbd", "00:04") in got
    assert ("platform", "Fixed MDIO bus.0") in got  # also the parent of mdio_bus fixed-0
    assert ("int3400 thermal", "INT3400:00") in got
    assert ("foo", "bar baz") in got  # nothing known: first word
    assert t.name_splits["foo bar baz"] == "guessed: first word as the driver"
    assert "named elsewhere" in t.name_splits["platform Fixed MDIO bus.0"]
    # the same device in prepare, suspend, resume, complete: one name throughout
    assert {s.phase for s in t.samples() if s.device == "00:04"} == {
        "prepare", "suspend", "resume", "complete"}


def test_dmesg_twin_names_the_device(tmp_path: Path) -> None:
    # sleepgraph test directory: the ftrace has the callbacks, its dmesg twin is skipped but
    # its old-style "calling  <device>+ @" lines still name the device
    d = tmp_path / "suspend-1"
    d.mkdir()
    _ftrace(d, "x_mem_ftrace.txt", _one_callback("acme widget ctl 3-0001"))
    alone = load_traces([d / "x_mem_ftrace.txt"])
    assert _names(alone) == {("acme", "widget ctl 3-0001")}
    (d / "x_mem_dmesg.txt").write_text(
        "[    1.000000] calling  3-0001+ @ 100, parent: i2c-3\n"
        "[    1.001000] call 3-0001+ returned 0 after 976 usecs\n")
    both = load_traces([d])
    assert _names(both) == {("acme widget ctl", "3-0001")}


def test_resolving_again_with_source_names(tmp_path: Path) -> None:
    t = load_traces([_ftrace(tmp_path, "t.txt", _one_callback("acme widget 3-0001"))])
    assert _names(t) == {("acme", "widget 3-0001")}
    resolve_names(t, {"acme widget"})
    assert _names(t) == {("acme widget", "3-0001")}
    resolve_names(t, set())  # and back: the raw head is kept
    assert _names(t) == {("acme", "widget 3-0001")}


def test_two_spellings_of_one_device_merge(tmp_path: Path) -> None:
    ev = _one_callback("i8042 kbd 00:04") + [
        (2.0, "device_pm_callback_start: i8042 kbd 00:04, parent: none, bus [suspend]"),
        (2.003, "device_pm_callback_end: i8042 kbd 00:04, err=0")]
    t = load_traces([_ftrace(tmp_path, "t.txt", ev)])
    assert sorted(s.duration_us for s in t.samples()) == [1000.0, 3000.0]
    resolve_names(t)  # idempotent
    assert len(t.groups) == 1


def test_perfetto_fields_are_never_split(tmp_path: Path) -> None:
    mod = _make_perfetto()
    S = 1_000_000_000
    p = tmp_path / "t.perfetto-trace"
    mod.write(p, [
        (0, 10 * S, "sr", ("suspend_enter", 3, 1)),
        (0, 10 * S + 4_000_000, "sr", ("suspend_enter", 3, 0)),
        (0, 10 * S + 5_000_000, "sr", ("dpm_suspend", 2, 1)),
        (0, 10 * S + 5_100_000, "start", ("i8042 kbd", "00:04", "pnp0", "bus ", 2)),
        (0, 10 * S + 6_100_000, "end", ("i8042 kbd", "00:04", 0)),
        (0, 10 * S + 6_200_000, "start", ("foo", "bar baz", "none", "bus ", 2)),
        (0, 10 * S + 6_300_000, "end", ("foo", "bar baz", 0)),
        (0, 10 * S + 7_000_000, "sr", ("dpm_suspend", 2, 0)),
        (0, 10 * S + 7_000_000, "sr", ("CPU_OFF", 1, 1)),
        (0, 10 * S + 9_000_000, "sr", ("CPU_OFF", 1, 0)),
    ])
    t = load_traces([p])
    assert _names(t) == {("i8042 kbd", "00:04"), ("foo", "bar baz")}
    assert t.name_splits == {}
    # Perfetto's suspend_resume events are steps as well
    assert [(r.step.label, r.duration_us, r.depth) for r in step_rows(t)] == [
        ("suspend_enter", 4000.0, 0), ("CPU_OFF[1]", 2000.0, 0)]
    (a,) = accounts(t)
    assert (a.devices_us, a.steps_us, a.gaps_us, a.span_us) == (2000.0, 6000.0, 1000.0, 9000.0)
    assert {s.thread for s in t.samples()} == {"pid 100"}


def _make_perfetto():  # noqa: ANN202 - the fixture generator module
    pytest.importorskip("perfetto")
    spec = importlib.util.spec_from_file_location("make_perfetto", FIXTURES / "make_perfetto.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# -- steps, firmware, accounting -------------------------------------------------------------

def test_steps_of_the_fixture_cycle() -> None:
    t = load_traces([TIMELINE / "test_mem_ftrace.txt"])
    rows = [(r.step.label, r.duration_us, r.depth) for r in step_rows(t)]
    assert rows == [
        ("suspend_enter", 6030.0, 0), ("sync_filesystems", 4000.0, 1),
        ("freeze_processes", 2000.0, 1), ("CPU_OFF[1]", 10000.0, 0),
        ("syscore_suspend", 100.0, 0), ("machine_suspend", 2000.0, 0),
        ("syscore_resume", 500.0, 0), ("CPU_ON[1]", 20000.0, 0),
        ("resume_console", 100.0, 0), ("thaw_processes", 5000.0, 0)]
    assert [s[0] for s in step_summary(step_rows(t))][:3] == [
        "suspend_enter", "sync_filesystems", "freeze_processes"]
    (fw,) = t.store.firmware
    assert (fw.cycle, fw.suspend_us, fw.resume_us) == (0, 2000.0, 30000.0)


def test_account_adds_up_to_the_span_plus_firmware() -> None:
    t = load_traces([TIMELINE / "test_mem_ftrace.txt"])
    (a,) = accounts(t)
    # phases: prepare 1.0 + suspend 21.5 + resume 81.5 + complete 0.5 ms
    assert a.devices_us == 104500.0
    # steps outside phases, nested ones once, machine_suspend apart:
    # suspend_enter 6.03 + CPU_OFF 10 + syscore 0.1 + 0.5 + CPU_ON 20 + console 0.1 + thaw 5
    assert a.steps_us == 41730.0
    assert a.asleep_us == 2000.0
    assert a.span_us == 188000.0
    assert a.devices_us + a.steps_us + a.asleep_us + a.gaps_us == pytest.approx(a.span_us)
    assert a.firmware_us == 32000.0
    assert a.total_us == a.span_us - a.asleep_us + a.firmware_us


def test_next_cycles_entry_steps_start_a_new_cycle(tmp_path: Path) -> None:
    one = [(1.0, "suspend_resume: suspend_enter[3] begin"),
           (1.1, "suspend_resume: suspend_enter[3] end"),
           (1.2, "suspend_resume: dpm_suspend[2] begin"),
           (1.3, "suspend_resume: dpm_suspend[2] end"),
           (1.4, "suspend_resume: dpm_resume[16] begin"),
           (1.5, "suspend_resume: dpm_resume[16] end"),
           (1.6, "suspend_resume: thaw_processes[0] begin"),
           (1.7, "suspend_resume: thaw_processes[0] end")]
    two = one + [(t + 1, x) for t, x in one]
    t = load_traces([_ftrace(tmp_path, "t.txt", two)])
    assert [(r.step.cycle, r.step.name) for r in step_rows(t)] == [
        (0, "suspend_enter"), (0, "thaw_processes"), (1, "suspend_enter"),
        (1, "thaw_processes")]
    # gaps 1.1-1.2, 1.3-1.4, 1.5-1.6
    assert [a.gaps_us for a in accounts(t)] == [pytest.approx(300000.0)] * 2


def test_report_json_and_table(capsys: pytest.CaptureFixture[str]) -> None:
    from dpmlens.cli import main

    assert main(["trace", "report", str(TIMELINE), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["version"] == 5
    assert data["steps"][0] == {"cycle": 0, "name": "suspend_enter", "val": 3,
                                "start_us": 0.0, "duration_us": 6030.0, "depth": 0,
                                "phase": "prepare"}
    by_name = {s["name"]: s["phase"] for s in data["steps"]}
    assert by_name["machine_suspend"] == ""  # between the device phases
    (acc,) = data["accounting"]
    assert acc == {"cycle": 0, "span_us": 188000.0, "devices_us": 104500.0,
                   "steps_us": 41730.0, "gaps_us": 39770.0, "firmware_us": 32000.0,
                   "asleep_us": 2000.0, "total_us": 218000.0}
    assert {"raw": "i8042 kbd 00:04", "driver": "i8042 kbd", "device": "00:04",
            "how": "'i8042 kbd' is a known driver name"} in data["name_splits"]
    assert main(["trace", "report", str(TIMELINE)]) == 0
    out = capsys.readouterr().out
    assert "  sync_filesystems" in out and "CPU_ON[1]" in out
    assert "'int3400 thermal INT3400:00': driver 'int3400 thermal', device 'INT3400:00'" in out


def test_real_captures_account_for_every_cycle() -> None:
    t = load_traces([shared()])
    acc = accounts(t)
    assert len(acc) == 6
    for a in acc:
        assert a.devices_us > 0 and a.gaps_us >= 0
        assert a.devices_us + a.steps_us + a.asleep_us + a.gaps_us == pytest.approx(a.span_us)
    # the 4.6 mem test has sleepgraph's firmware times: 0.82 ms suspend + 155 ms resume
    assert [a.firmware_us for a in acc if a.firmware_us] == [pytest.approx(155805.116)]
    # the names of issue 9 as sleepgraph resolves them
    got = _names(t)
    assert {("i8042 kbd", "00:04"), ("i8042 aux", "00:05"),
            ("platform", "Fixed MDIO bus.0")} <= got


def test_dmesg_names_with_spaces() -> None:
    # "<driver> <device>: PM: calling ..." with spaces in the driver: parsed (the old pattern
    # wanted one word each and skipped these lines) and split like ftrace heads
    t = load_traces([FIXTURES / "dmesg_spaced_names.txt"])
    assert t.skipped_lines == 0
    assert sorted((s.driver, s.device, s.duration_us) for s in t.samples()) == [
        ("i8042 kbd", "00:04", 1000.0), ("int3400 thermal", "INT3400:00", 2000.0),
        ("r8169", "0000:02:00.0", 3000.0)]
    assert set(t.name_splits) == {"i8042 kbd 00:04", "int3400 thermal INT3400:00"}

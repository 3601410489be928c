"""Real sleepgraph captures (pm-graph, kernels 3.15 and 4.6) from ../shared/traces."""

from __future__ import annotations

from collections import Counter

import pytest
from traces_helpers import shared_traces

from dpmlens.traces import aggregate, load_traces, phase_stats


def test_whole_directory() -> None:
    t = load_traces([shared_traces()])
    assert t.errors == []
    assert t.skipped_lines == 0 and t.incomplete == 0
    # 6 tests, each with a dmesg and an ftrace file: the ftrace files carry the callbacks
    assert t.cycles == 6
    assert t.sample_count == 5187
    assert sum(1 for f in t.files if f.format == "ftrace" and f.samples) == 6
    top = aggregate(t)[0]
    assert (top.driver, top.device, top.phase, top.layer, top.n) == ("sd", "0:0:0:0", "suspend",
                                                                     "bus", 5)
    assert top.max_us == 840534.0


def test_dmesg_and_ftrace_of_one_test_agree() -> None:
    d = shared_traces() / "pm-graph-3.15"
    dm = load_traces([d / "skynet_mem_dmesg.txt"])
    ft = load_traces([d / "skynet_mem_ftrace.txt"])
    per_phase = Counter(s.phase for s in ft.samples())
    del per_phase["prepare"], per_phase["complete"]  # initcall_debug does not print these
    assert Counter(s.phase for s in dm.samples()) == per_phase
    # 3.15 printed ns >> 10 as "usecs": converted, the long callbacks agree within 0.5%
    ftd = {(s.device, s.phase): s.duration_us for s in ft.samples()}
    long = [s for s in dm.samples() if s.duration_us > 10000]
    assert len(long) >= 10
    for s in long:
        assert s.duration_us == pytest.approx(ftd[(s.device, s.phase)], rel=0.005)
    # the driver of the old format comes from the log's other "<driver> <device>:" lines
    assert {s.driver for s in dm.samples() if s.device == "0000:02:00.0"} == {"r8169"}
    # phase wall times from "PM: ... of devices complete after" vs the ftrace markers
    pd = {p.phase: p.mean_us for p in phase_stats(dm)}
    pf = {p.phase: p.mean_us for p in phase_stats(ft)}
    assert pd["suspend"] == 866009.0
    assert pd["suspend"] == pytest.approx(pf["suspend"], rel=0.002)


def test_kernel_4_6_empty_info_events_are_prepare_and_complete() -> None:
    d = shared_traces() / "pm-graph-4.6" / "suspend-160422-155735-ivybridge-dev-late"
    t = load_traces([d / "ivybridge_mem_ftrace.txt"])
    # 824 "..., [suspend]" and 789 "..., [resume]" lines with an empty info string: every
    # device in dpm_prepare() and dpm_complete(), placed by the enclosing dpm_* markers
    phases = Counter(s.phase for s in t.samples())
    assert (phases["prepare"], phases["complete"]) == (824, 789)
    assert (phases["suspend"], phases["suspend_late"], phases["suspend_noirq"]) == (120, 11, 13)
    platform = [s for s in t.samples() if s.device == "platform"]
    assert platform and all(s.driver == "" for s in platform)


def test_hibernation_capture_uses_freeze_and_restore_members() -> None:
    t = load_traces([shared_traces() / "pm-graph-3.15" / "skynet_disk_ftrace.txt"])
    phases = {p.phase for p in phase_stats(t)}
    assert {"freeze", "freeze_late", "freeze_noirq", "restore_noirq", "restore_early",
            "restore"} <= phases

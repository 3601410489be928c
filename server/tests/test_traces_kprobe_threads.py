"""sleepgraph's delay kprobes (`msleep_cal` ... `msleep_ret`) pair by thread, the pid: the
thread may sleep on one CPU and wake on another, and ftrace prints `<...>` for its comm when
its comm cache lost the pid (issue 21: the USB reset recoveries inside an async resume
callback were lost, and one lost return poisoned the thread for the rest of the capture)."""

from __future__ import annotations

from pathlib import Path

import pytest
from traces_helpers import SHARED_TRACES

from dpmlens.traces import load_traces

RESET = "(hub_port_reset+0x3ab/0x6c0 [usbcore] <- msleep) arg1=0x0"
START = "device_pm_callback_start: usb {0}-1, parent: usb{0}, type [resume]"
LINES = [  # (task, cpu, time, event), in time order as the trace file has them
    ("bash-100", 0, "200.000000", "suspend_resume: dpm_resume[16] begin"),
    ("kworker/u4:2-57", 1, "200.000100", START.format(1)),
    ("kworker/u4:3-58", 2, "200.000150", START.format(2)),
    ("kworker/u4:2-57", 1, "200.000200", "msleep_cal: (msleep+0x0/0x40) time=50"),
    ("kworker/u4:3-58", 2, "200.000250", "msleep_cal: (msleep+0x0/0x40) time=10"),
    ("kworker/u4:3-58", 2, "200.020000", "msleep_cal: (msleep+0x0/0x40) time=60"),
    ("<...>-57", 0, "200.050300", f"msleep_ret: {RESET}"),
    ("kworker/u4:2-57", 0, "200.050400", "msleep_cal: (msleep+0x0/0x40) time=50"),
    ("kworker/u4:3-58", 1, "200.080000", f"msleep_ret: {RESET}"),
    ("kworker/u4:3-58", 1, "200.080100", "device_pm_callback_end: usb 2-1, err=0"),
    ("kworker/u4:2-57", 3, "200.100500", f"msleep_ret: {RESET}"),
    ("kworker/u4:2-57", 3, "200.100600", "device_pm_callback_end: usb 1-1, err=0"),
    ("bash-100", 0, "200.200000", "suspend_resume: dpm_resume[16] end"),
]
CAPTURE = "# tracer: nop\n" + "".join(
    f"{task:>20} [{cpu:03d}] d....  {ts}: {event}\n" for task, cpu, ts, event in LINES)


def _delays(path: Path) -> dict[str, tuple[int, float, str]]:
    ts = load_traces([path])
    d = ts.store.delays
    out = {}
    for i in range(len(d)):
        owner = d.owners[i]
        assert owner is not None, "a delay inside a callback was put outside callbacks"
        out[owner.key[1]] = (d.calls[i], round(d.totals[i]), d.names[d.callers[i]])
    return out


def test_pairs_across_cpus_and_comm_cache_misses(tmp_path: Path) -> None:
    path = tmp_path / "usb_ftrace.txt"
    path.write_text(CAPTURE)
    got = _delays(path)
    # 1-1: both 50 ms reset recoveries, one returned on another CPU as "<...>-57"
    assert got["1-1"] == (2, 50100 + 50100, "hub_port_reset")
    # 2-1: the call whose return is missing is dropped; the next pair is still read
    assert got["2-1"] == (1, 60000, "hub_port_reset")
    ts = load_traces([path])
    assert ts.files[0].skip_reasons == {"delay kprobe call without its return": 1}
    assert "kworker/u4:2-57" in ts.store.threads and "<...>-57" not in ts.store.threads


KFUNC_LINES = [  # sleepgraph -dev on a current kernel: kernel functions timed by kprobes
    ("sleepgraph-900", 0, "300.000000", "ksys_sync_cal: (ksys_sync+0x0/0xb0)"),
    ("sleepgraph-900", 1, "300.054000", "ksys_sync_ret: (enter_state+0x95/0x4f0 <- ksys_sync) "
     "arg1=0x0"),
    ("sleepgraph-900", 1, "300.060000", "suspend_resume: dpm_prepare[2] begin"),
    ("sleepgraph-900", 1, "300.061000", "suspend_resume: dpm_prepare[2] end"),
    ("sleepgraph-900", 1, "300.061100", "suspend_resume: dpm_suspend[2] begin"),
    ("sleepgraph-900", 1, "300.061200", "cpufreq_suspend_cal: (cpufreq_suspend+0x0/0x110)"),
    ("sleepgraph-900", 1, "300.061900", "cpufreq_suspend_ret: (dpm_suspend+0x5d/0x2b0 <- "
     "cpufreq_suspend) arg1=0x0"),
    ("kworker/u4:2-57", 0, "300.062000", "device_pm_callback_start: e1000 0000:00:03.0, "
     "parent: pci0000:00, bus [suspend]"),
    ("kworker/u4:2-57", 0, "300.062100", "async_synchronize_full_cal: "
     "(async_synchronize_full+0x0/0x20)"),
    ("kworker/u4:2-57", 0, "300.062200", "async_synchronize_full_ret: (e1000_suspend+0x1/0x2 "
     "<- async_synchronize_full) arg1=0x0"),
    ("kworker/u4:2-57", 0, "300.070000", "device_pm_callback_end: e1000 0000:00:03.0, err=0"),
    ("sleepgraph-900", 1, "300.070100", "async_synchronize_full_cal: "
     "(async_synchronize_full+0x0/0x20)"),
    ("sleepgraph-900", 0, "300.124100", "async_synchronize_full_ret: (dpm_suspend+0x1/0x2 <- "
     "async_synchronize_full) arg1=0x0"),
    ("sleepgraph-900", 0, "300.124200", "suspend_resume: dpm_suspend[2] end"),
]


def test_dev_kprobes_on_kernel_functions_are_steps_of_their_phase(tmp_path: Path) -> None:
    from dpmlens.traces.analysis.steps import step_rows

    path = tmp_path / "dev_ftrace.txt"
    path.write_text("# tracer: nop\n" + "".join(
        f"{task:>20} [{cpu:03d}] d....  {ts}: {event}\n" for task, cpu, ts, event in KFUNC_LINES))
    rows = [(r.step.name, r.phase, r.duration_us) for r in step_rows(load_traces([path]))]
    # ksys_sync before dpm_prepare: the first phase's; the one inside the e1000 callback is
    # the callback's time, not a step
    assert rows == [("ksys_sync", "prepare", 54000.0), ("cpufreq_suspend", "suspend", 700.0),
                    ("async_synchronize_full", "suspend", 54000.0)]


REAL = SHARED_TRACES / "pm-graph-4.6" / "suspend-160422-155735-ivybridge-dev-late" / \
    "ivybridge_mem_ftrace.txt"


@pytest.mark.skipif(not REAL.exists(), reason="needs ../shared/traces (pm-graph captures)")
def test_real_dev_capture_kernel_functions_become_steps() -> None:
    """pm-graph's 4.6 `-dev` capture: sys_sync inside sync_filesystems, the notifier chains
    and thaw_processes, each in its phase."""
    from dpmlens.traces.analysis.steps import step_rows

    rows = step_rows(load_traces([REAL]))
    by = {(r.step.name, r.phase) for r in rows}
    assert {("sys_sync", "prepare"), ("pm_notifier_call_chain", "prepare"),
            ("pm_notifier_call_chain", "complete"), ("thaw_processes", "complete"),
            ("syscore_suspend", "")} <= by
    sync = next(r for r in rows if r.step.name == "sys_sync")
    assert sync.depth == 2 and 3000 < sync.duration_us < 3200  # inside sync_filesystems


def test_every_probe_name_and_no_other_is_found_by_the_scan() -> None:
    """The probe names are one prefix tree in the scan's regex (a flat alternation doubled
    its cost): each name, as a call and a return, and nothing that only starts like one."""
    from dpmlens.traces.read import ftrace

    for name in ftrace.DELAY_PROBES + ftrace.KERNEL_FUNCS + ftrace.OTHER_PROBES:
        # the other -dev probes: their returns only (the call is found from the return)
        kinds = ("ret",) if name in ftrace.OTHER_PROBES else ("cal", "ret")
        for kind in kinds:
            event = f": {name}_{kind}: ".encode()
            m = ftrace._EVENT.search(b"bash-1 [000] ..... 1.000000" + event + b"(x)")
            assert m is not None and m.group(0) == event, name
    for other in ("msleepy_cal", "acpi_os_stall_cal", "pm_notifier_call_chain_robustly_ret",
                  "usleep_range_stat_cal", "ksys_syncs_ret", "ata_eh_recover_cal"):
        assert ftrace._EVENT.search(f"bash-1 [000] 1.0: {other}: (x)".encode()) is None, other


EH = "(ata_eh_recover+0x0/0xe50 [libata]) port=1"
EH_RET = "(ata_do_eh+0x75/0xf0 [libata] <- ata_eh_recover) arg1=0x0"
THREAD_LINES = [  # sleepgraph -dev: threads that run no callback, in and around the test
    ("scsi_eh_1-10", 0, "99.900000", f"ata_eh_recover_cal: {EH}"),  # before the test
    ("scsi_eh_1-10", 0, "99.950000", f"ata_eh_recover_ret: {EH_RET}"),
    ("python3-900", 1, "100.000000", "tracing_mark_write: SUSPEND START 20261126-23:33:47.8"),
    ("python3-900", 1, "100.010000", "suspend_resume: suspend_enter[3] begin"),
    ("python3-900", 1, "100.020000", "suspend_resume: dpm_prepare[2] begin"),
    ("python3-900", 1, "100.030000", "suspend_resume: dpm_prepare[2] end"),
    ("python3-900", 1, "100.040000", "suspend_resume: dpm_suspend[2] begin"),
    ("scsi_eh_1-10", 0, "100.050000", f"ata_eh_recover_cal: {EH}"),
    ("kworker/u4:2-57", 1, "100.051000", "device_pm_callback_start: e1000 0000:00:03.0, "
     "parent: pci0000:00, bus [suspend]"),
    ("kworker/u4:2-57", 1, "100.052000", "acpi_os_stall_cal: (acpi_os_stall+0x0/0x30)"),
    ("kworker/u4:2-57", 1, "100.053000", "acpi_os_stall_ret: (acpi_ex_x+0x1/0x2 <- "
     "acpi_os_stall) arg1=0x0"),
    ("scsi_eh_1-10", 1, "100.060000", f"ata_eh_recover_ret: {EH_RET}"),  # woke on CPU 1
    ("scsi_eh_2-11", 0, "100.070000", "mutex_lock_slowpath_cal: (__mutex_lock_slowpath+0x0/"
     "0x10)"),  # never returns: no row
    ("rcu_preempt-15", 0, "100.080000", "schedule_timeout_cal: (schedule_timeout+0x0/0x150) "
     "timeout=1"),
    ("rcu_preempt-15", 0, "100.090000", "schedule_timeout_ret: (rcu_gp_fqs_loop+0x1/0x2 <- "
     "schedule_timeout) arg1=0x0"),
    ("kworker/u4:2-57", 1, "100.100000", "device_pm_callback_end: e1000 0000:00:03.0, err=0"),
    ("python3-900", 1, "100.200000", "suspend_resume: dpm_suspend[2] end"),
    ("python3-900", 1, "100.300000", "resume_console_cal: (resume_console+0x0/0x40)"),
    ("python3-900", 1, "100.300084", "resume_console_ret: (suspend_devices_and_enter+0x1/0x2 "
     "<- resume_console) arg1=0x0"),
    ("scsi_eh_1-10", 0, "100.400000", "msleep_cal: (msleep+0x0/0x40) time=100"),
    ("scsi_eh_1-10", 0, "100.400100", "schedule_timeout_cal: (schedule_timeout+0x0/0x150) "
     "timeout=26"),
    ("scsi_eh_1-10", 0, "100.500000", "schedule_timeout_ret: (msleep+0x1/0x2 <- "
     "schedule_timeout) arg1=0x0"),
    ("scsi_eh_1-10", 0, "100.500100", "msleep_ret: (ata_eh_x+0x1/0x2 [libata] <- msleep) "
     "arg1=0x0"),
    ("python3-900", 1, "100.600000", "tracing_mark_write: RESUME COMPLETE 20261126-23:33:53.1"),
    ("rcu_preempt-15", 0, "100.610000", "schedule_timeout_cal: (schedule_timeout+0x0/0x150) "
     "timeout=1"),  # after the test
    ("rcu_preempt-15", 0, "100.620000", "schedule_timeout_ret: (rcu_gp_fqs_loop+0x1/0x2 <- "
     "schedule_timeout) arg1=0x0"),
]


def _thread_capture(lines: list[tuple[str, int, str, str]]) -> str:
    return "# tracer: nop\n" + "".join(
        f"{task:>20} [{cpu:03d}] d....  {ts}: {event}\n" for task, cpu, ts, event in lines)


def test_dev_kprobe_calls_make_sleepgraphs_kernel_thread_rows(tmp_path: Path) -> None:
    """sleepgraph.py addDeviceFunctionCall: a thread that runs no callback gets a row from its
    first to its last -dev kprobe call of the test (calls that return inside it, any probe:
    ata_eh_recover, mutex_lock_slowpath, the delays, nested ones too)."""
    from dpmlens.traces.analysis.steps import step_rows, thread_rows

    path = tmp_path / "dev_ftrace.txt"
    path.write_text(_thread_capture(THREAD_LINES))
    ts = load_traces([path])
    rows = {r.thread: (r.phase, r.duration_us, r.functions) for r in thread_rows(ts)}
    # scsi_eh_1: the ata_eh_recover call that returned on another CPU to the msleep's end;
    # not the call before the test. rcu_preempt: not its call after RESUME COMPLETE.
    # kworker/u4:2 ran a callback (its acpi_os_stall is the callback's); scsi_eh_2's call
    # never returned.
    assert rows == {
        "scsi_eh_1-10": ("suspend", 450100.0, ("ata_eh_recover", "msleep", "schedule_timeout")),
        "rcu_preempt-15": ("suspend", 10000.0, ("schedule_timeout",)),
    }
    # resume_console timed by its kprobes is a step (its "r" is not an rpm_* event's)
    assert ("resume_console", 84.0) in {(r.step.name, r.duration_us) for r in step_rows(ts)}


def test_a_call_in_the_block_before_its_return_is_found(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from dpmlens.traces.analysis.steps import thread_rows
    from dpmlens.traces.read import ftrace

    path = tmp_path / "dev_ftrace.txt"
    path.write_text(_thread_capture(THREAD_LINES))
    want = [(r.thread, r.duration_us) for r in thread_rows(load_traces([path]))]
    for chunk in range(700, 1400, 61):  # the file read in blocks smaller than it, cut anywhere
        monkeypatch.setattr(ftrace, "CHUNK", chunk)
        assert [(r.thread, r.duration_us) for r in thread_rows(load_traces([path]))] == want


def test_without_trace_markers_the_test_is_suspend_enter_to_thaw_processes(
        tmp_path: Path) -> None:
    """sleepgraph without "SUSPEND START"/"RESUME COMPLETE" lines (TestLine.startMarker):
    from suspend_enter begin to thaw_processes end."""
    from dpmlens.traces.analysis.steps import thread_rows

    lines = [x for x in THREAD_LINES if "tracing_mark_write" not in x[3]]
    lines.insert(lines.index(next(x for x in lines if x[2] == "100.610000")),
                 ("python3-900", 1, "100.605000", "suspend_resume: thaw_processes[0] end"))
    path = tmp_path / "dev_ftrace.txt"
    path.write_text(_thread_capture(lines))
    rows = {r.thread: r.duration_us for r in thread_rows(load_traces([path]))}
    # the ata_eh_recover call at 100.05 starts after suspend_enter (100.01)
    assert rows == {"scsi_eh_1-10": 450100.0, "rcu_preempt-15": 10000.0}


def test_returns_without_their_calls_cost_no_scan_each(tmp_path: Path) -> None:
    """A capture of 40,000 -dev probe returns whose calls are not in it (or belong to other
    threads): each return's backward search is bounded (the block's first call line is
    found once, at most _CALL_LOOKBACK other calls are looked past), so it reads in about
    the time of any capture of its size, and nothing is paired."""
    import time

    from dpmlens.traces.analysis.steps import thread_rows

    other = "kworker/0:1-30"
    lines = ["# tracer: nop\n"]
    for i in range(40_000):
        ts = f"{100 + i / 1e4:.6f}"
        if i % 2:  # a call of another thread, then a return of scsi_eh_1 with no call
            lines.append(f"{other:>20} [000] d....  {ts}: mutex_lock_slowpath_cal: "
                         "(__mutex_lock_slowpath+0x0/0x10)\n")
        lines.append(f"{'scsi_eh_1-10':>20} [001] d....  {ts}: mutex_lock_slowpath_ret: "
                     "(x+0x1/0x2 <- __mutex_lock_slowpath) arg1=0x0\n")
    path = tmp_path / "rets_ftrace.txt"
    path.write_text("".join(lines))
    c0 = time.process_time()
    ts_ = load_traces([path])
    assert time.process_time() - c0 < 5  # ~0.8 s; searching back each time: 12 s
    assert [r.thread for r in thread_rows(ts_)] == []

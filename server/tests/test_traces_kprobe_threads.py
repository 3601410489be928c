"""sleepgraph's delay kprobes (`msleep_cal` ... `msleep_ret`) pair by thread, the pid: the
thread may sleep on one CPU and wake on another, and ftrace prints `<...>` for its comm when
its comm cache lost the pid (issue 21: the USB reset recoveries inside an async resume
callback were lost, and one lost return poisoned the thread for the rest of the capture)."""

from __future__ import annotations

from pathlib import Path

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

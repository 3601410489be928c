"""Tracepoints printed into the kernel log (`trace_event=power:*,rpm:* tp_printk`, issue 21):
the same callbacks, phases and runtime PM statistics as the ftrace text of the same run.

The tp_printk form is the ftrace line without its task, CPU and flags columns, after the printk
timestamp (kernel/trace/trace.c output_printk); the logs here are made from the committed
ftrace fixtures by dropping those columns, so both sides hold the same events. The formats are
those TOOLCHAIN.md lists for 6.1/6.12 (empty driver, `late`/`noirq`/`early` prefixes,
`rpm_return_int` gluing the caller to the device, 6.12's `rpm_status`)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from traces_helpers import FIXTURES

from dpmlens.traces import aggregate, load_traces, phase_stats
from dpmlens.traces.analysis.rpm_stats import runtime_stats

_LINE = re.compile(r"^(?P<pre>.*?)\s(?P<ts>\d+\.\d+): (?P<ev>\w+): (?P<payload>.*)$")
_PADDED = ("suspend_resume", "rpm_")  # trace-cmd pads short event names; tp_printk does not


def to_tp_printk(ftrace: Path, out: Path, extra: list[str] | None = None,
                 caller: bool = False) -> Path:
    """The ftrace text's events as `[   12.345678] event: payload` kernel log lines, between
    some ordinary log lines (and `extra` ones); `caller`: with CONFIG_PRINTK_CALLER's
    `[T<pid>]` column."""
    lines = ["[    0.000000] Linux version 6.12.0-1-amd64 (debian-kernel@lists.debian.org)",
             "[   99.000000] PM: suspend entry (deep)", *(extra or [])]
    for raw in ftrace.read_text().splitlines():
        if raw.startswith("# suspend-"):  # sleepgraph's stamp of a new test: a new cycle
            lines.append("[   99.000000] PM: suspend entry (deep)")
        m = _LINE.match(raw)
        if m is None or raw.lstrip().startswith("#"):
            continue
        payload = m["payload"]
        if m["ev"].startswith(_PADDED):
            payload = payload.lstrip()
        who = ""
        if caller:
            pid = m["pre"].strip().split(" [")[0].rsplit("-", 1)[1]
            who = f"[T{pid}] "
        lines.append(f"[{float(m['ts']):12.6f}] {who}{m['ev']}: {payload}")
        if len(lines) % 7 == 0:
            lines.append(f"[{float(m['ts']):12.6f}] e1000 0000:00:03.0 eth0: Link is Down")
    out.write_text("\n".join(lines) + "\n")
    return out


def _callbacks(paths: list[Path]) -> dict:
    ts = load_traces(paths)
    assert not ts.errors, ts.errors
    return {(*s.key, s.layer): (s.n, s.median_us, s.total_us, s.parent) for s in aggregate(ts)}


def _phases(paths: list[Path]) -> dict:
    return {p.phase: (p.cycles, p.mean_us) for p in phase_stats(load_traces(paths))}


@pytest.mark.parametrize("name", ["ftrace_basic.txt", "trace_cmd_report.txt",
                                  "sleepgraph_multi_ftrace.txt"])
def test_same_callbacks_and_phases_as_the_ftrace(name: str, tmp_path: Path) -> None:
    src = FIXTURES / name
    log = to_tp_printk(src, tmp_path / "dmesg.txt")
    want = _callbacks([src])
    assert want  # the fixture has callbacks
    ts = load_traces([log])
    assert ts.files[0].format == "dmesg" and not ts.errors
    assert _callbacks([log]) == want
    assert _phases([log]) == _phases([src])
    assert ts.cycles == load_traces([src]).cycles


def test_pm_print_times_lines_of_the_same_log_are_not_counted_twice(tmp_path: Path) -> None:
    """A log with both forms: the tracepoints (every callback) win, the pm_print_times lines
    (the same callbacks, as `pm_print_times` prints them) are not added a second time."""
    src = FIXTURES / "ftrace_basic.txt"
    extra = ["[  100.000010] foo 0-0055: PM: calling foo_suspend @ 100, parent: i2c-0",
             "[  100.000030] foo 0-0055: PM: foo_suspend returned 0 after 20 usecs",
             "[  100.020000] PM: suspend of devices complete after 20.000 msecs"]
    log = to_tp_printk(src, tmp_path / "both.txt", extra=extra)
    assert _callbacks([log]) == _callbacks([src])
    ts = load_traces([log])
    assert any("printed by tp_printk" in n and "1 pm_print_times" in n
               for n in ts.files[0].notes), ts.files[0].notes


@pytest.mark.parametrize("name", ["rpm_6.1_trace.txt", "rpm_6.12_trace_cmd.txt",
                                  "rpm_4.19_trace.txt"])
@pytest.mark.parametrize("caller", [False, True])
def test_same_runtime_pm_statistics_as_the_ftrace(name: str, caller: bool,
                                                  tmp_path: Path) -> None:
    """The fixture's calls come from four threads and nest (a child's resume resumes its
    parent): without a thread column the calls still pair (by device), with the same
    per-device statistics."""
    src = FIXTURES / name
    log = to_tp_printk(src, tmp_path / "rpm_dmesg.txt", caller=caller)
    a, b = runtime_stats(load_traces([src])), runtime_stats(load_traces([log]))
    assert a is not None and b is not None
    assert (b.events, b.calls, b.status_events) == (a.events, a.calls, a.status_events)
    assert a.calls > 20 and len(a.devices) >= 3
    assert {d.device: d for d in b.devices} == {d.device: d for d in a.devices}
    assert (b.unmatched_returns, b.unreturned) == (a.unmatched_returns, a.unreturned) == (0, 0)


def test_interleaved_threads_still_pair_by_device(tmp_path: Path) -> None:
    """Two threads' calls interleave in the log; without thread columns a return closes its
    own device's call and leaves the other thread's call open."""
    log = tmp_path / "dmesg.txt"
    flags = "flags-4 cnt-1  dep-0  auto-1 p-0 irq-0 child-0"
    log.write_text("\n".join([
        f"[   10.000000] rpm_resume: 0000:00:14.0 {flags}",
        f"[   10.000100] rpm_resume: 0000:00:1f.3 {flags}",
        "[   10.000500] rpm_return_int: rpm_resume+0x1a4/0x6a0:0000:00:14.0 ret=0",
        "[   10.002000] rpm_return_int: rpm_resume+0x1a4/0x6a0:0000:00:1f.3 ret=0",
    ]) + "\n")
    ts = load_traces([log])
    rpm = ts.store.rpm
    assert rpm is not None and len(rpm) == 2
    assert (rpm.unmatched_returns, rpm.unreturned) == (0, 0)
    durations = sorted(round((e - s) * 1e6) for s, e in zip(rpm.start, rpm.end, strict=True))
    assert durations == [500, 1900]
    assert list(rpm.nested) == [0.0, 0.0]  # interleaved, not nested


def test_error_sequence_printed_by_tp_printk_is_read(tmp_path: Path) -> None:
    """A runtime PM error printed this way once read as "unknown format"."""
    log = tmp_path / "dmesg.txt"
    log.write_text("\n".join([
        "[   20.000000] rpm_resume: 0000:00:02.0 flags-4 cnt-1  dep-0  auto-1 p-0 irq-0 child-0",
        "[   20.000300] rpm_status: 0000:00:02.0 status=RPM_RESUMING",
        "[   20.001000] rpm_return_int: rpm_resume+0x2b8/0x6a0:0000:00:02.0 ret=-13",
    ]) + "\n")
    ts = load_traces([log])
    assert ts.files[0].format == "dmesg" and not ts.errors
    report = runtime_stats(ts)
    assert report is not None
    (dev,) = report.devices
    assert dev.device == "0000:00:02.0" and [(e.call, e.code) for e in dev.errors] == [
        ("rpm_resume", -13)]


# The 6.1/6.12 callback forms of TOOLCHAIN.md: a device without a driver (two spaces), the
# phase only from the markers, `late`/`noirq`/`early` prefixes, class devices of one disk.
MODERN = [
    (" 50.000000", "suspend_resume", "dpm_suspend[2] begin"),
    (" 50.000100", "device_pm_callback_start", " platform, parent: none, [suspend]"),
    (" 50.000300", "device_pm_callback_end", " platform, err=0"),
    (" 50.000400", "device_pm_callback_start", "sd 0:0:0:0, parent: target0:0:0, bus [suspend]"),
    (" 50.004400", "device_pm_callback_end", "sd 0:0:0:0, err=0"),
    (" 50.004500", "device_pm_callback_start",
     "scsi_disk 0:0:0:0, parent: 0:0:0:0, class [suspend]"),
    (" 50.004600", "device_pm_callback_end", "scsi_disk 0:0:0:0, err=0"),
    (" 50.005000", "suspend_resume", "dpm_suspend[2] end"),
    (" 50.005100", "suspend_resume", "dpm_suspend_late[2] begin"),
    (" 50.005200", "device_pm_callback_start",
     "ahci 0000:00:1f.2, parent: pci0000:00, late bus [suspend]"),
    (" 50.005900", "device_pm_callback_end", "ahci 0000:00:1f.2, err=0"),
    (" 50.006000", "suspend_resume", "dpm_suspend_late[2] end"),
    (" 51.000000", "suspend_resume", "dpm_resume_noirq[16] begin"),
    (" 51.000100", "device_pm_callback_start",
     "pcieport 0000:00:1c.0, parent: pci0000:00, noirq bus [resume]"),
    (" 51.000900", "device_pm_callback_end", "pcieport 0000:00:1c.0, err=0"),
    (" 51.001000", "suspend_resume", "dpm_resume_noirq[16] end"),
    (" 51.001100", "suspend_resume", "dpm_resume_early[16] begin"),
    (" 51.001200", "device_pm_callback_start",
     "ahci 0000:00:1f.2, parent: pci0000:00, early bus [resume]"),
    (" 51.001500", "device_pm_callback_end", "ahci 0000:00:1f.2, err=0"),
    (" 51.002000", "suspend_resume", "dpm_resume_early[16] end"),
]


def test_modern_forms_read_alike_from_ftrace_and_log(tmp_path: Path) -> None:
    ftrace = tmp_path / "modern_ftrace.txt"
    ftrace.write_text("# tracer: nop\n" + "".join(
        f"       bash-700     [001] .....  {ts}: {ev}: {payload}\n" for ts, ev, payload in MODERN))
    log = tmp_path / "modern_dmesg.txt"
    log.write_text("[   49.000000] PM: suspend entry (deep)\n" + "".join(
        f"[{ts:>12}] {ev}: {payload}\n" for ts, ev, payload in MODERN))
    want = _callbacks([ftrace])
    assert set(want) == {
        ("", "platform", "suspend", ""), ("sd", "0:0:0:0", "suspend", "bus"),
        ("scsi_disk", "0:0:0:0", "suspend", "class"),
        ("ahci", "0000:00:1f.2", "suspend_late", "bus"),
        ("pcieport", "0000:00:1c.0", "resume_noirq", "bus"),
        ("ahci", "0000:00:1f.2", "resume_early", "bus")}
    assert _callbacks([log]) == want
    assert _phases([log]) == _phases([ftrace])

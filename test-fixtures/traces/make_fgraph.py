"""Regenerate the function_graph fixture (a sleepgraph -f capture):

    ../../.venv/bin/python make_fgraph.py

sleepgraph_fgraph_ftrace.txt  `current_tracer` function_graph with the options sleepgraph sets
(funcgraph-abstime, -cpu, -duration, -proc, -tail; here with funcgraph-overhead's marks), its
graph functions (dpm_run_callback, ...) and the PM trace events as graph comments.

The prologue follows kernel/trace/trace_functions_graph.c (print_graph_abs_time "%5lu.%06lu |  ",
print_graph_cpu " %*d) ", print_graph_proc: comm cut to 7 characters, "-pid" centred in 14,
then " | "; print_graph_duration: the overhead mark and "%s.%s us " padded, then "|  "; two
spaces of indent per depth; comments "/* %s */" indented one depth more).

Scenario (resume of one cycle, times in ms after 550 s):
- bash-1000 (CPU 0) runs dpm_resume; i8042's resume callback calls __const_udelay (udelay,
  50 us) from i8042_controller_resume.
- kworker/u8:3 (pid 120; CPU 1, then CPU 2 after it slept) resumes usb 1-1: usb_port_resume
  calls hub_port_reset, which calls msleep (50.15 ms; schedule_timeout inside it is not counted
  again) and __const_udelay (20 us); back in usb_port_resume an msleep of 10.1 ms returns on a
  later line, after lines of other threads, with `} /* msleep */`.
"""

from __future__ import annotations

from pathlib import Path

OUT = Path(__file__).with_name("sleepgraph_fgraph_ftrace.txt")
T0 = 550.0
MARKS = ((1e9, "$"), (1e8, "@"), (1e7, "*"), (1e6, "#"), (1e5, "!"), (1e4, "+"))


def _duration(us: float) -> str:
    ns = round(us * 1000)
    mark = next((m for v, m in MARKS if ns > v), " ")
    whole = str(ns // 1000)
    text = whole if len(whole) >= 7 else f"{whole}.{ns % 1000:03d}"[: 8]
    return f"{mark} {text} us " + " " * max(0, 7 - len(text) + 1)


def _proc(comm: str, pid: int) -> str:
    s = f"{comm[:7]}-{pid}"
    spaces = max(0, 14 - len(s))
    return " " * (spaces // 2) + s + " " * (spaces - spaces // 2)


def line(ms: float, cpu: int, comm: str, pid: int, depth: int, text: str,
         dur_us: float | None = None) -> tuple[float, str]:
    ts = T0 + ms / 1000
    dur = " " * 14 if dur_us is None else _duration(dur_us)
    return ts, (f"{ts:12.6f} |  {cpu:>2}) {_proc(comm, pid)} | {dur}|  "
                f"{'  ' * depth}{text}")


def comment(ms: float, cpu: int, comm: str, pid: int, depth: int, text: str) -> tuple[float, str]:
    return line(ms, cpu, comm, pid, depth + 1 if depth else 0, f"/* {text} */")


def main() -> None:
    k = ("kworker/u8:3", 120)
    b = ("bash", 1000)
    rows = [
        comment(0.0, 0, *b, 0, "suspend_resume: dpm_resume[16] begin"),
        # i8042 on the synchronous thread
        comment(0.100, 0, *b, 0, "device_pm_callback_start: i8042 i8042, parent: platform, "
                                 "bus [resume]"),
        line(0.101, 0, *b, 0, "dpm_run_callback() {"),
        line(0.102, 0, *b, 1, "i8042_pm_resume() {"),
        line(0.103, 0, *b, 2, "i8042_controller_resume() {"),
        line(0.104, 0, *b, 3, "__const_udelay();", 50.0),
        line(0.200, 0, *b, 3, "i8042_flush();", 1.5),
        line(0.300, 0, *b, 2, "} /* i8042_controller_resume */", 197.0),
        line(0.301, 0, *b, 1, "} /* i8042_pm_resume */", 199.0),
        line(0.302, 0, *b, 0, "} /* dpm_run_callback */", 201.0),
        comment(0.303, 0, *b, 0, "device_pm_callback_end: i8042 i8042, err=0"),
        # usb 1-1 on an async worker
        comment(0.400, 1, *k, 0, "device_pm_callback_start: usb 1-1, parent: usb1, "
                                 "type [resume]"),
        line(0.401, 1, *k, 0, "dpm_run_callback() {"),
        line(0.402, 1, *k, 1, "usb_dev_resume() {"),
        line(0.403, 1, *k, 2, "usb_port_resume() {"),
        line(0.404, 1, *k, 3, "hub_port_reset() {"),
        line(0.405, 1, *k, 4, "msleep() {"),
        line(0.406, 1, *k, 5, "schedule_timeout() {"),
        # slept; wakes up on CPU 2
        line(50.550, 2, *k, 5, "} /* schedule_timeout */", 50144.0),
        line(50.555, 2, *k, 4, "} /* msleep */", 50150.0),
        line(50.560, 2, *k, 4, "__const_udelay();", 20.0),
        line(50.600, 2, *k, 3, "} /* hub_port_reset */", 50196.0),
        line(50.601, 2, *k, 3, "msleep() {"),
        line(50.602, 2, *k, 4, "schedule_timeout() {"),
        # another thread's lines between the call and its return
        line(55.000, 0, *b, 0, "dpm_run_callback() {"),
        line(55.001, 0, *b, 1, "pci_pm_resume();", 3.0),
        line(55.005, 0, *b, 0, "} /* dpm_run_callback */", 5.0),
        line(60.699, 2, *k, 4, "} /* schedule_timeout */", 10097.0),
        line(60.701, 2, *k, 3, "} /* msleep */", 10100.0),
        line(60.800, 2, *k, 2, "} /* usb_port_resume */", 60397.0),
        line(60.801, 2, *k, 1, "} /* usb_dev_resume */", 60399.0),
        line(60.802, 2, *k, 0, "} /* dpm_run_callback */", 60401.0),
        comment(60.803, 2, *k, 0, "device_pm_callback_end: usb 1-1, err=0"),
        comment(61.000, 0, *b, 0, "suspend_resume: dpm_resume[16] end"),
    ]
    rows.sort(key=lambda r: r[0])
    head = [
        "# suspend-112326-013000 testhost mem 6.12.0-fg",
        "# tracer: function_graph",
        "#",
        "#     TIME        CPU    TASK/PID        DURATION                  FUNCTION CALLS",
        "#      |          |       |    |          |   |                     |   |   |   |",
    ]
    OUT.write_text("\n".join(head + [text for _, text in rows]) + "\n")


if __name__ == "__main__":
    main()

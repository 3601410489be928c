"""Regenerate the runtime PM fixtures (one scenario, three shapes):

    ../../.venv/bin/python make_rpm.py

rpm_6.12_trace_cmd.txt   `trace-cmd report` of a 6.12 kernel: rpm_* events with rpm_status
rpm_6.1_trace.txt        raw /sys/kernel/tracing/trace of a 6.1 kernel: no rpm_status event
                         (rpm.h of 6.1 has none), 5-column flags
rpm_4.19_trace.txt       raw trace of a 4.19 kernel: neither rpm_status nor rpm_usage, 4-column
                         flags
rpm_6.12.perfetto-trace  Perfetto: rpm_status as its typed event (FtraceEvent 489), the
                         other rpm events as GenericFtraceEvent (327), per-CPU bundles

Payloads follow the kernel's TP_printk exactly (include/trace/events/rpm.h:48, :100, :142):
"%s flags-%x cnt-%-2d dep-%-2d auto-%-1d p-%-1d irq-%-1d child-%d", "%pS:%s ret=%d",
"%s status=%s".

Scenario (times in ms after 100 s):
- i2c_foo.0 (driver foo_i2c, parent 0000:00:15.0, autosuspend 50 ms): six runtime cycles.
  Each resume first resumes its runtime-suspended parent (a nested rpm_resume, 1.51 ms);
  resume latencies 3.0 3.2 2.8 3.0 4.0 3.1, suspend latencies 1.0 1.0 1.2 0.9 1.0 1.1;
  suspended (RPM_SUSPENDED -> RPM_RESUMING) for 2, 3, 50, 500, 2.5 ms between them.
- 0000:00:15.0 (driver foo_lpss): suspends (0.15 ms) right after each child suspend; one refused
  rpm_suspend with an active child (-EBUSY) in cycle 2.
- i2c_foo.0: a nested get (rpm_resume returns 1: already active) and its put (rpm_usage) in
  cycle 1; rpm_idle with the usage count held (-EAGAIN) in cycle 3.
- 0000:00:14.0 (driver xhci_hcd, not in the source fixture): a long autosuspend, 2 s from the
  put to the suspend.
- then a system suspend: foo_i2c's suspend_late calls pm_runtime_get_sync() while runtime PM
  is disabled: rpm_resume returns -EACCES (-13).
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
BASE = 100.0  # seconds
C, P, X = "i2c_foo.0", "0000:00:15.0", "0000:00:14.0"
T_WORK = ("kworker/1:2", 88, 1)  # (task, pid, cpu)
T_WORK0 = ("kworker/0:3", 77, 0)
T_IDLE = ("<idle>", 0, 2)
T_USER = ("i2c-tool", 400, 3)
T_PM = ("bash", 500, 0)

RESUME_MS = [3.0, 3.2, 2.8, 3.0, 4.0, 3.1]
SUSPEND_MS = [1.0, 1.0, 1.2, 0.9, 1.0, 1.1]
SUSPENDED_MS = [2.0, 3.0, 50.0, 500.0, 2.5]
PARENT_RESUME_MS = 1.51


class Events:
    def __init__(self) -> None:
        self.rows: list[tuple[float, tuple[str, int, int], str, dict]] = []
        self.state = {C: dict(cnt=0, child=0), P: dict(cnt=0, child=1), X: dict(cnt=0, child=0)}

    def add(self, ms: float, task: tuple[str, int, int], ev: str, **f: object) -> None:
        self.rows.append((round(BASE + ms / 1000, 6), task, ev, f))

    def internal(self, ms: float, task: tuple, ev: str, dev: str, flags: int,
                 dep: int = 0) -> None:
        s = self.state[dev]
        self.add(ms, task, ev, name=dev, flags=flags, cnt=s["cnt"], dep=dep, auto=1, p=0,
                 irq=0, child=s["child"])

    def ret(self, ms: float, task: tuple, func: str, dev: str, ret: int) -> None:
        self.add(ms, task, "rpm_return_int", func=func, name=dev, ret=ret)

    def status(self, ms: float, task: tuple, dev: str, st: str) -> None:
        self.add(ms, task, "rpm_status", name=dev, status=st)

    def pm(self, ms: float, task: tuple, ev: str, **f: object) -> None:
        self.add(ms, task, ev, **f)


def scenario() -> Events:
    e = Events()
    t = 0.0
    # the long autosuspend of 0000:00:14.0: resumed at 0.5 ms, put at 10 ms, suspended 2 s later
    e.state[X]["cnt"] = 1  # GET_PUT increments the count before the event
    e.internal(0.5, T_USER, "rpm_resume", X, 0x4)
    e.status(0.6, T_USER, X, "RPM_RESUMING")
    e.status(1.2, T_USER, X, "RPM_ACTIVE")
    e.ret(1.3, T_USER, "rpm_resume", X, 0)
    e.state[X]["cnt"] = 0
    e.internal(10.0, T_USER, "rpm_suspend", X, 0xD)
    e.ret(10.004, T_USER, "rpm_suspend", X, 0)
    e.internal(2010.0, T_IDLE, "rpm_suspend", X, 0x9)
    e.ret(2010.003, T_IDLE, "rpm_suspend", X, 0)
    e.internal(2010.2, T_WORK0, "rpm_suspend", X, 0xA)
    e.status(2010.21, T_WORK0, X, "RPM_SUSPENDING")
    e.status(2010.7, T_WORK0, X, "RPM_SUSPENDED")
    e.ret(2010.8, T_WORK0, "rpm_suspend", X, 0)

    t = 3000.0
    for k in range(6):
        r0 = t
        # resume of the child: its parent is runtime-suspended and resumes first (nested)
        e.state[C]["cnt"] = 1
        e.internal(r0, T_USER, "rpm_resume", C, 0x4)
        e.internal(r0 + 0.010, T_USER, "rpm_resume", P, 0x0)
        e.status(r0 + 0.020, T_USER, P, "RPM_RESUMING")
        e.status(r0 + 1.510, T_USER, P, "RPM_ACTIVE")
        e.ret(r0 + 0.010 + PARENT_RESUME_MS, T_USER, "rpm_resume", P, 0)
        e.state[P]["child"] = 1
        e.status(r0 + 1.530, T_USER, C, "RPM_RESUMING")
        e.status(r0 + RESUME_MS[k] - 0.010, T_USER, C, "RPM_ACTIVE")
        e.ret(r0 + RESUME_MS[k], T_USER, "rpm_resume", C, 0)
        active = r0 + RESUME_MS[k]
        if k == 2:  # pm_runtime_suspend(parent) with an active child: -EBUSY
            e.internal(active + 5, T_PM, "rpm_suspend", P, 0x0)
            e.ret(active + 5.002, T_PM, "rpm_suspend", P, -16)
        if k == 1:  # a nested get (already active: ret=1) and its put, which only drops
            # the count (rpm_usage: runtime.c:1134; kernels before rpm_usage print nothing)
            e.state[C]["cnt"] = 2
            e.internal(active + 2, T_USER, "rpm_resume", C, 0x4)
            e.ret(active + 2.001, T_USER, "rpm_resume", C, 1)
            e.state[C]["cnt"] = 1
            e.internal(active + 4, T_USER, "rpm_usage", C, 0x4)
        if k == 3:  # pm_runtime_idle() while the usage count is held: -EAGAIN
            e.internal(active + 5, T_USER, "rpm_idle", C, 0x0)
            e.ret(active + 5.001, T_USER, "rpm_idle", C, -11)
        if k == 5:
            break  # stays active until the system suspend
        # put: pm_runtime_put_autosuspend() arms the timer (RPM_GET_PUT|RPM_ASYNC|RPM_AUTO)
        put = active + 20
        e.state[C]["cnt"] = 0
        e.internal(put, T_USER, "rpm_suspend", C, 0xD)
        e.ret(put + 0.004, T_USER, "rpm_suspend", C, 0)
        # the timer fires 50 ms later and queues the suspend; the worker runs it
        e.internal(put + 50, T_IDLE, "rpm_suspend", C, 0x9)
        e.ret(put + 50.003, T_IDLE, "rpm_suspend", C, 0)
        s0 = put + 50.1
        e.internal(s0, T_WORK, "rpm_suspend", C, 0xA)
        e.status(s0 + 0.010, T_WORK, C, "RPM_SUSPENDING")
        suspended_at = s0 + SUSPEND_MS[k] - 0.1
        e.status(suspended_at, T_WORK, C, "RPM_SUSPENDED")
        e.state[P]["child"] = 0
        e.internal(suspended_at + 0.02, T_WORK, "rpm_idle", P, 0x1)  # rpm_idle(parent, ASYNC)
        e.ret(suspended_at + 0.03, T_WORK, "rpm_idle", P, 0)
        e.ret(s0 + SUSPEND_MS[k], T_WORK, "rpm_suspend", C, 0)
        # the parent's queued idle: rpm_idle(NOWAIT) then rpm_suspend(NOWAIT|AUTO)
        p0 = s0 + SUSPEND_MS[k] + 0.02
        e.internal(p0, T_WORK0, "rpm_idle", P, 0x2)
        e.ret(p0 + 0.01, T_WORK0, "rpm_idle", P, 0)
        e.internal(p0 + 0.02, T_WORK0, "rpm_suspend", P, 0xA)
        e.status(p0 + 0.03, T_WORK0, P, "RPM_SUSPENDING")
        e.status(p0 + 0.15, T_WORK0, P, "RPM_SUSPENDED")
        e.ret(p0 + 0.17, T_WORK0, "rpm_suspend", P, 0)
        t = suspended_at + SUSPENDED_MS[k] - 1.530  # the next RPM_RESUMING is SUSPENDED_MS later
        assert t > p0 + 0.17

    # a system suspend; in suspend_late runtime PM is disabled (dep-1): get_sync -> -EACCES.
    # The child must be runtime-suspended for that: it autosuspends first.
    t += 200
    e.state[C]["cnt"] = 0
    e.internal(t, T_WORK, "rpm_suspend", C, 0xA)
    e.status(t + 0.01, T_WORK, C, "RPM_SUSPENDING")
    e.status(t + 0.9, T_WORK, C, "RPM_SUSPENDED")
    e.ret(t + 1.0, T_WORK, "rpm_suspend", C, 0)
    t += 100
    e.pm(t, T_PM, "suspend_resume", action="dpm_suspend", val=2, begin=True)
    for drv, dev, parent in (("xhci_hcd", X, "pci0000:00"), ("foo_lpss", P, "pci0000:00"),
                             ("foo_i2c", C, P)):
        t += 1
        e.pm(t, T_PM, "start", drv=drv, dev=dev, parent=parent, info="driver ", verb=2)
        t += 0.5
        e.pm(t, T_PM, "end", drv=drv, dev=dev, err=0)
    t += 1
    e.pm(t, T_PM, "suspend_resume", action="dpm_suspend", val=2, begin=False)
    e.pm(t + 0.1, T_PM, "suspend_resume", action="dpm_suspend_late", val=2, begin=True)
    t += 1
    e.pm(t, T_PM, "start", drv="foo_i2c", dev=C, parent=P, info="late driver ", verb=2)
    e.state[C]["cnt"] = 1
    e.internal(t + 0.01, T_PM, "rpm_resume", C, 0x4, dep=1)
    e.ret(t + 0.02, T_PM, "rpm_resume", C, -13)
    e.pm(t + 0.3, T_PM, "end", drv="foo_i2c", dev=C, err=0)
    e.pm(t + 1, T_PM, "suspend_resume", action="dpm_suspend_late", val=2, begin=False)
    t += 500
    e.pm(t, T_PM, "suspend_resume", action="dpm_resume_early", val=16, begin=True)
    e.pm(t + 1, T_PM, "suspend_resume", action="dpm_resume_early", val=16, begin=False)
    e.pm(t + 2, T_PM, "suspend_resume", action="dpm_resume", val=16, begin=True)
    t += 3
    for drv, dev, parent in (("foo_i2c", C, P), ("foo_lpss", P, "pci0000:00"),
                             ("xhci_hcd", X, "pci0000:00")):
        e.pm(t, T_PM, "start", drv=drv, dev=dev, parent=parent, info="driver ", verb=16)
        t += 0.5
        e.pm(t, T_PM, "end", drv=drv, dev=dev, err=0)
        t += 0.5
    e.pm(t, T_PM, "suspend_resume", action="dpm_resume", val=16, begin=False)
    e.rows.sort(key=lambda r: r[0])
    return e


def payload(ev: str, f: dict, symbols: str) -> str:
    if ev in ("rpm_suspend", "rpm_resume", "rpm_idle", "rpm_usage"):
        return (f"{f['name']} flags-{f['flags']:x} cnt-{f['cnt']:<2d} dep-{f['dep']:<2d} "
                f"auto-{f['auto']:<1d} p-{f['p']:<1d} irq-{f['irq']:<1d} child-{f['child']}")
    if ev == "rpm_return_int":
        off = {"rpm_suspend": "0x2c0", "rpm_resume": "0x1a4", "rpm_idle": "0xe8"}[f["func"]]
        size = {"rpm_suspend": "0x6a0", "rpm_resume": "0x6e0", "rpm_idle": "0x2f0"}[f["func"]]
        sym = f"{f['func']}+{off}/{size}" if symbols == "raw" else f"{f['func']}+{off}"
        return f"{sym}:{f['name']} ret={f['ret']}"
    if ev == "rpm_status":
        return f"{f['name']} status={f['status']}"
    if ev == "suspend_resume":
        return f"{f['action']}[{f['val']}] {'begin' if f['begin'] else 'end'}"
    if ev == "start":
        verb = {2: "suspend", 16: "resume"}[f["verb"]]
        return f"{f['drv']} {f['dev']}, parent: {f['parent']}, {f['info']}[{verb}]"
    return f"{f['drv']} {f['dev']}, err={f['err']}"


_NAMES = {"start": "device_pm_callback_start", "end": "device_pm_callback_end"}

RAW_HEADER_61 = """# tracer: nop
#
# entries-in-buffer/entries-written: {n}/{n}   #P:4
#
#                                _-----=> irqs-off/BH-disabled
#                               / _----=> need-resched
#                              | / _---=> hardirq/softirq
#                              || / _--=> preempt-depth
#                              ||| / _-=> migrate-disable
#                              |||| /     delay
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
#              | |         |   |||||     |         |
"""


RAW_HEADER_419 = """# tracer: nop
#
# entries-in-buffer/entries-written: {n}/{n}   #P:4
#
#                              _-----=> irqs-off
#                             / _----=> need-resched
#                            | / _---=> hardirq/softirq
#                            || / _--=> preempt-depth
#                            ||| /     delay
#           TASK-PID   CPU#  ||||    TIMESTAMP  FUNCTION
#              | |       |   ||||       |         |
"""


def write_text(e: Events, path: Path, shape: str, with_status: bool,
               with_usage: bool = True) -> None:
    """shape "raw" (5 flag columns, 5.x/6.x), "raw4" (4 flag columns, 4.x) or "trace-cmd"."""
    lines = []
    for ts, (task, pid, cpu), ev, f in e.rows:
        if ev == "rpm_status" and not with_status or ev == "rpm_usage" and not with_usage:
            continue
        name = _NAMES.get(ev, ev)
        head = f"{task}-{pid}"
        if shape.startswith("raw"):
            flags = "d..1" if shape == "raw4" else "d..1."
            lines.append(f"{head:>16} [{cpu:03d}] {flags} {ts:12.6f}: {name}: "
                         + payload(ev, f, "raw"))
        else:
            label = f"{name}:"
            label = label.ljust(21) if len(label) < 21 else label
            lines.append(f"{head:>16} [{cpu:03d}] {ts:12.6f}: {label} "
                         + payload(ev, f, "trace-cmd"))
    header = {"raw": RAW_HEADER_61, "raw4": RAW_HEADER_419}.get(shape, "cpus=4\n").format(
        n=len(lines))
    path.write_text(header + "\n".join(lines) + "\n")


def write_perfetto(e: Events, path: Path) -> None:
    from perfetto.trace_builder.proto_builder import StreamingTraceProtoBuilder

    with open(path, "wb") as fh:
        builder = StreamingTraceProtoBuilder(fh)
        for cpu in (3, 2, 1, 0):  # not in global time order, as real traces are
            packet = builder.create_packet()
            bundle = packet.ftrace_events
            bundle.cpu = cpu
            for ts, (_task, pid, c), ev, f in e.rows:
                if c != cpu:
                    continue
                out = bundle.event.add()
                out.timestamp = round(ts * 1e9)
                out.pid = pid
                if ev == "rpm_status":
                    out.rpm_status.name = f["name"]
                    out.rpm_status.status = {"RPM_ACTIVE": 0, "RPM_RESUMING": 1,
                                             "RPM_SUSPENDED": 2, "RPM_SUSPENDING": 3}[f["status"]]
                elif ev.startswith("rpm_"):
                    g = out.generic
                    g.event_name = ev
                    for k, v in _generic_fields(ev, f):
                        fld = g.field.add()
                        fld.name = k
                        if isinstance(v, str):
                            fld.str_value = v
                        elif k == "ip":
                            fld.uint_value = v
                        else:
                            fld.int_value = v
                elif ev == "suspend_resume":
                    out.suspend_resume.action = f["action"]
                    out.suspend_resume.val = f["val"]
                    out.suspend_resume.start = int(f["begin"])
                elif ev == "start":
                    s = out.device_pm_callback_start
                    s.driver, s.device, s.parent, s.pm_ops, s.event = (
                        f["drv"], f["dev"], f["parent"], f["info"], f["verb"])
                else:
                    s = out.device_pm_callback_end
                    s.driver, s.device, s.error = f["drv"], f["dev"], f["err"]
            builder.write_packet(packet)


def _generic_fields(ev: str, f: dict) -> list[tuple[str, object]]:
    if ev == "rpm_return_int":
        return [("name", f["name"]), ("ip", 0xFFFFFFFF81A0B2C0), ("ret", f["ret"])]
    return [("name", f["name"]), ("flags", f["flags"]), ("usage_count", f["cnt"]),
            ("disable_depth", f["dep"]), ("runtime_auto", f["auto"]),
            ("request_pending", f["p"]), ("irq_safe", f["irq"]), ("child_count", f["child"])]


if __name__ == "__main__":
    ev = scenario()
    write_text(ev, HERE / "rpm_6.12_trace_cmd.txt", "trace-cmd", with_status=True)
    write_text(ev, HERE / "rpm_6.1_trace.txt", "raw", with_status=False)
    write_text(ev, HERE / "rpm_4.19_trace.txt", "raw4", with_status=False, with_usage=False)
    write_perfetto(ev, HERE / "rpm_6.12.perfetto-trace")

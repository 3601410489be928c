# ruff: noqa: E501  (trace lines as the kernel prints them)
"""The scheduler's events in ftrace text (sched_switch, sched_waking): what a callback's thread
waited for. A mechanism fixture (written here, by hand, in the kernel's format); the claim
that it helps is tested on the lab's real A/B captures (test_lab_whatif.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dpmlens.traces import load_traces
from dpmlens.traces.analysis.waits import external_waits
from dpmlens.traces.model.sched import BLOCKED, EXTERNAL, READY, RUN, SchedLog

# An async ata port suspend on a worker (pid 50) that hands the work to its scsi_eh thread
# (pid 60) and blocks; scsi_eh works 2 ms, waits 3 ms for the disk (woken from a hard irq),
# works 1 ms and wakes the worker, which finishes. Lines out of time order across CPUs, as
# the per-CPU buffers give them.
CAPTURE = """\
# tracer: nop
#
# entries-in-buffer/entries-written: 14/14   #P:2
#
#                                _-----=> irqs-off/BH-disabled
#                               / _----=> need-resched
#                              | / _---=> hardirq/softirq
           sh-10      [000] .....   100.000000: suspend_resume: dpm_suspend[2] begin
 kworker/u4:1-50      [001] .....   100.000500: device_pm_callback_start: ata_port ata1, parent: ata1, driver [suspend]
 kworker/u4:1-50      [001] d..2.   100.001000: sched_switch: prev_comm=kworker/u4:1 prev_pid=50 prev_prio=120 prev_state=D ==> next_comm=scsi_eh_0 next_pid=60 next_prio=120
    scsi_eh_0-60      [001] d..2.   100.003000: sched_switch: prev_comm=scsi_eh_0 prev_pid=60 prev_prio=120 prev_state=D ==> next_comm=swapper/1 next_pid=0 next_prio=120
       <idle>-0       [001] dNh3.   100.006000: sched_waking: comm=scsi_eh_0 pid=60 prio=120 target_cpu=001
       <idle>-0       [001] d..2.   100.006010: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=scsi_eh_0 next_pid=60 next_prio=120
           sh-10      [000] d..2.   100.006500: sched_switch: prev_comm=sh prev_pid=10 prev_prio=120 prev_state=R+ ==> next_comm=Web Content next_pid=77 next_prio=120
    scsi_eh_0-60      [001] d..4.   100.007000: sched_waking: comm=kworker/u4:1 pid=50 prio=120 target_cpu=001
    scsi_eh_0-60      [001] d..2.   100.007010: sched_switch: prev_comm=scsi_eh_0 prev_pid=60 prev_prio=120 prev_state=S ==> next_comm=kworker/u4:1 next_pid=50 next_prio=120
 kworker/u4:1-50      [001] .....   100.008000: device_pm_callback_end: ata_port ata1, err=0
           sh-10      [000] .....   100.009000: suspend_resume: dpm_suspend[2] end
 kworker/u4:1-50      [001] d..2.   100.009500: sched_switch: prev_comm=kworker/u4:1 prev_pid=50 prev_prio=120 prev_state=broken
"""


@pytest.fixture()
def traces(tmp_path: Path):  # noqa: ANN201 - TraceSet
    path = tmp_path / "ftrace.txt"
    path.write_text(CAPTURE)
    return load_traces([str(path)])


def _thread(traces, task: str) -> int:  # noqa: ANN001
    return traces.store.threads.index(task)


def test_states_follow_the_switches_and_wakeups(traces) -> None:  # noqa: ANN001
    log = traces.store.sched
    assert log is not None
    worker = _thread(traces, "kworker/u4:1-50")
    eh = traces.store.task_thread("scsi_eh_0-60")
    states = list(log.states(0, worker, 100.0005, 100.008))
    # running until it blocks, blocked until scsi_eh woke it, then waiting for the CPU
    assert [(s, round((b - a) * 1e6)) for a, b, s, _ in states] == [
        (RUN, 500), (BLOCKED, 6000), (READY, 10), (RUN, 990)]
    assert states[1][3] == eh  # the waker: scsi_eh, not an interrupt
    eh_states = list(log.states(0, eh, 100.001, 100.007))
    assert [(s, round((b - a) * 1e6)) for a, b, s, _ in eh_states] == [
        (RUN, 2000), (BLOCKED, 3000), (READY, 10), (RUN, 990)]
    assert eh_states[1][3] == EXTERNAL  # woken from a hard irq ("dNh3.")


def test_a_wait_for_another_thread_is_that_threads_work(traces) -> None:  # noqa: ANN001
    worker = _thread(traces, "kworker/u4:1-50")
    waits = external_waits(traces.store.sched, 0, worker, 100.0005, 100.008)
    # only scsi_eh's 3 ms wait for the disk; its 3 ms on the CPU are the callback's work
    assert waits is not None
    assert [(round((a - 100) * 1e6), round((b - 100) * 1e6)) for a, b in waits] == [(3000, 6000)]
    # not followed (depth 0): the whole blocked stretch counts as work, as without the events
    assert external_waits(traces.store.sched, 0, worker, 100.0005, 100.008, depth=0) == []


def test_comm_with_spaces_preemption_and_a_broken_line(traces) -> None:  # noqa: ANN001
    log = traces.store.sched
    web = traces.store.task_thread("Web Content-77")
    assert [s for _, _, s, _ in log.states(0, web, 100.0065, 100.009)] == [RUN]
    sh = traces.store.task_thread("sh-10")
    assert [s for _, _, s, _ in log.states(0, sh, 100.006, 100.0068)] == [RUN, READY]  # R+
    assert traces.skipped_lines == 1  # the sched_switch without its next_ side
    # the callbacks are read as without the scheduler's events
    assert traces.sample_count == 1


def test_no_events_no_waits() -> None:
    assert external_waits(SchedLog(), 0, 3, 1.0, 2.0) is None


def test_contended_whatif_uses_the_waits(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """`--cpus` on a capture with scheduler events says so in its assumptions, and the
    no-change replay still reproduces the phase."""
    from cli_helpers import run_cli

    path = tmp_path / "ftrace.txt"
    path.write_text(CAPTURE)
    res = run_cli(capsys, "trace", "whatif", str(path), "--cpus", "2", "--format", "json")
    assert res.code == 0, res.err
    import json

    out = json.loads(res.out)
    assert any("scheduler's events" in a for a in out["assumptions"])
    (run,) = [r for r in out["runs"] if r["phase"] == "suspend"]
    assert abs(run["predicted_us"] - run["measured_us"]) < 0.01


def test_time_split_of_the_callback(traces) -> None:  # noqa: ANN001
    from dpmlens.traces.analysis.waits import group_splits

    (g,) = group_splits(traces.store, 10)
    assert (g.key[0], g.key[1], g.n) == ("ata_port", "ata1", 1)
    # 0.5 + 0.99 ms on its CPU, 10 us runnable, scsi_eh's 2 + 0.01 + 0.99 ms for it, 3 ms
    # for the disk: the 7.5 ms callback, all of it
    assert [round(x) for x in (g.on_cpu, g.runnable, g.helpers, g.device, g.other)] == [
        1490, 10, 3000, 3000, 0]
    assert round(g.on_cpu + g.runnable + g.helpers + g.device + g.other) == round(g.median_us)


def test_report_prints_the_split(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from cli_helpers import run_cli

    path = tmp_path / "ftrace.txt"
    path.write_text(CAPTURE)
    res = run_cli(capsys, "trace", "report", str(path))
    assert "Where the time went" in res.out
    res = run_cli(capsys, "trace", "report", str(path), "--format", "json")
    (row,) = json.loads(res.out)["time_split"]
    assert row["device_wait_us"] == pytest.approx(3000, abs=1)


def test_contention_is_on_by_default_with_the_events(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Without --cpus: the contention model (2 CPUs from #P:2) when the capture has the
    scheduler's events; --no-sched or --cpus off turn it off."""
    import json

    from cli_helpers import run_cli

    path = tmp_path / "ftrace.txt"
    path.write_text(CAPTURE)

    def assumptions(*extra: str) -> list[str]:
        res = run_cli(capsys, "trace", "whatif", str(path), "--format", "json", *extra)
        assert res.code == 0, res.err
        return json.loads(res.out)["assumptions"]

    assert any("share 2 CPUs" in a and "scheduler's events" in a for a in assumptions())
    assert not any("CPU contention" in a for a in assumptions("--no-sched"))
    assert not any("CPU contention" in a for a in assumptions("--cpus", "off"))
    with_cpus = assumptions("--no-sched", "--cpus", "2")
    assert any("CPU contention" in a and "scheduler's events" not in a for a in with_cpus)


def test_the_editor_gets_the_split(tmp_path: Path) -> None:
    """The language server's Callback rows carry `time_split` and the hover prints it."""
    from dpmlens.lsp.hover import measured_table
    from dpmlens.lsp.trace_mapping import map_traces, parse_traces

    path = tmp_path / "ftrace.txt"
    path.write_text(CAPTURE)
    parsed = parse_traces([str(path)])
    callbacks, _, _, _ = map_traces(parsed, [], lambda p: p)
    (cb,) = [c for c in callbacks if c["device"] == "ata1"]
    assert cb["time_split"]["device_wait_us"] == pytest.approx(3000, abs=1)
    text = measured_table([cb])
    assert "Where the time went" in text and "3.00 ms for a device or timer" in text


NS = 1_000_000_000


def _perfetto(path: Path, sched: Callable[[Any, Callable[[float, int], Any]], None]) -> None:
    """The ata port's callback (100.0005 s to 100.008 s on pid 50) in one CPU 1 bundle, and
    what `sched(bundle, add)` puts beside it (add(us after 100 s, pid) -> a new event)."""
    from perfetto.trace_builder.proto_builder import StreamingTraceProtoBuilder

    with open(path, "wb") as f:
        builder = StreamingTraceProtoBuilder(f)
        packet = builder.create_packet()
        bundle = packet.ftrace_events
        bundle.cpu = 1

        def add(t_us: float, pid: int) -> Any:
            ev = bundle.event.add()
            ev.timestamp = 100 * NS + int(t_us * 1000)
            ev.pid = pid
            return ev

        ev = add(500, 50).device_pm_callback_start
        ev.driver, ev.device, ev.parent, ev.pm_ops, ev.event = "ata_port", "ata1", "ata1", "", 2
        sched(bundle, add)
        ev = add(8000, 50).device_pm_callback_end
        ev.driver, ev.device, ev.error = "ata_port", "ata1", 0
        builder.write_packet(packet)


def _port_waits(path: Path) -> list[tuple[int, int]]:
    traces = load_traces([str(path)])
    assert traces.files[0].format == "perfetto" and traces.sample_count == 1
    worker = traces.store.threads.index("pid 50")
    waits = external_waits(traces.store.sched, 0, worker, 100.0005, 100.008)
    assert waits is not None
    return [(round((a - 100) * 1e6), round((b - 100) * 1e6)) for a, b in waits]


def test_perfetto_sched_events_give_the_same_waits(tmp_path: Path) -> None:
    """The same scenario as a Perfetto trace (the perfetto package's builder): sched_switch's
    prev_state (0 running, >= 0x100 preempted, else blocked) and sched_waking's common_flags
    (0x08 hard irq) say what the ftrace text's columns say."""

    def sched(bundle: Any, add: Callable[[float, int], Any]) -> None:
        for t_us, pid, prev, state, nxt in ((1000, 50, 50, 2, 60), (3000, 60, 60, 2, 0),
                                            (6010, 0, 0, 0, 60), (7010, 60, 60, 1, 50)):
            sw = add(t_us, pid).sched_switch  # state 2: D, 1: S, 0: running
            sw.prev_pid, sw.prev_state, sw.next_pid = prev, state, nxt
        ev = add(6000, 0)
        ev.common_flags = 0x08 | 0x01  # hard irq, irqs off
        ev.sched_waking.pid = 60
        add(7000, 60).sched_waking.pid = 50

    path = tmp_path / "t.perfetto-trace"
    _perfetto(path, sched)
    assert _port_waits(path) == [(3000, 6000)]


def test_perfetto_compact_sched_gives_the_same_waits(tmp_path: Path) -> None:
    """compact_sched (delta-encoded times; a switch's prev and a wake-up's waker follow from
    the CPU's order): the same scenario, the same wait."""

    def sched(bundle: Any, add: Callable[[float, int], Any]) -> None:
        cs = bundle.compact_sched
        # switches: (us, prev_state, next_pid); the first only tells who is on the CPU
        last = 0
        for t_us, state, nxt in ((400, 0, 50), (1000, 2, 60), (3000, 2, 0), (6010, 0, 60),
                                 (7010, 1, 50)):
            t = 100 * NS + t_us * 1000
            cs.switch_timestamp.append(t - last)
            last = t
            cs.switch_prev_state.append(state)
            cs.switch_next_pid.append(nxt)
            cs.switch_next_prio.append(120)
            cs.switch_next_comm_index.append(0)
        last = 0
        for t_us, pid, flags in ((6000, 60, 0x08), (7000, 50, 0)):
            t = 100 * NS + t_us * 1000
            cs.waking_timestamp.append(t - last)
            last = t
            cs.waking_pid.append(pid)
            cs.waking_target_cpu.append(1)
            cs.waking_prio.append(120)
            cs.waking_comm_index.append(0)
            cs.waking_common_flags.append(flags)
        cs.intern_table.append("x")

    path = tmp_path / "t.perfetto-trace"
    _perfetto(path, sched)
    assert _port_waits(path) == [(3000, 6000)]


@pytest.mark.parametrize("payload", [
    "sched_switch: prev_comm= prev_pid=x prev_prio=1 prev_state=S ==> next_comm=a next_pid=2",
    "sched_switch: prev_comm=a prev_pid=1 prev_state=S ==> next_comm=b next_pid=",
    "sched_switch: ==> next_comm=b next_pid=2 next_prio=120",
    "sched_switch: prev_comm=a prev_pid=99999999999999999999 prev_prio=1 prev_state=S ==> next_comm=b next_pid=2 next_prio=1",
    "sched_waking: comm=a pid=",
    "sched_waking: pid=5 prio=1",
    "sched_waking: comm=a pid=-3 prio=1 target_cpu=000",
    "sched_waking:",
])
def test_broken_sched_lines_are_skipped(tmp_path: Path, payload: str) -> None:
    path = tmp_path / "ftrace.txt"
    path.write_text(CAPTURE + f"   kworker/0:1-9   [000] d..2.   100.0095: {payload}\n")
    traces = load_traces([str(path)])
    assert traces.errors == [] and traces.sample_count == 1

"""Measured delays (issue 9, part 3) and the what-if replay (part 4)."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest
from traces_helpers import FIXTURES, shared_traces

from dpmlens.traces import load_traces
from dpmlens.traces.analysis.critical import critical_path
from dpmlens.traces.analysis.delays import delay_sites, measured_delays
from dpmlens.traces.analysis.whatif import Changes, build_nodes, matcher, replay, what_if
from dpmlens.traces.model.timeline import build_timeline
from dpmlens.traces.source.delay_sites import join_sites, spec_minimums

CAPTURE = FIXTURES / "timeline" / "test_mem_ftrace.txt"
SRC = FIXTURES / "timeline_src"


def _load(path: Path = CAPTURE):  # noqa: ANN202
    t = load_traces([path])
    runs = build_timeline(t)
    return t, runs, measured_delays(t, runs)


def _phase(w, phase: str) -> tuple[float, float]:  # noqa: ANN001 - WhatIf
    (row,) = [r for r in w.per_phase() if r[0] == phase]
    return row[2], row[3]


# -- measured delays --------------------------------------------------------------------------

def test_delays_are_attributed_to_their_threads_callback() -> None:
    t, runs, delays = _load()
    got = [(d.func, d.caller, d.requested_ms, d.measured_us, d.interval.device,
            d.interval.phase) for d in delays]
    assert got == [
        ("msleep", "usb_port_suspend", 10.0, 10300.0, "1-1.4", "suspend"),
        ("msleep", "usb_port_resume", 20.0, 19800.0, "1-1", "resume"),
        ("msleep", "usb_port_resume", 40.0, 41000.0, "1-1.4", "resume"),
        ("usleep_range", "hub_port_reset", 10.0, 8600.0, "1-1.4", "resume")]
    sites = delay_sites(delays, [critical_path(r) for r in runs])
    top = sites[0]
    assert (top.caller, top.func, top.requested_ms, top.on_path, top.total_us) == (
        "usb_port_resume", "msleep", 40.0, 1, 41000.0)


def test_nested_and_outside_delays(tmp_path: Path) -> None:
    lines = [
        (1.0, "bash-1", "suspend_resume: dpm_resume[16] begin"),
        (1.001, "bash-1", "device_pm_callback_start: a dev-a, parent: none, bus [resume]"),
        (1.002, "bash-1", "msleep_cal: (msleep+0x0/0x40) time=10"),
        (1.0021, "bash-1", "schedule_timeout_cal: (schedule_timeout+0x0/0x40) timeout=3"),
        (1.0119, "bash-1", "schedule_timeout_ret: (msleep+0x2f/0x40 <- schedule_timeout) "
                           "arg1=0x0"),
        (1.012, "bash-1", "msleep_ret: (a_resume+0x12/0x90 [a] <- msleep) arg1=0x0"),
        (1.013, "bash-1", "device_pm_callback_end: a dev-a, err=0"),
        (1.014, "kworker/1:1-7", "msleep_cal: (msleep+0x0/0x40) time=200"),
        (1.215, "kworker/1:1-7", "msleep_ret: (ata_msleep+0x3a/0x70 <- msleep) arg1=0x0"),
        (1.3, "bash-1", "suspend_resume: dpm_resume[16] end"),
    ]
    f = tmp_path / "t.txt"
    f.write_text("".join(f"{task:>16} [000] .... {ts:.6f}: {x}\n" for ts, task, x in lines))
    _, _, delays = _load(f)
    # schedule_timeout inside msleep on the same thread: counted once, as the msleep
    assert [(d.caller, d.interval.device if d.interval else None) for d in delays] == [
        ("a_resume", "dev-a"), ("ata_msleep", None)]


def test_join_to_the_source_delay_sites() -> None:
    _, runs, delays = _load()
    sites = delay_sites(delays, [critical_path(r) for r in runs])
    assert join_sites(sites, SRC) == 4
    by = {(s.caller, s.requested_ms): s.static for s in sites}
    assert by[("usb_port_resume", 40.0)] == {
        "path": "usb/hubsim.c", "line": 19, "function": "usb_port_resume",
        "call": "msleep(40)", "value_ms": 40.0, "spec": "TRSMRCY", "min_ms": 10.0,
        "padding_ms": 30.0}
    # the same function's other msleep has its own value, no spec quantity
    assert by[("usb_port_resume", 20.0)]["line"] == 17
    assert by[("usb_port_resume", 20.0)]["spec"] is None
    # usleep_range(HUB_RESET_MS * 1000, ...) evaluated through the #define
    assert by[("hub_port_reset", 10.0)]["value_ms"] == 10.0
    assert spec_minimums(sites) == {("usb_port_resume", "msleep", 40.0): 10.0}


def test_report_lists_delays_with_source(capsys: pytest.CaptureFixture[str]) -> None:
    from dpmlens.cli import main

    assert main(["trace", "report", str(CAPTURE), "--format", "json", "--source",
                 str(SRC)]) == 0
    data = json.loads(capsys.readouterr().out)
    d = data["delays"][0]
    assert {k: d[k] for k in ("function", "caller", "requested_ms", "calls", "cycles",
                              "calls_per_cycle", "measured_us", "mean_us",
                              "on_critical_path_calls", "on_critical_path_us")} == {
        "function": "msleep", "caller": "usb_port_resume", "requested_ms": 40.0, "calls": 1,
        "cycles": 1, "calls_per_cycle": 1.0, "measured_us": 41000.0, "mean_us": 41000.0,
        "on_critical_path_calls": 1, "on_critical_path_us": 41000.0}
    assert d["callbacks"] == [{"driver": "usb", "device": "1-1.4", "phase": "resume",
                               "calls": 1}]
    assert d["static"]["spec"] == "TRSMRCY"
    assert main(["trace", "report", str(CAPTURE)]) == 0
    out = capsys.readouterr().out
    assert "msleep(40) from usb_port_resume: 41.00 ms" in out  # under its critical-path step


# -- what-if ----------------------------------------------------------------------------------

def test_no_change_reproduces_every_callback() -> None:
    _, runs, _ = _load()
    for r in runs:
        rp = replay(r, build_nodes(r))
        assert rp.predicted_us == pytest.approx(r.wall_us, abs=0.01)


def test_shorter_delay_on_the_critical_path() -> None:
    _, runs, delays = _load()
    w = what_if(runs, delays, Changes(delays={"usb_port_resume": 10}))
    # msleep(40) took 41 ms: 10 ms + the 1 ms measured beyond the request -> 30 ms saved;
    # msleep(20) took 19.8 ms: it cannot take less than the new 10 ms -> 9.8 ms saved
    assert _phase(w, "resume") == (81500.0, 41700.0)
    assert _phase(w, "suspend") == (21500.0, 21500.0)
    assert w.not_replayed == []


def test_delay_off_the_critical_path_saves_nothing(tmp_path: Path) -> None:
    _, runs, delays = _load()
    # usb_port_suspend's msleep runs in 1-1.4 suspend, on the path: 10.3 -> 5.3 ms
    w = what_if(runs, delays, Changes(delays={"usb_port_suspend": 5}))
    assert _phase(w, "suspend") == (21500.0, 16500.0)
    w = what_if(runs, delays, Changes(delays={"no_such_function": 5}))
    assert w.not_replayed == ["--delay no_such_function: no measured delay is called from "
                              "no_such_function"]


def test_async_and_sync_moves() -> None:
    _, runs, delays = _load()
    # suspend: int3400 (1 ms), foo (1 ms), i8042 (1 ms) run one after another on the
    # synchronous thread before the controller; async, none of them delays anything that
    # is on the path (which is the usb chain), so the phase keeps its time
    w = what_if(runs, delays, Changes(make_async=matcher(["all"])))
    assert _phase(w, "suspend") == (21500.0, 21500.0)
    assert any("moved to async" in a for a in w.assumptions)
    # the usb devices on the synchronous thread: 1-1.4, then 1-1, then usb1 one after
    # another after the synchronous callbacks (3.6 ms), so the chain is longer
    w = what_if(runs, delays, Changes(make_sync=matcher(["usb"])))
    measured, predicted = _phase(w, "suspend")
    assert predicted > measured
    # prepare and complete never run async
    w = what_if(runs, delays, Changes(make_async=matcher(["all"])))
    assert _phase(w, "prepare") == (1000.0, 1000.0)


def test_whatif_cli(capsys: pytest.CaptureFixture[str]) -> None:
    from dpmlens.cli import main

    assert main(["trace", "whatif", str(CAPTURE), "--source", str(SRC),
                 "--spec-minimums", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["total"] == {"measured_us": 104500.0, "predicted_us": 74500.0,
                             "change_us": -30000.0}
    assert data["changes"] == ["--spec-minimums"]
    resume = next(r for r in data["runs"] if r["phase"] == "resume")
    assert resume["removed_from_callbacks_us"] == 30000.0
    cp = {c["phase"]: c for c in data["critical_path"]}
    assert [s["device"] for s in cp["resume"]["chain"]] == ["0000:00:14.0", "usb1", "1-1",
                                                           "1-1.4"]
    assert data["assumptions"][0].startswith("msleep(40) in usb_port_resume (usb/hubsim.c:19)"
                                             " waits 10 ms, the TRSMRCY minimum")
    assert main(["trace", "whatif", str(CAPTURE), "--delay", "usb_port_resume=10"]) == 0
    out = capsys.readouterr().out
    assert "resume              1   81.50 ms   41.70 ms  -39.80 ms (-48.8%)" in out
    assert main(["trace", "whatif", str(CAPTURE), "--spec-minimums"]) == 2
    assert "needs --source" in capsys.readouterr().err
    assert main(["trace", "whatif", str(CAPTURE), "--delay", "hub_port_reset"]) == 2
    assert "FUNCTION=MS" in capsys.readouterr().err


def test_real_captures_replay_within_2_percent() -> None:
    t = load_traces([shared_traces()])
    runs = build_timeline(t)
    w = what_if(runs, measured_delays(t, runs), Changes())
    assert len(w.replays) == 47
    for r in w.replays:
        assert r.predicted_us == pytest.approx(r.measured_us, rel=0.02), (r.run.cycle,
                                                                          r.run.phase)


def test_real_capture_shorter_delays_and_async() -> None:
    d = shared_traces() / "pm-graph-4.6" / "suspend-160422-155735-ivybridge-dev-late"
    t = load_traces([d])
    runs = build_timeline(t)
    delays = measured_delays(t, runs)
    # i915's resume (595 ms, the whole critical path) calls intel_hdmi_detect's msleep(10)
    # 8 times (15.6 ms each): at 5 ms each, 5 ms less per call (the overhead is kept)
    w = what_if(runs, delays, Changes(delays={"intel_hdmi_detect": 5}))
    measured, predicted = _phase(w, "resume")
    assert measured - predicted == pytest.approx(8 * 5000, rel=0.01)
    w = what_if(runs, delays, Changes(make_async=matcher(["all"])))
    for phase, _, m, p in w.per_phase():
        assert p <= m * 1.001, phase  # nothing gets slower when everything may overlap


def test_replay_speed_100_cycles(tmp_path: Path) -> None:
    # 100 copies of the real 4.6 mem test (1,900 callbacks each): the replay alone
    src = (shared_traces() / "pm-graph-4.6" / "suspend-160422-155735-ivybridge-dev-late" /
           "ivybridge_mem_ftrace.txt").read_text()
    head, body = src.split("# tracer: nop\n", 1)
    stamp = head.splitlines()[0]
    parts = [src]
    for i in range(1, 100):
        parts.append(stamp + "\n" + "".join(_shift(x, i * 10.0)
                                            for x in body.splitlines(keepends=True)))
    f = tmp_path / "many_ftrace.txt"
    f.write_text("".join(parts))
    t = load_traces([f])
    assert t.cycles == 100
    runs = build_timeline(t)
    delays = measured_delays(t, runs)
    t0 = time.process_time()
    w = what_if(runs, delays, Changes(delays={"intel_hdmi_detect": 5}))
    took = time.process_time() - t0
    assert len(w.replays) == 800
    # a guard against a replay that grows faster than the cycles (~0.5 s on a quiet host),
    # not the budget: that is measured by bench/bench_traces.py, whatever the machine's load
    assert took <= 5.0, f"what-if replay of 100 cycles took {took:.2f} s of CPU"
    t0 = time.process_time()
    what_if(runs, delays, Changes(ordering="6.16"))  # every suspend/resume phase replayed
    took = time.process_time() - t0
    assert took <= 5.0, f"--ordering 6.16 replay of 100 cycles took {took:.2f} s of CPU"
    assert not math.isnan(w.per_phase()[0][3])


def _shift(line: str, by: float) -> str:
    head, sep, rest = line.partition(": ")
    if not sep or line.startswith("#"):
        return line
    parts = head.rsplit(" ", 1)
    try:
        return f"{parts[0]} {float(parts[1]) + by:.6f}: {rest}"
    except (ValueError, IndexError):
        return line


# -- CPU contention (traces.analysis.contention) ---------------------------------------------

def _contended_capture(tmp_path: Path) -> Path:
    """Three async callbacks of 30 ms at once on 2 CPUs (dev-a sleeps its first 10 ms in a
    msleep), after a short synchronous one."""
    lines = [(1.0, "bash-1", "suspend_resume: dpm_suspend[2] begin"),
             (1.0002, "bash-1", "device_pm_callback_start: s sync0, parent: none, bus [suspend]"),
             (1.0004, "bash-1", "device_pm_callback_end: s sync0, err=0"),
             (1.0011, "kworker/u4:0-10", "msleep_cal: (msleep+0x0/0x40) time=10"),
             (1.0111, "kworker/u4:0-10",
              "msleep_ret: (x_suspend+0x12/0x90 [x] <- msleep) arg1=0x0"),
             (1.032, "bash-1", "suspend_resume: dpm_suspend[2] end")]
    for k, dev in enumerate("abc"):
        task = f"kworker/u4:{k}-{10 + k}"
        lines += [(1.001, task,
                   f"device_pm_callback_start: x dev-{dev}, parent: none, bus [suspend]"),
                  (1.031, task, f"device_pm_callback_end: x dev-{dev}, err=0")]
    f = tmp_path / "contended_ftrace.txt"
    f.write_text("# tracer: nop\n#\n# entries-in-buffer/entries-written: 11/11   #P:2\n#\n"
                 + "".join(f"{task:>16} [000] .... {ts:.6f}: {x}\n"
                           for ts, task, x in sorted(lines)))
    return f


def test_contention_de_contends_the_work_and_not_the_sleeps(tmp_path: Path) -> None:
    t, runs, delays = _load(_contended_capture(tmp_path))
    sync = matcher(["all"])
    # no contention: run one after another, each takes its 30 ms
    plain = what_if(runs, delays, Changes(make_sync=sync)).replays[0]
    # 2 CPUs: b and c worked alone for 10 ms (a slept), then 20 ms at 2/3 of a CPU each
    # (a, b, c): b and c need 10 + 13.3 ms alone; a needs its 10 ms sleep + 13.3 ms of work
    two = what_if(runs, delays, Changes(make_sync=sync, cpus=2)).replays[0]
    # 1 CPU: 10 ms at 1/2, 20 at 1/3: b, c 11.7 ms; a 10 ms sleep + 6.7 ms
    one = what_if(runs, delays, Changes(make_sync=sync, cpus=1)).replays[0]
    took = {c: [round(du) for _, _, du, _ in r.path()[1:]] for c, r in
            (("plain", plain), ("2", two), ("1", one))}
    assert took == {"plain": [30000] * 3, "2": [23333] * 3, "1": [16667, 11667, 11667]}
    assert plain.predicted_us - two.predicted_us == pytest.approx(3 * 6667, abs=2)
    # nothing changed: the capture's own concurrency gives back every time it measured
    for cpus in (1, 2, 8):
        (r,) = what_if(runs, delays, Changes(cpus=cpus)).replays
        assert r.predicted_us == pytest.approx(r.measured_us, rel=1e-9)


def test_contention_cpu_count_from_the_capture(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    from cli_helpers import run_cli

    from dpmlens.traces.analysis.contention import cpus_of

    f = _contended_capture(tmp_path)
    assert cpus_of([f]) == 2 and cpus_of([tmp_path]) == 2
    assert cpus_of([CAPTURE]) is None and cpus_of([tmp_path / "absent"]) is None
    res = run_cli(capsys, "trace", "whatif", str(f), "--sync", "all", "--cpus", "auto",
                  "--format", "json")
    auto = json.loads(res.out)
    assert any(a.startswith("CPU contention: callbacks running at once share 2 CPUs")
               for a in auto["assumptions"])
    off = json.loads(run_cli(capsys, "trace", "whatif", str(f), "--sync", "all",  # default
                             "--format", "json").out)
    assert not any(a.startswith("CPU contention") for a in off["assumptions"])
    (pa,), (po,) = auto["phases"], off["phases"]
    assert po["predicted_us"] - pa["predicted_us"] == pytest.approx(3 * 6667, abs=2)
    bad = run_cli(capsys, "trace", "whatif", str(f), "--cpus", "two")
    assert bad.code == 2 and "--cpus two: expected a CPU count, auto or off" in bad.err


def test_contention_no_change_reproduces_the_real_captures() -> None:
    from dpmlens.traces.analysis.contention import cpus_of

    paths = sorted(p for p in shared_traces().rglob("*ftrace*"))
    assert len(paths) >= 6
    for p in paths:
        t, runs, delays = _load(p)
        cpus = cpus_of([p])
        assert cpus in (4, 8), p
        for r in what_if(runs, delays, Changes(cpus=cpus)).replays:
            assert r.predicted_us == pytest.approx(r.measured_us, rel=1e-4), (p, r.run.phase)

"""Timeline and critical path (issue 9, part 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from traces_helpers import FIXTURES, shared_traces

from dpmlens.traces import load_traces
from dpmlens.traces.analysis.critical import EPS, across_cycles, critical_path
from dpmlens.traces.model.timeline import build_timeline

CAPTURE = FIXTURES / "timeline" / "test_mem_ftrace.txt"


def _runs(path: Path = CAPTURE) -> dict[str, object]:
    t = load_traces([path])
    return {r.phase: r for r in build_timeline(t)}, t


def _chain(p) -> list[tuple[str, float, float, str]]:  # noqa: ANN001 - CriticalPath
    return [(x.interval.device, x.interval.duration_us, x.wait_us, x.link) for x in p.chain]


def test_intervals_keep_thread_device_driver_parent_layer() -> None:
    runs, t = _runs()
    r = runs["suspend"]
    assert r.measured and t.store.threads[r.sync_thread] == "bash-100"
    assert r.wall_us == 21500.0
    iv = next(iv for iv in r.intervals if iv.device == "1-1.4")
    assert (iv.driver, iv.parent, iv.layer, t.store.threads[iv.thread]) == (
        "usb", "1-1", "type", "kworker/u8:1-50")
    assert (round(iv.start, 6), round(iv.end, 6), iv.duration_us) == (10.0081, 10.0201, 12000.0)


def test_suspend_waits_for_children_async_chain() -> None:
    runs, _ = _runs()
    p = critical_path(runs["suspend"])
    # 1-1.4 (12 ms) -> its parent 1-1 waits (5 ms) -> usb1 (2 ms) -> the controller on the
    # synchronous thread (2 ms): each 100 us after what it waited for
    assert _chain(p) == [("1-1.4", 12000.0, 100.0, "phase start"),
                         ("1-1", 5000.0, 100.0, "child"),
                         ("usb1", 2000.0, 100.0, "child"),
                         ("0000:00:14.0", 2000.0, 100.0, "child")]
    assert p.tail_us == 100.0
    assert (p.callbacks_us, p.waits_us, p.accounted_us) == (21000.0, 500.0, 21500.0)
    assert p.error_pct == 0.0


def test_resume_waits_for_parents() -> None:
    runs, _ = _runs()
    p = critical_path(runs["resume"])
    assert _chain(p) == [("0000:00:14.0", 1000.0, 100.0, "phase start"),
                         ("usb1", 10000.0, 100.0, "parent"),
                         ("1-1", 20000.0, 100.0, "parent"),
                         ("1-1.4", 50000.0, 100.0, "parent")]
    assert p.accounted_us == runs["resume"].wall_us == 81500.0


def test_synchronous_thread_chain_and_async_wait(tmp_path: Path) -> None:
    # the sync thread waits in dpm_wait() for an async device that has no callback event of
    # its own: the latest async end before it is what it waited for
    lines = [
        (1.000000, "bash-1", "suspend_resume: dpm_resume[16] begin"),
        (1.000010, "kworker/0:1-9", "device_pm_callback_start: snd 0000:00:1b.0, parent: "
                                    "pci0000:00, bus [resume]"),
        (1.000020, "bash-1", "device_pm_callback_start: a dev-a, parent: none, bus [resume]"),
        (1.001020, "bash-1", "device_pm_callback_end: a dev-a, err=0"),
        (1.100000, "kworker/0:1-9", "device_pm_callback_end: snd 0000:00:1b.0, err=0"),
        (1.100030, "bash-1", "device_pm_callback_start: b dev-b, parent: none, bus [resume]"),
        (1.102030, "bash-1", "device_pm_callback_end: b dev-b, err=0"),
        (1.102040, "bash-1", "suspend_resume: dpm_resume[16] end"),
    ]
    f = tmp_path / "t.txt"
    f.write_text("".join(f"{task:>16} [000] .... {ts:.6f}: {x}\n" for ts, task, x in lines))
    runs, _ = _runs(f)
    p = critical_path(runs["resume"])
    assert _chain(p) == [("0000:00:1b.0", 99990.0, 10.0, "phase start"),
                         ("dev-b", 2000.0, 30.0, "async wait")]
    assert p.accounted_us == runs["resume"].wall_us


def test_across_cycles_counts_and_contribution(tmp_path: Path) -> None:
    text = CAPTURE.read_text()
    two = tmp_path / "two.txt"
    # the same test twice (sleepgraph -multi writes one stamp per test)
    body = text.split("# tracer: nop\n", 1)[1]
    later = "".join(_shift(line, 100.0) for line in body.splitlines(keepends=True))
    two.write_text(text + "# suspend-112226-101600 testhost mem 6.12.0\n" + later)
    t = load_traces([two])
    assert t.cycles == 2
    paths = [critical_path(r) for r in build_timeline(t)]
    devs = {(d.device, d.phase): d for d in across_cycles(paths)}
    d = devs[("1-1.4", "resume")]
    assert (d.on_path, d.runs, d.contribution_us) == (2, 2, 100000.0)
    assert ("00:04", "resume") not in devs  # i8042 ran in resume, never on its critical path


def _shift(line: str, by: float) -> str:
    head, sep, rest = line.partition(": ")
    if not sep or line.startswith("#"):
        return line
    parts = head.rsplit(" ", 1)
    return f"{parts[0]} {float(parts[1]) + by:.6f}: {rest}"


def test_timeline_and_critical_path_json(capsys: pytest.CaptureFixture[str]) -> None:
    from dpmlens.cli import main

    assert main(["trace", "report", str(CAPTURE), "--format", "json", "--timeline"]) == 0
    data = json.loads(capsys.readouterr().out)
    tl = {r["phase"]: r for r in data["timeline"]}
    assert tl["suspend"]["sync_thread"] == "bash-100"
    assert tl["suspend"]["callbacks"][0] == {
        "start_us": 100.0, "end_us": 12100.0, "thread": "kworker/u8:1-50", "device": "1-1.4",
        "driver": "usb", "parent": "1-1", "layer": "type"}
    cp = {r["phase"]: r for r in data["critical_path"]}
    assert [s["device"] for s in cp["resume"]["chain"]] == ["0000:00:14.0", "usb1", "1-1",
                                                           "1-1.4"]
    assert cp["resume"]["chain"][-1] == {
        "driver": "usb", "device": "1-1.4", "parent": "1-1", "layer": "type",
        "thread": "kworker/u8:1-50", "start_us": 31400.0, "duration_us": 50000.0,
        "wait_us": 100.0, "link": "parent", "source": None}
    assert cp["resume"]["error_pct"] == 0.0
    assert data["critical_devices"][0] == {
        "driver": "usb", "device": "1-1.4", "phase": "resume", "on_path": 1, "runs": 1,
        "contribution_us": 50000.0, "mean_us": 50000.0}
    assert main(["trace", "report", str(CAPTURE), "--format", "json"]) == 0
    assert "timeline" not in json.loads(capsys.readouterr().out)


def test_text_report_shows_the_chain(capsys: pytest.CaptureFixture[str]) -> None:
    from dpmlens.cli import main

    assert main(["trace", "report", str(CAPTURE)]) == 0
    out = capsys.readouterr().out
    assert "resume (cycle 0): 81.50 ms = 81.00 ms in callbacks + 500 us waiting (4 steps)" in out
    assert "usb 1-1.4  50.00 ms  [kworker/u8:1-50]  after 100 us (parent)" in out


def test_real_captures_critical_path_accounts_for_every_phase() -> None:
    t = load_traces([shared_traces()])
    runs = build_timeline(t)
    assert len(runs) == 47  # 6 tests x 8 phases, minus the freeze test's absent freeze_late
    for r in runs:
        assert r.measured, (r.cycle, r.phase)
        p = critical_path(r)
        # the chain (callbacks + the waits between them + the tail) is the phase's wall time
        assert p.accounted_us == pytest.approx(r.wall_us, rel=0.02), (r.cycle, r.phase)
        # a real chain: each step starts after what it waited for
        for a, b in zip(p.chain, p.chain[1:], strict=False):
            assert b.interval.start >= a.interval.end - EPS
        # where a phase takes time, callbacks on the path explain it, not unexplained waits
        if r.wall_us >= 10000:
            assert p.callbacks_us >= 0.9 * r.wall_us, (r.cycle, r.phase, p.waits_us)
    # pm-graph 3.15 standby resume: the sound card (async, 163 ms) then phy0 on the sync thread
    (p,) = [critical_path(r) for r in runs if r.phase == "resume" and r.cycle == 3]
    slow = [(x.interval.device, x.link) for x in p.chain if x.interval.duration_us > 10000]
    assert slow == [("0000:00:1b.0", "dispatched"), ("phy0", "sync thread")]
    # the hibernate restore: the USB hub chain, each waiting for its parent
    (p,) = [critical_path(r) for r in runs if r.phase == "restore"]
    slow = [(x.interval.device, x.link) for x in p.chain if x.interval.duration_us > 10000]
    assert slow == [("usb1", "parent"), ("1-1", "parent"), ("1-1.4", "parent"),
                    ("1-1.4.3", "parent")]


def test_all_deps_is_deps_inlined() -> None:
    from dpmlens.traces.analysis.critical import PhaseGraph

    t = load_traces([shared_traces(), CAPTURE])
    for r in build_timeline(t):
        g = PhaseGraph(r)
        assert g.all_deps() == [g.deps(i) for i in range(len(r.intervals))]


def test_walk_chooses_as_predecessor_does() -> None:
    """`walk` makes `PhaseGraph.predecessor`'s choice inline for graphs without device links:
    on real captures (pm-graph's, and the lab's 6.1/6.12 kernels) every step it takes is the
    one the general choice over `deps` gives."""
    from dpmlens.traces.analysis.critical import PhaseGraph, walk

    lab = FIXTURES.parent / "lab"
    paths = [shared_traces(), CAPTURE, *sorted(lab.glob("k*-mem/ftrace.txt.gz"))]
    steps = 0
    for r in build_timeline(load_traces(paths)):
        g = PhaseGraph(r)
        for k, j, link in walk(g):
            assert g.predecessor(k) == (j, link), (r.cycle, r.phase, k)
            steps += 1
    assert steps > 1000


def test_text_chain_names_the_source(capsys: pytest.CaptureFixture[str]) -> None:
    from dpmlens.cli import main

    assert main(["trace", "report", str(FIXTURES / "ftrace_basic.txt"), "--source",
                 str(FIXTURES / "src")]) == 0
    out = capsys.readouterr().out
    assert "src/bar_main.c:6 bar_suspend_noirq()" in out
    # phases in the order of a cycle, whichever cycle is the median one
    heads = [line.split(" (cycle")[0].strip() for line in out.splitlines()
             if " (cycle " in line and "=" in line]
    assert heads == ["prepare", "suspend", "suspend_noirq", "resume_noirq", "resume",
                     "complete"]

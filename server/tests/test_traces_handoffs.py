# ruff: noqa: E501  (trace lines as the kernel prints them)
"""Waits of one callback for another (traces.analysis.handoffs): the mechanism on a capture
written here in the kernel's format, then the lab's real 6.12 capture (usb 2-1, 2-2 and 3-3
behind one xHCI's address0_mutex). The predictions against fresh A/B runs the model was not
tuned on are in docs/traces.md ("How sure a prediction is")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from traces_helpers import REPO

from dpmlens.cli import main
from dpmlens.traces import load_traces
from dpmlens.traces.analysis.bands import table
from dpmlens.traces.analysis.delays import measured_delays
from dpmlens.traces.analysis.handoffs import Running, contention, run_waits
from dpmlens.traces.analysis.waits import group_splits, split
from dpmlens.traces.analysis.whatif import Changes, matcher, what_if
from dpmlens.traces.model.timeline import build_timeline

# usb 2-1 (worker 50) takes the lock at once and sleeps 40 ms twice (timer wake-ups); usb
# 2-2 (worker 60) starts 1 ms later, blocks on the lock at 2 ms and is woken by worker 50 at
# 81 ms (the hand-over, while 2-1's callback still runs), then sleeps 40 ms itself.
CAPTURE = """\
# tracer: nop
#
# entries-in-buffer/entries-written: 20/20   #P:2
#
           sh-10      [000] .....   100.000000: suspend_resume: dpm_resume[16] begin
 kworker/u4:1-50      [000] .....   100.000000: device_pm_callback_start: usb 2-1, parent: usb2, type [resume]
 kworker/u4:1-50      [000] d..2.   100.001000: sched_switch: prev_comm=kworker/u4:1 prev_pid=50 prev_prio=120 prev_state=D ==> next_comm=swapper/0 next_pid=0 next_prio=120
 kworker/u4:2-60      [001] .....   100.001000: device_pm_callback_start: usb 2-2, parent: usb2, type [resume]
 kworker/u4:2-60      [001] d..2.   100.002000: sched_switch: prev_comm=kworker/u4:2 prev_pid=60 prev_prio=120 prev_state=D ==> next_comm=swapper/1 next_pid=0 next_prio=120
       <idle>-0       [000] d.s3.   100.041000: sched_waking: comm=kworker/u4:1 pid=50 prio=120 target_cpu=000
       <idle>-0       [000] d..2.   100.041010: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=kworker/u4:1 next_pid=50 next_prio=120
 kworker/u4:1-50      [000] d..2.   100.041500: sched_switch: prev_comm=kworker/u4:1 prev_pid=50 prev_prio=120 prev_state=D ==> next_comm=swapper/0 next_pid=0 next_prio=120
       <idle>-0       [000] d.s3.   100.080000: sched_waking: comm=kworker/u4:1 pid=50 prio=120 target_cpu=000
       <idle>-0       [000] d..2.   100.080010: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=kworker/u4:1 next_pid=50 next_prio=120
 kworker/u4:1-50      [000] d..4.   100.081000: sched_waking: comm=kworker/u4:2 pid=60 prio=120 target_cpu=001
       <idle>-0       [001] d..2.   100.081010: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=kworker/u4:2 next_pid=60 next_prio=120
 kworker/u4:1-50      [000] .....   100.082000: device_pm_callback_end: usb 2-1, err=0
 kworker/u4:2-60      [001] d..2.   100.082000: sched_switch: prev_comm=kworker/u4:2 prev_pid=60 prev_prio=120 prev_state=D ==> next_comm=swapper/1 next_pid=0 next_prio=120
       <idle>-0       [001] d.s3.   100.122000: sched_waking: comm=kworker/u4:2 pid=60 prio=120 target_cpu=001
       <idle>-0       [001] d..2.   100.122010: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=kworker/u4:2 next_pid=60 next_prio=120
 kworker/u4:2-60      [001] .....   100.123000: device_pm_callback_end: usb 2-2, err=0
           sh-10      [000] .....   100.124000: suspend_resume: dpm_resume[16] end
"""


@pytest.fixture()
def capture(tmp_path: Path) -> Path:
    path = tmp_path / "ftrace.txt"
    path.write_text(CAPTURE)
    return path


def test_a_wake_up_from_another_callbacks_thread_is_a_wait_for_it(capture: Path) -> None:
    traces = load_traces([str(capture)])
    runs = build_timeline(traces)
    (run,) = [r for r in runs if r.phase == "resume"]
    log = traces.store.sched
    assert log is not None
    (w,) = run_waits(run, log)
    assert (w.waiter.device, w.holder.device) == ("2-2", "2-1")
    assert w.us == pytest.approx(79000, abs=1)
    # where the time went: 2-2's 122 ms are 79 ms waiting for 2-1, 40 ms for the timer
    iv = [x for x in run.intervals if x.device == "2-2"][0]
    s = split(log, iv.group.files[iv.index], iv.thread, iv.start, iv.end,
              running=Running(traces.store), own="2-2")
    assert s is not None
    assert s.callbacks == pytest.approx(79000, abs=1)
    assert s.waited_for == {"2-1": pytest.approx(79000, abs=1)}
    assert s.device == pytest.approx(40000, abs=1)
    # without the callbacks' threads known the same wait is read as 2-1's sleep
    plain = split(log, iv.group.files[iv.index], iv.thread, iv.start, iv.end)
    assert plain is not None and plain.callbacks == 0 and plain.device > 110000
    rows = {g.key[1]: g for g in group_splits(traces.store, 5)}
    assert rows["2-2"].waited_for == {"2-1": (1, pytest.approx(79000, abs=1))}


def test_the_hand_overs_are_a_lock_and_the_sync_replay_drops_the_wait(capture: Path) -> None:
    traces = load_traces([str(capture)])
    runs = build_timeline(traces)
    found = contention(runs, traces.store.sched)
    assert found is not None
    (lock,) = found.locks
    assert lock.devices == ["2-1", "2-2"] and lock.shared == "usb2"
    # --sync all: 2-1 (82 ms), then 2-2 without its 79 ms wait (1 + 1 + 40 ms): ~124 ms,
    # not 82 + 122 = 204 ms
    res = what_if(runs, measured_delays(traces, runs),
                  Changes(make_sync=matcher(["all"]), sched=traces.store.sched, cpus=2))
    (rep,) = [r for r in res.replays if r.run.phase == "resume"]
    assert 120000 < rep.predicted_us < 130000
    assert any("serialized as one lock in resume: 2-1, 2-2" in a for a in res.assumptions)
    assert res.evidence is not None and res.evidence.sched and not res.evidence.delays
    assert res.evidence.locks and "hand-overs" in res.evidence.locks[0]
    # without the events the wait stays: both callbacks at their measured length
    res = what_if(runs, [], Changes(make_sync=matcher(["all"])))
    (rep,) = [r for r in res.replays if r.run.phase == "resume"]
    assert rep.predicted_us > 200000


def test_json_says_how_sure_and_what_to_capture(capture: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trace", "whatif", str(capture), "--sync", "all", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["version"] == 3
    assert out["evidence"]["kind"] == "sched" and out["change_kinds"] == ["sync"]
    band = out["bands"]["resume"]
    cell = table().get(("sync", "sched", "resume"))
    if cell is None:
        assert band is None
    else:
        assert band["low_pct"] == cell.low_pct and band["high_pct"] == cell.high_pct
        pred = [p for p in out["phases"] if p["phase"] == "resume"][0]["predicted_us"]
        assert band["measured_low_us"] <= pred * 1.0001 or band["low_pct"] > 0
    assert main(["trace", "whatif", str(capture), "--sync", "all", "--no-sched",
                 "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["evidence"]["kind"] == "neither"
    assert "sched_switch" in out["capture_next"] and "kprobes" in out["capture_next"]
    assert main(["trace", "whatif", str(capture), "--sync", "all", "--no-sched"]) == 0
    text = capsys.readouterr().out
    assert "How sure (evidence: neither delay kprobes nor scheduler events" in text
    assert "Next time: to predict this change more surely, capture" in text


def test_band_table_is_well_formed() -> None:
    rows = table()
    for (change, evidence, phase), b in rows.items():
        assert change in ("sync", "async", "async-unseen", "delay", "ordering")
        assert evidence in ("kprobes+sched", "kprobes", "sched", "neither")
        assert phase in ("suspend", "resume")
        assert b.low_pct <= 0 <= b.high_pct and b.rows > 0 and b.basis


LAB = REPO / "test-fixtures" / "lab" / "ab-sched" / "6.12"


@pytest.mark.skipif(not LAB.is_dir(), reason="the lab's 6.12 captures are not checked out")
def test_on_the_lab_612_capture_the_usb_devices_wait_for_each_other() -> None:
    """The lab's 6.12 pm_async=1 capture (2 boots, 16 cycles; the A/B experiment's tuning
    data): usb 3-3's resume is mostly waiting for 2-1 or 2-2, one lock behind the xHCI."""
    traces = load_traces([str(p) for p in sorted((LAB / "A1").glob("part[12]/ftrace.txt.xz"))])
    runs = build_timeline(traces)
    found = contention(runs, traces.store.sched)
    assert found is not None
    resume = [lk for lk in found.locks if lk.phase == "resume"]
    assert [lk.devices for lk in resume] == [["2-1", "2-2", "3-3"]]
    assert resume[0].shared == "0000:00:05.0"  # the qemu-xhci
    rows = {(g.key[1], g.key[3]): g for g in group_splits(traces.store, 20)}
    g = rows[("3-3", "resume")]
    assert g.callbacks > 0.6 * g.median_us
    assert set(g.waited_for) == {"2-1", "2-2"}


def test_without_events_the_usb_devices_behind_one_controller_are_a_lock_by_name(
        tmp_path: Path) -> None:
    # the same capture without the scheduler's events, and the root hub's parent named (its
    # own resume callback): 2-1 and 2-2 are behind controller 0000:00:14.0
    lines = [x for x in CAPTURE.splitlines() if "sched_" not in x]
    lines.insert(5, " kworker/u4:3-70      [000] .....   100.000000: device_pm_callback_start: "
                    "usb usb2, parent: 0000:00:14.0, type [resume]")
    lines.insert(6, " kworker/u4:3-70      [000] .....   100.000000: device_pm_callback_end: "
                    "usb usb2, err=0")
    path = tmp_path / "ftrace.txt"
    path.write_text("\n".join(lines) + "\n")
    traces = load_traces([str(path)])
    runs = build_timeline(traces)
    res = what_if(runs, [], Changes(make_sync=matcher(["all"])))
    (rep,) = [r for r in res.replays if r.run.phase == "resume"]
    # 2-1 (82 ms), then 2-2 from 2-1's end to its own (41 ms): the overlap was its wait
    assert 120000 < rep.predicted_us < 130000
    assert res.evidence is not None
    assert res.evidence.locks == ["topology (names) in resume: 2-1, 2-2 behind 0000:00:14.0"]
    assert any("by their names alone" in a for a in res.assumptions)


def test_the_hover_says_whom_it_waited_for() -> None:
    from dpmlens.lsp.hover import split_note

    row = {"phase": "resume", "device": "3-3", "time_split": {
        "on_cpu_us": 4000.0, "device_wait_us": 150000.0, "other_callbacks_us": 450000.0,
        "waited_for": [{"device": "2-2", "runs": 10, "median_us": 445000.0},
                       {"device": "2-1", "runs": 6, "median_us": 451000.0}]}}
    note = split_note(row)
    assert "450.0 ms waiting for another callback (2-2, 2-1: not this device's time)" in note \
        or "waiting for another callback (2-2, 2-1: not this device's time)" in note

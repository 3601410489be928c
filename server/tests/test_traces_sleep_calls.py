"""Delay calls told from the scheduler's events (traces.analysis.sleep_calls), checked on the
lab's real captures that hold both the delay kprobes (the truth) and the scheduler's events."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from dpmlens.traces import load_traces
from dpmlens.traces.analysis.delays import measured_delays
from dpmlens.traces.analysis.sleep_calls import SleepClock, clock_of, sleep_calls
from dpmlens.traces.analysis.whatif import Changes, what_if
from dpmlens.traces.model.timeline import build_timeline

REPO = Path(__file__).resolve().parents[2]
AB = REPO / "test-fixtures" / "lab" / "ab-sched"
TARGET = ("hub_port_reset", "msleep", 50.0)


def test_the_window_follows_the_kernel_and_hz() -> None:
    # 6.12 at HZ=250: 13 jiffies then the wheel's round-up: 52-56 ms, +-2 ms of wake-up
    assert clock_of("6.12.117+deb12-amd64", None).window_ms(50) == (50.0, 58.0)
    # 6.1's msleep() adds a jiffy of its own: 56-60 ms
    old = clock_of("6.1.0-57-amd64", "250")
    assert old.extra_jiffy == 1 and old.hz_known and old.window_ms(50) == (54.0, 62.0)
    assert clock_of("6.12", "1000").window_ms(50) == (48.0, 53.0)
    assert clock_of(None, "").hz == 250 and not clock_of(None, "").hz_known
    assert "assumed" in clock_of(None, None).text(50)


@pytest.mark.parametrize("kernel", ["6.1", "6.12"])
def test_told_calls_match_the_kprobes_on_a_real_capture(kernel: str) -> None:
    folder = AB / kernel / "A1"
    if not folder.is_dir():
        pytest.skip(f"{folder}: the lab's A/B captures are not in this checkout")
    t = load_traces([folder])
    runs = build_timeline(t)
    assert t.store.sched is not None
    truth: Counter[int] = Counter()
    for d in measured_delays(t, runs):
        if d.interval is not None and (d.caller, d.func, d.requested_ms) == TARGET:
            truth[id(d.interval)] += d.calls
    told: Counter[int] = Counter()
    for d in sleep_calls(runs, t.store.sched, [TARGET], clock_of(kernel, "250")):
        assert d.interval is not None
        told[id(d.interval)] += d.calls
    found = sum(min(n, told[k]) for k, n in truth.items())
    extra = sum(max(0, n - truth[k]) for k, n in told.items())
    assert sum(truth.values()) >= 100
    assert found >= 0.95 * sum(truth.values())
    assert extra <= 0.02 * sum(truth.values())


def _whatif(folder: Path, kprobes: bool, sched: bool):  # noqa: ANN202 - WhatIf
    t = load_traces([folder])
    runs = build_timeline(t)
    delays = measured_delays(t, runs) if kprobes else []
    changes = Changes(delays={"hub_port_reset:msleep(50)": 12.0}, cpus=2,
                      sched=t.store.sched if sched else None,
                      clock=clock_of("6.12", "250"))
    return what_if(runs, delays, changes)


def test_sched_only_replays_the_delay_as_the_kprobes_would() -> None:
    folder = AB / "6.12" / "A1" / "part1"
    if not folder.is_dir():
        pytest.skip(f"{folder}: the lab's A/B captures are not in this checkout")
    both = _whatif(folder, True, True)
    sched = _whatif(folder, False, True)
    neither = _whatif(folder, False, False)
    res = {w: next(p for ph, _, _, p in x.per_phase() if ph == "resume")
           for w, x in (("both", both), ("sched", sched), ("neither", neither))}
    measured = next(m for ph, _, m, _ in both.per_phase() if ph == "resume")
    assert res["both"] < 0.85 * measured  # the change saves time
    assert abs(res["sched"] - res["both"]) <= 0.03 * res["both"]
    assert sched.evidence is not None and sched.evidence.sleep_calls > 0
    assert any("no delay kprobes" in a for a in sched.assumptions)
    # neither: nothing to replay, no band, what to capture
    assert res["neither"] == measured
    assert neither.sure is not None and neither.sure.changes == ["delay-unmeasured"]
    assert all(b is None for b in neither.sure.bands.values())
    assert neither.sure.capture_next and "scheduler" in neither.sure.capture_next


def test_the_cli_says_not_predicted_without_either_evidence() -> None:
    folder = AB / "6.12" / "A1" / "part1"
    if not folder.is_dir():
        pytest.skip(f"{folder}: the lab's A/B captures are not in this checkout")
    out = subprocess.run(
        [sys.executable, "-c", "from dpmlens.cli import main; import sys; sys.exit(main())",
         "trace", "whatif", str(folder), "--delay", "hub_port_reset:msleep(50)=12",
         "--no-delays", "--no-sched"], capture_output=True, text=True, check=True).stdout
    assert "resume: not predicted" in out and "Next time: to predict this change" in out


def test_a_clock_without_a_capture_is_the_default() -> None:
    assert SleepClock().window_ms(10) == (10.0, 18.0)  # 3 jiffies at HZ=250: 12-16 ms


def test_advise_offers_fast_enumeration_from_the_scheduler_events_alone() -> None:
    from dpmlens.traces.analysis.advise import Evidence, advise

    folder = AB / "6.12" / "A1" / "part1"
    if not folder.is_dir():
        pytest.skip(f"{folder}: the lab's A/B captures are not in this checkout")
    t = load_traces([folder])
    runs = build_timeline(t)
    both = advise(runs, measured_delays(t, runs), Changes(cpus=2, sched=t.store.sched),
                  Evidence(True, True, False))
    sched = advise(runs, [], Changes(cpus=2, sched=t.store.sched), Evidence(False, True, False))
    neither = advise(runs, [], Changes(), Evidence(False, False, False))
    fast = {name: next((a for a in x.items if a.kind == "usb-fast"), None)
            for name, x in (("both", both), ("sched", sched), ("neither", neither))}
    assert fast["both"] is not None and fast["sched"] is not None and fast["neither"] is None
    assert fast["sched"].targets == fast["both"].targets
    # (the locks differ: the kprobes' non-overlap against the hand-overs; 12.5% here)
    assert abs(fast["sched"].saving_us - fast["both"].saving_us) <= 0.15 * fast["both"].saving_us
    assert any("told from the scheduler's events" in n for n in sched.notes)


def test_a_delay_the_sched_events_cannot_tell_is_not_predicted() -> None:
    folder = AB / "6.12" / "A1" / "part1"
    if not folder.is_dir():
        pytest.skip(f"{folder}: the lab's A/B captures are not in this checkout")
    t = load_traces([folder])
    runs = build_timeline(t)
    # no delay function and request: nothing to match a sleep's length against
    w = what_if(runs, [], Changes(delays={"hub_port_reset": 12.0}, cpus=2, sched=t.store.sched))
    assert w.sure is not None and w.sure.changes == ["delay-unmeasured"]
    assert w.sure.capture_next and "kprobes" in w.sure.capture_next
    assert "scheduler" not in w.sure.capture_next  # it has them: only the kprobes would help

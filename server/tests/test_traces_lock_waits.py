"""Per callback run, its wait for other devices' callbacks from each kind of evidence
(traces.analysis.lock_waits), on the capture lab's real 6.12 captures (qemu's xHCI: usb 2-1,
2-2 and 3-3 re-addressed one after another under its address0_mutex after S3)."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from dpmlens.traces import load_traces
from dpmlens.traces.analysis.delays import measured_delays
from dpmlens.traces.analysis.lock_waits import KPROBES, NAMES, SCHED, callback_waits
from dpmlens.traces.model.timeline import build_timeline

LAB = Path(__file__).resolve().parents[2] / "test-fixtures" / "lab"


def _waits(path: Path, delays: bool = True, sched: bool = True
           ) -> dict[str, list[tuple[float, float, list[str], str]]]:
    ts = load_traces([str(path)])
    runs = build_timeline(ts)
    found = callback_waits(runs, measured_delays(ts, runs) if delays else [],
                           ts.store.sched if sched else None)
    out: dict[str, list[tuple[float, float, list[str], str]]] = {}
    for r in runs:
        for iv in r.intervals:
            w = found.get(id(iv))
            if w is not None:
                out.setdefault(iv.device, []).append(
                    (w.us / 1000, (iv.end - iv.start) * 1000, w.holders, w.evidence))
    return out


@pytest.mark.parametrize(("delays", "evidence"), [(True, KPROBES), (False, NAMES)])
def test_pm_async_1_usb_3_3_mostly_waits_for_its_siblings(delays: bool, evidence: str) -> None:
    got = _waits(LAB / "ab/6.12/A1/part1", delays=delays)  # kprobes, no scheduler events
    # (the names also serialize the ata ports of one host: libata's eh_mutex)
    assert {d for d in got if not d.startswith("ata")} == {"2-1", "2-2", "3-3"}
    w33 = got["3-3"]
    assert len(w33) == 8 and {x[3] for x in w33} == {evidence}
    # every cycle: 3-3 waits 450-520 ms of its 610-790 behind 2-1 and 2-2
    assert all(x[0] > 0.6 * x[1] and set(x[2]) == {"2-1", "2-2"} for x in w33)
    # one of 2-1 / 2-2 goes first each cycle and waits for nobody
    firsts = [min(got["2-1"][k][0], got["2-2"][k][0]) for k in range(8)]
    assert all(f == 0 for f in firsts)


def test_scheduler_events_name_the_callback_that_woke_it() -> None:
    got = _waits(LAB / "ab-sched/6.12/A1/part1")
    w33 = got["3-3"]
    assert {x[3] for x in w33} == {SCHED}
    assert statistics.median(x[0] for x in w33) > 300
    assert all(set(x[2]) <= {"2-1", "2-2"} for x in w33)


def test_pm_async_0_nothing_waits() -> None:
    """pm_async=0 runs the USB devices one after another on one thread: no wait."""
    got = _waits(LAB / "ab-sched/6.12/async0/part1")
    assert all(x[0] < 1 for d in ("2-1", "2-2", "3-3") for x in got.get(d, []))

"""The critical-path walk in C (traces/analysis/_critical_walk.c) against the Python walk, the
reference: the same steps and the same tally on every real capture the tests hold and on
made-up phase runs (ties, threads without a name, parents up a long ancestry, both
directions, both dispatch orders)."""

from __future__ import annotations

import math
import os
import random
from pathlib import Path

import pytest
from traces_helpers import FIXTURES, REPO, SHARED_TRACES, smallest_lab_captures

from dpmlens.traces import load_traces
from dpmlens.traces.analysis.critical import (
    PathTally,
    PhaseGraph,
    compiled_walk,
    summarize_paths,
    walk,
)
from dpmlens.traces.model.sample import Group
from dpmlens.traces.model.timeline import Interval, PhaseRun, build_timeline

C_WALK = compiled_walk()
pytestmark = pytest.mark.skipif(C_WALK is None, reason="_critical_walk not built (make builds "
                                "it: server/tools/build_ftrace_tokens.py)")
MULTITEST = REPO / "bench-data" / "pm-graph-multitest"  # `make bench-multitest` unpacks it


def _same(runs: list[PhaseRun]) -> int:
    """Each run walked both ways, then the whole summary both ways; the steps compared."""
    assert C_WALK is not None
    steps = 0
    for r in runs:
        want = walk(PhaseGraph(r))
        py, c = PathTally(), PathTally()
        py.add_steps(PhaseGraph(r), want)
        assert C_WALK(r, None) == want, (r.cycle, r.phase)
        assert C_WALK(r, c) == want, (r.cycle, r.phase)
        assert (c.on, c.seen) == (py.on, py.seen), (r.cycle, r.phase)
        assert list(c.on) == list(py.on)  # the same order: the sums are folded in it
        unkept = PathTally()  # without the steps (summarize_paths' runs but the median)
        assert C_WALK(r, unkept, None, None, False) == []
        assert (unkept.on, unkept.seen) == (py.on, py.seen)
        steps += len(want)
    watched = {id(iv) for r in runs[::3] for iv in r.intervals[::4]}
    fast = summarize_paths(runs, watched)
    os.environ["DPMLENS_PY_WALK"] = "1"
    try:
        slow = summarize_paths(runs, watched)
    finally:
        del os.environ["DPMLENS_PY_WALK"]
    assert fast.devices == slow.devices
    assert (fast.runs_of, fast.on_path) == (slow.runs_of, slow.on_path)
    assert [(p.run, p.chain, p.tail_us) for p in fast.median] == [
        (p.run, p.chain, p.tail_us) for p in slow.median]
    return steps


def _real() -> list[Path]:
    shared = [SHARED_TRACES] if SHARED_TRACES.is_dir() else []
    return [*shared, FIXTURES / "timeline" / "test_mem_ftrace.txt", *smallest_lab_captures()]


def test_same_walk_on_real_captures() -> None:
    """pm-graph's captures (../shared/traces), the fixture, and one capture of each lab
    directory (its kernel: 6.1, 6.12, suspend and resume orders), each as its own load."""
    steps = 0
    for path in _real():
        steps += _same(build_timeline(load_traces([path])))
    assert steps > 1000


@pytest.mark.skipif(not MULTITEST.is_dir(), reason="bench-data/pm-graph-multitest absent "
                    "(make bench-multitest unpacks it)")
def test_same_walk_on_the_multitest() -> None:
    """pm-graph's 100-run multitest: its first tests here, all 100 in the slow suite."""
    every = bool(os.environ.get("DPMLENS_SLOW_TESTS"))
    paths = sorted(MULTITEST.glob("*/*_ftrace.txt"))[: None if every else 3]
    assert _same(build_timeline(load_traces(paths))) > 1000


def _made_up(rng: random.Random) -> PhaseRun:
    """A phase run of up to 40 callbacks over 8 devices and 4 threads: starts and ends that
    tie, a device with several callbacks, parents with and without a callback, an ancestry
    with hops (8: found, 9: not, and a loop), threads -1, a start exactly IDLE after an end."""
    devices = [f"d{i}" for i in range(6)] + ["d\u00e96", "d\u4e007"]  # 1- and 2-byte kinds
    ancestry = {f"d{i}": f"a{i % 3}" for i in range(8, 12)}
    ancestry.update({"a0": "d1", "a1": "a2", "a2": "a1", "x": "d0", "e0": "c0", "c7": "d2"})
    ancestry.update({f"c{i}": f"c{i + 1}" for i in range(7)})
    n = rng.randint(1, 40)
    ivs, t = [], rng.choice([0.0, 1.0])
    for i in range(n):
        dev = rng.choice(devices)
        parent = rng.choice([*devices, "a0", "a1", "x", "c0", "c1", "e0", "", "none"])
        if rng.random() < 0.5:  # an equal name that is another object (names match by value)
            parent = "".join(list(parent))
        g = Group(("drv", dev, parent, "suspend", rng.choice(["bus", "type"])))
        g.durations.append(rng.choice([0.0, 0.0, 1.0, 2.0, 15.0, 30.0, rng.uniform(0, 100)]))
        t += rng.choice([0.0, 0.0, 1e-6, 2e-6, 5e-6, 20e-6, 30e-6, rng.uniform(0, 1e-4)])
        ivs.append(Interval(t, rng.choice([-1, 0, 1, 2, 3]), g, 0))
        del i
    ivs.sort(key=lambda iv: (iv.start, iv.end))
    phase = rng.choice(["suspend", "resume", "suspend_noirq", "resume_early"])
    r = PhaseRun(1, phase, ivs[0].start, max(iv.end for iv in ivs) + 1e-5, True,
                 rng.choice([-1, 0, 1]), ivs)
    r.loop_dispatch = rng.random() < 0.5
    r.async_616 = rng.random() < 0.3
    r.ancestry = rng.choice([None, {}, ancestry, _Ancestry(ancestry)])
    return r


class _Ancestry(dict):  # not an exact dict: its get() is called
    pass


def test_same_walk_on_made_up_runs() -> None:
    rng = random.Random(29)
    runs = [_made_up(rng) for _ in range(3000)]
    assert _same(runs) > 10000
    assert any(r.direction == "up" for r in runs) and any(r.direction == "down" for r in runs)


def test_left_to_python_when_it_cannot_order() -> None:
    """A start or end that is not a number, and a run with device links: None (walked in
    Python), and nothing added to the tally."""
    assert C_WALK is not None
    r = _made_up(random.Random(1))
    r.intervals[-1].group.durations[0] = math.nan
    tally = PathTally()
    assert C_WALK(r, tally) is None and not tally.on and not tally.seen
    r.intervals[-1].group.durations[0] = 1.0
    r.intervals[0].start = math.nan
    assert C_WALK(r, tally) is None and not tally.on


def test_names_that_are_not_str_walk_in_python() -> None:
    """A device or parent name that is not a str (the C table holds str keys): None, nothing
    added to the tally, and summarize_paths walks it in Python to the same summary."""
    assert C_WALK is not None
    for where in (1, 2):
        r = _made_up(random.Random(5))
        g = r.intervals[len(r.intervals) // 2].group
        key = list(g.key)
        key[where] = None
        g.key = tuple(key)  # type: ignore[assignment]
        tally = PathTally()
        assert C_WALK(r, tally) is None and not tally.on and not tally.seen
        if where == 2:
            assert walk(PhaseGraph(r))  # the Python walk takes it
            _same_summary([r])


def _same_summary(runs: list[PhaseRun]) -> None:
    fast = summarize_paths(runs, set())
    os.environ["DPMLENS_PY_WALK"] = "1"
    try:
        slow = summarize_paths(runs, set())
    finally:
        del os.environ["DPMLENS_PY_WALK"]
    assert (fast.devices, fast.runs_of) == (slow.devices, slow.runs_of)


def test_device_links_walk_in_python(tmp_path: Path) -> None:
    from traces_helpers import write_links_capture

    from dpmlens.traces.model.links import DeviceLinks

    t = load_traces([write_links_capture(tmp_path / "t.txt")])
    (run,) = build_timeline(t)
    assert C_WALK is not None and C_WALK(run, None) == walk(PhaseGraph(run))
    links = DeviceLinks("test")
    links.add("dev-s", "dev-c")
    run.links = links
    assert C_WALK(run, None) is None


def test_round3_is_pythons_round() -> None:
    """The tally's round(duration, 3) in C, bit for bit: random values, decimal ties (k/1000 +
    0.0005 and (k + 0.5)/1000, near which it asks Python), random bit patterns (NaN, inf,
    subnormal, huge)."""
    import struct

    from dpmlens.traces.analysis._critical_walk import round3  # type: ignore[attr-defined]

    rng = random.Random(3)
    vals = [0.0, -0.0, math.inf, -math.inf, 5e-324, 0.0005, 0.0015, 2.675, 1.0005, 1e300]
    for _ in range(40000):
        k = rng.randint(-10**9, 10**9)
        vals += [rng.uniform(0, 1e6), rng.uniform(-10, 10), k / 1000 + 0.0005, (k + 0.5) / 1000,
                 k / 2000, struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0]]
    for v in vals:
        want, got = round(v, 3), round3(v)
        assert struct.pack("d", got) == struct.pack("d", want) or (want != want and got != got), v


def test_round3_each_and_aggregate() -> None:
    """aggregate's durations rounded in C: an array('d') as a buffer, a list with an int
    (Python's round keeps it an int) and an inf; the stats of real captures the same both
    ways, bit for bit."""
    import struct
    from array import array

    from dpmlens.traces.analysis._critical_walk import round3_each  # type: ignore[attr-defined]

    from dpmlens.traces import aggregate

    rng = random.Random(4)
    xs = array("d", [rng.uniform(0, 1e5) for _ in range(5000)] + [0.0005, 2.675, -0.0])
    assert [struct.pack("d", v) for v in round3_each(xs)] == [
        struct.pack("d", round(v, 3)) for v in xs]
    got = round3_each([1.0005, 7, math.inf])
    assert got[:2] == [1.0, 7] and type(got[1]) is int and got[2] == math.inf
    paths = [p for p in [SHARED_TRACES, FIXTURES / "timeline" / "test_mem_ftrace.txt",
                         *sorted(MULTITEST.glob("*/*_ftrace.txt"))[:2]] if p.exists()]
    traces = load_traces(paths)
    fast = aggregate(traces)
    os.environ["DPMLENS_PY_WALK"] = "1"
    try:
        slow = aggregate(traces)
    finally:
        del os.environ["DPMLENS_PY_WALK"]
    assert repr(fast) == repr(slow) and len(fast) > 100

"""The timeline's intervals by (cycle, phase) in C (traces/model/_timeline_runs.c) against
timeline._buckets, the reference: the same buckets in the same order, the same intervals
(every attribute, its type too) in the same order, the same last end, on every real capture
the tests hold and on made-up groups (ties, samples without a timestamp, cycles in any
order, negative and large ones)."""

from __future__ import annotations

import math
import os
import random
from array import array
from pathlib import Path

import pytest
from traces_helpers import FIXTURES, REPO, SHARED_TRACES, smallest_lab_captures

from dpmlens.traces import load_traces
from dpmlens.traces.model import timeline
from dpmlens.traces.model.sample import Group
from dpmlens.traces.model.traceset import TraceSet

MULTITEST = REPO / "bench-data" / "pm-graph-multitest"  # `make bench-multitest` unpacks it


def _built() -> bool:
    if os.environ.get("DPMLENS_PY_TIMELINE") == "1":
        return False
    try:
        from dpmlens.traces.model import _timeline_runs  # type: ignore[attr-defined]  # noqa: F401
    except ImportError:
        return False
    return True


needs_c = pytest.mark.skipif(not _built(), reason="_timeline_runs not built (make builds it: "
                             "server/tools/build_ftrace_tokens.py)")


def _plain(buckets: list[timeline.Bucket]) -> list[tuple[object, ...]]:
    return [(type(c), c, p, [(type(iv), type(iv.start), iv.start, type(iv.thread), iv.thread,
                              id(iv.group), type(iv.index), iv.index) for iv in ivs],
             type(last), last) for c, p, ivs, last in buckets]


def _same(traces: TraceSet) -> int:
    got = timeline._c_buckets(traces)
    assert got is not None
    want = timeline._buckets(traces)
    assert _plain(got) == _plain(want)
    return sum(len(b[2]) for b in want)


def _real() -> list[Path]:
    fixtures = sorted(p for p in FIXTURES.rglob("*") if p.is_file() and "trace" in p.name)
    shared = [SHARED_TRACES] if SHARED_TRACES.is_dir() else []
    return [*shared, *fixtures, *smallest_lab_captures()]


@needs_c
def test_same_buckets_on_real_captures() -> None:
    """pm-graph's captures, the trace fixtures (ftrace, trace-cmd, Perfetto, dmesg forms),
    one capture of each lab directory; each as its own load."""
    n = 0
    for path in _real():
        try:
            traces = load_traces([path])
        except Exception:  # noqa: BLE001 - a fixture of an error case: nothing to group
            continue
        n += _same(traces)
    assert n > 10000


@needs_c
@pytest.mark.skipif(not MULTITEST.is_dir(), reason="bench-data/pm-graph-multitest absent "
                    "(make bench-multitest unpacks it)")
def test_same_buckets_on_the_multitest() -> None:
    every = bool(os.environ.get("DPMLENS_SLOW_TESTS"))
    paths = sorted(MULTITEST.glob("*/*_ftrace.txt"))[: None if every else 3]
    assert _same(load_traces(paths)) > 5000


def _made_up(rng: random.Random) -> TraceSet:
    traces = TraceSet()
    traces.store.threads = ["a-1", "kworker/0:1-2", "b-3", "c-4"]
    for gi in range(rng.randint(1, 30)):
        phase = rng.choice(["suspend", "resume", "suspend_late", "resume_noirq"])
        g = Group(("drv", f"d{gi % 7}", "p", phase, rng.choice(["bus", "type"])))
        for _ in range(rng.randint(0, 12)):
            g.starts.append(rng.choice([math.nan, 0.0, -0.0, 1.0, 1.0, 2.5,
                                        rng.uniform(0, 3)]))
            g.durations.append(rng.choice([0.0, 1.0, 1e6, rng.uniform(0, 100)]))
            g.threads.append(rng.choice([-1, 0, 3]))
            g.cycles.append(rng.choice([0, 1, 2, -1, 2**40, rng.randint(3, 60)]))
            g.files.append(0)
        traces.store.groups[g.key] = g
    return traces


@needs_c
def test_same_buckets_on_made_up_groups() -> None:
    rng = random.Random(29)
    n = sum(_same(_made_up(rng)) for _ in range(1500))
    assert n > 10000


@needs_c
def test_left_to_python() -> None:
    """An end that is NaN, columns of other lengths, a column that is not Group's array:
    None, and build_timeline gives what Python gives (or raises as it does)."""
    traces = _made_up(random.Random(1))
    g = next(g for g in traces.groups.values() if len(g.starts))
    g.starts[0] = 1.0
    g.durations[0] = math.nan
    assert timeline._c_buckets(traces) is None
    assert timeline.build_timeline(traces)
    g.durations[0] = 1.0
    g.threads.append(0)
    assert timeline._c_buckets(traces) is None
    with pytest.raises(ValueError):
        timeline.build_timeline(traces)
    g.threads.pop()
    g.cycles = array("q", g.cycles)  # type: ignore[assignment]
    assert timeline._c_buckets(traces) is None
    g.cycles = list(g.cycles)  # type: ignore[assignment]
    assert timeline._c_buckets(traces) is None
    assert timeline.build_timeline(traces)

#!/usr/bin/env python3
"""Drive the timeline's C grouping (_timeline_runs.c), the C critical-path walk
(_critical_walk.c) and the report's C JSON writer (_json_text.c) over real and made-up input,
for valgrind:

    PYTHONMALLOC=malloc valgrind --tool=memcheck --leak-check=full \\
        .venv/bin/python bench/memcheck_timeline_walk.py [--quick]

Real: ../shared/traces and the first tests of pm-graph's multitest (bench-data/, when
unpacked): their groups grouped, their runs walked with a tally and watched intervals;
made up: the tests' generators (tests/test_traces_timeline_c.py's groups with NaN starts and
odd cycles, tests/test_traces_critical_c.py's runs with ties, ancestry hops and a loop,
threads -1, equal names that are other objects, a dict-subclass ancestry), a NaN start or
end, names that are not str, and arguments of the wrong type or shape (errors, not crashes);
the JSON writer on the reports of the real loads, made-up nested values (every kind of
string, big ints, non-finite floats, non-str keys, other types) and nesting past the
recursion limit. Memcheck's report is what counts; the script itself only checks that C and Python
agree.
"""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "server"))
sys.path.insert(0, str(REPO / "server" / "tests"))

from array import array

from dpmlens.traces import load_traces
from dpmlens.traces.analysis import _critical_walk  # type: ignore[attr-defined]
from dpmlens.traces.analysis.critical import PathTally, PhaseGraph, compiled_walk, walk
from dpmlens.traces.model import _timeline_runs, timeline  # type: ignore[attr-defined]
from dpmlens.traces.model.timeline import Interval, build_timeline
from test_traces_critical_c import _made_up
from test_traces_timeline_c import _made_up as _made_up_groups
from test_traces_timeline_c import _plain
from traces_helpers import SHARED_TRACES


def grouping(loads: list, rng: random.Random) -> None:
    """The C grouping against timeline._buckets, then bad input."""
    for traces in loads + [_made_up_groups(rng) for _ in range(100)]:
        got = timeline._c_buckets(traces)
        if got is None or _plain(got) != _plain(timeline._buckets(traces)):
            sys.exit("C and Python grouping differ")
    odd = _made_up_groups(rng)
    g = next(g for g in odd.groups.values() if len(g.starts))
    g.starts[0], g.durations[0] = 1.0, math.nan
    assert timeline._c_buckets(odd) is None
    g.durations[0] = 1.0
    g.cycles = array("q", g.cycles)  # type: ignore[assignment]
    assert timeline._c_buckets(odd) is None
    for bad in ([object()], [g], None):
        try:
            _timeline_runs.buckets(bad, Interval)
        except (TypeError, AttributeError):
            pass
    try:
        _timeline_runs.buckets([], int)
    except (TypeError, AttributeError):
        pass


def json_writer(loads: list, rng: random.Random) -> None:
    """The C JSON writer against the Python one: real reports, made-up values, bad input."""
    from dpmlens.traces import aggregate, phase_stats
    from dpmlens.traces.report import _json_text, json_text  # type: ignore[attr-defined]
    from dpmlens.traces.report.output import report_json

    for t in loads:
        obj = report_json(t, aggregate(t), phase_stats(t), None, None, timeline=True)
        if _json_text.dumps(obj) != json_text.py_dumps(obj):
            sys.exit("C and Python JSON differ on a report")

    def value(depth: int) -> object:
        k = rng.randrange(12 if depth < 5 else 7)
        if k == 0:
            return "".join(chr(rng.choice([rng.randrange(128), rng.randrange(0x110000)]))
                           for _ in range(rng.randrange(8)))
        if k == 1:
            return rng.choice([0, -1, 2**63, -(2**63) - 1, 10**30, rng.randrange(-10**6, 10**6)])
        if k == 2:
            return rng.choice([math.nan, math.inf, -0.0, 5e-324, rng.uniform(-1e9, 1e9)])
        if k in (3, 4, 5, 6):
            return rng.choice([None, True, False, "x"])
        if k in (7, 8):
            return [value(depth + 1) for _ in range(rng.randrange(5))]
        if k == 9:
            return tuple(value(depth + 1) for _ in range(rng.randrange(3)))
        return {rng.choice(["a", "b", "\u00e9", "\U0001f642"]) + str(i): value(depth + 1)
                for i in range(rng.randrange(5))}

    for _ in range(3000):
        v = value(0)
        if _json_text.dumps(v) != json_text.py_dumps(v):
            sys.exit(f"C and Python JSON differ: {v!r}")
    for other in ({1: 2}, [object()], {"a": {1, 2}}, [10**5000]):
        try:
            assert _json_text.dumps(other) is None
        except ValueError:  # int repr's digit limit
            pass
    deep: list = []
    node = deep
    for _ in range(100000):
        node.append([])
        node = node[0]
    try:
        _json_text.dumps(deep)
    except RecursionError:
        pass


def main() -> int:
    quick = "--quick" in sys.argv
    fast = compiled_walk()
    if fast is None:
        sys.exit("_critical_walk not built (make builds it)")
    paths = [SHARED_TRACES] if SHARED_TRACES.is_dir() else []
    multi = sorted((REPO / "bench-data" / "pm-graph-multitest").glob("*/*_ftrace.txt"))
    paths += multi[: 1 if quick else 3]
    loads = [load_traces([p]) for p in paths]
    rng = random.Random(7)
    grouping(loads, rng)
    runs = [r for t in loads for r in build_timeline(t)]
    runs += [_made_up(rng) for _ in range(200 if quick else 2000)]
    tally = PathTally()
    watched = {id(iv) for r in runs[::2] for iv in r.intervals[::3]}
    on_path: set[int] = set()
    for r in runs:
        if fast(r, tally, watched, on_path) != walk(PhaseGraph(r)):
            sys.exit(f"C and Python walks differ: cycle {r.cycle} {r.phase}")
    from dpmlens.traces.analysis._critical_walk import round3  # type: ignore[attr-defined]

    for x in (0.0005, 2.675, 1e300, math.inf, math.nan, -0.0, 123.4565):
        assert round3(x) == round(x, 3) or x != x
    odd = _made_up(rng)
    odd.intervals[len(odd.intervals) // 2].start = math.nan
    assert fast(odd, tally) is None
    for where in (1, 2):  # a device or parent name that is not a str: left to Python
        odd = _made_up(rng)
        g = odd.intervals[-1].group
        g.key = tuple(None if i == where else x for i, x in enumerate(g.key))
        assert fast(odd, tally) is None
    walk_c = _critical_walk.walk
    bad_args = [
        ([object()], 0, 1, 0, 0, None),  # not an Interval
        ([Interval(1.0, 0, object(), 0)], 0, 1, 0, 0, None),  # a group without durations
        ([Interval("x", 0, odd.intervals[0].group, 0)], 0, 1, 0, 0, None),  # start not float
        ([Interval(1.0, 0, odd.intervals[0].group, 5)], 0, 1, 0, 0, None),  # index past end
        (odd.intervals, 0, 1, 0, 0, {"a": "b"}, [], {}),  # on not a dict
        (odd.intervals, 0, 1, 0, 0, 3),  # an ancestry without get()
        (odd.intervals, 0, 1, 0, 0, None, {}, {}, [], set()),  # watched not a set
        ((), 0, 1, 0, 0, None),  # not a list
    ]
    errors = 0
    for a in bad_args:
        try:
            walk_c(*a)
        except (TypeError, AttributeError, IndexError, ValueError):
            errors += 1
    # (an ancestry without get() is only an error for a run whose parents need it)
    json_writer(loads, rng)
    print(f"{len(runs)} runs walked the same; {errors} of {len(bad_args)} bad calls raised; "
          "the JSON writer agreed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

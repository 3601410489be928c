"""measured_delays() and aggregate() make their frozen dataclass rows without __init__ (a
report makes ~20,000): each row must equal the one its constructor makes, field for field and
in the same attribute order, and hash the same; the parent/layer pick is Counter's."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest
from traces_helpers import FIXTURES, SHARED_TRACES, smallest_lab_captures

from dpmlens.traces import aggregate, load_traces
from dpmlens.traces.analysis.aggregate import CallbackStats, _most_common
from dpmlens.traces.analysis.delays import MeasuredDelay, measured_delays
from dpmlens.traces.model.timeline import build_timeline


def _captures() -> list[Path]:
    shared = [SHARED_TRACES] if SHARED_TRACES.is_dir() else []
    return [*shared, FIXTURES / "timeline" / "test_mem_ftrace.txt", *smallest_lab_captures()]


def _same_row(row: object, cls: type) -> None:
    made = cls(**vars(row))
    assert type(row) is cls
    assert row == made and hash(row) == hash(made)
    assert list(vars(row).items()) == list(vars(made).items())


def test_rows_equal_the_constructors() -> None:
    delays = stats = 0
    for path in _captures():
        t = load_traces([path])
        for d in measured_delays(t, build_timeline(t)):
            _same_row(d, MeasuredDelay)
            assert d.interval is None or d.interval.group in t.groups.values()
            delays += 1
        for s in aggregate(t):
            _same_row(s, CallbackStats)
            stats += 1
    assert stats > 100
    if delays == 0:
        pytest.skip("no capture with delay kprobes here")


def test_most_common_is_counters() -> None:
    rng = random.Random(4)
    for _ in range(3000):
        counts = {rng.choice("abcdefg"): rng.randint(1, 4) for _ in range(rng.randint(1, 6))}
        assert _most_common(counts) == Counter(counts).most_common(1)[0][0]

"""Fuzz: every trace importer on mutated real captures (issue 11).

Invariants: no exception; a good capture loaded beside the mutated one keeps all its samples;
no non-finite number in a sample's duration or in the JSON report.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import tempfile
from pathlib import Path

from fuzz_support import FIXTURES, mutated, record, trace_corpus
from hypothesis import given
from hypothesis import strategies as st

from dpmlens.core.jsonsafe import dumps
from dpmlens.traces.analysis.aggregate import aggregate, phase_stats
from dpmlens.traces.read.load import load_traces
from dpmlens.traces.report.output import report_json

FULL = os.environ.get("DPMLENS_FUZZ_PROFILE") == "fuzz"
CORPUS = [p for p in trace_corpus() if FULL or p.stat().st_size < 300 << 10]
DATA = {p: p.read_bytes() for p in CORPUS}
GOOD = FIXTURES / "traces" / "ftrace_basic.txt"
GOOD_SAMPLES = load_traces([GOOD]).sample_count


def _no_constants(text: str) -> None:
    def refuse(name: str) -> float:
        raise AssertionError(f"{name} in the JSON output")

    json.loads(text, parse_constant=refuse)


def check_capture(name: str, data: bytes, gz: bool, cut: int) -> None:
    with tempfile.TemporaryDirectory(prefix="dpmlens-fuzz-") as tmp:
        path = Path(tmp) / (name + (".gz" if gz else ""))
        raw = gzip.compress(data, 1) if gz else data
        path.write_bytes(raw[: len(raw) - cut] if cut < len(raw) else raw)
        try:
            ts = load_traces([str(GOOD), str(path)])
            (good,) = [f for f in ts.files if f.path == str(GOOD)]
            assert good.samples == GOOD_SAMPLES, "the good capture lost samples"
            for s in ts.samples():
                assert math.isfinite(s.duration_us), s
            _no_constants(dumps(report_json(ts, aggregate(ts), phase_stats(ts), None,
                                            timeline=True)))
        except BaseException:
            record("trace", data, "-" + name)
            raise


@given(st.sampled_from(CORPUS).flatmap(lambda p: st.tuples(
    st.just(p), mutated(DATA[p], max_edits=12), st.booleans(), st.integers(0, 64))))
def test_mutated_captures(case: tuple[Path, bytes, bool, int]) -> None:
    path, data, gz, cut = case
    check_capture(path.name, data, gz, cut if gz else 0)

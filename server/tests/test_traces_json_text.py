"""The report's JSON writer (traces/report/json_text.py) writes what
`jsonsafe.dumps(obj, indent=2)` writes, byte for byte, twice as fast."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from dpmlens.core import jsonsafe
from dpmlens.traces.report import json_text

LAB = Path(__file__).resolve().parents[2] / "test-fixtures" / "lab"

CASES = [
    {},
    [],
    {"a": [], "b": {}, "c": [{}], "d": [[]]},
    {"float": 0.1, "neg0": -0.0, "big": 1e300, "small": 5e-324, "int": 10**30, "neg": -3,
     "nan": math.nan, "inf": [math.inf, -math.inf], "bool": [True, False], "none": None},
    {"text": "é \u2028 \x00 \"quoted\" \\ tab\t 🙂", "tuple": (1, (2, 3.5), "x")},
    [{"nested": [{"deep": [1, {"k": "v"}]}]}, 1.0, "s"],
    {"ikey": {1: "int key"}},  # left to the standard library (it turns the key into "1")
    {"obj": {"set": {1, 2}}},  # not JSON: the same error as before
]


@pytest.mark.parametrize("obj", CASES)
def test_the_same_text_as_the_standard_library(obj: object) -> None:
    try:
        want = jsonsafe.dumps(obj, indent=2)
    except TypeError:
        with pytest.raises(TypeError):
            json_text.dumps(obj)
        return
    assert json_text.dumps(obj) == want


@pytest.mark.parametrize("capture", ["k61-sleepgraph", "k612-mem", "k61-tp"])
def test_the_same_report_on_real_captures(capture: str) -> None:
    from dpmlens.traces import aggregate, load_traces, phase_stats
    from dpmlens.traces.report.output import report_json

    folder = LAB / capture
    if not folder.is_dir():
        pytest.skip(f"{folder} not present")
    ts = load_traces([folder])
    obj = report_json(ts, aggregate(ts), phase_stats(ts), None, None, timeline=True)
    assert json_text.dumps(obj) == jsonsafe.dumps(obj, indent=2)

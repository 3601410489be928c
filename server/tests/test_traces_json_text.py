"""The report's JSON writer (traces/report/json_text.py) writes what
`jsonsafe.dumps(obj, indent=2)` writes, byte for byte, twice as fast."""

from __future__ import annotations

import math
import os
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


def _as_the_standard_library(obj: object) -> None:
    """json_text writes what the standard library writes, or fails as it does."""
    try:
        want = jsonsafe.dumps(obj, indent=2)
    except TypeError:
        with pytest.raises(TypeError):
            json_text.dumps(obj)
        return
    assert json_text.dumps(obj) == want


@pytest.mark.parametrize("obj", CASES)
def test_the_same_text_as_the_standard_library(obj: object) -> None:
    _as_the_standard_library(obj)


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


# The C writer (_json_text.c, built by make) against the Python one and the standard library.

def _c_dumps():  # noqa: ANN202
    if os.environ.get("DPMLENS_PY_JSON") == "1":
        pytest.skip("DPMLENS_PY_JSON=1: the C writer is off")
    try:
        from dpmlens.traces.report import _json_text  # type: ignore[attr-defined]
    except ImportError:
        pytest.skip("traces/report/_json_text.c not built (make builds it)")
    return _json_text.dumps


class _Str(str):
    pass


class _Int(int):
    pass


@pytest.mark.parametrize("obj", CASES)
def test_c_writes_what_python_writes(obj: object) -> None:
    c = _c_dumps()
    try:
        want = json_text.py_dumps(obj)
    except TypeError:
        assert c(obj) is None  # not JSON: left to the standard library, which raises
        return
    got = c(obj)
    if got is None:  # what the Python writer leaves to jsonsafe too (a non-str key)
        assert want == jsonsafe.dumps(obj, indent=2)
    else:
        assert got == want


@pytest.mark.parametrize("obj", [
    {"a": _Str("x")}, [_Int(3)], {"k": {"s": {1}}}, {2: 1}, [1, 2, object()],
    {"a": 1, _Str("b"): 2},
])
def test_c_leaves_other_types_to_the_standard_library(obj: object) -> None:
    c = _c_dumps()
    assert c(obj) is None
    _as_the_standard_library(obj)


def test_c_escapes_every_code_point_as_the_standard_library() -> None:
    from json.encoder import encode_basestring_ascii

    c = _c_dumps()
    points = [*range(0, 0x3000), *range(0xD700, 0xE100), *range(0xFFF0, 0x10100),
              0x1F642, 0x10FFFF]
    text = "".join(map(chr, points))
    assert c(text) == encode_basestring_ascii(text)
    for p in points[::7]:
        s = chr(p)
        assert c([s, "a" + s + "\\\""]) == json_text.py_dumps([s, "a" + s + "\\\""])


def test_c_numbers_as_repr() -> None:
    c = _c_dumps()
    ints = [0, -1, 2**63 - 1, -(2**63), 2**63, -(2**63) - 1, 10**40, -(10**40)]
    floats = [0.0, -0.0, 1e16, 1e-5, 0.1, 1 / 3, 5e-324, 1.7976931348623157e308, 123.456,
              1e22, 1e-7, 2.5e-3]
    assert c(ints) == json_text.py_dumps(ints)
    assert c(floats) == json_text.py_dumps(floats)
    assert c([math.nan, math.inf, -math.inf]) == "[\n  null,\n  null,\n  null\n]"
    with pytest.raises(ValueError):  # int.__repr__'s digit limit, as in Python
        c([10**5000])


def test_c_deep_nesting_falls_back() -> None:
    _c_dumps()
    deep: list = []
    node = deep
    for _ in range(20000):
        node.append([])
        node = node[0]
    try:
        want: str | None = jsonsafe.dumps(deep, indent=2)
    except RecursionError:
        want = None
    if want is None:
        with pytest.raises(RecursionError):
            json_text.dumps(deep)
    else:
        assert json_text.dumps(deep) == want


try:
    from hypothesis import given, settings
    from hypothesis import strategies as st
except ImportError:  # hypothesis is a dev dependency
    pass
else:
    _scalars = (st.none() | st.booleans() | st.integers() | st.floats()
                | st.text(st.characters(codec=None, exclude_categories=()), max_size=12))
    _values = st.recursive(
        _scalars,
        lambda kids: st.lists(kids, max_size=5) | st.tuples(kids, kids)
        | st.dictionaries(st.text(max_size=6), kids, max_size=5),
        max_leaves=40)

    @settings(max_examples=400, deadline=None)
    @given(_values)
    def test_c_equals_python_on_made_up_values(obj: object) -> None:
        c = _c_dumps()
        assert c(obj) == json_text.py_dumps(obj)

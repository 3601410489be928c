"""model/footprint.py: reads made inside a unit are kept apart from the rest of the recording;
what a unit cannot attribute still counts for the whole file."""

from __future__ import annotations

import re

from dpmlens.model import footprint
from dpmlens.model.build import build_model

_SRC = b"""static int a(void) { msleep(1); return 0; }
static int b(void) { return a(); }
"""


def test_reads_in_a_unit_stay_in_that_unit() -> None:
    model = build_model("x.c", _SRC)
    with footprint.record(model) as fp:
        model.calls_in("b")
        with footprint.unit(model, "a"):
            model.calls_in("a")
            footprint.searched(model, "msleep")
            footprint.searched_any_file(re.compile(rb"field"))
            with footprint.unit(model, footprint.NAMES):  # nested: a unit of the same root
                model.calls_to("udelay")
            model.calls_in("a")
    assert fp.functions == {"b"} and not fp.patterns
    assert fp.units["a"].functions == {"a"}
    assert set(fp.units["a"].patterns) == {b"msleep", b"field"}
    assert set(fp.units[footprint.NAMES].patterns) == {b"udelay"}
    assert footprint.of(model) is None  # the recording ended
    assert fp.unit_reading("a", 0, 10, (b"",), frozenset()) == "a"
    assert fp.unit_reading("a", 0, 10, (b"",), frozenset({"a"})) is None
    assert fp.unit_reading("c", 0, 0, (b"x = msleep;",), frozenset({"a"})) is None
    assert fp.unit_reading("c", 0, 0, (b"udelay(1);",), frozenset({"a"})) == footprint.NAMES


def test_what_a_unit_cannot_attribute_counts_for_the_whole() -> None:
    model = build_model("x.c", _SRC)
    with footprint.record(model) as fp, footprint.unit(model, "a"):
        model.calls_in(None)  # calls at file scope: no function to name
    assert fp.whole is not None and fp.units["a"].whole is not None


def test_an_answer_keeps_how_to_compute_it_and_its_value() -> None:
    model = build_model("x.c", _SRC)

    def callers_of_msleep(m: object) -> list[str | None]:
        return [c.caller for c in model.calls_to("msleep")]

    with footprint.record(model) as fp:
        got = footprint.answer(model, "<callers>", callers_of_msleep)
    assert got == ["a"] and fp.answers["<callers>"] == (callers_of_msleep, ["a"])
    assert set(fp.units["<callers>"].patterns) == {b"msleep"} and not fp.patterns
    # without a recording, just the answer
    assert footprint.answer(model, "<callers>", callers_of_msleep) == ["a"]


def test_units_move_with_an_edit_before_them() -> None:
    fp = footprint.Footprint()
    fp.units["a"] = footprint.Footprint(ranges=[(100, 110)])
    moved = fp.shifted(50, 7)
    assert moved.units["a"].ranges == [(107, 117)] and fp.units["a"].ranges == [(100, 110)]

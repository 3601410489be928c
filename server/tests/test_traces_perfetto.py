"""Perfetto importer: traces written with the perfetto package's own builder."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from traces_helpers import FIXTURES, by_key

from dpmlens.traces import load_traces, phase_stats

BASIC = FIXTURES / "perfetto_basic.perfetto-trace"


def _maker():  # noqa: ANN202 - the fixture generator module
    spec = importlib.util.spec_from_file_location("make_perfetto", FIXTURES / "make_perfetto.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def test_committed_fixture_is_what_the_generator_writes(tmp_path: Path) -> None:
    out = tmp_path / "t.perfetto-trace"
    _maker().write(out, _maker().EVENTS)
    assert out.read_bytes() == BASIC.read_bytes()


def test_same_numbers_as_the_ftrace_text_of_cycle_0() -> None:
    t = load_traces([BASIC])
    assert t.files[0].format == "perfetto"
    assert t.errors == [] and t.cycles == 1
    # bundles are per CPU and CPU 1 is written first: pairing needs the sort by timestamp
    assert by_key(t) == {
        ("foo", "0-0055", "prepare"): [20.0],
        ("foo", "0-0055", "suspend"): [2000.0],
        ("bar", "0000:00:1f.0", "suspend"): [10000.0],
        ("bar", "0000:00:1f.0", "suspend_noirq"): [500.0],
        ("foo", "0-0055", "resume"): [4000.0],
    }
    layers = {(s.driver, s.phase): (s.layer, s.error) for s in t.samples()}
    assert layers[("bar", "suspend")] == ("bus", -16)
    assert {p.phase: p.mean_us for p in phase_stats(t)} == {
        "prepare": 100.0, "suspend": 19900.0, "suspend_noirq": 1000.0, "resume": 5000.0}


def test_detected_by_content_whatever_the_name(tmp_path: Path) -> None:
    p = tmp_path / "capture.bin"
    p.write_bytes(BASIC.read_bytes())
    assert load_traces([p]).files[0].format == "perfetto"


def test_no_pm_events_says_so() -> None:
    t = load_traces([FIXTURES / "perfetto_no_pm.pftrace"])
    assert t.sample_count == 0 and t.errors == []
    assert "no PM events" in t.files[0].notes[0]


def test_truncated_trace_keeps_whole_packets_and_reports(tmp_path: Path) -> None:
    data = BASIC.read_bytes()
    p = tmp_path / "cut.perfetto-trace"
    p.write_bytes(data[: len(data) - 40])  # inside the last (CPU 0) bundle
    t = load_traces([p])
    assert "truncated" in t.files[0].error
    assert t.errors and t.errors[0].startswith(str(p))
    # the CPU 1 bundle survived: its two starts/ends pair up
    assert by_key(t) == {("foo", "0-0055", "suspend"): [2000.0],
                         ("bar", "0000:00:1f.0", "suspend"): [10000.0]}

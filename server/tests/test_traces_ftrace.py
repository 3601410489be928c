"""ftrace text importer: raw trace, trace-cmd report, sleepgraph files; numbers by hand."""

from __future__ import annotations

import gzip
import shutil

import pytest
from traces_helpers import FIXTURES, by_key

from dpmlens.traces import aggregate, load_traces, phase_stats
from dpmlens.traces.read import ftrace as ftrace_mod

BASIC = FIXTURES / "ftrace_basic.txt"


def test_basic_samples_worked_by_hand() -> None:
    t = load_traces([BASIC])
    assert t.errors == []
    assert t.cycles == 2
    assert t.sample_count == 11
    assert t.skipped_lines == 1  # the start line cut after "dri"
    assert t.incomplete == 1  # bar resume in cycle 1 never ends
    assert t.files[0].unmatched_ends == 1  # "baz 1-1" ends without a start
    assert t.files[0].format == "ftrace"
    got = by_key(t)
    assert got == {
        ("foo", "0-0055", "prepare"): [20.0],  # empty info inside dpm_prepare
        ("foo", "0-0055", "suspend"): [2000.0, 6000.0],
        ("bar", "0000:00:1f.0", "suspend"): [1000.0, 10000.0],  # PREEMPT_RT flags column
        ("bar", "0000:00:1f.0", "suspend_noirq"): [500.0],
        ("bar", "0000:00:1f.0", "resume_noirq"): [300.0],
        ("foo", "0-0055", "resume"): [3000.0, 4000.0],
        ("", "platform", "resume"): [10.0],  # empty driver, "none " info
        ("foo", "0-0055", "complete"): [5.0],
    }


def test_basic_layers_errors_cycles_parents() -> None:
    t = load_traces([BASIC])
    samples = {(s.driver, s.phase, s.cycle): s for s in t.samples()}
    bar = samples[("bar", "suspend", 0)]
    assert (bar.layer, bar.error, bar.parent) == ("bus", -16, "pci0000:00")
    assert samples[("bar", "suspend", 1)].error == 0
    assert samples[("foo", "suspend", 0)].layer == "driver"
    assert samples[("foo", "prepare", 0)].layer == ""
    assert samples[("", "resume", 0)].parent == "none"
    assert samples[("foo", "suspend", 0)].start == pytest.approx(100.001)


def test_basic_aggregate_worked_by_hand() -> None:
    stats = aggregate(load_traces([BASIC]))
    order = [(s.driver, s.phase) for s in stats]
    assert order[:3] == [("bar", "suspend"), ("foo", "suspend"), ("foo", "resume")]
    bar = stats[0]
    # [1000, 10000]: median 5500, p95 = 1000 + 0.95 * 9000
    assert (bar.n, bar.min_us, bar.median_us, bar.mean_us, bar.p95_us, bar.max_us,
            bar.total_us, bar.errors, bar.cycles) == (2, 1000.0, 5500.0, 5500.0, 9550.0,
                                                       10000.0, 11000.0, 1, 2)
    foo = stats[1]
    assert (foo.median_us, foo.p95_us, foo.total_us) == (4000.0, 5800.0, 8000.0)


def test_basic_phase_wall_times_from_markers() -> None:
    ph = {p.phase: p for p in phase_stats(load_traces([BASIC]))}
    assert list(ph) == ["prepare", "suspend", "suspend_noirq", "resume_noirq", "resume",
                        "complete"]
    # suspend: 19900 and 9900 us -> mean 14900, sd = sqrt(2 * 5000^2 / 1)
    assert (ph["suspend"].cycles, ph["suspend"].mean_us) == (2, 14900.0)
    assert ph["suspend"].sd_us == pytest.approx(7071.068, abs=1e-3)
    assert (ph["resume"].mean_us, ph["resume"].sd_us) == (7500.0, pytest.approx(3535.534))
    assert ph["prepare"].sd_us == 0.0
    assert ph["suspend_noirq"].cycles == 1 and ph["suspend_noirq"].measured


def test_trace_cmd_report_with_padded_event_names() -> None:
    t = load_traces([FIXTURES / "trace_cmd_report.txt"])
    assert t.files[0].format == "ftrace"
    assert by_key(t) == {("foo", "0-0055", "suspend"): [2500.0],
                         ("foo", "0-0055", "resume"): [1200.0]}
    assert {p.phase: p.wall_us for p in t.phase_times} == {"suspend": 3000.0, "resume": 2000.0}


def test_sleepgraph_stamps_split_tests_and_kprobes_are_ignored() -> None:
    t = load_traces([FIXTURES / "sleepgraph_multi_ftrace.txt"])
    assert t.cycles == 2
    assert t.skipped_lines == 0
    assert sorted((s.cycle, s.duration_us) for s in t.samples()) == [(0, 1000.0), (1, 3000.0)]


def test_gzip_input_same_result(tmp_path) -> None:
    gz = tmp_path / "trace.txt.gz"
    with open(BASIC, "rb") as src, gzip.open(gz, "wb") as dst:
        shutil.copyfileobj(src, dst)
    assert by_key(load_traces([gz])) == by_key(load_traces([BASIC]))


def test_chunk_boundaries_do_not_lose_lines(tmp_path, monkeypatch) -> None:
    # Tiny read blocks put block ends inside every kind of line.
    monkeypatch.setattr(ftrace_mod, "CHUNK", 37)
    small = load_traces([BASIC])
    monkeypatch.undo()
    assert by_key(small) == by_key(load_traces([BASIC]))
    assert small.skipped_lines == 1


def test_file_cut_mid_line_keeps_the_rest(tmp_path) -> None:
    data = BASIC.read_bytes()
    cut = data.index(b"device_pm_callback_end: foo 0-0055, err=0\n            bash-100     "
                     b"[000] ......   101.005200")
    p = tmp_path / "cut.txt"
    p.write_bytes(data[: cut + len(b"device_pm_callback_end: foo 0-0")])  # no newline at end
    t = load_traces([p])
    assert t.errors == []
    assert t.files[0].skipped_lines == 1  # the cut end line
    assert t.incomplete == 1  # so foo resume never ended
    assert ("foo", "0-0055", "resume") not in by_key(t)
    assert by_key(t)[("bar", "0000:00:1f.0", "resume_noirq")] == [300.0]


def test_crlf_line_endings(tmp_path) -> None:
    p = tmp_path / "crlf.txt"
    p.write_bytes(BASIC.read_bytes().replace(b"\n", b"\r\n"))
    assert by_key(load_traces([p])) == by_key(load_traces([BASIC]))


def test_hibernation_verbs_map_to_their_members(tmp_path) -> None:
    p = tmp_path / "hib.txt"
    p.write_text(
        "# tracer: nop\n"
        " a-1 [000] .... 1.000000: device_pm_callback_start: foo 0-0055, parent: i2c-0, "
        "driver [freeze]\n"
        " a-1 [000] .... 1.000010: device_pm_callback_end: foo 0-0055, err=0\n"
        " a-1 [000] .... 1.100000: device_pm_callback_start: foo 0-0055, parent: i2c-0, "
        "late driver [hibernate]\n"
        " a-1 [000] .... 1.100020: device_pm_callback_end: foo 0-0055, err=0\n"
        " a-1 [000] .... 2.000000: device_pm_callback_start: foo 0-0055, parent: i2c-0, "
        "early driver [restore]\n"
        " a-1 [000] .... 2.000030: device_pm_callback_end: foo 0-0055, err=0\n"
        " a-1 [000] .... 2.100000: device_pm_callback_start: foo 0-0055, parent: i2c-0, "
        "completing type [thaw]\n"
        " a-1 [000] .... 2.100040: device_pm_callback_end: foo 0-0055, err=0\n")
    got = {s.phase: (s.duration_us, s.layer) for s in load_traces([p]).samples()}
    assert got == {"freeze": (10.0, "driver"), "poweroff_late": (20.0, "driver"),
                   "restore_early": (30.0, "driver"), "complete": (40.0, "type")}

"""sleepgraph -f captures: function_graph call graphs, delays measured from them (issue 9, 3)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from traces_helpers import FIXTURES

from dpmlens.traces import load_traces
from dpmlens.traces.analysis.critical import critical_path
from dpmlens.traces.analysis.delays import delay_sites, measured_delays
from dpmlens.traces.analysis.whatif import Changes, what_if
from dpmlens.traces.model.timeline import build_timeline
from dpmlens.traces.read import ftrace as ftrace_mod
from dpmlens.traces.read import ftrace_graph

CAPTURE = FIXTURES / "sleepgraph_fgraph_ftrace.txt"
EXPECTED = [  # func, caller, measured us, device: in start order
    ("udelay", "i8042_controller_resume", 50.0, "i8042"),
    ("msleep", "hub_port_reset", 50150.0, "1-1"),
    ("udelay", "hub_port_reset", 20.0, "1-1"),
    ("msleep", "usb_port_resume", 10100.0, "1-1"),
]


def _load(path: Path = CAPTURE):  # noqa: ANN202
    t = load_traces([path])
    runs = build_timeline(t)
    return t, runs, measured_delays(t, runs)


def _got(delays) -> list:  # noqa: ANN001
    return [(d.func, d.caller, d.measured_us, d.interval.device if d.interval else None)
            for d in delays]


def test_callbacks_and_threads_from_graph_comments() -> None:
    t, runs, _ = _load()
    assert t.skipped_lines == 0
    got = {(s.driver, s.device, s.phase): round(s.duration_us, 3) for s in t.samples()}
    assert got == {("usb", "1-1", "resume"): 60403.0, ("i8042", "i8042", "resume"): 203.0}
    (run,) = runs
    # the worker slept on CPU 1 and woke on CPU 2: one thread, named by comm-pid
    assert {iv.device: t.store.threads[iv.thread] for iv in run.intervals} == {
        "i8042": "bash-1000", "1-1": "kworker-120"}
    assert run.wall_us == pytest.approx(61000.0)


def test_delays_are_attributed_to_callbacks_and_callers() -> None:
    _, runs, delays = _load()
    assert _got(delays) == EXPECTED
    # schedule_timeout inside msleep is not a delay of its own; no request in a graph
    assert all(math.isnan(d.requested_ms) for d in delays)
    assert all(d.interval.phase == "resume" for d in delays)
    sites = delay_sites(delays, [critical_path(r) for r in runs])
    assert [(s.caller, s.func, s.calls, s.on_path) for s in sites] == [
        ("hub_port_reset", "msleep", 1, 1), ("usb_port_resume", "msleep", 1, 1),
        ("i8042_controller_resume", "udelay", 1, 1), ("hub_port_reset", "udelay", 1, 1)]


def test_report_lists_graph_delays(capsys: pytest.CaptureFixture[str]) -> None:
    from dpmlens.cli import main

    assert main(["trace", "report", str(CAPTURE)]) == 0
    out = capsys.readouterr().out
    table = out[out.index("Measured delays"):]
    assert "hub_port_reset           msleep(?)            1  50.15 ms" in table
    assert "usb_port_resume          msleep(?)            1  10.10 ms" in table
    assert "msleep(?) from hub_port_reset: 50.15 ms" in out  # under its critical-path step
    assert main(["trace", "report", str(CAPTURE), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(d["caller"], d["function"], d["requested_ms"], d["measured_us"])
            for d in data["delays"]] == [
        ("hub_port_reset", "msleep", None, 50150.0), ("usb_port_resume", "msleep", None, 10100.0),
        ("i8042_controller_resume", "udelay", None, 50.0),
        ("hub_port_reset", "udelay", None, 20.0)]


def test_whatif_shorter_delay_from_the_graph(capsys: pytest.CaptureFixture[str]) -> None:
    from dpmlens.cli import main

    _, runs, delays = _load()
    w = what_if(runs, delays, Changes(delays={"hub_port_reset": 10}))
    ((phase, _, measured, predicted, *_),) = w.per_phase()
    # msleep 50.15 -> 10 ms; the udelay of 20 us from the same caller is not made longer
    assert phase == "resume"
    assert measured == pytest.approx(61000.0)
    assert predicted == pytest.approx(61000.0 - 40150.0)
    assert main(["trace", "whatif", str(CAPTURE), "--delay", "hub_port_reset=10"]) == 0
    out = capsys.readouterr().out
    assert "resume" in out and "20.85 ms" in out


def test_chunk_boundaries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ftrace_mod, "CHUNK", 37)
    t, _, delays = _load()
    assert t.skipped_lines == 0
    assert _got(delays) == EXPECTED


def test_broken_lines_are_skipped_not_fatal(tmp_path: Path) -> None:
    lines = CAPTURE.read_text().splitlines()
    i_flush = next(i for i, x in enumerate(lines) if "i8042_flush" in x)
    i_dpm = next(i for i, x in enumerate(lines) if "pci_pm_resume" in x)
    i_ts = next(i for i, x in enumerate(lines) if "schedule_timeout() {" in x)
    lines[i_flush] = lines[i_flush][:20]  # cut inside the prologue
    lines[i_dpm] = lines[i_dpm][: lines[i_dpm].index("pci_pm_resume") + 5]  # "pci_p"
    lines[i_ts] = lines[i_ts].replace("/*", "").replace("() {", "() ")
    lines.insert(i_dpm, "  550.055000 |   0)   bash-1000    |               |  /* suspend_re")
    lines.insert(i_dpm, "\x00\x01garbage | 7) |")
    f = tmp_path / "broken_ftrace.txt"
    # and the file ends inside a line
    f.write_text("\n".join(lines) + "\n  550.070000 |   0)   bash-1000    |     ")
    t, _, delays = _load(f)
    assert t.skipped_lines == 6
    (report,) = t.files
    assert report.skip_reasons == {"malformed function_graph line": 5,
                                   "truncated function_graph comment": 1}
    assert _got(delays) == EXPECTED


def test_without_abstime_delays_are_not_attributed(tmp_path: Path) -> None:
    # the kernel's default options: no funcgraph-abstime, no funcgraph-proc
    f = tmp_path / "trace"
    f.write_text("# tracer: function_graph\n#\n"
                 " 1)               |  /* device_pm_callback_start: usb 1-1, parent: usb1, "
                 "type [resume] */\n"
                 " 1)               |  hub_port_reset() {\n"
                 " 1)   0.123 us    |    __const_udelay();\n"
                 " 1)               |    msleep() {\n"
                 " 1) * 50150.00 us |    }\n"
                 " 1) * 50200.00 us |  }\n"
                 " 1)               |  /* device_pm_callback_end: usb 1-1, err=0 */\n")
    t = load_traces([f])
    (report,) = t.files
    assert report.format == "ftrace"
    assert report.skip_reasons == {
        "PM event without a timestamp (record with funcgraph-abstime)": 2}
    assert any("2 delay call(s) (50.15 ms) in function_graph lines without timestamps" in n
               for n in report.notes)
    assert measured_delays(t, build_timeline(t)) == []


def test_trace_without_graph_lines_is_not_read_as_one() -> None:
    for name in ("ftrace_basic.txt", "trace_cmd_report.txt", "sleepgraph_multi_ftrace.txt",
                 "rpm_6.1_trace.txt"):
        assert not ftrace_graph.looks_like((FIXTURES / name).read_bytes()[:65536]), name
    assert ftrace_graph.looks_like(CAPTURE.read_bytes())


def test_lost_return_gives_the_delay_up(tmp_path: Path) -> None:
    # a buffer overrun lost usb_port_resume's msleep return: the graph returns past it
    lines = CAPTURE.read_text().splitlines()
    i = [k for k, x in enumerate(lines) if "} /* msleep */" in x][1]
    f = tmp_path / "lost_ftrace.txt"
    f.write_text("\n".join(lines[:i] + lines[i + 1 :]) + "\n")
    t, _, delays = _load(f)
    assert t.files[0].skip_reasons == {"function_graph delay call without its return": 1}
    assert _got(delays) == EXPECTED[:3]


def test_context_switch_irq_and_overrun_lines_are_not_errors(tmp_path: Path) -> None:
    lines = CAPTURE.read_text().splitlines()
    i = next(k for k, x in enumerate(lines) if "pci_pm_resume" in x)
    extra = [" ------------------------------------------",
             "   0)  kworker-120   =>   bash-1000  ",
             " ------------------------------------------",
             "  550.055001 |   0)   bash-1000    | ==========> |",
             "  550.055001 |   0)   bash-1000    |   0.400 us    |    handle_irq();",
             "  550.055001 |   0)   bash-1000    | <========== |",
             " (Overruns: 0)"]
    f = tmp_path / "extra_ftrace.txt"
    f.write_text("\n".join(lines[:i] + extra + lines[i:]) + "\n")
    t, _, delays = _load(f)
    assert t.skipped_lines == 0
    assert _got(delays) == EXPECTED


def test_retval_and_no_proc_forms(tmp_path: Path) -> None:
    # funcgraph-retval on, funcgraph-proc off: the thread is the CPU
    f = tmp_path / "trace"
    f.write_text("# tracer: function_graph\n"
                 "  1.000000 |   1)               |  /* suspend_resume: dpm_resume[16] begin */\n"
                 "  1.000100 |   1)               |  /* device_pm_callback_start: usb 1-1, "
                 "parent: usb1, type [resume] */\n"
                 "  1.000101 |   1)               |  hub_port_reset() {\n"
                 "  1.000102 |   1) + 12.000 us   |    __const_udelay(); /* = 0x0 */\n"
                 "  1.000103 |   1)               |    msleep() {\n"
                 "  1.011000 |   1) * 10897.00 us |    } /* msleep = 0x0 */\n"
                 "  1.011001 |   1) * 10900.00 us |  } /* hub_port_reset = 0x0 */\n"
                 "  1.011002 |   1)               |  /* device_pm_callback_end: usb 1-1, err=0 */\n"
                 "  1.012000 |   1)               |  /* suspend_resume: dpm_resume[16] end */\n")
    t, _, delays = _load(f)
    assert t.skipped_lines == 0
    assert _got(delays) == [("udelay", "hub_port_reset", 12.0, "1-1"),
                            ("msleep", "hub_port_reset", 10897.0, "1-1")]
    assert t.store.threads[delays[0].thread] == "CPU 1"


def test_trace_cmd_report_of_a_function_graph_recording(tmp_path: Path) -> None:
    # `trace-cmd record -p function_graph -g dpm_run_callback -e power ...; trace-cmd report`:
    # the graph as funcgraph_entry/exit events, the PM events in their usual form
    k, k2, b = "kworker/u8:3-120   [001]", "kworker/u8:3-120   [002]", "        bash-1000  [000]"
    rows = [
        (b, 550.0, "suspend_resume:       dpm_resume[16] begin"),
        (k, 550.0004, "device_pm_callback_start: usb 1-1, parent: usb1, type [resume]"),
        (k, 550.000401, "funcgraph_entry:                   |  dpm_run_callback() {"),
        (k, 550.000404, "funcgraph_entry:                   |    hub_port_reset() {"),
        (k, 550.000405, "funcgraph_entry:                   |      msleep() {"),
        (b, 550.0005, "funcgraph_entry:        3.000 us   |  pci_pm_resume();"),
        (k2, 550.050555, "funcgraph_exit:       * 50150.00 us |      }"),
        (k2, 550.05056, "funcgraph_entry:      + 20.000 us   |      __const_udelay();"),
        (k2, 550.0506, "funcgraph_exit:       * 50196.00 us |    } /* hub_port_reset */"),
        (k2, 550.060802, "funcgraph_exit:       * 60401.00 us |  }"),
        (k2, 550.060803, "device_pm_callback_end: usb 1-1, err=0"),
        (k2, 550.0609, "funcgraph_exit:       * 1.000 us |  garbage"),
        (b, 550.061, "suspend_resume:       dpm_resume[16] end"),
    ]
    f = tmp_path / "report.txt"
    f.write_text("cpus=4\n" + "".join(f"{who} {ts:12.6f}: {x}\n" for who, ts, x in rows))
    t, _, delays = _load(f)
    assert t.files[0].skip_reasons == {"malformed function_graph line": 1}
    assert _got(delays) == [("msleep", "hub_port_reset", 50150.0, "1-1"),
                            ("udelay", "hub_port_reset", 20.0, "1-1")]
    assert t.store.threads[delays[0].thread] == "kworker/u8:3-120"


def test_graph_delays_join_the_source_and_spec_minimums() -> None:
    from dpmlens.traces.source.delay_sites import join_sites, spec_minimums

    _, runs, delays = _load()
    sites = delay_sites(delays, [critical_path(r) for r in runs])
    # no value in the graph: a site joins the one call of its function in its caller
    assert join_sites(sites, FIXTURES / "fgraph_src") == 3
    by = {(s.caller, s.func): s.static for s in sites}
    assert by[("hub_port_reset", "msleep")] == {
        "path": "usb/hubfg.c", "line": 9, "function": "hub_port_reset", "call": "msleep(50)",
        "value_ms": 50.0, "spec": "TRSTRCY", "min_ms": 10.0, "padding_ms": 40.0}
    assert by[("hub_port_reset", "udelay")]["call"] == "udelay(20)"
    assert by[("i8042_controller_resume", "udelay")] is None  # not in the source fixture
    w = what_if(runs, delays, Changes(site_ms=spec_minimums(sites)))
    ((_, _, measured, predicted, *_),) = w.per_phase()
    assert measured - predicted == pytest.approx(40150.0)

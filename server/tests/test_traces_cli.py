"""`dpmlens trace report`: the JSON contract, CSV, table, errors (in-process CLI)."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from traces_helpers import FIXTURES

from dpmlens.cli import main

BASIC = str(FIXTURES / "ftrace_basic.txt")
CALLBACK_KEYS = ["driver", "device", "parent", "phase", "layer", "n", "min_us", "median_us",
                 "mean_us", "p95_us", "max_us", "total_us", "source", "unmapped_reason"]


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_json_contract(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["trace", "report", BASIC, "--format", "json", "--source",
                         str(FIXTURES / "src")], capsys)
    assert code == 0
    data = json.loads(out)
    # version 1's keys first and unchanged; version 2 added the kernel steps, 3 runtime_pm,
    # 4 device_links, 5 the critical path summarized across cycles (every cycle with --per-cycle)
    assert list(data) == ["version", "cycles", "callbacks", "phases", "skipped_lines",
                          "steps", "accounting", "name_splits", "critical_path",
                          "critical_devices", "delays", "runtime_pm", "device_links", "time_split"]
    assert (data["version"], data["cycles"], data["skipped_lines"]) == (5, 2, 1)
    assert data["runtime_pm"] is None  # no rpm_* events in this capture
    assert data["device_links"] is None  # no --links
    assert data["time_split"] is None  # no sched_switch events
    assert len(data["callbacks"]) == 8
    first = data["callbacks"][0]
    assert list(first) == CALLBACK_KEYS
    assert first == {
        "driver": "bar", "device": "0000:00:1f.0", "parent": "pci0000:00", "phase": "suspend",
        "layer": "bus", "n": 2, "min_us": 1000.0, "median_us": 5500.0, "mean_us": 5500.0,
        "p95_us": 9550.0, "max_us": 10000.0, "total_us": 11000.0,
        "source": {"path": str(FIXTURES / "src" / "bar_hw.c"), "line": 6,
                   "function": "bar_suspend", "via": "bus"},
        "unmapped_reason": None,
    }
    assert data["callbacks"][-1]["unmapped_reason"] == "'foo_pm_ops' has no .complete"
    assert data["phases"][1] == {"phase": "suspend", "cycles": 2, "mean_us": 14900.0,
                                 "sd_us": pytest.approx(7071.068)}


def test_json_without_source_and_top(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["trace", "report", BASIC, "--format", "json", "--top", "2"], capsys)
    data = json.loads(out)
    assert [c["driver"] for c in data["callbacks"]] == ["bar", "foo"]
    assert all(c["source"] is None and c["unmapped_reason"] == "no --source given"
               for c in data["callbacks"])


def test_csv(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["trace", "report", BASIC, "--format", "csv"], capsys)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 8
    assert rows[0]["driver"] == "bar" and rows[0]["total_us"] == "11000.0"


def test_table_lists_phases_files_and_problems(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["trace", "report", BASIC, "--source", str(FIXTURES / "src")], capsys)
    assert code == 0
    assert "11 samples, 2 cycle(s), 8 callbacks from 1 file(s)" in out
    assert "bar_hw.c:6 bar_suspend() [via bus]" in out
    assert "suspend             2  14.90 ms +/- 7.07 ms" in out
    assert "Mapped to source: 4 of 8 callbacks, 7 of 11 samples" in out
    assert "1 skipped (1 malformed device_pm_callback_start)" in out
    assert "1 incomplete (start with no end)" in out


def test_nothing_readable_is_one_line_exit_2(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "x.txt"
    p.write_text("hello\n")
    code, out, err = _run(["trace", "report", str(p)], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("dpmlens: error: no PM timing data read: ")
    assert "tried dmesg, ftrace, perfetto" in err


def test_partial_failure_warns_and_reports(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.txt.gz"
    bad.write_text("not gzip")
    code, out, err = _run(["trace", "report", BASIC, str(bad)], capsys)
    assert code == 0 and "11 samples" in out
    assert f"dpmlens: warning: {bad}: named .gz but not gzip data" in err


def test_missing_source_dir(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(["trace", "report", BASIC, "--source", "/nonexistent/x"], capsys)
    assert code == 2 and "--source /nonexistent/x: no such file or directory" in err


def test_as_child_process_no_traceback(tmp_path: Path) -> None:
    p = tmp_path / "garbage.pftrace"
    p.write_bytes(b"\x0a\x05abc")
    r = subprocess.run([sys.executable, "-m", "dpmlens.cli", "trace", "report", str(p)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and r.stderr.startswith("dpmlens: error:")


def test_trace_without_action_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(["trace"], capsys)
    assert code == 2 and "report" in err and "diff" in err


def test_top_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(["trace", "report", BASIC, "--top", "0"], capsys)
    assert code == 2 and "--top must be at least 1" in err


def test_diff_csv(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["trace", "diff", BASIC, "--vs", str(FIXTURES / "perfetto_basic"
                                                              ".perfetto-trace"),
                         "--format", "csv"], capsys)
    rows = list(csv.DictReader(io.StringIO(out)))
    phase = next(r for r in rows if r["kind"] == "phase" and r["phase"] == "suspend")
    # before: 2 cycles (19900, 9900 us); after: 1 cycle (19900 us)
    assert (phase["n_before"], phase["n_after"], phase["median_before_us"],
            phase["median_after_us"]) == ("2", "1", "14900.0", "19900.0")
    assert phase["verdict"].startswith("too few cycles")


def test_json_critical_path_summarized_unless_per_cycle(capsys: pytest.CaptureFixture[str]) -> None:
    """Default: per phase the path of its median cycle (by wall time, the lower of two) and
    how many runs it summarizes; --per-cycle adds every cycle's path; the per-device counts
    across cycles are the same either way."""
    code, out, _ = _run(["trace", "report", BASIC, "--format", "json"], capsys)
    assert code == 0
    short = json.loads(out)
    code, out, _ = _run(["trace", "report", BASIC, "--format", "json", "--per-cycle"], capsys)
    assert code == 0
    full = json.loads(out)
    assert "critical_path_per_cycle" not in short
    every = full["critical_path_per_cycle"]
    assert len({(p["cycle"], p["phase"]) for p in every}) == len(every)
    assert len(every) > len(short["critical_path"])
    phases = [p["phase"] for p in short["critical_path"]]
    assert len(phases) == len(set(phases)) == len({p["phase"] for p in every})
    for p in short["critical_path"]:
        runs = sorted((q for q in every if q["phase"] == p["phase"]),
                      key=lambda q: q["wall_us"])
        assert p["runs"] == len(runs)
        median = runs[(len(runs) - 1) // 2]
        assert {k: v for k, v in p.items() if k != "runs"} == median
    assert short["critical_devices"] == full["critical_devices"]
    assert full["critical_path"] == short["critical_path"]

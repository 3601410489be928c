"""Mann-Whitney U (worked by hand), percentiles, and `dpmlens trace diff`."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from dpmlens.cli import main
from dpmlens.traces import compare, load_traces, mann_whitney_u
from dpmlens.traces.analysis.aggregate import mean_sd, percentile


def test_percentile_linear_interpolation() -> None:
    assert percentile(list(range(1, 21)), 0.95) == pytest.approx(19.05)
    assert percentile([5.0], 0.95) == 5.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5
    assert math.isnan(percentile([], 0.5))


def test_mean_sd_sample_standard_deviation() -> None:
    assert mean_sd([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]) == (5.0, pytest.approx(2.138090))
    assert mean_sd([3.0]) == (3.0, 0.0)


def test_mann_whitney_separated_samples() -> None:
    # U1 = R1 - 15 = 0; mu = 12.5; sigma^2 = 25/12 * 11; z = (0 - 12.5 + 0.5) / 4.7871
    r = mann_whitney_u([1, 2, 3, 4, 5], [6, 7, 8, 9, 10])
    assert r.u == 0.0
    assert r.z == pytest.approx(-2.50672, abs=1e-5)
    assert r.p == pytest.approx(0.012186, abs=1e-6)


def test_mann_whitney_with_ties() -> None:
    # ranks: 1 | 2.5 2.5 | 5 5 (a) 5 (b) | 7.5 7.5 | 9 | 10; R1 = 16, U1 = 1
    # ties: 2 twos, 3 threes, 2 fours -> sum(t^3 - t) = 6 + 24 + 6 = 36
    # sigma^2 = 25/12 * (11 - 36/90) = 22.0833; z = (1 - 12.5 + 0.5) / 4.69929 = -2.34078
    r = mann_whitney_u([1, 2, 2, 3, 3], [3, 4, 4, 5, 6])
    assert r.u == 1.0
    assert r.z == pytest.approx(-2.34078, abs=1e-5)
    assert r.p == pytest.approx(0.019243, abs=1e-5)


def test_mann_whitney_all_equal_is_not_significant() -> None:
    assert mann_whitney_u([1, 1, 1, 1, 1], [1, 1, 1, 1, 1]).p == 1.0


def _ftrace(path: Path, durations_us: list[int], drv: str = "foo") -> Path:
    lines = ["# tracer: nop"]
    for i, d in enumerate(durations_us):
        t0 = 100.0 + i * 10
        lines.append(f" a-1 [000] .... {t0:.6f}: suspend_resume: dpm_suspend[2] begin")
        lines.append(f" a-1 [000] .... {t0 + 0.0001:.6f}: device_pm_callback_start: {drv} "
                     "0-0055, parent: i2c-0, driver [suspend]")
        lines.append(f" a-1 [000] .... {t0 + 0.0001 + d / 1e6:.6f}: device_pm_callback_end: "
                     f"{drv} 0-0055, err=0")
        lines.append(f" a-1 [000] .... {t0 + 0.5:.6f}: suspend_resume: dpm_suspend[2] end")
        lines.append(f" a-1 [000] .... {t0 + 1:.6f}: suspend_resume: dpm_resume[16] begin")
        lines.append(f" a-1 [000] .... {t0 + 1.2:.6f}: suspend_resume: dpm_resume[16] end")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_compare_significant_improvement(tmp_path: Path) -> None:
    before = load_traces([_ftrace(tmp_path / "b.txt", [900, 1000, 1100, 1200, 1300, 950])])
    after = load_traces([_ftrace(tmp_path / "a.txt", [400, 500, 450, 520, 480])])
    rows = {(r.kind, r.phase): r for r in compare(before, after)}
    cb = rows[("callback", "suspend")]
    assert (cb.n_before, cb.n_after) == (6, 5)
    assert (cb.median_before_us, cb.median_after_us, cb.change_us) == (1050.0, 480.0, -570.0)
    assert cb.change_pct == pytest.approx(-54.3)
    assert cb.verdict == "faster" and cb.p < 0.01
    # the phase wall times did not change (all 499.9 ms): not significant
    assert rows[("phase", "suspend")].verdict == "no significant change"


def test_compare_too_few_cycles(tmp_path: Path) -> None:
    before = load_traces([_ftrace(tmp_path / "b.txt", [900, 1000, 1100])])
    after = load_traces([_ftrace(tmp_path / "a.txt", [400, 500, 450, 520, 480])])
    cb = next(r for r in compare(before, after) if r.kind == "callback")
    assert cb.p is None
    assert cb.verdict == "too few cycles to test (n=3 vs 5, need >= 5 each)"


def test_cli_diff_table_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b = _ftrace(tmp_path / "b.txt", [900, 1000, 1100, 1200, 1300, 950])
    a = _ftrace(tmp_path / "a.txt", [400, 500, 450, 520, 480])
    assert main(["trace", "diff", str(b), "--vs", str(a)]) == 0
    out = capsys.readouterr().out
    assert "before: 6 cycle(s)" in out and "faster" in out and "-570 us (-54.3%)" in out
    assert main(["trace", "diff", str(b), "--vs", str(a), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["cycles_before"] == 6 and data["cycles_after"] == 5
    cb = data["callbacks"][0]
    assert (cb["driver"], cb["median_before_us"], cb["median_after_us"], cb["verdict"]) == (
        "foo", 1050.0, 480.0, "faster")

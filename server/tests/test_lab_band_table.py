"""lab/band_table.py: the what-if's error bands from A/B summaries (ab_experiment.py
--evidence-only), and the checked-in bands.yaml is what it makes of the checked-in tuning
summaries (test-fixtures/lab/bands/)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from traces_helpers import REPO

from dpmlens.traces.analysis import bands

SCRIPT = REPO / "lab" / "band_table.py"
TUNING = REPO / "test-fixtures" / "lab" / "bands"


def _summary(kernel: str, errors: dict[str, dict[str, float]], noise: float) -> dict:
    """A summary with one evidence kind per key of ERRORS: {"sched": {"resume": -3.0}}."""
    def exp(label: str, errs: dict[str, float]) -> dict:
        return {"label": label, "phases": {ph: {"error_pct": e, "error_from_A2_pct": e / 2}
                                           for ph, e in errs.items()}}

    return {"kernel": kernel, "evidence": {
        ev: {"noise": {"suspend": noise, "resume": noise},
             "experiments": [exp("pm_async 1 -> 0: --sync all", errs),
                             {"label": "fast enumeration: --spec-minimums", "skipped": "x"}]}
        for ev, errs in errors.items()}}


def test_bands_cover_the_tuning_errors_and_the_check_says_what_falls_inside(
        tmp_path: Path) -> None:
    a = tmp_path / "a" / "ab-6.12.json"
    a.parent.mkdir()
    a.write_text(json.dumps(_summary("6.12", {"sched": {"resume": -3.2, "suspend": 12.0}}, 1.5)))
    b = tmp_path / "b" / "ab-6.1.json"
    b.parent.mkdir()
    b.write_text(json.dumps(_summary("6.1", {"sched": {"resume": -9.0, "suspend": -30.0}}, 2.0)))
    out = tmp_path / "bands.yaml"
    run = subprocess.run([sys.executable, str(SCRIPT), "--tuning", str(a), "--check", str(b),
                          "--write", str(out)], capture_output=True, text=True, check=True)
    rows = {(r["change"], r["evidence"], r["phase"]): r
            for r in yaml.safe_load(out.read_text())["bands"]}
    # resume: errors -3.2 (A1) and -1.6 (A2), noise 1.5: [-4.7, -0.1] -> at least +-5
    assert rows[("sync", "sched", "resume")] | {"basis": ""} == {
        "change": "sync", "evidence": "sched", "phase": "resume", "low_pct": -5,
        "high_pct": 5, "rows": 2, "basis": ""}
    assert rows[("sync", "sched", "resume")]["basis"] == "a 6.12"
    # suspend: 12.0 and 6.0, +1.5 -> up to 13.5 -> 14
    assert (rows[("sync", "sched", "suspend")]["low_pct"],
            rows[("sync", "sched", "suspend")]["high_pct"]) == (-5, 14)
    check = run.stdout.split("| kernel |")[1]
    assert "| 6.1 | sync | sched | resume | A1 | - | - | -9.0% | -5%..+5% | False | True |" in check
    assert ("| 6.1 | sync | sched | suspend | A1 | - | - | -30.0% | -5%..+14% | False | False |"
            in check)
    bad = subprocess.run([sys.executable, str(SCRIPT), "--tuning", str(tmp_path / "none.json")],
                         capture_output=True, text=True)
    assert bad.returncode == 1 and "none.json: no such summary" in bad.stderr


@pytest.mark.skipif(not TUNING.is_dir(), reason="no tuning summaries checked in")
def test_the_checked_in_bands_are_made_from_the_checked_in_tuning_summaries(
        tmp_path: Path) -> None:
    out = tmp_path / "bands.yaml"
    subprocess.run([sys.executable, str(SCRIPT), "--tuning",
                    *map(str, sorted(TUNING.glob("*/ab-*.json"))), "--write", str(out)],
                   capture_output=True, text=True, check=True)
    made = yaml.safe_load(out.read_text())["bands"]
    table = bands.table()
    assert len(made) == len(table)
    for r in made:
        b = table[(r["change"], r["evidence"], r["phase"])]
        assert (b.low_pct, b.high_pct, b.rows, b.basis) == (r["low_pct"], r["high_pct"],
                                                             r["rows"], r["basis"])

"""Statistics that fit the sample: ten cycles a kernel (what `sleepgraph -multi 10` gives),
on the capture lab's real 6.1 and 6.12 runs (test-fixtures/lab: an A/B part of 8 cycles plus
a 2-cycle run, per kernel; the same qemu machine)."""

from __future__ import annotations

import json
import re
import shutil
from math import comb
from pathlib import Path

import numpy as np
import pytest
from fleet_helpers import REPO, dpmlens

from dpmlens.core.errors import ConfigError
from dpmlens.fleet import regress, thresholds

LAB = REPO / "test-fixtures" / "lab"
K61, K612 = "6.1.0-56-amd64", "6.12.117+deb12-amd64"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """10 + 10 cycles; the A/B parts hold only an ftrace: their release comes from the
    lab's meta.txt beside it (the 2-cycle runs say theirs in their dmesg)."""
    s = tmp_path_factory.mktemp("fleet") / "store"
    r = dpmlens("fleet", "ingest", "--store", str(s), "-j", "2", "-q",
                str(LAB / "ab/6.1/A1/part1"), str(LAB / "k61-mem"),
                str(LAB / "ab/6.12/A1/part1"), str(LAB / "k612-mem"))
    assert r.returncode == 0, r.stderr
    return s


def _report(store: Path, *args: str) -> dict:
    r = dpmlens("fleet", "report", "--store", str(store), "--format", "json", *args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_exact_test_separates_ten_against_ten() -> None:
    a, b = np.arange(10, dtype=float), np.arange(10, 20, dtype=float)
    p, method = regress.mann_whitney(a, b)
    assert method == "exact" and p == pytest.approx(2 / comb(20, 10))  # 1.08e-5
    p, method = regress.mann_whitney(np.r_[a, a], np.r_[b, b])  # ties: the approximation
    assert method == "asymptotic"


@pytest.mark.parametrize("how", [(), ("--exact",)], ids=["histograms", "raw rows"])
def test_ten_cycles_a_kernel_find_the_usb_resume_regression(store: Path, how: tuple) -> None:
    doc = _report(store, *how)
    assert doc["groups"] == [K61, K612]
    reg = doc["regressions"]
    assert reg["min_runs"] == regress.MIN_RUNS and reg["methods"]["exact"] > 0
    c = next(c for c in reg["changes"] if (c["device"], c["phase"]) == ("3-3", "resume"))
    assert (c["kind"], c["before"], c["after"], c["n_before"], c["n_after"]) == \
        ("slower", K61, K612, 10, 10)
    # every 6.12 run above every 6.1 run: the exact p of full separation
    assert c["method"] == "exact" and c["p"] == pytest.approx(2 / comb(20, 10), rel=1e-3)
    assert c["q"] < reg["alpha"] and c["ci_ms"][0] > 100 and c["change_ms"] > 400
    # the device got slower while its phase got faster: said beside it
    assert c["phase_note"].startswith("the resume phase got faster")
    # ... because it now waits for its siblings behind the xHCI (the delay kprobes' lock on
    # the A/B parts, the device names' on the 2-cycle runs), not by its own time
    note = c["wait_note"]
    assert note.startswith("slower by waiting for other callbacks (2-")
    assert "delay kprobes" in note and "device names" in note
    waits = [float(x) for x in re.findall(r"median wait ([\d.]+) -> ([\d.]+) ms", note)[0]]
    own = [float(x) for x in re.findall(r"own time ([\d.]+) -> ([\d.]+) ms", note)[0]]
    assert waits[0] < 50 and waits[1] > 400  # 0.0 -> 497.0
    assert abs(own[1] - own[0]) < 0.2 * c["change_ms"]  # 190.5 -> 158.5
    # the root hubs got faster, with no wait of theirs: no such note
    assert all(x["wait_note"] is None for x in reg["changes"] if x["device"] != "3-3")


def test_the_wait_shows_in_text_and_html(store: Path) -> None:
    text = dpmlens("fleet", "report", "--store", str(store)).stdout
    row = next(ln for ln in text.splitlines() if " 3-3 " in ln and "slower" in ln)
    assert "slower by waiting for other callbacks" in row and "phase got faster" in row
    html = dpmlens("fleet", "report", "--store", str(store), "--format", "html").stdout
    assert "slower by waiting for other callbacks" in html


def test_what_was_not_tested_is_listed_with_why(store: Path) -> None:
    doc = _report(store, "--min-runs", "11")
    reg = doc["regressions"]
    assert not any(c["device"] == "3-3" for c in reg["changes"])
    why = {(s["device"], s["phase"]): s for s in reg["not_tested"]}
    assert why[("3-3", "resume")]["reason"].startswith("too few runs")
    assert (why[("3-3", "resume")]["n_before"], why[("3-3", "resume")]["n_after"]) == (10, 10)
    one_side = [s for s in reg["not_tested"] if s["reason"] == f"only in {K612}"]
    assert one_side and all(s["n_before"] == 0 for s in one_side)
    text = dpmlens("fleet", "report", "--store", str(store), "--min-runs", "11").stdout
    assert "not tested (" in text and "too few runs" in text and f"only in {K612}" in text
    html = dpmlens("fleet", "report", "--store", str(store), "--min-runs", "11",
                   "--format", "html").stdout
    assert "id=not-tested" in html and "too few runs" in html


def test_min_runs_from_the_config_and_its_checks(store: Path, tmp_path: Path) -> None:
    cfg = tmp_path / ".dpmlens.toml"
    cfg.write_text("[fleet]\nmin_runs = 11\n")
    assert thresholds.load(str(cfg))[0]["min_runs"] == 11
    assert _report(store, "--config", str(cfg))["regressions"]["min_runs"] == 11
    for bad in ("1", "2.5", "true"):
        cfg.write_text(f"[fleet]\nmin_runs = {bad}\n")
        with pytest.raises(ConfigError, match="min_runs"):
            thresholds.load(str(cfg))
    r = dpmlens("fleet", "report", "--store", str(store), "--min-runs", "1")
    assert r.returncode == 2 and "--min-runs" in r.stderr and "Traceback" not in r.stderr


def test_a_capture_without_its_release_is_the_unknown_kernel(store: Path,
                                                             tmp_path: Path) -> None:
    s = tmp_path / "store"
    shutil.copytree(store, s)
    r = dpmlens("fleet", "ingest", "--store", str(s), "-q",
                str(REPO / "test-fixtures" / "traces" / "ftrace_basic.txt"))
    assert r.returncode == 0, r.stderr
    doc = _report(s)
    assert doc["groups"] == [K61, K612, "unknown kernel"] and "" not in doc["groups"]
    assert doc["regressions"]["pairs"] == [[K61, K612]]
    assert [g["group"] for g in doc["regressions"]["not_compared"]] == ["unknown kernel"]
    assert "--meta kernel=" in doc["regressions"]["not_compared"][0]["reason"]
    assert "unknown kernel" in {h["grp"] for h in doc["health"]}
    base = _report(s, "--baseline", "unknown kernel")["regressions"]
    assert base["pairs"] == [["unknown kernel", K61], ["unknown kernel", K612]]

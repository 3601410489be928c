"""`--ordering 6.16` against a kernel that has it (lab/ordering_experiment.py): Debian's 6.12
(the 6.8-6.15 async ordering) replayed with the 6.16 ordering, compared with trixie-backports'
7.2 measured on the same emulated machine. The 7.2 captures are checked in as xz
(test-fixtures/lab/ordering/7.2/A/partN), the 6.12 ones are the A/B experiment's defaults
(test-fixtures/lab/ab/6.12/A1, A2). Nothing here boots qemu."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from traces_helpers import REPO

from dpmlens.traces import load_traces
from dpmlens.traces.model.timeline import build_timeline

LAB = REPO / "test-fixtures" / "lab"
ORD = LAB / "ordering"
OLD = [LAB / "ab" / "6.12" / "A1", LAB / "ab" / "6.12" / "A2"]


@pytest.fixture(scope="module")
def remade(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return _remake(tmp_path_factory.mktemp("ordering"))


def _remake(tmp_path: Path) -> dict:
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}")
    subprocess.run([sys.executable, str(REPO / "lab" / "ordering_experiment.py"),
                    "--old", *map(str, OLD), "--new", str(ORD / "7.2" / "A"),
                    "--without", "hdaudioC0D0", "--out", str(tmp_path / "o")],
                   check=True, capture_output=True, text=True, env=env, cwd=REPO)
    return json.loads((tmp_path / "o.json").read_text())


def test_the_616_kernel_captures_are_read_with_its_ordering() -> None:
    parts = sorted((ORD / "7.2" / "A").glob("part*/ftrace.txt.xz"))
    assert len(parts) == 2
    for p in parts:
        assert "kernel: 7.2." in (p.parent / "meta.txt").read_text()
        runs = build_timeline(load_traces([p]))
        assert len([r for r in runs if r.phase == "resume"]) == 8
        assert all(r.async_616 for r in runs)


def test_the_table_is_what_the_captures_give(remade: dict) -> None:
    made = remade
    checked_in = json.loads((ORD / "ordering-6.12-7.2.json").read_text())
    assert made["forward"] == checked_in["forward"]
    # the codec confounder (an HDA codec probed in some boots only, ~610 ms of 6.12 suspend)
    # is left out on both sides, by boot
    assert made["boots"] == checked_in["boots"]
    assert all(made["boots"].values())


def test_616_from_612_predicts_the_72_kernel_resume_within_the_noise(remade: dict) -> None:
    rows = {(r["from"], r["phase"]): r for r in remade["forward"]}
    # resume only: suspend from A1 is 14.8% under 7.2 (A1 has 8 cycles without the codec;
    # from A2, 16 cycles, -2.9%): docs/traces.md says so
    for phase in ("resume",):
        a1, a2 = (rows[(k, phase)]["old_measured"]["median"] for k in ("A1", "A2"))
        noise = abs(a1 - a2) / ((a1 + a2) / 2)
        for run in ("A1", "A2"):
            r = rows[(run, phase)]
            assert abs(r["error"]) <= max(0.10, noise), (run, phase, r["error"], noise)
            # the ordering only ever lets async work start earlier
            assert r["predicted_616"]["median"] <= r["old_measured"]["median"] + 1e-6


@pytest.mark.parametrize("phase", ["suspend", "resume"])
def test_the_predicted_change_is_small_against_the_noise(remade: dict, phase: str) -> None:
    # What the experiment can and cannot show: the 6.16 ordering changes these phases by a
    # few percent on this machine, less than two runs of the same kernel differ.
    rows = {(r["from"], r["phase"]): r for r in remade["forward"]}
    a1, a2 = (rows[(k, phase)]["old_measured"]["median"] for k in ("A1", "A2"))
    noise = abs(a1 - a2) / ((a1 + a2) / 2)
    assert all(abs(rows[(k, phase)]["predicted_change"]) < max(noise, 0.10) for k in ("A1", "A2"))

"""The lab's A/B summaries in tests: re-made from checked-in captures with
lab/ab_experiment.py --no-run (the dpmlens CLI only), and compared with the checked-in ones."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from traces_helpers import REPO

NOCODEC = "suspend (boots without the HDA codec)"
PHASES = ("suspend", "resume", NOCODEC)
VARIANTS = ("", "with_contention", "with_contention_no_sched", "with_starved_boots")
# The --spec-minimums rows read Debian's 6.x source tree (lab/ab_experiment.py TREES); on a
# machine without it they are re-made as "skipped": compare() counts them here, and
# test_the_spec_minimums_rows_were_remade() skips, saying which tree is missing.
LINUX = Path(os.environ.get("DPMLENS_LINUX", "/work/linux"))
NOT_REMADE: list[str] = []


def tree(kernel: str) -> Path:
    return LINUX / f"linux-source-{kernel}"


def spec_minimums_were_remade() -> None:
    """For a module's last test: skips, naming the tree, when the rows could not be re-made."""
    missing = [str(tree(k)) for k in ("6.1", "6.12") if not tree(k).is_dir()]
    if missing:
        pytest.skip(f"--spec-minimums rows not re-made: no kernel tree at {', '.join(missing)} "
                    "(apt-get install linux-source-6.x and extract it there, or set DPMLENS_LINUX)")
    assert not NOT_REMADE


def without_missing_tree(got: dict, want: dict) -> dict:
    """want's variant without the experiments got skipped for a missing tree."""
    skipped = {e["label"] for e in got["experiments"] if "skipped" in e}
    return {**want, "experiments": [e for e in want["experiments"] if e["label"] not in skipped]}


def remake(work: Path, kernel: str, out: Path) -> dict:
    """The summary of the captures under work/KERNEL, written to out.json and returned.
    Minutes of the dpmlens CLI per kernel: in the marked suite (`make test-slow`)."""
    if not os.environ.get("DPMLENS_SLOW_TESTS"):
        pytest.skip("a lab summary re-make (minutes of the dpmlens CLI): set "
                    "DPMLENS_SLOW_TESTS=1, or run `make test-slow`")
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    subprocess.run([sys.executable, str(REPO / "lab" / "ab_experiment.py"), "--kernel", kernel,
                    "--no-run", "--work", str(work), "--out", str(out)],
                   check=True, capture_output=True, text=True, env=env, timeout=1200)
    return json.loads(out.with_name(out.name + ".json").read_text())


def experiment(summary: dict, prefix: str) -> dict:
    (e,) = [e for e in summary["experiments"] if e["label"].startswith(prefix)]
    return e


def compare(got: dict, want: dict) -> int:
    """Asserts the runs' medians and every prediction's median of each variant the
    checked-in summary has are what the re-made one says; returns how many predictions."""
    assert got["starved"] == want["starved"] and got["boots"] == want["boots"]
    compared = 0
    for variant in VARIANTS:
        g, w = (got, want) if not variant else (got.get(variant), want.get(variant))
        if w is None:
            assert g is None, variant
            continue
        for name in ("A1", "A2", "async0", "fastenum"):
            for ph in PHASES:
                if ph in w["runs"][name]:
                    assert g["runs"][name][ph]["median"] == pytest.approx(
                        w["runs"][name][ph]["median"], abs=0.01), (variant, name, ph)
        for e in g["experiments"]:
            if "skipped" in e:  # --spec-minimums without the kernel tree here
                x = experiment(w, e["label"])
                NOT_REMADE.append(e["label"])
                compared += sum(ph in x.get("phases", {}) for ph in PHASES)
                continue
            x = experiment(w, e["label"])
            for ph in PHASES:
                if ph in x["phases"]:
                    assert e["phases"][ph]["predicted"]["median"] == pytest.approx(
                        x["phases"][ph]["predicted"]["median"], abs=0.01), (variant, e["label"], ph)
                    compared += 1
    return compared

"""`make bench`'s script runs end to end (on a tiny tree; the real figures are in BENCHMARKS.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from cli_helpers import REPO, write_driver

SCRIPT = REPO / "bench" / "bench_check.py"


def test_bench_script_reports_the_figures(tmp_path: Path) -> None:
    for n in range(3):
        write_driver(tmp_path / "drivers" / f"d{n}" / "foo.c")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--kernel", str(tmp_path), "--jobs", "1"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines()[1:] if line.strip()]
    fields = dict(line.split(None, 1) for line in lines if not line.startswith("$"))
    assert fields["files"].startswith("3 (3 with PM code, 0 skipped)")
    assert {"MB", "wall", "CPU", "files/s", "peak", "budget"} <= set(fields)
    # The result cache: cold, warm and one-file-touched runs, findings equal in all three.
    assert "cache warm" in done.stdout and "cache touch" in done.stdout
    assert "cache same   yes" in done.stdout
    assert done.stdout.splitlines()[0].endswith(
        "dpmlens check --jobs 1 --format json --no-cache --output REPORT --quiet drivers"
    )


def test_bench_script_explains_a_missing_tree(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--kernel", str(tmp_path / "none")],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "apt-get install -y linux-source-6.12" in done.stderr

"""Files dpmlens writes (baseline, -o reports) are replaced atomically: readers see the old or
the new complete file, never a part (issue 11, class 1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dpmlens.core.atomic import write_text_atomic


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "base.json"
    target.write_text("old\n")
    os.chmod(target, 0o640)

    def full_disk(*_a, **_k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(OSError):
        write_text_atomic(target, "new\n" * 1000)
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["base.json"]
    monkeypatch.undo()
    write_text_atomic(target, "new\n")
    assert target.read_text() == "new\n" and (target.stat().st_mode & 0o777) == 0o640


def test_concurrent_baseline_writers_leave_valid_json(tmp_path: Path) -> None:
    src = tmp_path / "drv.c"
    src.write_text(
        "static int foo_suspend_noirq(struct device *dev) { enable_irq_wake(1); return 0; }\n"
        "static DEFINE_NOIRQ_DEV_PM_OPS(foo_pm, foo_suspend_noirq, NULL);\n"
    )
    base = tmp_path / "b.json"
    cmd = [sys.executable, "-m", "dpmlens.cli", "check", "-q", "--write-baseline", str(base),
           str(src)]  # fmt: skip
    procs = [subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for _ in range(6)]  # fmt: skip
    assert all(p.wait(timeout=120) == 0 for p in procs)
    document = json.loads(base.read_text())
    assert "wake-setup-in-noirq" in {f["rule"] for f in document["findings"]}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.json", "drv.c"]

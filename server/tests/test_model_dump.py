"""python -m dpmlens.model.dump: the debugging view of a file's model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from model_helpers import FIXTURES

from dpmlens.model.dump import main


def test_text_dump(capsys) -> None:
    assert main([str(FIXTURES / "full_driver.c")]) == 0
    out = capsys.readouterr().out
    assert "table foo_pm_ops (line 44, struct initializer)" in out
    assert "    .suspend_noirq = foo_suspend_noirq" in out
    assert "name 'full_driver'" in out and "registered by module_platform_driver" in out
    assert "callback foo_suspend_noirq: suspend_noirq, freeze_noirq, poweroff_noirq" in out


def test_json_dump(capsys) -> None:
    assert main(["--json", str(FIXTURES / "header_name" / "drv.c")]) == 0
    (summary,) = json.loads(capsys.readouterr().out)
    assert summary["drivers"][0]["name"] == "hdr-named"
    assert summary["pm_tables"][0]["macro"] == "DEFINE_SIMPLE_DEV_PM_OPS"


def test_unreadable_file_is_one_line_error(tmp_path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "dpmlens.model.dump", str(tmp_path / "missing.c")],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],  # server/: dpmlens importable without install
    )
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().endswith("missing.c: cannot read: No such file or directory")
    assert len(r.stderr.strip().splitlines()) == 1

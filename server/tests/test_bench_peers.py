"""bench/bench_check.py's Coccinelle peers do real work: the one-rule `.suspend_noirq` check
finds a table that sets it and not one that does not (skipped without `spatch`)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_check.py"


def _bench():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("bench_check", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_check"] = module
    spec.loader.exec_module(module)
    return module


def test_three_peers_named() -> None:
    names = [p.name for p in _bench().peers(2)]
    assert len(names) == 3 and "pm_runtime.cocci (make coccicheck)" in names


def test_the_noirq_rule_matches_a_table_that_sets_it(tmp_path: Path) -> None:
    spatch = shutil.which("spatch")
    if spatch is None:
        pytest.skip("spatch is not installed (apt-get install coccinelle)")
    rule = tmp_path / "noirq.cocci"
    rule.write_text(_bench().NOIRQ_RULE)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "yes.c").write_text(
        "static int a_s(struct device *d) { return 0; }\n"
        "static const struct dev_pm_ops a_pm = {\n"
        "\t.suspend = a_s,\n\t.suspend_noirq = a_s,\n\t.resume = a_s,\n};\n"
    )
    (tmp_path / "src" / "no.c").write_text(
        "static int b_s(struct device *d) { return 0; }\n"
        "static const struct dev_pm_ops b_pm = {\n\t.suspend = b_s,\n};\n"
    )
    out = subprocess.run(
        [spatch, "--very-quiet", "--cocci-file", str(rule), "--dir", str(tmp_path / "src")],
        capture_output=True, text=True, timeout=120, check=False,
    ).stdout  # fmt: skip
    assert "yes.c" in out and "no.c" not in out

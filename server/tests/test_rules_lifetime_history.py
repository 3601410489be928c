"""The probe/remove balance rules against real fixes (issue 30).

test-fixtures/rules/history/fixes-*.tsv list runtime PM and wakeup lifetime fixes read in two
Debian kernel trees (docs/precision.md says how each set was made). Each row names the old
tree's file and the line of the call whose undo was missing; the rules must flag it there, on
at least 80% of the rows. The old trees are real kernel sources at fixed paths: the test skips,
saying so, where they are absent. The small real excerpts in test-fixtures/rules/history/*.c
run everywhere (tests/test_rules_fixtures.py).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from kernel_trees import K61, K612

from dpmlens.config.settings import Config
from dpmlens.engine.analyze import analyze_source

HISTORY = Path(__file__).resolve().parents[2] / "test-fixtures" / "rules" / "history"
TREES = {
    "fixes-6.1-6.12.tsv": Path(os.environ.get("DPMLENS_KERNEL_61", str(K61))),
    "fixes-6.12-7.2.tsv": Path(
        os.environ.get("DPMLENS_KERNEL_612", str(K612))
    ),
}
RULES = frozenset(
    {
        "runtime-pm-enable-not-undone",
        "runtime-pm-autosuspend-not-undone",
        "runtime-pm-usage-unbalanced-in-probe",
        "wakeup-source-not-undone",
        "wake-irq-not-cleared",
    }
)


def _rows(name: str) -> list[tuple[str, int, str]]:
    rows = []
    for line in (HISTORY / name).read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            path, number, rule = line.split("\t")[:3]
            rows.append((path, int(number), rule))
    return rows


@pytest.mark.parametrize("name", sorted(TREES))
def test_set_is_well_formed(name: str) -> None:
    rows = _rows(name)
    assert len(rows) >= 20
    assert {rule for _p, _n, rule in rows} <= RULES
    assert len(set(rows)) == len(rows)


@pytest.mark.parametrize("name", sorted(TREES))
def test_old_tree_flagged_at_the_leaking_call(name: str) -> None:
    tree = TREES[name]
    if not (tree / "drivers").is_dir():
        pytest.skip(f"no kernel tree at {tree} (apt-get install linux-source-6.1/6.12)")
    rows = _rows(name)
    found: dict[str, set[tuple[int, str]]] = {}
    for path in sorted({p for p, _n, _r in rows}):
        file = tree / path
        findings = analyze_source(str(file), file.read_bytes(), Config())
        found[path] = {(f.line, f.rule) for f in findings if f.rule in RULES}
    missed = [r for r in rows if (r[1], r[2]) not in found[r[0]]]
    recall = 1 - len(missed) / len(rows)
    assert recall >= 0.8, f"recall {recall:.0%}; missed: {missed}"

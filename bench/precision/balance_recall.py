"""Recall of the balance rules on the history sets (issue 30): how many of the fixes in
test-fixtures/rules/history/fixes-*.tsv the old tree is flagged for, at the leaking call.

usage (from server/, the trees as tests/kernel_trees.py finds them):
    ../.venv/bin/python ../bench/precision/balance_recall.py
tests/test_rules_lifetime_history.py holds the floor (80%); this prints the counts and misses.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "server" / "tests"))

import test_rules_lifetime_history as history
from dpmlens.config.settings import Config
from dpmlens.engine.analyze import analyze_source


def main() -> None:
    for name in sorted(history.TREES):
        tree = history.TREES[name]
        rows = history._rows(name)
        found: dict[str, set[tuple[int, str]]] = {}
        for path in sorted({p for p, _n, _r in rows}):
            f = tree / path
            found[path] = {
                (x.line, x.rule)
                for x in analyze_source(str(f), f.read_bytes(), Config())
                if x.rule in history.RULES
            }
        missed = [r for r in rows if (r[1], r[2]) not in found[r[0]]]
        print(f"{name}: {len(rows) - len(missed)}/{len(rows)}")
        for path, line, rule in missed:
            print(f"  missed {path}:{line} {rule}")


if __name__ == "__main__":
    main()

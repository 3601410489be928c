"""Seeded sample of the probe/remove balance warnings for blind judging (issue 30).

Usage (from the repository top, the trees under /work/linux):
  cd /work/linux/linux-source-6.12 && dpmlens check --no-cache --no-config -q -j 2 \
      --fail-level none -f json -o /tmp/mine-6.12.json --rule RULES drivers
  python docs/precision/balance/sample.py 6.12 /tmp/mine-6.12.json [SEED] > docs/precision/balance/sample-6.12.jsonl
RULES: the five rule ids below, comma-separated. Every warning when a tree has fewer than 40.
"""

from __future__ import annotations

import json
import random
import sys

RULES = (
    "runtime-pm-enable-not-undone",
    "runtime-pm-autosuspend-not-undone",
    "runtime-pm-usage-unbalanced-in-probe",
    "wakeup-source-not-undone",
    "wake-irq-not-cleared",
)
SEED = 20261129
SIZE = 40


def main() -> None:
    tree, path = sys.argv[1], sys.argv[2]
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else SEED  # a fresh round: a new seed
    findings = [
        f
        for f in json.load(open(path, encoding="utf-8"))["findings"]
        if f["rule"] in RULES and f["severity"] == "warning"
    ]
    findings.sort(key=lambda f: (f["path"], f["line"], f["rule"]))
    chosen = findings if len(findings) < SIZE else random.Random(seed).sample(findings, SIZE)
    chosen.sort(key=lambda f: (f["path"], f["line"], f["rule"]))
    for i, f in enumerate(chosen, 1):
        item = {
            "id": f"b{tree}-{i:02d}",
            "tree": tree,
            "rule": f["rule"],
            "severity": f["severity"],
            "where": f"/work/linux/linux-source-{tree}/{f['path']}:{f['line']}:{f['column']}",
            "function": f["function"],
            "message": f["message"],
            "chain": [f"{c['path']}:{c['line']} {c['function']}: {c['note']}" for c in f["chain"]],
        }
        print(json.dumps(item))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Per boot: the what-if of `trace advise`'s pm_async change (`--async all` from a pm_async=0
boot) against the pm_async=1 boots' median, with the evidence the boot has and with less of it
(--no-sched, and --no-delays too): the errors behind the pm_async bands of
server/dpmlens/traces/analysis/advise.py (BANDS; docs/capture.md "Bands").

    lab/advise_errors.py [--ab test-fixtures/lab/ab-sched] [--dpmlens .venv/bin/dpmlens]

Reads AB/ab-KERNEL.json (boots, the pm_async=1 medians) and AB/KERNEL/async0/partN; boots where
the HDA codec probed are left out (another device set). Prints markdown.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

EVIDENCE = {"kprobes+sched": [], "kprobes": ["--no-sched"], "neither": ["--no-sched", "--no-delays"]}


def predicted_medians(dpmlens: str, boot: Path, opts: list[str]) -> dict[str, float]:
    """Median over cycles of each phase's predicted wall time (us), `--async all`."""
    r = subprocess.run([dpmlens, "trace", "whatif", str(boot), "--async", "all", "--format",
                        "json", *opts], capture_output=True, text=True, check=True)
    per: dict[str, list[float]] = {}
    for run in json.loads(r.stdout)["runs"]:
        per.setdefault(run["phase"], []).append(run["predicted_us"])
    return {ph: statistics.median(v) for ph, v in per.items()}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ab", type=Path, default=Path("test-fixtures/lab/ab-sched"))
    p.add_argument("--dpmlens", default=shutil.which("dpmlens") or ".venv/bin/dpmlens")
    args = p.parse_args()
    print("| kernel | boot | evidence | suspend error % | resume error % |")
    print("|---|---|---|---|---|")
    for summary in sorted(args.ab.glob("ab-*.json")):
        kernel = summary.stem[3:]
        s = json.loads(summary.read_text())
        want = {ph: s["runs"]["A1"][ph]["median"] * 1000 for ph in ("suspend", "resume")}
        for boot, info in sorted(s["boots"]["async0"].items()):
            if info.get("hda_codec"):
                continue
            for ev, opts in EVIDENCE.items():
                got = predicted_medians(args.dpmlens, args.ab / kernel / "async0" / boot, opts)
                errs = [(got[ph] - want[ph]) / want[ph] * 100 for ph in ("suspend", "resume")]
                print(f"| {kernel} | {boot} | {ev} | {errs[0]:+.1f} | {errs[1]:+.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

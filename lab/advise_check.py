#!/usr/bin/env python3
"""`trace advise`'s top knob, applied: per A1 boot of an A/B run and per evidence kind, the
advice ranked first (its predicted resume after the change and its band) against the boots
made with that knob (fastenum: every USB port's quirks = 2, what the advice's `echo 2 >
.../quirks` lines write).

    lab/advise_check.py --work build/lab/quiet5 --kernel 6.12 [--dpmlens .venv/bin/dpmlens]

Reads WORK/KERNEL/A1/partN and WORK/KERNEL/fastenum/partN (lab/ab_experiment.py --configs
A1,...,fastenum). The measured value is the mean of the fastenum boots' resume medians.
Prints markdown; `--json FILE` writes the rows.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

EVIDENCE = {"kprobes+sched": [], "sched": ["--no-delays"], "kprobes": ["--no-sched"],
            "neither": ["--no-sched", "--no-delays"]}


def run_json(dpmlens: str, args: list[str]) -> dict:
    r = subprocess.run([dpmlens, "trace", *args, "--format", "json"], capture_output=True,
                       text=True, check=True)
    return json.loads(r.stdout)


def resume_median(dpmlens: str, boot: Path) -> float:
    runs = run_json(dpmlens, ["whatif", str(boot)])["runs"]
    return statistics.median(r["measured_us"] for r in runs if r["phase"] == "resume")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--work", type=Path, required=True)
    p.add_argument("--kernel", required=True)
    p.add_argument("--dpmlens", default=shutil.which("dpmlens") or ".venv/bin/dpmlens")
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    a1 = sorted((args.work / args.kernel / "A1").glob("part*"))
    fast = sorted((args.work / args.kernel / "fastenum").glob("part*"))
    if not a1 or not fast:
        print(f"advise_check: {args.work / args.kernel}: needs A1/partN and fastenum/partN",
              file=sys.stderr)
        return 1
    after = [resume_median(args.dpmlens, b) for b in fast]
    measured = statistics.mean(after)
    rows = []
    for boot in a1:
        for kind, opts in EVIDENCE.items():
            adv = run_json(args.dpmlens, ["advise", str(boot), *opts])
            top = adv["advice"][0] if adv["advice"] else None
            row: dict = {"boot": boot.name, "evidence": kind,
                         "top": top["kind"] if top else None}
            ph = next((x for x in (top or {}).get("phases", []) if x["phase"] == "resume"),
                      None)
            if top is not None and top["kind"] == "usb-fast" and ph is not None:
                # (another top advice is not what the fastenum boots measured)
                minus, plus = ph["band_pct"]
                pred = ph["predicted_after_us"]
                lo, hi = pred * (1 - minus / 100), pred * (1 + plus / 100)
                row.update(before=ph["predicted_before_us"], predicted=pred, low=lo, high=hi,
                           measured=measured, error_pct=(pred - measured) / measured * 100,
                           inside=lo <= measured <= hi)
            rows.append(row)
    print(f"fastenum boots' resume medians: {', '.join(f'{x / 1000:.1f}' for x in after)} ms "
          f"(mean {measured / 1000:.1f})\n")
    print("| A1 boot | evidence | top advice | resume before | predicted after (band) | "
          "measured after | error | inside |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "predicted" not in r:
            print(f"| {r['boot']} | {r['evidence']} | {r['top'] or '-'} (not the knob measured) "
                  "| | | | | |")
            continue
        print(f"| {r['boot']} | {r['evidence']} | {r['top']} | {r['before'] / 1000:.1f} | "
              f"{r['predicted'] / 1000:.1f} ({r['low'] / 1000:.0f}..{r['high'] / 1000:.0f}) | "
              f"{r['measured'] / 1000:.1f} | {r['error_pct']:+.1f}% | {r['inside']} |")
    if args.json:
        args.json.write_text(json.dumps({"kernel": args.kernel, "fastenum_resume_us": after,
                                         "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

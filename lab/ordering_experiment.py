#!/usr/bin/env python3
"""`--ordering 6.16` against a real kernel with that ordering.

Debian's 6.12 runs async suspend/resume work in the 6.8-6.15 order; trixie-backports' 7.2 in
the 6.16 one (async leaves queued before the synchronous loop, parents when their children
are done). The what-if replays the 6.12 captures with `--ordering 6.16` and is compared with
the 7.2 kernel measured on the same emulated machine; the reverse (`--ordering 6.8` from
7.2) is compared with 6.12. The two kernels differ in more than the ordering, so the report
also compares the callbacks themselves: how much of each phase's difference the per-device
durations explain on their own.

    lab/ordering_experiment.py --old test-fixtures/lab/ab/6.12/A1 test-fixtures/lab/ab/6.12/A2 \
        --new build/lab/k72/A --out test-fixtures/lab/ordering/ordering-6.12-7.2

Each capture folder holds partN/ftrace.txt[.xz]. Writes OUT.json and OUT.md.
"""
from __future__ import annotations

import argparse
import gzip
import json
import lzma
import sys
from pathlib import Path

# the A/B experiment's runners and statistics (lab/ is the script's own folder on sys.path)
from ab_experiment import TOP, median_ci, per_cycle, whatif_files, write

# the phases compared (prepare/complete: 1-3 ms, not what the ordering changes)
PHASES = ["suspend", "suspend_late", "suspend_noirq", "resume_noirq", "resume_early", "resume"]


def captures(folder: Path, without: str | None = None) -> list[str]:
    """The boots' ftrace files; with `without`, only boots where that device ran no callback."""
    out = sorted(str(p) for ext in ("", ".xz", ".gz") for p in folder.glob(f"part*/ftrace.txt{ext}"))
    if without:
        out = [p for p in out if f" {without}, parent: " not in _text(p)]
    return out


def _text(path: str) -> str:
    opener = lzma.open if path.endswith(".xz") else gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", errors="replace") as f:  # type: ignore[operator]
        return f.read()


def rel(path: Path) -> str:
    """The folder as the repository names it (the JSON does not depend on the checkout)."""
    try:
        return str(path.resolve().relative_to(TOP))
    except ValueError:
        return str(path)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--old", type=Path, nargs="+", required=True,
                   help="capture folders of the older-ordering kernel (repeats: A1 A2)")
    p.add_argument("--new", type=Path, required=True, help="capture folder of the 6.16+ kernel")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--without", metavar="DEVICE",
                   help="use only the boots where DEVICE ran no callback (on both kernels)")
    args = p.parse_args()
    new = captures(args.new, args.without)
    if not new or not all(captures(f, args.without) for f in args.old):
        print("ordering_experiment: a capture folder has no partN/ftrace.txt", file=sys.stderr)
        return 1
    measured_new = per_cycle(whatif_files(new, []), "measured_us")
    rows = []
    for folder in args.old:
        old = captures(folder, args.without)
        fwd = whatif_files(old, ["--ordering", "6.16"])
        meas_old, pred = per_cycle(fwd, "measured_us"), per_cycle(fwd, "predicted_us")
        for ph in PHASES:
            m_old, m_new, pr = (median_ci(meas_old[ph]), median_ci(measured_new[ph]),
                                median_ci(pred[ph]))
            err = ((pr["median"] - m_new["median"]) / m_new["median"]
                   if pr["median"] and m_new["median"] else None)
            rows.append({"from": folder.name, "phase": ph, "old_measured": m_old,
                         "predicted_616": pr, "new_measured": m_new, "error": err,
                         "predicted_change": (pr["median"] - m_old["median"]) / m_old["median"]
                         if pr["median"] and m_old["median"] else None,
                         "measured_change": (m_new["median"] - m_old["median"]) / m_old["median"]
                         if m_new["median"] and m_old["median"] else None})
    result = {"old": [rel(f) for f in args.old], "new": rel(args.new), "without": args.without,
              "boots": {rel(f): [Path(x).parent.name for x in captures(f, args.without)]
                        for f in [*args.old, args.new]},
              "forward": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write(Path(f"{args.out}.json"), json.dumps(result, indent=1) + "\n")
    md = [("| from | phase | old kernel measured | predicted with --ordering 6.16 | predicted change "
           "| 6.16+ kernel measured | measured change | error |"), "|---|---|---|---|---|---|---|---|"]

    def ms(c: dict) -> str:
        return "-" if c["median"] is None else f"{c['median']:.1f} [{c['lo']:.1f}, {c['hi']:.1f}]"

    def pct(x: float | None) -> str:
        return "-" if x is None else f"{x * 100:+.1f}%"

    for r in rows:
        md.append(f"| {r['from']} | {r['phase']} | {ms(r['old_measured'])} | "
                  f"{ms(r['predicted_616'])} | {pct(r['predicted_change'])} | "
                  f"{ms(r['new_measured'])} | {pct(r['measured_change'])} | {pct(r['error'])} |")
    write(Path(f"{args.out}.md"), "\n".join(md) + "\n")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())

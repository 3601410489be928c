#!/usr/bin/env python3
"""The what-if's error bands per change kind x evidence, from the A/B summaries that
lab/ab_experiment.py --evidence writes (OUT.json "evidence"), and their check on other ones.

    lab/band_table.py --tuning S1.json S2.json ... [--write server/dpmlens/traces/analysis/bands.yaml]
    lab/band_table.py --tuning ... --check F1.json F2.json ...   (fresh runs: inside the band?)

A cell (change kind: sync, async, async-unseen (`--async all` from a pm_async=0 boot), delay; evidence: kprobes+sched, sched, kprobes, neither;
phase: suspend, resume) collects every prediction's error (predicted - measured B) / B in
percent, from A1 and from A2. Its band is [min error - noise, max error + noise], noise the
largest A1/A2 difference of that phase in those summaries, rounded outward to a whole
percent and never narrower than the lab's bound (+-5%) around 0. The suspend row is the one
over the boots without the HDA codec when a summary has it (the codec's ~0.6 s comes and goes
with a probe timeout at boot). Writes markdown on stdout; --write the YAML atomically.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

NOCODEC = "suspend (boots without the HDA codec)"
KINDS = {"pm_async 1 -> 0: --sync all": "sync", "pm_async 0 -> 1: --async (A2's": "async",
         "pm_async 0 -> 1: --async all": "async-unseen",
         "fast enumeration: --delay hub_port_reset:msleep(50)=12": "delay"}
EVIDENCE = ("kprobes+sched", "sched", "kprobes", "neither")
MIN_HALF_WIDTH = 5.0


def kind_of(label: str) -> str | None:
    return next((k for prefix, k in KINDS.items() if label.startswith(prefix)), None)


def errors(path: Path) -> list[dict]:
    """Every prediction's error in one summary: (change, evidence, phase, from, error %,
    noise %, where)."""
    s = json.loads(path.read_text())
    out = []
    for ev, v in (s.get("evidence") or {}).items():
        for e in v["experiments"]:
            kind = kind_of(e["label"])
            if kind is None or "skipped" in e:
                continue
            for ph in ("suspend", "resume"):
                row = NOCODEC if ph == "suspend" and NOCODEC in e["phases"] else ph
                x = e["phases"].get(row) or {}
                noise = v["noise"].get(row) or 0.0
                for frm, key, pred in (("A1" if e["label"].startswith("pm_async 1")
                                        or kind == "delay" else "async0", "error_pct",
                                        "predicted"),
                                       ("A2", "error_from_A2_pct", "predicted_from_A2")):
                    if x.get(key) is not None:
                        out.append({"change": kind, "evidence": ev, "phase": ph, "from": frm,
                                    "error": x[key], "noise": noise, "kernel": s["kernel"],
                                    "summary": str(path),
                                    "predicted": (x.get(pred) or {}).get("median"),
                                    "measured": (x.get("measured") or {}).get("median")})
    return out


def bands(rows: list[dict]) -> dict[tuple[str, str, str], dict]:
    cells: dict[tuple[str, str, str], list[dict]] = {}
    for r in rows:
        cells.setdefault((r["change"], r["evidence"], r["phase"]), []).append(r)
    out = {}
    for key, rs in sorted(cells.items()):
        errs = [r["error"] for r in rs]
        noise = max(r["noise"] for r in rs)
        lo = math.floor(min(-MIN_HALF_WIDTH, min(errs) - noise))
        hi = math.ceil(max(MIN_HALF_WIDTH, max(errs) + noise))
        basis = sorted({f"{Path(r['summary']).parent.name} {r['kernel']}" for r in rs})
        out[key] = {"low_pct": float(lo), "high_pct": float(hi), "rows": len(rs),
                    "errors": errs, "noise": noise, "basis": ", ".join(basis)}
    return out


def yaml_text(cells: dict[tuple[str, str, str], dict]) -> str:
    lines = ["# Error bands of `dpmlens trace whatif` (traces/analysis/bands.py): per change kind,",
             "# evidence kind and phase, the range of (predicted - measured) / measured in percent",
             "# the capture lab measured, widened by the A/B noise. Made by lab/band_table.py from",
             "# the A/B summaries named in `basis` (docs/traces.md \"How sure a prediction is\").",
             "version: 1", "bands:"]
    for (change, ev, ph), c in cells.items():
        head = (f"  - {{change: {change}, evidence: \"{ev}\", phase: {ph}, "
                f"low_pct: {c['low_pct']:g}, high_pct: {c['high_pct']:g}, rows: {c['rows']},")
        lines += [head, f"     basis: \"{c['basis']}\"}}"]
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tuning", type=Path, nargs="+", required=True)
    p.add_argument("--check", type=Path, nargs="*", default=[])
    p.add_argument("--write", type=Path)
    args = p.parse_args()
    for f in [*args.tuning, *args.check]:
        if not f.is_file():
            print(f"band_table: {f}: no such summary", file=sys.stderr)
            return 1
    rows = [r for f in args.tuning for r in errors(f)]
    cells = bands(rows)
    print("| change | evidence | phase | band | predictions | errors (%) |")
    print("|---|---|---|---|---|---|")
    for (change, ev, ph), c in cells.items():
        errs = ", ".join(f"{e:+.1f}" for e in c["errors"])
        print(f"| {change} | {ev} | {ph} | {c['low_pct']:+.0f}%..{c['high_pct']:+.0f}% | "
              f"{c['rows']} | {errs} |")
    if args.check:
        print("\n| kernel | change | evidence | phase | from | predicted ms | measured ms | "
              "error | band | inside | within max(10%, noise) |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for r in (r for f in args.check for r in errors(f)):
            c = cells.get((r["change"], r["evidence"], r["phase"]))
            band = "-" if c is None else f"{c['low_pct']:+.0f}%..{c['high_pct']:+.0f}%"
            inside = "-" if c is None else c["low_pct"] <= r["error"] <= c["high_pct"]
            ms = [f"{v:.1f}" if v is not None else "-" for v in (r["predicted"], r["measured"])]
            print(f"| {r['kernel']} | {r['change']} | {r['evidence']} | {r['phase']} | "
                  f"{r['from']} | {ms[0]} | {ms[1]} | {r['error']:+.1f}% | {band} | {inside} | "
                  f"{abs(r['error']) <= max(10.0, r['noise'])} |")
    if args.write:
        tmp = args.write.with_name(args.write.name + ".tmp")
        tmp.write_text(yaml_text(cells))
        os.replace(tmp, args.write)
    return 0


if __name__ == "__main__":
    sys.exit(main())

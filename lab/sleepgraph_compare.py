#!/usr/bin/env python3
"""sleepgraph's device-phase durations against dpmlens's, test folder by test folder.

sleepgraph (run in the guest by `run_lab.py --sleepgraph`) writes, per test, an HTML
timeline whose every device box is titled "NAME {driver} (async) (12.345 ms) PHASE"; this
reads those titles and, for the same test's *_ftrace.txt, dpmlens's callbacks (the Python API,
as `dpmlens trace report` reads them). A sleepgraph duration agrees when dpmlens has the same
device in the same phase within max(1%, 5 us) (sleepgraph prints microseconds).
Kernel functions sleepgraph's -dev kprobes time inside phases (class "thread kth"/"sec":
ksys_sync, freeze_processes, ...) have no dpmlens callback: counted apart and compared with
dpmlens's kernel steps of the same name and phase; sleepgraph's "kernel thread" rows with
dpmlens's thread rows of the same thread (same phase, same tolerance).

    .venv/bin/python lab/sleepgraph_compare.py build/lab/k61-sleepgraph [--json OUT]
"""
from __future__ import annotations

import argparse
import gzip
import html
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

from dpmlens.traces import load_traces
from dpmlens.traces.analysis.steps import step_rows, thread_rows

BOX = re.compile(r'<div id="[a-z0-9]*" title="(?P<title>[^"]*)" class="thread(?P<cls>[^"]*)"')
TITLE = re.compile(r"^(?P<name>.*?)(?: \{(?P<drv>[^}]*)\})?(?: \((?:a?sync)\))? "
                   r"\((?P<ms>[0-9.]+) ms\) (?P<phase>\S+)$")
PHASES = {"suspend_prepare": "prepare", "suspend": "suspend", "suspend_late": "suspend_late",
          "suspend_noirq": "suspend_noirq", "resume_noirq": "resume_noirq",
          "resume_early": "resume_early", "resume": "resume", "resume_complete": "complete"}


# sleepgraph's row-group captions (sleepgraph.py createHTML -> Data.addHorizontalDivider): a
# "sec" box from the test's start to its end, labelled, with no trace event behind it. They
# are layout, not a measurement: counted apart (`dividers`), not in the denominator.
DIVIDERS = ("asynchronous kernel threads", "device pm callbacks", "user processes",
            "user processes & device pm callbacks")


def _text(path: Path) -> str:
    if path.suffix == ".gz":
        with gzip.open(path, "rt", errors="replace") as f:
            return f.read()
    return path.read_text(errors="replace")


def sleepgraph_boxes(page: Path) -> list[dict]:
    out = []
    for m in BOX.finditer(_text(page)):
        t = TITLE.match(html.unescape(m.group("title")))
        if not t or t.group("phase") not in PHASES:
            continue
        name = t.group("name")
        alt = re.match(r"^.* \[(.*)\]$", name)  # devprops' "PNP0303 [00:00]": the device is 00:00
        if m.group("cls").strip() == "sec" and name in DIVIDERS:
            out.append({"device": name, "divider": True})
            continue
        out.append({"device": alt.group(1) if alt else name, "driver": t.group("drv") or "",
                    "phase": PHASES[t.group("phase")], "us": float(t.group("ms")) * 1000,
                    # sleepgraph's -dev kprobes on kernel functions (ksys_sync, freeze_processes,
                    # async_synchronize_full, ...): boxes of their own, no driver
                    "kernel_function": m.group("cls").strip() in ("kth", "sec"),
                    "function_like": not t.group("drv")
                    and re.fullmatch(r"[a-z][a-z0-9]*_[a-z0-9_]+", name) is not None})
    return out


def _thread_rows(traces) -> dict[str, tuple[str, float]]:
    """sleepgraph's "kernel thread" rows (sleepgraph.py addDeviceFunctionCall) as dpmlens
    models them (traces.analysis.steps.thread_rows): thread -> (phase, duration us)."""
    return {r.thread: (r.phase, r.duration_us) for r in thread_rows(traces)}


def compare(folder: Path) -> dict:
    tests = sorted({p.parent for p in folder.rglob("*_ftrace.txt*")})
    total = agree = kfunc = kagree = dividers = extra_rows = 0
    misses: list[dict] = []
    for test in tests:
        (page,) = list(test.glob("*.html*"))
        (ftrace,) = list(test.glob("*_ftrace.txt*"))
        ours: dict[tuple[str, str], list[float]] = defaultdict(list)
        traces = load_traces([ftrace])
        for s in traces.samples():
            ours[(s.phase, s.device)].append(s.duration_us)
        # dpmlens's kernel steps (suspend_resume pairs and sleepgraph's -dev kernel-function
        # kprobes) with the device phase they ran in, for sleepgraph's kernel-function boxes
        steps: dict[tuple[str, str], list[float]] = defaultdict(list)
        for row in step_rows(traces):
            steps[(row.phase, row.step.name)].append(row.duration_us)
        threads = _thread_rows(traces)  # what is left once matched: rows sleepgraph lacks
        for box in sleepgraph_boxes(page):
            if box.get("divider"):
                dividers += 1
                continue
            total += 1
            if box["device"].endswith(" kernel_thread"):
                box["kernel_function"] = True
                kfunc += 1
                row = threads.pop(box["device"][:-len(" kernel_thread")], None)
                got = row[1] if row is not None else None
                if row is not None and row[0] == box["phase"] \
                        and abs(row[1] - box["us"]) <= max(0.01 * box["us"], 5.0):
                    agree += 1
                    kagree += 1
                    continue
                misses.append({"test": test.name, **box, "dpmlens_us": got,
                               "why": "kernel thread: no kprobe calls of it" if row is None
                               else "kernel thread: phase differs" if row[0] != box["phase"]
                               else "kernel thread: span differs"})
                continue
            kernel = box["kernel_function"] or (
                box["function_like"] and not ours.get((box["phase"], box["device"])))
            if kernel:
                box["kernel_function"] = True
                kfunc += 1
                cands = steps.get((box["phase"], box["device"]), [])
                best = min(cands, key=lambda d: abs(d - box["us"]), default=None)
                if best is not None and abs(best - box["us"]) <= max(0.01 * box["us"], 5.0):
                    cands.remove(best)
                    agree += 1
                    kagree += 1
                    continue
                misses.append({"test": test.name, **box, "dpmlens_us": best,
                               "why": "kernel function: no such step" if best is None
                               else "kernel function: duration differs"})
                continue
            cands = ours.get((box["phase"], box["device"]), [])
            best = min(cands, key=lambda d: abs(d - box["us"]), default=None)
            if best is not None and abs(best - box["us"]) <= max(0.01 * box["us"], 5.0):
                cands.remove(best)
                agree += 1
            else:
                misses.append({"test": test.name, **box, "dpmlens_us": best,
                               "why": "no such callback" if best is None else "duration differs"})
        extra_rows += len(threads)
    return {"folder": str(folder), "tests": len(tests), "sleepgraph_durations": total,
            "dpmlens_thread_rows_not_in_sleepgraph": extra_rows,
            "agree": agree, "agree_pct": 100.0 * agree / total if total else None,
            "dividers": dividers,
            "kernel_functions": kfunc, "kernel_functions_agree": kagree,
            "agree_pct_callbacks_only": 100.0 * (agree - kagree) / (total - kfunc) if total > kfunc else None,
            "misses": misses}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("folder", type=Path)
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    if not args.folder.is_dir():
        print(f"sleepgraph_compare: {args.folder}: not a folder", file=sys.stderr)
        return 2
    r = compare(args.folder)
    if args.json:
        tmp = args.json.with_name(args.json.name + ".tmp")
        tmp.write_text(json.dumps(r, indent=1) + "\n")
        tmp.replace(args.json)
    print(f"{r['folder']}: {r['tests']} tests, {r['agree']} of {r['sleepgraph_durations']} sleepgraph "
          f"device-phase durations agree ({r['agree_pct']:.2f}%); {r['kernel_functions']} are kernel "
          f"functions ({r['kernel_functions_agree']} agree with a dpmlens step); callbacks only: "
          f"{r['agree_pct_callbacks_only']:.2f}%; {r['dividers']} row-group captions left out "
          f"(no trace event: sleepgraph's addHorizontalDivider); "
          f"{r['dpmlens_thread_rows_not_in_sleepgraph']} dpmlens thread rows sleepgraph has not")
    why: dict[str, int] = defaultdict(int)
    for m in r["misses"]:
        why[m["why"]] += 1
    for k, v in sorted(why.items()):
        print(f"  {v:5d} {k}")
    for m in [m for m in r["misses"] if not m["kernel_function"]][:15]:
        print(f"  {m['test']} {m['phase']} {m['driver']} {m['device']}: sleepgraph {m['us']:.0f} us, "
              f"dpmlens {m.get('dpmlens_us')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

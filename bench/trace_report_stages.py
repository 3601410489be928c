#!/usr/bin/env python3
"""Where `dpmlens trace report --format json -o FILE DIR` spends its CPU, by stage, in fresh
processes pinned to one core: Python's start-up and the imports, load_traces() (the readers),
and the rest (aggregation, the analyses, the JSON), with the reader's C pairing, with the
pairing in Python (DPMLENS_PY_PAIRING=1) and with no C at all (DPMLENS_PURE_SCAN=1,
DPMLENS_PY_TIMELINE=1, DPMLENS_PY_WALK=1, DPMLENS_PY_JSON=1: the Python scan, pairing,
timeline, critical-path walk and JSON writer), alternated run by run.

    python bench/trace_report_stages.py [--runs 5] [--c-only] [--base DIR] [DIR]

(DIR: the multitest by default.) --c-only runs the first variant only; --base (another
commit's server/ tree, e.g. from `git archive`) runs its C variant alternated with these.
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "bench-data" / "pm-graph-multitest"
CHILD = r"""
import sys, time
import dpmlens.traces
from dpmlens import cli
from dpmlens.commands import trace_cmd
t_import = time.process_time()
spent = []
real = dpmlens.traces.load_traces
def timed(*a, **k):
    t = time.process_time()
    try:
        return real(*a, **k)
    finally:
        spent.append(time.process_time() - t)
dpmlens.traces.load_traces = timed  # trace_cmd imports it when it runs
try:
    cli.main(["trace", "report", "--format", "json", "-o", sys.argv[2], sys.argv[1]])
except SystemExit:
    pass
end = time.process_time()
print(t_import, sum(spent), end - t_import - sum(spent))
"""
VARIANTS = (("C (scan, pairing, timeline, walk)", {}),
            ("C scan, pairing in Python", {"DPMLENS_PY_PAIRING": "1"}),
            ("all in Python",
             {"DPMLENS_PURE_SCAN": "1", "DPMLENS_PY_TIMELINE": "1", "DPMLENS_PY_WALK": "1",
              "DPMLENS_PY_JSON": "1"}))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--c-only", action="store_true", help="only the C variant")
    ap.add_argument("--base", type=Path, help="another server/ tree, run alternated (its C)")
    ap.add_argument("dir", nargs="?", type=Path, default=DATA)
    args = ap.parse_args()
    if not any(args.dir.rglob("*")):
        sys.exit(f"{args.dir}: empty (make bench-multitest unpacks the multitest)")
    pin = ["taskset", "-c", "0"] if shutil.which("taskset") else []
    # start-up as an installed package has it, even under PYTHONDONTWRITEBYTECODE
    compileall.compile_dir(REPO / "server" / "dpmlens", quiet=1)
    variants = [(name, REPO / "server", extra) for name, extra in VARIANTS]
    if args.c_only:
        variants = variants[:1]
    if args.base is not None:
        compileall.compile_dir(args.base / "dpmlens", quiet=1)
        variants.insert(0, (f"base {args.base}"[:34], args.base, {}))
    got: dict[str, list[list[float]]] = {name: [] for name, _, _ in variants}
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    for _ in range(args.runs):
        for name, server, extra in variants:
            env = dict(os.environ, PYTHONPATH=str(server), **extra)
            out = subprocess.run([*pin, sys.executable, "-c", CHILD, str(args.dir), os.devnull],
                                 env=env, capture_output=True, text=True, check=True).stdout
            got[name].append([float(x) for x in out.split()])
    mb = sum(f.stat().st_size for f in args.dir.rglob("*_ftrace.txt")) / 1e6  # as bench_multitest
    print(f"{mb:.1f} MB of ftrace; CPU s, median of {args.runs}: start-up+imports, "
          "load_traces, rest, all")
    for name, rows in got.items():
        cols = [statistics.median(r[i] for r in rows) for i in range(3)]
        total = statistics.median(sum(r) for r in rows)
        print(f"{name:34s} {cols[0]:6.2f} {cols[1]:6.2f} {cols[2]:6.2f} {total:6.2f}"
              f"  = {mb / total:5.1f} MB/s (reader alone {mb / cols[1]:5.1f} MB/s)")
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

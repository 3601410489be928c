#!/usr/bin/env python3
"""The ftrace reader's event scan: the options measured on pm-graph's 100-run multitest, and
the reader with each scan (BENCHMARKS.md, "Session 3: trace reader throughput").

Part 1, in this process (one core, `gc` off as in the CLI, best of --repeat, CPU s), over the
100 files' bytes already in memory: the present regex (`ftrace._EVENT.finditer`), the same with
the positions and float() timestamps the reader's loop needs (ftrace_tokens' Python scan), the
C scan (_ftrace_tokens, when `make` built it), Hyperscan over whole blocks (a Python callback
per match: its only interface), and, when they are installed (they are not dependencies),
google-re2's finditer, numpy for the timestamp column and polars' string kernels.

Part 2, `load_traces()` on the 100 files in fresh processes pinned to one core, A B C A B C:
this tree with the C scan, this tree with DPMLENS_PURE_SCAN=1, and with --base DIR another
tree's server/ (`git archive` of a commit).

    python bench/bench_trace_scan.py [--repeat 3] [--loads 5] [--base DIR]

The data: `make bench-multitest` unpacks it into bench-data/pm-graph-multitest/.
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "bench-data" / "pm-graph-multitest"
sys.path.insert(0, str(REPO / "server"))

from dpmlens.traces.read import ftrace, ftrace_tokens

LOAD = """
import gc, sys, time
gc.disable()
from pathlib import Path
from dpmlens.traces.read.load import load_traces
c = time.process_time()
load_traces([Path(sys.argv[1])])
print(time.process_time() - c)
"""


def best(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    out, r = float("inf"), None
    for _ in range(repeat):
        c = time.process_time()
        r = fn()
        out = min(out, time.process_time() - c)
    return out, r


def scans(blobs: list[bytes], repeat: int) -> None:
    mb = sum(map(len, blobs)) / 1e6
    ev = ftrace._EVENT
    rows: list[tuple[str, Callable[[], object]]] = [
        ("re: ftrace._EVENT.finditer, count", lambda: sum(1 for b in blobs for _ in ev.finditer(b))),
    ]

    def walk(tokens: ftrace_tokens.Tokens) -> int:
        n = 0
        for b in blobs:
            for _ in tokens(b, len(b)):
                n += 1
        return n

    rows.append(("ftrace_tokens, Python scan (the reference)",
                 lambda: walk(ftrace_tokens.python_tokens(ev))))
    c_tokens = ftrace_tokens.c_tokens(ftrace._PLAIN)
    if c_tokens is not None:
        rows.append(("ftrace_tokens, C scan (_ftrace_tokens.c)", lambda: walk(c_tokens)))
    else:
        print("(the C scan is not built: make builds it)")
    try:
        import hyperscan

        # Hyperscan reports every end of a match ([^\n]* and " +" end anywhere): the tails are
        # cut so that it reports one end per event, as re finds them
        pat = ev.pattern.replace(rb": [^\n]*", rb": ").replace(rb"resume: +", rb"resume: ")
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        db.compile(expressions=[pat], ids=[0], flags=[0])
        ends: list[int] = []

        def on_match(_id: int, _frm: int, to: int, _flags: int, _ctx: object) -> None:
            ends.append(to)

        def hs() -> int:
            n = 0
            for b in blobs:
                ends.clear()
                db.scan(b, match_event_handler=on_match)
                n += len(ends)
            return n

        rows.append(("hyperscan, whole blocks, Python callback per match", hs))
    except ImportError:
        print("(hyperscan not installed)")
    try:
        import re2  # google-re2

        r2 = re2.compile(ev.pattern)
        rows.append(("google-re2 finditer, count", lambda: sum(1 for b in blobs
                                                               for _ in r2.finditer(b))))
    except ImportError:
        print("(google-re2 not installed: pip install google-re2)")
    for name, fn in rows:
        t, n = best(fn, repeat)
        print(f"{name:54s} {t:6.3f} s  {mb / t:6.0f} MB/s  {n} matches")
    # the timestamp column: float() per slice against numpy over the same slices
    stamps = []
    for b in blobs:
        for m in ev.finditer(b):
            s = m.start()
            stamps.append(b[b.rfind(b" ", 0, s) + 1 : s])
    t, _ = best(lambda: [float(x) for x in stamps], repeat)
    print(f"{'timestamps: float() per slice':54s} {t:6.3f} s  ({len(stamps)} slices)")
    try:
        import numpy as np

        t, _ = best(lambda: np.array(stamps, dtype="S24").astype(np.float64).tolist(), repeat)
        print(f"{'timestamps: numpy astype(float64) + tolist()':54s} {t:6.3f} s")
    except ImportError:
        print("(numpy not installed)")
    polars_scan(ev.pattern.decode(), mb, repeat)


def polars_scan(pattern: str, mb: float, repeat: int) -> None:
    try:
        os.environ.setdefault("POLARS_MAX_THREADS", "1")
        import polars as pl
    except ImportError:
        print("(polars not installed: pip install polars)")
        return
    files = sorted(DATA.glob("*/*_ftrace.txt"))

    def columns() -> int:
        n = 0
        for f in files:
            df = pl.read_csv(f, has_header=False, separator="\x01", quote_char=None,
                             new_columns=["l"], truncate_ragged_lines=True, infer_schema=False)
            ev = df.filter(pl.col("l").str.contains(pattern))
            cols = ev.select(
                pl.col("l").str.extract(r"^\s*(.+?)\s+\[\d+\]", 1).alias("task"),
                pl.col("l").str.extract(r" ([\d.]+): [a-z_]+:", 1).cast(pl.Float64).alias("ts"),
                pl.col("l").str.extract(r"[\d.]+: ([a-z_]+):", 1).alias("event"),
                pl.col("l").str.extract(r"[\d.]+: [a-z_]+: (.*)$", 1).alias("payload"))
            n += cols.height
        return n

    t, n = best(columns, repeat)
    print(f"{'polars (1 thread): lines, filter, 4 extract columns':54s} {t:6.3f} s  "
          f"{mb / t:6.0f} MB/s  {n} rows (from the files)")


def loads(runs: int, base: Path | None) -> None:
    pin = ["taskset", "-c", "0"] if shutil.which("taskset") else []
    variants = [("this tree, C scan", REPO / "server", "0"),
                ("this tree, Python scan", REPO / "server", "1")]
    if base is not None:
        variants.insert(0, ("base", base, "0"))
    got: dict[str, list[float]] = {v[0]: [] for v in variants}
    for _ in range(runs):
        for name, srv, pure in variants:
            env = dict(os.environ, PYTHONPATH=str(srv), DPMLENS_PURE_SCAN=pure)
            out = subprocess.run([*pin, sys.executable, "-c", LOAD, str(DATA)], env=env,
                                 capture_output=True, text=True, check=True).stdout
            got[name].append(float(out))
    mb = sum(f.stat().st_size for f in DATA.glob("*/*_ftrace.txt")) / 1e6
    for name, xs in got.items():
        m = statistics.median(xs)
        print(f"load_traces(), {name:24s} {' '.join(f'{x:.2f}' for x in xs)}  median "
              f"{m:.2f} s = {mb / m:.0f} MB/s")
    if base is not None:
        for name, xs in got.items():
            if name != "base":
                r = statistics.median(b / x for b, x in zip(got["base"], xs, strict=True))
                print(f"base / {name}, pair by pair: median {r:.2f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--loads", type=int, default=5)
    ap.add_argument("--base", type=Path, help="another tree's server/ (PYTHONPATH)")
    args = ap.parse_args()
    files = sorted(DATA.glob("*/*_ftrace.txt"))
    if not files:
        sys.exit(f"{DATA}: no captures (make bench-multitest unpacks them)")
    print(f"{len(files)} files; load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    gc.disable()
    scans([f.read_bytes() for f in files], args.repeat)
    gc.enable()
    loads(args.loads, args.base)
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

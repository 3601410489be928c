#!/usr/bin/env python3
"""CPU of the workspace index's findings pass after a restart, in one process: the worker
task (`index_worker.findings_many`, 48 files a task as the index sends them) over every .c
file of a tree, handed the stored findings of a findings store (lsp/findings_store.py, as
`bench_open.py --pass-twice` leaves one). `--profile` prints cProfile's top lines.

    PYTHONPATH=server python bench/index_pass_cpu.py STORE.json [--kernel DIR] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import sys
import time
from pathlib import Path

from dpmlens.config.settings import Config
from dpmlens.lsp.findings_store import FindingsStore
from dpmlens.lsp.index_worker import findings_many


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("store")
    ap.add_argument("--kernel", default="/work/linux/linux-source-6.12")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    with open(args.store, encoding="utf-8") as fh:
        build = json.load(fh)["build"]
    store = FindingsStore(Path(args.store), build)
    problem = store.load()
    if problem is not None:
        print(problem, file=sys.stderr)
        return 2
    root = os.path.join(args.kernel, "drivers")
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs
                   if f.endswith(".c"))
    config = Config()
    parsed = frozenset(p for p in files if store.get(p, config) is not None)
    prof = cProfile.Profile() if args.profile else None
    t0 = time.process_time()
    if prof is not None:
        prof.enable()
    kept = 0
    for i in range(0, len(files), 48):
        part = files[i : i + 48]
        stored = {p: pre for p in part if (pre := store.get(p, config)) is not None}
        out = findings_many(part, config, parsed.intersection(part), stored)
        kept += sum(1 for _p, pre in out if pre is not None and pre.earlier)
    if prof is not None:
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(10)
    print(f"{len(files)} files, {kept} of {len(parsed)} stored taken: "
          f"{time.process_time() - t0:.1f} s CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())

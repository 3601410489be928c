"""Scan a real kernel tree with the model and print counts and timings (not a pytest test).

    cd server && ../.venv/bin/python tests/model_realtree_scan.py [/path/to/linux/drivers]

Times are process CPU seconds of this one process (the machine may be shared), per stage:
read, prefilter, tree-sitter parse, build_model, and a rules-like pass (pm_callbacks,
the call walker from every callback, calls_to of the delay/wake/get_sync functions).
"""

from __future__ import annotations

import os
import sys
import time
import traceback

from dpmlens.engine.analyze import prefilter
from dpmlens.model.build import build_model
from dpmlens.model.callgraph import pm_callbacks
from dpmlens.model.walker import Walker
from dpmlens.syntax.parser import parse

DEFAULT = "/work/linux/linux-source-6.12/drivers"
NAMES = (
    "msleep",
    "mdelay",
    "udelay",
    "usleep_range",
    "fsleep",
    "ssleep",
    "pm_runtime_get_sync",
    "enable_irq_wake",
)


def main(root: str) -> int:
    if not os.path.isdir(root):
        print(f"{root}: not a directory (install and extract linux-source-6.12)", file=sys.stderr)
        return 2
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f.endswith(".c"))
    clock = time.process_time
    t = dict.fromkeys(("read", "prefilter", "parse", "build", "rules"), 0.0)
    total = kept = kept_bytes = errors = 0
    counts = dict.fromkeys(
        ("tables", "drivers", "named", "registered", "with_pm", "legacy", "callbacks"), 0
    )
    for path in files:
        t0 = clock()
        try:
            with open(path, "rb") as fh:
                src = fh.read()
        except OSError as exc:
            print(f"{path}: {exc.strerror}", file=sys.stderr)
            continue
        t1 = clock()
        total += len(src)
        ok = prefilter().matches(src)
        t2 = clock()
        t["read"] += t1 - t0
        t["prefilter"] += t2 - t1
        if not ok:
            continue
        kept += 1
        kept_bytes += len(src)
        tree = parse(src)
        t3 = clock()
        try:
            model = build_model(path, src, tree)
        except Exception:  # report and go on: this script exists to find such bugs
            errors += 1
            traceback.print_exc()
            continue
        t4 = clock()
        roles = pm_callbacks(model)
        for fn in roles:
            if fn in model.functions:
                for _ in Walker(model).reach(fn):
                    pass
        model.calls_to(*NAMES)
        t5 = clock()
        t["parse"] += t3 - t2
        t["build"] += t4 - t3
        t["rules"] += t5 - t4
        counts["tables"] += len(model.pm_tables)
        counts["drivers"] += len(model.drivers)
        counts["named"] += sum(1 for d in model.drivers if d.name)
        counts["registered"] += sum(1 for d in model.drivers if d.registration)
        counts["with_pm"] += sum(1 for d in model.drivers if d.pm)
        counts["legacy"] += sum(1 for d in model.drivers if d.legacy)
        counts["callbacks"] += len(roles)
    mb, kept_mb = total / 1e6, kept_bytes / 1e6
    print(f"{len(files)} .c files, {mb:.0f} MB; prefilter kept {kept} ({kept / len(files):.1%}),")
    print(f"  {kept_mb:.1f} MB ({kept_bytes / total:.1%}); errors: {errors}")
    print(
        f"CPU s: read {t['read']:.2f},"
        f" prefilter {t['prefilter']:.2f} ({mb / t['prefilter']:.0f} MB/s),"
        f" parse {t['parse']:.2f} ({kept_mb / t['parse']:.1f} MB/s),"
        f" build_model {t['build']:.2f} ({kept_mb / t['build']:.1f} MB/s),"
        f" callbacks+reach+calls_to {t['rules']:.2f}"
    )
    print(", ".join(f"{k} {v}" for k, v in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else DEFAULT))

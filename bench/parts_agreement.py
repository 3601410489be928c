#!/usr/bin/env python3
"""How closely analysing a C file in parts (syntax/parts.py) agrees with analysing it whole.

Real files are far below the size at which `check` splits (limits.WHOLE_SOURCE_BYTES), so each
file is forced into parts of `--target` bytes (default 16 KiB: most PM drivers become several
parts, each read with what it uses from the others) and its findings compared with the whole
file's: same (rule, line, column, message) or not. Every `--every`th file of the tree's
`drivers/` and `sound/` that the prefilter keeps.

    .venv/bin/python bench/parts_agreement.py --kernel /work/linux/linux-source-6.12 --every 5
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from dpmlens.config.settings import Config
from dpmlens.engine.analyze import analyze_model, prefilter, rules_for
from dpmlens.engine.parted import analyze_parts
from dpmlens.engine.walk import collect_files
from dpmlens.model.build import build_model
from dpmlens.rules.loader import load_rules
from dpmlens.syntax.parts import split


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernel", default=os.environ.get("BENCH_KERNEL",
                                                       "/work/linux/linux-source-6.12"))
    ap.add_argument("--every", type=int, default=5)
    ap.add_argument("--target", type=int, default=16 << 10)
    ap.add_argument("--show", type=int, default=20, help="differences to print")
    args = ap.parse_args()
    kernel = Path(args.kernel)
    if not (kernel / "drivers").is_dir():
        print(f"parts_agreement: skipped: no kernel tree at {kernel}", file=sys.stderr)
        return 0
    files, _ = collect_files([str(kernel / "drivers"), str(kernel / "sound")])
    config, rules = Config(), load_rules()
    words = prefilter(config, rules)
    chosen = [f for f in files if f.endswith(".c")][:: args.every]
    stats = {"files": 0, "split": 0, "parts": 0, "whole": 0, "agree": 0, "extra": 0,
             "missing": 0, "files_differing": 0}
    shown = 0
    t0 = time.process_time()
    for path in chosen:
        source = Path(path).read_bytes()
        if not words.matches(source):
            continue
        stats["files"] += 1
        n = len(split(source, args.target))
        stats["split"] += n > 1
        stats["parts"] += n
        whole = analyze_model(build_model(path, source), config, None, rules_for(source, rules))
        parted = analyze_parts(path, source, config, rules, words, args.target)
        key = lambda f: (f.rule, f.span.line, f.span.column, f.message)
        a, b = {key(f) for f in whole}, {key(f) for f in parted}
        stats["whole"] += len(a)
        stats["agree"] += len(a & b)
        stats["extra"] += len(b - a)
        stats["missing"] += len(a - b)
        if a != b:
            stats["files_differing"] += 1
            for k in sorted(a - b)[: max(0, args.show - shown)]:
                print(f"  - {os.path.relpath(path, kernel)}:{k[1]} {k[0]}: {k[3][:110]}")
                shown += 1
            for k in sorted(b - a)[: max(0, args.show - shown)]:
                print(f"  + {os.path.relpath(path, kernel)}:{k[1]} {k[0]}: {k[3][:110]}")
                shown += 1
    stats["cpu_s"] = round(time.process_time() - t0, 1)
    for k, v in stats.items():
        print(f"{k:16} {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

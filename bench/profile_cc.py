#!/usr/bin/env python3
"""Where does one file's `dpmlens cc` go once the process is warm? (issue 29, BENCHMARKS.md)

In one process, after one full `dpmlens cc FILE` (the start-up the cc worker keeps out of the
per-file path): the tree-sitter parse, `build_model` (parse included), all rules
(`analyze_model`) and the whole `dpmlens cc` code path again, each the best of N runs, CPU
seconds of this process; then cProfile's top lines of one model + rules run.

    python bench/profile_cc.py FILE.c [FILE.c ...] [--runs 5] [--top 12]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))


def best(fn: Callable[[], object], runs: int) -> float:
    out = float("inf")
    for _ in range(runs):
        t = time.process_time()
        fn()
        out = min(out, time.process_time() - t)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--top", type=int, default=12)
    args = ap.parse_args()
    os.environ["DPMLENS_CC_WORKER"] = "0"
    from dpmlens.commands.check_cmd import _load_config, _select_rules
    from dpmlens.engine.analyze import analyze_model
    from dpmlens.kbuild.worker import run_cc, warm
    from dpmlens.model.build import build_model
    from dpmlens.engine.rule_set import load_rule_set
    from dpmlens.syntax.parser import parse

    warm([])
    rules, _ = load_rule_set()
    ns = SimpleNamespace(config=None, no_config=False, rule=[], ignore=[])
    for f in args.files:
        src = Path(f).read_bytes()
        config = _load_config(ns, [f], [r.id for r in rules])  # type: ignore[arg-type]
        _select_rules(ns, rules, config)  # type: ignore[arg-type]
        model = build_model(f, src)
        saved, devnull = os.dup(2), os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        try:
            t_cc = best(lambda f=f: run_cc([f]), args.runs)  # type: ignore[misc]
        finally:
            os.dup2(saved, 2)
            os.close(devnull)
        print(f"{f}: {len(src)} bytes, CPU best of {args.runs}: "
              f"parse {best(lambda src=src: parse(src), args.runs) * 1e3:.1f} ms, "
              f"build_model {best(lambda f=f, src=src: build_model(f, src), args.runs) * 1e3:.1f}"
              f" ms, rules {best(lambda m=model, c=config: analyze_model(m, c, None, rules), args.runs) * 1e3:.1f}"
              f" ms, dpmlens cc warm {t_cc * 1e3:.1f} ms")
        prof = cProfile.Profile()  # over all runs: one run on a shared machine is noise
        prof.enable()
        for _ in range(args.runs):
            analyze_model(build_model(f, src), config, None, rules)
        prof.disable()
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(args.top)
        text = out.getvalue()
        print(text[text.find("   ncalls"):].rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())

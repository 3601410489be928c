"""The five balance rules' marginal CPU in one process (issue 30's cost, BENCHMARKS.md
"Session 4"): for every `.c`/`.h` file of a tree's drivers/ the engine's prefilter keeps,
build the model, run the other rules, then the balance rules on the same context (sharing what
the model caches), timing each part with `time.process_time()`.

    .venv/bin/python bench/balance_marginal.py /work/linux/linux-source-6.12
"""

from __future__ import annotations

import os
import sys
import time

from dpmlens.config.settings import Config
from dpmlens.engine.analyze import prefilter, run_rules
from dpmlens.model.build import build_model
from dpmlens.rules.context import Context
from dpmlens.rules.loader import load_rules


def main(tree: str) -> None:
    rules = load_rules()
    balance = [r for r in rules if r.checker.name == "lifetime-balance"]
    others = [r for r in rules if r.checker.name != "lifetime-balance"]
    keep, keep_others = prefilter(Config(), rules), prefilter(Config(), others)
    files = sorted(
        os.path.join(d, f)
        for d, _s, names in os.walk(os.path.join(tree, "drivers"))
        for f in names
        if f.endswith((".c", ".h"))
    )
    kept = only_balance = 0
    t_model = t_others = t_balance = 0.0
    for path in files:
        with open(path, "rb") as fh:
            src = fh.read()
        if not keep.matches(src):
            continue
        kept += 1
        only_balance += not keep_others.matches(src)
        t = time.process_time()
        model = build_model(path, src)
        ctx = Context(model, Config(), None)
        t1 = time.process_time()
        run_rules(ctx, Config(), others)
        t2 = time.process_time()
        run_rules(ctx, Config(), balance)
        t3 = time.process_time()
        ctx.close()
        t_model, t_others, t_balance = t_model + t1 - t, t_others + t2 - t1, t_balance + t3 - t2
    print(f"{kept} files kept ({only_balance} only for the balance rules' words): model "
          f"{t_model:.2f} s, other rules {t_others:.2f} s, balance rules {t_balance:.2f} s")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/work/linux/linux-source-6.12")

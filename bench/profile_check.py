#!/usr/bin/env python3
"""Where does `dpmlens check` spend its time? One process, stage by stage, over a kernel tree.

Stages: walk (listing files), read, prefilter (byte keywords), parse (tree-sitter),
model (build_model on the parsed tree) and rules (the rules a batch check runs on the file,
`rules_for`), with the rules' time split by checker (in the order they run, in one Context:
a checker that fills a cache the next ones read pays for it). Times are CPU seconds of this
process (time.process_time), so other load on the machine does not inflate them; divide by the
job count for the best case of a parallel run on an idle machine.

    python bench/profile_check.py [--kernel DIR] [--subdir drivers] [--every N]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--kernel",
        default=os.environ.get("BENCH_KERNEL", "/work/linux/linux-source-6.12"),
    )
    parser.add_argument("--subdir", default="drivers")
    parser.add_argument(
        "--every", type=int, default=1, help="profile every Nth file only"
    )
    parser.add_argument("--top", type=int, default=8, help="show the N slowest files")
    args = parser.parse_args()

    from dpmlens.config.settings import Config
    from dpmlens.engine.analyze import prefilter, rules_for, warm
    from dpmlens.engine.check import read_bytes
    from dpmlens.engine.walk import collect_files
    from dpmlens.model.build import build_model
    from dpmlens.rules.context import Context
    from dpmlens.rules.loader import load_rules
    from dpmlens.syntax.parser import parse

    target = Path(args.kernel) / args.subdir
    if not target.is_dir():
        print(f"no kernel tree at {target} (see README: Benchmark)", file=sys.stderr)
        return 2
    config = Config()
    rules = [r for r in load_rules() if config.is_enabled(r.id)]
    words = prefilter(config, rules)  # what `dpmlens check` uses
    by_checker: dict[str, float] = {}
    warm(str(target), config, rules)  # once per tree before the workers fork, as check does
    t = time.process_time()
    files, _errors = collect_files([str(target)])
    stages = {"walk": time.process_time() - t, "read": 0.0, "prefilter": 0.0, "parse": 0.0,
              "model": 0.0, "rules": 0.0}  # fmt: skip
    files = files[:: args.every]
    total_bytes = passed_bytes = passed = findings = 0
    slow: list[tuple[float, str, int]] = []
    for path in files:
        t0 = time.process_time()
        source = read_bytes(path)  # as `dpmlens check` reads
        t1 = time.process_time()
        hit = words.matches(source)
        t2 = time.process_time()
        stages["read"] += t1 - t0
        stages["prefilter"] += t2 - t1
        total_bytes += len(source)
        if not hit:
            continue
        passed += 1
        passed_bytes += len(source)
        tree = parse(source)
        t3 = time.process_time()
        model = build_model(path, source, tree=tree)
        t4 = time.process_time()
        ctx = Context(model, config, None)
        for rule in rules_for(source, rules):
            a = time.process_time()
            findings += sum(1 for _ in rule.checker.run(rule, ctx))
            name = rule.checker.name
            by_checker[name] = by_checker.get(name, 0.0) + time.process_time() - a
        ctx.close()
        t5 = time.process_time()
        stages["parse"] += t3 - t2
        stages["model"] += t4 - t3
        stages["rules"] += t5 - t4
        slow.append((t5 - t2, path, len(source)))

    total = sum(stages.values())
    print(f"files {len(files)} ({total_bytes / 1e6:.0f} MB); past the prefilter: {passed} "
          f"({passed_bytes / 1e6:.0f} MB); findings {findings}")  # fmt: skip
    for name, seconds in stages.items():
        print(f"  {name:<10} {seconds:7.2f} s  {100 * seconds / total:5.1f} %")
    print(f"  {'total':<10} {total:7.2f} s  (one core)")
    for name, seconds in sorted(by_checker.items(), key=lambda kv: -kv[1]):
        print(f"    rules: {name:<22} {seconds:6.2f} s")
    if passed_bytes:
        print(f"  parse rate {passed_bytes / 1e6 / stages['parse']:.1f} MB/s; "
              f"prefilter rate {total_bytes / 1e6 / stages['prefilter']:.0f} MB/s")  # fmt: skip
    for seconds, path, size in sorted(slow, reverse=True)[: args.top]:
        print(f"  slowest: {seconds:5.2f} s  {size / 1e3:6.0f} kB  {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The floor of any check built on a tree-sitter parse: read every file of a tree, keep those
`dpmlens check` keeps (the rules' prefilter, then `rules_for`), and only parse them with
tree-sitter, in N processes. No model, no rule, no output. For `farm-bench --vs` against
Coccinelle (BENCHMARKS.md, "the whole tree against Coccinelle"): if this alone costs more CPU
than the peer's whole run, no rule work can bring `check` to the peer's cost.

    PYTHONPATH=server python bench/parse_kept.py DIR [-j 2]
"""

from __future__ import annotations

import argparse
import sys
from multiprocessing import Pool


def _parse_some(paths: list[str]) -> tuple[int, int]:
    from dpmlens.config.settings import Config
    from dpmlens.core.inputs import LimitExceeded
    from dpmlens.engine.analyze import prefilter, rules_for
    from dpmlens.engine.check import read_bytes
    from dpmlens.rules.loader import load_rules
    from dpmlens.syntax.parser import parse

    rules = [r for r in load_rules() if Config().is_enabled(r.id)]
    keep = prefilter(Config(), rules)
    n = size = 0
    for p in paths:
        try:
            source = read_bytes(p)  # (check's read: over the size limit, refused)
        except (OSError, LimitExceeded):  # (check reports such a file and parses nothing)
            continue
        if keep.matches(source) and rules_for(source, rules):
            parse(source)
            n += 1
            size += len(source)
    return n, size


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root")
    ap.add_argument("-j", type=int, default=2)
    args = ap.parse_args()
    from dpmlens.engine.walk import collect_files

    files, _errors = collect_files([args.root])  # (check's own walk: the same files)
    parts = [files[i :: args.j * 8] for i in range(args.j * 8)]
    with Pool(args.j) as pool:
        done = pool.map(_parse_some, parts)
    n, size = sum(d[0] for d in done), sum(d[1] for d in done)
    print(f"parsed {n} of {len(files)} files ({size / 1e6:.1f} MB)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

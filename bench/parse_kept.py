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
import os
import sys
from multiprocessing import Pool


def _files(root: str) -> list[str]:
    out = []
    for d, dirs, names in os.walk(root):
        dirs.sort()
        out += [os.path.join(d, n) for n in sorted(names) if n.endswith((".c", ".h"))]
    return out


def _parse_some(paths: list[str]) -> tuple[int, int]:
    from dpmlens.config.settings import Config
    from dpmlens.engine.analyze import prefilter, rules_for
    from dpmlens.rules.loader import load_rules
    from dpmlens.syntax.parser import parse

    rules = [r for r in load_rules() if Config().is_enabled(r.id)]
    keep = prefilter(Config(), rules)
    n = size = 0
    for p in paths:
        try:
            with open(p, "rb") as fh:
                source = fh.read()
        except OSError:
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
    files = _files(args.root)
    parts = [files[i :: args.j * 8] for i in range(args.j * 8)]
    with Pool(args.j) as pool:
        done = pool.map(_parse_some, parts)
    n, size = sum(d[0] for d in done), sum(d[1] for d in done)
    print(f"parsed {n} of {len(files)} files ({size / 1e6:.1f} MB)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The floor of a whole-tree check: the tree-sitter parse alone of every file the prefilter
keeps (issue 29: why `check` cannot reach one Coccinelle rule's cost while it parses whole
files).

usage (from server/): ../.venv/bin/python ../bench/parse_floor.py /path/to/linux-source-6.12
"""

import os
import sys
import time

from dpmlens.config.settings import Config
from dpmlens.engine.analyze import prefilter
from dpmlens.rules.loader import load_rules
from dpmlens.syntax.parser import parse


def main() -> None:
    root = sys.argv[1]
    keep = prefilter(Config(), load_rules())
    kept: list[bytes] = []
    t0 = time.process_time()
    for d, _dirs, files in os.walk(os.path.join(root, "drivers")):
        for f in files:
            if f.endswith((".c", ".h")):
                with open(os.path.join(d, f), "rb") as fh:
                    text = fh.read()
                if keep.matches(text):
                    kept.append(text)
    t1 = time.process_time()
    for text in kept:
        parse(text)
    t2 = time.process_time()
    mb = sum(map(len, kept)) / 1e6
    print(f"{len(kept)} files kept ({mb:.0f} MB); prefilter {t1 - t0:.2f} CPU-s;"
          f" parse only {t2 - t1:.2f} CPU-s")


if __name__ == "__main__":
    main()

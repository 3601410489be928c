"""`make fuzz`: run the fuzz properties (tests/test_fuzz_*.py) with the `fuzz` profile, round
after round with fresh random seeds, until the time is up or one fails.

    python tests/fuzz_driver.py --minutes 30 [--examples 300]

A failure stops the run (exit 1); its minimal input is in test-fixtures/fuzz/found/. Each
round is a fresh pytest process (nothing accumulates across rounds: memory, servers, temp
directories, which pytest prunes to the last three); the examples each round really ran are
counted from hypothesis' statistics.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TESTS = ["tests/test_fuzz_model.py", "tests/test_fuzz_traces.py", "tests/test_fuzz_lsp.py"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=5.0, help="total time (default 5)")
    ap.add_argument("--examples", type=int, default=300, help="examples per property a round")
    args = ap.parse_args()
    end = time.monotonic() + args.minutes * 60
    env = {**os.environ, "DPMLENS_FUZZ_PROFILE": "fuzz",
           "DPMLENS_FUZZ_EXAMPLES": str(args.examples)}
    started, rounds, total = time.monotonic(), 0, 0
    while time.monotonic() < end:
        seed = random.randrange(1 << 32)
        t0 = time.monotonic()
        code, examples = _round(seed, env)
        rounds += 1
        total += examples
        took = time.monotonic() - t0
        print(f"fuzz: round {rounds} (seed {seed}) {took:.0f} s, {examples} examples: "
              f"{'clean' if code == 0 else 'FAILED'}", flush=True)
        if code != 0:
            print("fuzz: the minimal failing input is in test-fixtures/fuzz/found/",
                  file=sys.stderr)
            return 1
    print(f"fuzz: {rounds} round(s), {(time.monotonic() - started) / 60:.1f} min, "
          f"{total} examples ({args.examples} per property a round at most): clean")
    return 0


def _round(seed: int, env: dict[str, str]) -> tuple[int, int]:
    """One pytest run of every property: (exit code, examples run). Its output is passed
    through, except hypothesis' statistics (counted, and shown only if the round failed)."""
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             "-x", f"--hypothesis-seed={seed}", "--hypothesis-show-statistics",
                             *TESTS], cwd=HERE.parent, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, errors="replace")
    assert proc.stdout is not None
    stats: list[str] = []
    examples = 0
    for line in proc.stdout:
        if "Hypothesis Statistics" in line or stats and not re.match(r"=* ?\d+ \w+.* in ", line):
            stats.append(line)
            if m := re.search(r"(\d+) passing, (\d+) failing", line):
                examples += int(m.group(1)) + int(m.group(2))
            continue
        print(line, end="", flush=True)
    code = proc.wait()
    if code != 0:
        print("".join(stats), end="")
    return code, examples


if __name__ == "__main__":
    sys.exit(main())

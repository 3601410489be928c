"""`make fuzz`: run the fuzz properties (tests/test_fuzz_*.py) with the `fuzz` profile, round
after round with fresh random seeds, until the time is up or one fails.

    python tests/fuzz_driver.py --minutes 30 [--examples 300]

A failure stops the run (exit 1); its minimal input is in test-fixtures/fuzz/found/.
"""

from __future__ import annotations

import argparse
import os
import random
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
    started, rounds = time.monotonic(), 0
    while time.monotonic() < end:
        seed = random.randrange(1 << 32)
        t0 = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               "-x", f"--hypothesis-seed={seed}", *TESTS],
                              cwd=HERE.parent, env=env)
        rounds += 1
        took = time.monotonic() - t0
        print(f"fuzz: round {rounds} (seed {seed}) {took:.0f} s: "
              f"{'clean' if done.returncode == 0 else 'FAILED'}", flush=True)
        if done.returncode != 0:
            print("fuzz: the minimal failing input is in test-fixtures/fuzz/found/",
                  file=sys.stderr)
            return 1
    print(f"fuzz: {rounds} round(s), {(time.monotonic() - started) / 60:.1f} min, "
          f"{args.examples} examples per property a round: clean")
    return 0


if __name__ == "__main__":
    sys.exit(main())

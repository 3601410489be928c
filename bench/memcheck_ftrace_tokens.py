#!/usr/bin/env python3
"""Drive the C scan and pairing (_ftrace_tokens.c) over real and random blocks, for valgrind:

    PYTHONMALLOC=malloc valgrind --tool=memcheck --leak-check=full \\
        .venv/bin/python bench/memcheck_ftrace_tokens.py [--quick]

Real: the captures with delay kprobes under ../shared/traces and the first tests of
pm-graph's multitest (bench-data/, when unpacked), imported with the pairing in C, in blocks
of 4 MiB and of 4093 bytes; random: made-up kprobe text (tests/test_ftrace_tokens.py's
generator) in small blocks, random bytes, limits past the end and negative, and a state of
the wrong shape (errors, not crashes). Memcheck's report is what counts; the script itself
only checks that the C and the Python imports agree.
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "server"))
sys.path.insert(0, str(REPO / "server" / "tests"))

from dpmlens.traces import load_traces
from dpmlens.traces.read import ftrace, ftrace_tokens
from test_ftrace_tokens import _kprobe_text, everything


def load(paths: list[Path], pure: bool) -> dict:
    os.environ["DPMLENS_PURE_SCAN"] = "1" if pure else "0"
    return everything(load_traces(paths))


class _Asm:
    """What the C pairing reads of an Assembler (events.Assembler), empty."""

    def __init__(self) -> None:
        self.stage_cache: dict = {}
        self._last_phase = None
        self._last_cycle = 0
        self.call_marks: dict = {}
        self.block_serial = 0
        self.call_firsts: dict = {}
        self.prev_block = (b"", 0, {})
        self.window = (float("-inf"), True)
        self.cycle = 0  # (and the CycleTracker's)


def main() -> int:
    quick = "--quick" in sys.argv
    pairing = ftrace_tokens.pairing(ftrace._PLAIN, ftrace._DELAY_NAMES, ftrace._OTHER_RETS)
    if pairing is None:
        sys.exit("_ftrace_tokens not built (make .venv/.ftrace_tokens)")
    shared = Path(os.environ.get("DPMLENS_SHARED") or REPO.parent / "shared") / "traces"
    real = sorted(p for p in shared.rglob("*_ftrace.txt") if b"_cal: (" in p.read_bytes())
    multi = sorted((REPO / "bench-data" / "pm-graph-multitest").glob("*/*_ftrace.txt"))
    real += multi[: 1 if quick else 2]
    bad = 0
    for chunk in (4 << 20, 4093):
        ftrace.CHUNK = chunk
        for p in real:
            if load([p], False) != load([p], True):
                print("differs:", p, chunk)
                bad += 1
    rng = random.Random(29)
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(20 if quick else 200):
            steps = [(rng.randrange(23), rng.randrange(4), rng.randrange(3), rng.randrange(10))
                     for _ in range(rng.randrange(80))]
            warm = [(w, t, c, 1) for t in range(4) for c in range(3)
                    for w in (0, 1, 6, 4, 5, 10, 11, 7)]
            path = Path(tmp) / f"r{n}_ftrace.txt"
            path.write_text("# tracer: nop\n" + _kprobe_text(warm + steps))
            ftrace.CHUNK = rng.choice([64, 300, 4 << 20])
            if load([path], False) != load([path], True):
                print("differs:", steps)
                bad += 1
    asm = _Asm()
    open_delays, in_delay = ftrace_tokens.delay_tables()
    state = ({}, {}, frozenset(), open_delays, in_delay, print, {}, {}, {}, print, asm,
             frozenset(), 0, 0, [0, -1], frozenset(), asm, {}, {}, print)
    # the C tables (OpenDelays, ThreadSet): growth, removals, wrong keys and values
    for n in range(3000 if quick else 30000):
        tid, func = rng.randrange(-5, 300), rng.randrange(4)
        if rng.random() < 0.55:
            open_delays[(tid, func)] = (float(n), float("nan"), n % 2 == 0)
            in_delay.add(tid)
        else:
            open_delays.pop((tid, func), None)
            in_delay.discard(tid)
    for key, value in (((1,), (1.0, 1.0, True)), (("a", 1), (1.0, 1.0, True)),
                       ((1, 1), (1.0,)), ((2**70, 1), (1.0, 1.0, True))):
        try:
            open_delays[key] = value
            bad += 1
        except (TypeError, OverflowError):
            pass
    for x in ("a", 2**70, None):
        try:
            in_delay.add(x)
            bad += 1
        except (TypeError, OverflowError):
            pass
    for n in range(200 if quick else 2000):  # random bytes, odd limits: no error expected
        buf = bytes(rng.randrange(256) for _ in range(rng.randrange(200)))
        buf += rng.choice([b": udelay_cal: x\n", b" 1.5: msleep_ret: (a+0x1 <- msleep)\n", b"",
                           b" 2.5: device_pm_callback_start: d e, parent: f, [suspend]\n",
                           b" 2.5: device_pm_callback_end: d e, err=0\n",
                           b" 3.5: mutex_lock_slowpath_ret: (a+0x1 <- m) arg1=0x0\n"])
        for limit in (len(buf), len(buf) + 9, -3, rng.randrange(len(buf) + 1)):
            list(pairing(buf, limit, [0, 5], state))
    for wrong in ((), ({},) * 20, state[:6] + (None,) + state[7:], state[:-5] + (None,) * 5):
        try:
            list(pairing(b"x", 1, [], wrong))
            bad += 1
        except (ValueError, TypeError):
            pass
    print("bad:", bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

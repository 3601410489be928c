#!/usr/bin/env python3
"""`dpmlens trace report --format json` over pm-graph's published 100-run multitest.

The data: a Dell XPS 13 9360 (Kaby Lake) suspended 100 times by `sleepgraph -dev -multi`
(kernel 5.3), published by the pm-graph project on the gh-pages branch of
https://github.com/intel/pm-graph as otcpl-dell-9360-kbl-multitest/ (gzipped; 167.4 MB of
ftrace text once unpacked, 1.45 million lines, 212,324 callbacks, ~950,000 delay kprobes).
The first run unpacks it into bench-data/pm-graph-multitest/ (gitignored) from a checkout of
that branch (--pm-graph DIR) or, without one, from a shallow clone of it.

Each timed run is a fresh process pinned to one core (`taskset -c 0`) running the report as a
user does (`-o FILE`), its CPU time (user + sys) and peak RSS from wait4(). With --base DIR
(a `server/` tree of another commit, e.g. from `git archive`), base and this tree run in
turn, A B A B ..., so that the ratio holds while the shared machine's speed drifts, and the
two JSON reports are compared byte for byte. With --sleepgraph FILE (pm-graph's
sleepgraph.py), sleepgraph and dpmlens read the same first --peer-tests tests in the same run
(sleepgraph one test per process, as `sleepgraph -ftrace F -dmesg D -dev` runs it).

    python bench/bench_multitest.py [--runs 5] [--base DIR] [--sleepgraph FILE]
"""

from __future__ import annotations

import argparse
import compileall
import gzip
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "bench-data" / "pm-graph-multitest"
CLONE = REPO / "bench-data" / "pm-graph-gh-pages"
URL = "https://github.com/intel/pm-graph"
SUBDIR = "otcpl-dell-9360-kbl-multitest"
BUDGET_MB_S = 100.0
BUDGET_RSS_MB = 200.0
MAIN = "import sys; from dpmlens.cli import main; sys.exit(main())"


def unpack(pm_graph: Path | None) -> None:
    if DATA.is_dir() and any(DATA.glob("*/*_ftrace.txt")):
        return
    src = pm_graph
    if src is None:
        if not (CLONE / SUBDIR).is_dir():
            subprocess.run(["git", "clone", "--depth", "1", "--branch", "gh-pages", URL,
                            str(CLONE)], check=True)
        src = CLONE
    tests = sorted((src / SUBDIR).glob("suspend-*"))
    if not tests:
        sys.exit(f"{src / SUBDIR}: no suspend-* test directories (a gh-pages checkout of {URL}?)")
    for test in tests:
        out = DATA / test.name
        out.mkdir(parents=True, exist_ok=True)
        for f in test.glob("*_*.txt.gz"):
            raw = f.read_bytes()
            # the gh-pages files are gzip, a few are stored plain under the .gz name
            text = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
            (out / f.name[:-3]).write_bytes(text)


def ftrace_bytes(tests: list[Path]) -> int:
    return sum(f.stat().st_size for t in tests for f in t.glob("*_ftrace.txt"))


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """CPU seconds (user + sys) and peak RSS in MB of one child process."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(proc.pid, 0)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if status != 0:
        sys.exit(f"{' '.join(cmd)} failed ({status}): {err}")
    return ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024


def report_cmd(server: Path, out: Path, inputs: list[Path]) -> tuple[list[str], dict[str, str]]:
    env = dict(os.environ, PYTHONPATH=str(server))
    pin = ["taskset", "-c", "0"] if shutil.which("taskset") else []
    return (pin + [sys.executable, "-c", MAIN, "trace", "report", "--format", "json",
                   "-o", str(out)] + [str(p) for p in inputs], env)


def med(xs: list[float]) -> float:
    return statistics.median(xs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--base", type=Path, help="a server/ tree to compare with (PYTHONPATH)")
    ap.add_argument("--pm-graph", type=Path, help="a checkout of pm-graph's gh-pages branch")
    ap.add_argument("--sleepgraph", type=Path, help="pm-graph's sleepgraph.py: the peer")
    ap.add_argument("--peer-tests", type=int, default=5,
                    help="tests sleepgraph and dpmlens both read (default 5)")
    args = ap.parse_args()
    unpack(args.pm_graph)
    tests = sorted(p for p in DATA.iterdir() if p.is_dir())
    mb = ftrace_bytes(tests) / 1e6
    print(f"{len(tests)} tests, {mb:.1f} MB of ftrace; load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    tmp = Path(tempfile.mkdtemp(prefix="bench-multitest-"))
    new_srv = REPO / "server"
    for srv in (new_srv, args.base):
        if srv is not None:  # start-up as an installed package has it, even where the
            # environment says PYTHONDONTWRITEBYTECODE (stale .pyc cost ~60 ms a run here)
            compileall.compile_dir(srv / "dpmlens", quiet=1)
    rows: dict[str, list[tuple[float, float]]] = {"new": [], "base": []}
    for i in range(args.runs):
        for name, srv in (("base", args.base), ("new", new_srv)):
            if srv is None:
                continue
            cmd, env = report_cmd(srv, tmp / f"{name}.json", [DATA])
            rows[name].append(timed(cmd, env))
    same = None
    if args.base is not None:
        same = (tmp / "base.json").read_bytes() == (tmp / "new.json").read_bytes()
    print("| tree | CPU s (min-max, median) | MB/s (CPU, median) | peak RSS |")
    print("|---|---|---|---|")
    for name in ("base", "new"):
        r = rows[name]
        if not r:
            continue
        cpu = [c for c, _ in r]
        print(f"| {name} | {min(cpu):.2f}-{max(cpu):.2f} ({med(cpu):.2f}) | "
              f"{mb / med(cpu):.1f} | {max(m for _, m in r):.0f} MB |")
    if rows["base"]:
        ratios = [b[0] / n[0] for b, n in zip(rows["base"], rows["new"], strict=True)]
        print(f"base/new CPU, pair by pair: {' '.join(f'{x:.2f}' for x in ratios)} "
              f"(median {med(ratios):.2f}); JSON byte-identical: {same}")
    if args.sleepgraph is not None:
        peer = tests[: args.peer_tests]
        pmb = ftrace_bytes(peer) / 1e6
        sg = 0.0
        for t in peer:
            f = next(t.glob("*_ftrace.txt"))
            d = next(t.glob("*_dmesg.txt"))
            out = tmp / f"sg-{t.name}"
            sg += timed([sys.executable, str(args.sleepgraph), "-ftrace", str(f), "-dmesg",
                         str(d), "-dev", "-o", str(out)], dict(os.environ))[0]
        cmd, env = report_cmd(new_srv, tmp / "peer.json", peer)
        ours = timed(cmd, env)[0]
        print(f"same {len(peer)} tests ({pmb:.1f} MB): sleepgraph {sg:.2f} s CPU "
              f"({pmb / sg:.1f} MB/s), dpmlens {ours:.2f} s ({pmb / ours:.1f} MB/s): "
              f"{sg / ours:.1f}x")
    new_cpu = med([c for c, _ in rows["new"]])
    print(f"budget: >= {BUDGET_MB_S:.0f} MB/s ({'met' if mb / new_cpu >= BUDGET_MB_S else 'NOT met'}),"
          f" peak <= {BUDGET_RSS_MB:.0f} MB "
          f"({'met' if max(m for _, m in rows['new']) <= BUDGET_RSS_MB else 'NOT met'})")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Benchmark the runtime PM import (see BENCHMARKS.md, "Runtime PM").

Three questions, each file loaded by `load_traces()` in a fresh child process (CPU time of
the load only, so the figure is one core's):
1. What do traces WITHOUT rpm_* events pay for runtime PM support? Each file is loaded by
   this tree and by the tree of --before REV (default: where this branch left main; `git
   archive` into bench-data/, imported through PYTHONPATH), in alternation, best of --repeat: the real pm-graph captures
   in ../shared/traces and the synthetic PM-only worst case of bench_traces.py (100 cycles x
   600 devices, no kprobe lines).
2. How fast is a trace that is mostly rpm_* events? A raw ftrace file of DEVICES devices x
   CYCLES runtime cycles (rpm_resume with a nested parent resume, rpm_status, the
   autosuspend put, timer and worker suspend: the shape of the 6.12 fixture), and the time of
   `runtime_stats()` over it.

    python bench/bench_rpm.py [--repeat 3] [--rpm-mb 100] [--shared DIR]

Data goes to bench-data/traces/ (gitignored) and is reused when the parameters match.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
import bench_traces  # the synthetic system-suspend capture

OUT = REPO / "bench-data" / "traces"
BUDGET_MB_S = 50.0

CHILD = r"""
import json, sys, time
import dpmlens
from dpmlens.traces import load_traces
c0 = time.process_time()
ts = load_traces(sys.argv[1:])
load = time.process_time() - c0
rpm, stats = None, 0.0
try:
    from dpmlens.traces.analysis.rpm_stats import runtime_stats
except ImportError:  # the tree before runtime PM support
    runtime_stats = None
if runtime_stats is not None:
    c0 = time.process_time()
    rpm = runtime_stats(ts)
    stats = time.process_time() - c0
print(json.dumps({"cpu": load, "stats_cpu": stats, "samples": ts.sample_count,
                  "rpm_events": sum(getattr(f, "rpm_events", 0) for f in ts.files),
                  "devices": len(rpm.devices) if rpm else 0, "skipped": ts.skipped_lines,
                  "module": dpmlens.__file__}))
"""


# The real captures are < 1 MB: a fresh process per load measures mostly start-up effects,
# so they are also loaded warm, many times in one process (best per file, summed).
WARM = r"""
import json, sys, time
from dpmlens.traces import load_traces
files = sys.argv[2:]
for f in files:
    load_traces([f])
best = {}
for _ in range(int(sys.argv[1])):
    for f in files:
        c = time.process_time(); load_traces([f]); d = time.process_time() - c
        best[f] = min(best.get(f, 1e9), d)
print(json.dumps({"cpu": sum(best.values())}))
"""


def warm(files: list[Path], rounds: int, tree: Path | None) -> float:
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree / "server")
        env["DPMLENS_DATA_DIR"] = str(tree)
    r = subprocess.run([sys.executable, "-c", WARM, str(rounds), *map(str, files)],
                       capture_output=True, text=True, check=True, env=env)
    return json.loads(r.stdout)["cpu"]


def before_tree(rev: str) -> Path:
    """The server of `rev`, exported once (with its rules/ for the data directory)."""
    sha = subprocess.run(["git", "rev-parse", "--short", rev], cwd=REPO, capture_output=True,
                         text=True, check=True).stdout.strip()
    dst = OUT / f"tree-{sha}"
    if not (dst / "server" / "dpmlens").is_dir():
        dst.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "archive", sha, "server/dpmlens", "rules", "grammars"],
                                 cwd=REPO, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dst)], input=archive, check=True)
    return dst


def load(path: Path, tree: Path | None) -> dict:
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree / "server")
        env["DPMLENS_DATA_DIR"] = str(tree)
    r = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True,
                       text=True, check=True, env=env)
    data = json.loads(r.stdout)
    assert tree is None or data["module"].startswith(str(tree)), data["module"]
    return data


def best(path: Path, repeat: int, tree: Path | None) -> tuple[dict, dict]:
    """Best (least CPU) of `repeat` loads by this tree and by `tree`, alternated so that the
    machine's load hits both alike."""
    on: list[dict] = []
    off: list[dict] = []
    for _ in range(repeat):
        on.append(load(path, None))
        if tree is not None:
            off.append(load(path, tree))
    return min(on, key=lambda d: d["cpu"]), min(off or on, key=lambda d: d["cpu"])


def write_rpm_trace(path: Path, target_mb: float) -> None:
    """Runtime PM traffic of 64 devices in pairs (child under parent) until ~target_mb."""
    lines = ["# tracer: nop\n#\n#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n"]
    size = 0
    t = 100.0
    k = 0
    internal = "{} flags-{:x} cnt-{:<2d} dep-0  auto-1 p-0 irq-0 child-{}"
    while size < target_mb * 1e6:
        c, p = f"i2c_bench.{k % 32}", f"0000:00:{k % 32:02x}.0"
        task = f"     kworker/{k % 4}:1-{100 + k % 4} [{k % 4:03d}] d..1. "
        dur = 0.000500 + (k * 7919 % 3000) * 1e-6

        def ev(dt: float, name: str, payload: str, task: str = task, t: float = t) -> str:
            return f"{task}{t + dt:12.6f}: {name}: {payload}\n"

        block = [
            ev(0, "rpm_resume", internal.format(c, 4, 1, 0)),
            ev(0.000010, "rpm_resume", internal.format(p, 0, 0, 1)),
            ev(0.000020, "rpm_status", f"{p} status=RPM_RESUMING"),
            ev(0.000300, "rpm_status", f"{p} status=RPM_ACTIVE"),
            ev(0.000310, "rpm_return_int", f"rpm_resume+0x1a4/0x6e0:{p} ret=0"),
            ev(0.000320, "rpm_status", f"{c} status=RPM_RESUMING"),
            ev(dur - 0.00001, "rpm_status", f"{c} status=RPM_ACTIVE"),
            ev(dur, "rpm_return_int", f"rpm_resume+0x1a4/0x6e0:{c} ret=0"),
            ev(0.010, "rpm_suspend", internal.format(c, 0xD, 0, 0)),
            ev(0.010004, "rpm_return_int", f"rpm_suspend+0x2c0/0x6a0:{c} ret=0"),
            ev(0.060, "rpm_suspend", internal.format(c, 0x9, 0, 0)),
            ev(0.060003, "rpm_return_int", f"rpm_suspend+0x2c0/0x6a0:{c} ret=0"),
            ev(0.060100, "rpm_suspend", internal.format(c, 0xA, 0, 0)),
            ev(0.060110, "rpm_status", f"{c} status=RPM_SUSPENDING"),
            ev(0.060900, "rpm_status", f"{c} status=RPM_SUSPENDED"),
            ev(0.061000, "rpm_return_int", f"rpm_suspend+0x2c0/0x6a0:{c} ret=0"),
        ]
        text = "".join(block)
        lines.append(text)
        size += len(text)
        t += 0.070 + (k % 5) * 0.001
        k += 1
    path.write_text("".join(lines))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rpm-mb", type=float, default=100.0)
    ap.add_argument("--shared", type=Path, default=REPO.parent / "shared" / "traces")
    ap.add_argument("--before", default=None,
                    help="the revision to compare with (default: git merge-base HEAD main)")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text()
                .splitlines() if ln.startswith("model name")), platform.processor())
    print(f"CPU: {cpu}, {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f} at start")
    files = sorted(args.shared.rglob("*_ftrace.txt")) if args.shared.is_dir() else []
    if not files:
        print(f"(no real captures at {args.shared}; pass --shared DIR)")
    pm_only = OUT / "bench_100x600_n0_ftrace.txt"
    if not pm_only.exists():
        bench_traces.write_ftrace(pm_only, 100, 600, 0)
    rpm_file = OUT / f"bench_rpm_{args.rpm_mb:g}mb_trace.txt"
    if not rpm_file.exists():
        write_rpm_trace(rpm_file, args.rpm_mb)

    if args.before is None:
        args.before = subprocess.run(["git", "merge-base", "HEAD", "main"], cwd=REPO,
                                     capture_output=True, text=True,
                                     check=True).stdout.strip()[:7]
    tree = before_tree(args.before)
    print(f"\n1. Traces without rpm_* events: this tree vs {args.before} ({tree.name[5:]}), "
          f"CPU s of load_traces(), best of {args.repeat}")
    print(f"{'file':<34} {'MB':>7} {'now s':>7} {'before':>7} {'MB/s now':>8} {'before':>8} "
          f"{'cost':>6}")
    ok = True
    real_mb = real_on = real_off = 0.0
    for f in [*files, pm_only]:
        on, off = best(f, args.repeat, tree)
        mb = f.stat().st_size / 1e6
        assert on["rpm_events"] == 0 and on["samples"] == off["samples"]
        cost = 100 * (on["cpu"] - off["cpu"]) / off["cpu"]
        print(f"{f.name[:34]:<34} {mb:7.2f} {on['cpu']:7.3f} {off['cpu']:7.3f} "
              f"{mb / on['cpu']:8.1f} {mb / off['cpu']:8.1f} {cost:+5.1f}%")
        if f in files:
            real_mb, real_on, real_off = real_mb + mb, real_on + on["cpu"], real_off + off["cpu"]
        ok &= mb / on["cpu"] >= BUDGET_MB_S or mb < 5  # small files: start-up dominates
    if files:
        print(f"{'all real captures':<34} {real_mb:7.2f} {real_on:7.3f} {real_off:7.3f} "
              f"{real_mb / real_on:8.1f} {real_mb / real_off:8.1f} "
              f"{100 * (real_on - real_off) / real_off:+5.1f}%")
        now = [warm(files, 15, None) for _ in range(args.repeat)]
        before = [warm(files, 15, tree) for _ in range(args.repeat)]
        a, b = min(now), min(before)
        print(f"{'all real captures, warm':<34} {real_mb:7.2f} {a:7.3f} {b:7.3f} "
              f"{real_mb / a:8.1f} {real_mb / b:8.1f} {100 * (a - b) / b:+5.1f}%")
    print("\n2. A trace of runtime PM events only")
    on, _ = best(rpm_file, args.repeat, None)
    mb = rpm_file.stat().st_size / 1e6
    print(f"{rpm_file.name}: {mb:.1f} MB, {on['rpm_events']} events, {on['devices']} devices: "
          f"load {on['cpu']:.2f} s CPU = {mb / on['cpu']:.1f} MB/s; runtime_stats "
          f"{on['stats_cpu']:.2f} s; skipped lines {on['skipped']}")
    ok &= mb / on["cpu"] >= BUDGET_MB_S
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end; budget >= {BUDGET_MB_S:g} MB/s: "
          f"{'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Benchmark `dpmlens check` over a kernel tree's drivers/ (see BENCHMARKS.md).

Runs the real CLI as a child process and prints files, MB, wall time, files/s and the peak
memory of the whole process tree (the CLI and its workers), sampled from /proc:
  - peak RSS: the largest sum of VmRSS over the tree (counts pages shared by the forked
    workers once per process, so it over-states; this is the figure held to the budget)
  - peak PSS: the same with shared pages divided among their users (the honest total)
Then, in the same run, three Coccinelle peers over the same tree and dpmlens's ratio to each
(see `peers()`): the kernel's scripts/coccinelle/api/pm_runtime.cocci as `make coccicheck`
runs it, a one-rule `.suspend_noirq` check, and issue 10's old `struct dev_pm_ops` pattern;
skipped, saying so, when `spatch` is not installed (or with --no-coccinelle).

    python bench/bench_check.py [--kernel DIR] [--jobs 2] [--subdir drivers] [--no-coccinelle]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

DEFAULT_KERNEL = "/work/linux/linux-source-6.12"
BUDGET_SECONDS = 10.0
BUDGET_RSS_MB = 500.0
BUDGET_WARM = 1.0  # seconds, a run with the result cache over an unchanged tree
BUDGET_TOUCHED = 1.5  # seconds, the same after one file was touched
INSTALL_HINT = """\
no kernel tree at {path}. Install and extract one (Debian/Ubuntu):
    sudo apt-get install -y linux-source-6.12
    mkdir -p /work/linux && tar -xf /usr/src/linux-source-6.12.tar.xz -C /work/linux
then run again, or point BENCH_KERNEL / --kernel at any extracted kernel tree."""


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as handle:
                out.extend(int(c) for c in handle.read().split())
        except OSError:
            continue
    return out


def _tree(pid: int) -> list[int]:
    pids, todo = [], [pid]
    while todo:
        p = todo.pop()
        pids.append(p)
        todo.extend(_children(p))
    return pids


def _kb(path: str, field: str) -> int:
    try:
        with open(path) as handle:
            for line in handle:
                if line.startswith(field):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def sample(pid: int, with_pss: bool = True) -> tuple[int, int, int]:
    """(processes, summed RSS kB, summed PSS kB or 0) of the tree rooted at pid."""
    pids = _tree(pid)
    rss = sum(_kb(f"/proc/{p}/status", "VmRSS:") for p in pids)
    pss = sum(_kb(f"/proc/{p}/smaps_rollup", "Pss:") for p in pids) if with_pss else 0
    return len(pids), rss, pss


# PSS (smaps_rollup) walks each process's page tables under its memory lock: sampled every
# 20th time only, so the measuring does not slow what it measures (RSS is cheap: every time)
PSS_EVERY = 20


@dataclass
class Measured:
    returncode: int
    wall: float
    cpu: float  # user+sys of the finished process tree
    peak_rss: int  # kB, summed over the tree
    peak_pss: int
    peak_procs: int
    stderr: str


def measure(command: list[str], cwd: str, interval: float, stdout: int | None = None) -> Measured:
    """Run `command`, sampling its process tree's memory; CPU from the children's rusage."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    child = subprocess.Popen(
        command, cwd=cwd, stdout=stdout, stderr=subprocess.PIPE, text=True
    )
    peak_rss = peak_pss = peak_procs = 0
    n = 0
    while child.poll() is None:
        procs, rss, pss = sample(child.pid, with_pss=n % PSS_EVERY == 0)
        n += 1
        peak_rss, peak_pss = max(peak_rss, rss), max(peak_pss, pss)
        peak_procs = max(peak_procs, procs)
        time.sleep(interval)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    stderr = child.stderr.read() if child.stderr else ""
    return Measured(child.returncode, wall, cpu, peak_rss, peak_pss, peak_procs, stderr)


# The peers (issue 20, part 7), each run as its users run it, from the tree's top (which
# reads the tree's .cocciconfig: `--use-gitgrep`, which falls back to scanning every file when
# the tree is no git checkout, as a Debian linux-source tree is not):
# - the kernel's own scripts/coccinelle/api/pm_runtime.cocci as `make coccicheck MODE=report`
#   runs it (scripts/coccicheck: `-D report --no-show-diff --very-quiet`, the rule's
#   `Options: --include-headers`, LINUXINCLUDE, `--jobs N --chunksize 1`);
# - a one-rule check a user would write: `.suspend_noirq` in a `dev_pm_ops` initializer;
# - issue 10's yardstick, a bare `struct dev_pm_ops ops = { ... };` pattern, kept for the
#   history: it makes spatch match every initializer's body, a slow pattern no user picks.
NOIRQ_RULE = """\
@r@
identifier ops, fn;
@@
 struct dev_pm_ops ops = {
*  .suspend_noirq = fn,
 };
"""
OLD_RULE = """\
@r@
identifier ops;
@@
* struct dev_pm_ops ops = { ... };
"""
# LINUXINCLUDE of an x86 build, as scripts/coccicheck passes it (`-include` -> `--include`)
_COCCIINCLUDE = [
    "-I", "arch/x86/include", "-I", "arch/x86/include/generated", "-I", "include",
    "-I", "arch/x86/include/uapi", "-I", "arch/x86/include/generated/uapi",
    "-I", "include/uapi", "-I", "include/generated/uapi",
    "--include", "include/linux/compiler-version.h", "--include", "include/linux/kconfig.h",
]  # fmt: skip


@dataclass(frozen=True)
class Peer:
    name: str
    rule: str  # a path in the kernel tree, or the text of a rule
    args: tuple[str, ...]


def peers(jobs: int) -> list[Peer]:
    return [
        Peer("pm_runtime.cocci (make coccicheck)", "scripts/coccinelle/api/pm_runtime.cocci",
             ("-D", "report", "--no-show-diff", "--very-quiet", "--include-headers",
              *_COCCIINCLUDE, "--jobs", str(jobs), "--chunksize", "1")),
        Peer(".suspend_noirq in dev_pm_ops (one rule)", NOIRQ_RULE,
             ("--very-quiet", "-j", str(jobs))),
        Peer("old yardstick: struct dev_pm_ops = { ... }", OLD_RULE,
             ("--very-quiet", "-j", str(jobs))),
    ]  # fmt: skip


def coccinelle(kernel: str, subdir: str, peer: Peer, interval: float) -> Measured | None:
    spatch = shutil.which("spatch")
    if spatch is None:
        print("coccinelle   skipped: `spatch` is not installed (apt-get install coccinelle)")
        return None
    with tempfile.TemporaryDirectory() as tmp:
        if peer.rule.endswith(".cocci"):
            rule, shown = Path(kernel) / peer.rule, peer.rule
            if not rule.is_file():
                print(f"coccinelle   skipped {peer.name}: no {rule}")
                return None
        else:
            rule, shown = Path(tmp) / "rule.cocci", "RULE.cocci"
            rule.write_text(peer.rule)
        command = [spatch, *peer.args, "--cocci-file", str(rule), "--dir", subdir]
        print("$ cd", kernel, "&& spatch", " ".join(command[1:]).replace(str(rule), shown))
        m = measure(command, kernel, interval, stdout=subprocess.DEVNULL)
    if m.returncode != 0:
        print(f"coccinelle   failed (exit code {m.returncode}): {m.stderr.strip()[-300:]}")
        return None
    print(f"coccinelle   {peer.name}: wall {m.wall:.2f} s, CPU {m.cpu:.2f} s, "
          f"peak RSS {m.peak_rss / 1024:.0f} MB")  # fmt: skip
    return m


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--kernel", default=os.environ.get("BENCH_KERNEL") or DEFAULT_KERNEL
    )
    parser.add_argument("--subdir", default="drivers")
    parser.add_argument(
        "--jobs", type=int, default=int(os.environ.get("BENCH_JOBS", "2"))
    )
    parser.add_argument(
        "--interval", type=float, default=0.05, help="memory sampling period"
    )
    parser.add_argument(
        "--no-coccinelle", action="store_true", help="skip the Coccinelle comparison"
    )
    parser.add_argument(
        "--no-cache-bench", action="store_true", help="skip the cold/warm/touched cache runs"
    )
    parser.add_argument("extra", nargs="*", help="more arguments for `dpmlens check`")
    args = parser.parse_args()

    target = Path(args.kernel) / args.subdir
    if not target.is_dir():
        print(INSTALL_HINT.format(path=target), file=sys.stderr)
        return 2
    dpmlens = (
        shutil.which("dpmlens", path=str(Path(sys.executable).parent)) or "dpmlens"
    )
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        command = [dpmlens, "check", "--jobs", str(args.jobs), "--format", "json", "--no-cache",
                   "--output", str(report), "--quiet", *args.extra, args.subdir]  # fmt: skip
        print(
            "$ cd",
            args.kernel,
            "&& dpmlens",
            " ".join(command[1:]).replace(str(report), "REPORT"),
        )
        m = measure(command, args.kernel, args.interval)
        wall, cpu, stderr = m.wall, m.cpu, m.stderr
        peak_rss, peak_pss, peak_procs = m.peak_rss, m.peak_pss, m.peak_procs
        if m.returncode not in (0, 1) or not report.exists():
            print(stderr, file=sys.stderr)
            print(f"dpmlens check failed with exit code {m.returncode}", file=sys.stderr)
            return 1
        summary = json.loads(report.read_text())["summary"]

    files, mb = summary["files_checked"], summary["bytes_checked"] / 1e6
    skipped = len(summary["errors"])
    print(
        f"files        {files} ({summary['files_analyzed']} with PM code, {skipped} skipped)"
    )
    print(f"MB           {mb:.1f}")
    print(f"findings     {summary['findings']}  {summary['by_severity']}")
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"jobs         {args.jobs} (machine has {os.cpu_count()} CPUs, load average {load})"
    )
    print(f"wall         {wall:.2f} s")
    print(
        f"CPU          {cpu:.2f} s user+sys over the process tree ({cpu / wall:.2f} cores busy)"
    )
    # On a busy machine wall time mostly measures the other load; CPU / jobs is what an idle
    # machine with `jobs` free cores would take (the walk and the parent's work overlap).
    print(
        f"idle-machine {cpu / args.jobs:.2f} s wall expected with {args.jobs} free cores"
    )
    print(f"files/s      {files / wall:.0f}  ({mb / wall:.0f} MB/s)")
    print(f"peak RSS     {peak_rss / 1024:.0f} MB (sum over {peak_procs} processes)")
    print(f"peak PSS     {peak_pss / 1024:.0f} MB (shared pages divided)")
    memory_ok = peak_rss / 1024 <= BUDGET_RSS_MB

    def verdict(seconds: float) -> str:
        return "within" if seconds <= BUDGET_SECONDS and memory_ok else "OVER"

    print(f"budget       <= {BUDGET_SECONDS:.0f} s, <= {BUDGET_RSS_MB:.0f} MB: "
          f"measured {verdict(wall)}; CPU/jobs {verdict(cpu / args.jobs)}")  # fmt: skip
    ratios = []
    for peer in [] if args.no_coccinelle else peers(args.jobs):
        m_peer = coccinelle(args.kernel, args.subdir, peer, args.interval)
        if m_peer is not None:
            ratios.append((peer.name, wall / m_peer.wall, cpu / max(m_peer.cpu, 1e-9)))
    for name, by_wall, by_cpu in ratios:
        print(f"ratio        dpmlens (all rules) / {name}: wall {by_wall:.2f}x, "
              f"CPU {by_cpu:.2f}x")  # fmt: skip
    if not args.no_cache_bench:
        return bench_cache(dpmlens, Path(args.kernel), args.subdir, args.jobs, args.extra)
    return 0


def _link_tree(kernel: Path, subdir: str, into: Path) -> None:
    """A copy of KERNEL/SUBDIR (and the top Makefile, which rules read) made of hard links:
    instant, no extra disk, and a file can be "touched" by replacing its link with a copy
    without writing to the real tree. Falls back to real copies across file systems."""

    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    shutil.copytree(kernel / subdir, into / subdir, copy_function=link, symlinks=True)
    if (kernel / "Makefile").is_file():
        link(str(kernel / "Makefile"), str(into / "Makefile"))


def _victim(tree: Path) -> Path:
    """The largest .c file with PM code (its key is recomputed from its whole directory)."""
    files = sorted(tree.rglob("*.c"), key=lambda p: p.stat().st_size, reverse=True)
    return next((p for p in files if b"dev_pm_ops" in p.read_bytes()), files[0])


def _touch(path: Path) -> None:
    """Same bytes, new inode and mtime: what an editor's save or a `git checkout` leaves."""
    copy = path.with_name(path.name + ".bench-tmp")
    shutil.copyfile(path, copy)
    os.replace(copy, path)


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(command: list[str], cwd: Path) -> tuple[float, float, dict]:
    """(wall, CPU of the process tree, the JSON report) of one run."""
    started, cpu = time.monotonic(), _cpu()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    if done.returncode not in (0, 1):
        raise RuntimeError(done.stderr)
    report = json.loads(Path(command[command.index("--output") + 1]).read_text())
    return wall, _cpu() - cpu, report


def bench_cache(dpmlens: str, kernel: Path, subdir: str, jobs: int, extra: list[str]) -> int:
    """Cold, warm, and one-file-touched runs with the result cache (README: result cache)."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        _link_tree(kernel, subdir, tree)
        report = Path(tmp) / "report.json"
        command = [dpmlens, "check", "--jobs", str(jobs), "--format", "json", "--cache-dir",
                   str(Path(tmp) / "cache"), "--output", str(report), "--quiet", *extra,
                   subdir]  # fmt: skip
        print("$ dpmlens", " ".join(command[1:]).replace(tmp, "TMP"), "(cold, warm, touched)")
        cold, cold_cpu, first = _timed(command, tree)
        warm, warm_cpu, second = _timed(command, tree)
        victim = _victim(tree / subdir)
        _touch(victim)
        touched, touched_cpu, third = _timed(command, tree)
    same = first["findings"] == second["findings"] == third["findings"]
    print(f"cache cold   {cold:.2f} s  (CPU {cold_cpu:.2f} s)")
    verdict = "within" if warm <= BUDGET_WARM else "OVER"
    print(f"cache warm   {warm:.2f} s  (CPU {warm_cpu:.2f} s; budget <= {BUDGET_WARM:.1f} s: "
          f"{verdict})")  # fmt: skip
    verdict = "within" if touched <= BUDGET_TOUCHED else "OVER"
    print(f"cache touch  {touched:.2f} s  (CPU {touched_cpu:.2f} s; budget <= "
          f"{BUDGET_TOUCHED:.1f} s: {verdict}) after touching {victim.relative_to(tree)}")  # fmt: skip
    print(f"cache same   {'yes' if same else 'NO'}: warm and touched findings equal cold")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())

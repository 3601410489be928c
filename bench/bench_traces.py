#!/usr/bin/env python3
"""Benchmark the trace importers (see BENCHMARKS.md, "Traces").

Generates a sleepgraph-like ftrace capture of CYCLES suspend/resume cycles x DEVICES devices
(8 phases each: prepare .. complete, async-interleaved callbacks, kprobe lines between them as
sleepgraph records them), the same content as a Perfetto trace written with the perfetto
package's StreamingTraceProtoBuilder, and optionally a ~1 GB ftrace file with the same PM
content and more kprobe lines. Each file is loaded by `load_traces()` + `aggregate()` in a
fresh child process, which reports wall time, CPU time and its peak RSS (ru_maxrss).

    python bench/bench_traces.py [--cycles 100] [--devices 600] [--noise 3] [--big-gb 1.0]
                                 [--no-perfetto] [--graph [--graph-extra N]] [--analysis]

--analysis also times, on the first file, the timeline, the critical paths and the what-if
replay (no change, --async all) in a fresh child process. `trace report --format json` is
timed on the first file as a user runs it (CPU time, peak RSS, JSON size; and the JSON size
with --per-cycle).

Data goes to bench-data/traces/ (gitignored) and is reused when the parameters match.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench-data" / "traces"
BUDGET_MB_S = 50.0
BUDGET_RSS_MB = 200.0

# (marker, pm event value, info prefix, verb)
PHASES = [
    ("dpm_prepare", 2, "", "suspend"),
    ("dpm_suspend", 2, "", "suspend"),
    ("dpm_suspend_late", 2, "late ", "suspend"),
    ("dpm_suspend_noirq", 2, "noirq ", "suspend"),
    ("dpm_resume_noirq", 16, "noirq ", "resume"),
    ("dpm_resume_early", 16, "early ", "resume"),
    ("dpm_resume", 16, "", "resume"),
    ("dpm_complete", 16, "", "resume"),
]
LAYERS = ["bus ", "driver ", "type ", "power domain ", "class "]


def _devices(n: int) -> list[tuple[str, str, str, str]]:
    out = []
    for i in range(n):
        drv = f"drv{i % 97}"
        dev = f"0000:{i // 32:02x}:{i % 32:02x}.{i % 8}"
        parent = "pci0000:00" if i % 5 else "none"
        out.append((drv, dev, parent, LAYERS[i % len(LAYERS)]))
    return out


def _duration_us(cycle: int, dev: int, phase: int) -> int:
    # deterministic, skewed: most callbacks are short, a few devices are slow
    h = (cycle * 2654435761 + dev * 40503 + phase * 97) & 0xFFFFFFFF
    base = 5 + h % 200
    if dev % 50 == 0:
        base += 20000 + h % 5000
    return base


def _events(cycles: int, devices: list[tuple[str, str, str, str]]):
    """Yield (ts_ns, cpu, kind, fields) in time order; kind: 'sr', 'start', 'end'."""
    t = 100_000_000_000
    for c in range(cycles):
        for p, (marker, val, stage, verb) in enumerate(PHASES):
            yield t, 0, "sr", (marker, val, 1)
            t += 1000
            pair = []
            for d, (drv, dev, parent, layer) in enumerate(devices):
                info = "" if p in (0, 7) else stage + layer
                pair.append((d, drv, dev, parent, info))
                if len(pair) == 2 or d == len(devices) - 1:
                    ends = []
                    for dd, drv2, dev2, parent2, info2 in pair:
                        yield t, dd % 4, "start", (drv2, dev2, parent2, info2, val)
                        ends.append((t + _duration_us(c, dd, p) * 1000, dd, drv2, dev2))
                        t += 2000
                    for te, dd, drv2, dev2 in sorted(ends):
                        yield te, dd % 4, "end", (drv2, dev2, 0)
                    t = max(e[0] for e in ends) + 3000
                    pair = []
            yield t, 0, "sr", (marker, val, 0)
            t += 5000
        t += 2_000_000_000


def write_ftrace(path: Path, cycles: int, ndev: int, noise: int) -> None:
    devices = _devices(ndev)
    with open(path, "w", buffering=1 << 20) as f:
        f.write("# suspend-112226-101500 benchhost mem 6.12.0\n# tracer: nop\n#\n"
                "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n")
        buf: list[str] = []
        for ts_ns, cpu, kind, fields in _events(cycles, devices):
            ts = f"{ts_ns // 1000 // 1_000_000}.{ts_ns // 1000 % 1_000_000:06d}"
            task = f"     kworker/u8:{cpu}-{190 + cpu:<5} [{cpu:03d}] d..1. {ts:>13}: "
            if kind == "sr":
                buf.append(f"{task}suspend_resume: {fields[0]}[{fields[1]}] "
                           f"{'begin' if fields[2] else 'end'}\n")
            elif kind == "start":
                drv, dev, parent, info, val = fields
                verb = "suspend" if val == 2 else "resume"
                buf.append(f"{task}device_pm_callback_start: {drv} {dev}, parent: {parent}, "
                           f"{info}[{verb}]\n")
                # what sleepgraph's kprobes add inside a callback: one device in eight
                # sleeps (whole msleep call/return pairs), the other lines are kprobes that
                # dpmlens does not read
                sleeps = dev.endswith(".0")
                for k in range(noise):
                    if not sleeps or k >= noise - noise % 2:
                        buf.append(f"{task}acpi_os_stall_cal: (acpi_os_stall+0x0/0x30) "
                                   "arg1=0xa\n")
                    elif k % 2 == 0:
                        buf.append(f"{task}msleep_cal: (msleep+0x0/0x40) time=10\n")
                    else:
                        buf.append(f"{task}msleep_ret: (rtl8169_suspend+0x5c/0x90 [r8169] <- "
                                   "msleep) arg1=0x0\n")
            else:
                drv, dev, err = fields
                buf.append(f"{task}device_pm_callback_end: {drv} {dev}, err={err}\n")
            if len(buf) > 20000:
                f.write("".join(buf))
                buf.clear()
        f.write("".join(buf))


def _fg_prologue(us: int, cpu: int) -> str:
    return f"{us // 1_000_000:5d}.{us % 1_000_000:06d} |   {cpu}) kworker-{190 + cpu}  | "


_FG_HELPERS = ("readl", "writel", "regmap_write", "mutex_lock", "mutex_unlock",
               "_raw_spin_lock_irqsave", "clk_prepare_enable", "pm_runtime_get_sync")


def _fg_extra(pro_of, drv: str, n: int, seed: int) -> list[str]:
    """n more graph lines of functions that are no delays: calls of a helper with two leaves
    each, durations varying (a real -f capture: far more such lines than PM events)."""
    out: list[str] = []
    blank = " " * 14
    for k in range(n // 4):
        h = (seed * 2654435761 + k * 40503) & 0xFFFFFFFF
        a, b = _FG_HELPERS[h % 8], _FG_HELPERS[(h >> 3) % 8]
        d1, d2 = 0.1 + (h % 900) / 1000, 0.2 + (h >> 5) % 3000 / 100
        pro = pro_of(k)
        out.append(f"{pro}{blank}|      {drv}_hw_step{k % 5}() {{\n"
                   f"{pro}{d1:8.3f} us    |        {a}();\n"
                   f"{pro}{d2:8.3f} us    |        {b}();\n"
                   f"{pro}{d1 + d2 + 0.3:8.3f} us    |      }} /* {drv}_hw_step{k % 5} */\n")
    return out


def write_fgraph(path: Path, cycles: int, ndev: int, extra: int = 0) -> None:
    """The same PM content as sleepgraph -f records it (function_graph tracer): the events as
    graph comments, and in each callback a graph of 7 lines with an msleep and a udelay, plus
    `extra` lines of other calls."""
    devices = _devices(ndev)
    with open(path, "w", buffering=1 << 20) as f:
        f.write("# suspend-112226-101500 benchhost mem 6.12.0\n# tracer: function_graph\n#\n"
                "#     TIME        CPU    TASK/PID        DURATION                  FUNCTION "
                "CALLS\n")
        buf: list[str] = []
        blank = " " * 14
        for ts_ns, cpu, kind, fields in _events(cycles, devices):
            us = ts_ns // 1000
            pro = _fg_prologue(us, cpu)
            if kind == "sr":
                buf.append(f"{pro}{blank}|  /* suspend_resume: {fields[0]}[{fields[1]}] "
                           f"{'begin' if fields[2] else 'end'} */\n")
            elif kind == "start":
                drv, dev, parent, info, val = fields
                verb = "suspend" if val == 2 else "resume"
                buf.append(f"{pro}{blank}|  /* device_pm_callback_start: {drv} {dev}, parent: "
                           f"{parent}, {info}[{verb}] */\n")
                pro = _fg_prologue(us + 1, cpu)
                buf.append(f"{pro}{blank}|  dpm_run_callback() {{\n"
                           f"{pro}{blank}|    {drv}_pm() {{\n")
                if extra:
                    buf.extend(_fg_extra(lambda k, us=us, cpu=cpu: _fg_prologue(us + 1 + k, cpu),
                                         drv, extra, us))
                buf.append(f"{pro}{blank}|      msleep() {{\n"
                           f"{pro}  0.500 us    |      }} /* msleep */\n"
                           f"{pro}  0.100 us    |      __const_udelay();\n"
                           f"{pro}  0.900 us    |    }} /* {drv}_pm */\n"
                           f"{pro}  0.950 us    |  }} /* dpm_run_callback */\n")
            else:
                drv, dev, err = fields
                buf.append(f"{pro}{blank}|  /* device_pm_callback_end: {drv} {dev}, "
                           f"err={err} */\n")
            if len(buf) > 20000:
                f.write("".join(buf))
                buf.clear()
        f.write("".join(buf))


def write_perfetto(path: Path, cycles: int, ndev: int) -> None:
    from perfetto.trace_builder.proto_builder import StreamingTraceProtoBuilder

    devices = _devices(ndev)
    with open(path, "wb") as f:
        builder = StreamingTraceProtoBuilder(f)
        pending: dict[int, list] = {}

        def flush(cpu: int) -> None:
            packet = builder.create_packet()
            bundle = packet.ftrace_events
            bundle.cpu = cpu
            for ts, kind, fields in pending.pop(cpu):
                ev = bundle.event.add()
                ev.timestamp = ts
                ev.pid = 190 + cpu
                if kind == "sr":
                    e = ev.suspend_resume
                    e.action, e.val, e.start = fields
                elif kind == "start":
                    e = ev.device_pm_callback_start
                    e.driver, e.device, e.parent, e.pm_ops, e.event = fields
                else:
                    e = ev.device_pm_callback_end
                    e.driver, e.device, e.error = fields
            builder.write_packet(packet)

        for ts, cpu, kind, fields in _events(cycles, devices):
            pending.setdefault(cpu, []).append((ts, kind, fields))
            if len(pending[cpu]) >= 1000:  # like per-CPU ring buffer pages read in turn
                flush(cpu)
        for cpu in list(pending):
            flush(cpu)


CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter(); c0 = time.process_time()
from dpmlens.traces import aggregate, load_traces, phase_stats
ts = load_traces(sys.argv[1:])
stats = aggregate(ts); phases = phase_stats(ts)
wall = time.perf_counter() - t0; cpu = time.process_time() - c0
print(json.dumps({"wall": wall, "cpu": cpu, "samples": ts.sample_count, "cycles": ts.cycles,
                  "callbacks": len(stats), "errors": ts.errors, "skipped": ts.skipped_lines,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

# Timeline, critical paths and the what-if replay of the first file (after loading it).
ANALYSIS = r"""
import json, sys, time
from dpmlens.traces import load_traces
from dpmlens.traces.analysis.critical import critical_path
from dpmlens.traces.analysis.delays import measured_delays
from dpmlens.traces.model.timeline import build_timeline
from dpmlens.traces.analysis.whatif import Changes, matcher, what_if
ts = load_traces(sys.argv[1:])
out = {}
c0 = time.process_time(); runs = build_timeline(ts); delays = measured_delays(ts, runs)
out["timeline"] = time.process_time() - c0
c0 = time.process_time(); [critical_path(r) for r in runs]; out["critical"] = time.process_time() - c0
for name, ch in (("replay, no change", Changes()),
                 ("replay, --async all", Changes(make_async=matcher(["all"])))):
    c0 = time.process_time(); what_if(runs, delays, ch); out[name] = time.process_time() - c0
out["intervals"] = sum(len(r.intervals) for r in runs)
print(json.dumps(out))
"""

# `dpmlens trace report --format json` as a user runs it (load, analysis, JSON written).
REPORT = r"""
import json, os, resource, sys, time
t0 = time.perf_counter(); c0 = time.process_time()
from dpmlens.cli import main
rc = main(["trace", "report", "--format", "json", "-o", sys.argv[2], *sys.argv[3:], sys.argv[1]])
wall = time.perf_counter() - t0; cpu = time.process_time() - c0
print(json.dumps({"rc": rc, "wall": wall, "cpu": cpu, "json_mb": os.path.getsize(sys.argv[2]) / 1e6,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""
BUDGET_REPORT_MB_S = 60.0

BASELINE = r"""
import json, resource
import dpmlens.traces
print(json.dumps({"rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def measure(path: Path) -> dict:
    r = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True,
                       check=True)
    data = json.loads(r.stdout)
    size = path.stat().st_size / 1e6
    data.update(file=path.name, mb=round(size, 1), mb_s_wall=round(size / data["wall"], 1),
                mb_s_cpu=round(size / data["cpu"], 1))
    return data


def _ensure(path: Path, params: str, make) -> None:
    stamp = path.with_suffix(path.suffix + ".params")
    if path.exists() and stamp.exists() and stamp.read_text() == params:
        return
    t0 = time.perf_counter()
    make()
    stamp.write_text(params)
    print(f"  generated {path.name}: {path.stat().st_size / 1e6:.0f} MB in "
          f"{time.perf_counter() - t0:.0f} s", file=sys.stderr)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cycles", type=int, default=100)
    ap.add_argument("--devices", type=int, default=600)
    ap.add_argument("--noise", type=int, default=3, help="kprobe lines inside each callback")
    ap.add_argument("--big-gb", type=float, default=1.0,
                    help="also a file of about this many GB with the same PM content (0: none)")
    ap.add_argument("--no-perfetto", action="store_true")
    ap.add_argument("--graph", action="store_true",
                    help="also the capture as sleepgraph -f records it (function_graph)")
    ap.add_argument("--graph-extra", type=int, default=0, metavar="N",
                    help="with --graph, also a capture with N more graph lines per callback")
    ap.add_argument("--analysis", action="store_true",
                    help="also time the timeline, critical paths and what-if replay")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    key = f"{args.cycles}x{args.devices}"
    files: list[Path] = []

    ft = args.out / f"bench_{key}_n{args.noise}_ftrace.txt"
    _ensure(ft, f"{key} {args.noise} paired",
            lambda: write_ftrace(ft, args.cycles, args.devices, args.noise))
    files.append(ft)
    if args.big_gb > 0:
        per_noise = ft.stat().st_size / max(args.noise + 3, 1)  # rough bytes per noise unit
        noise = max(args.noise, int(args.big_gb * 1e9 / per_noise) - 3)
        big = args.out / f"bench_{key}_n{noise}_ftrace.txt"
        _ensure(big, f"{key} {noise} paired", lambda: write_ftrace(big, args.cycles, args.devices, noise))
        files.append(big)
    if args.graph:
        fg = args.out / f"bench_{key}_fgraph_ftrace.txt"
        _ensure(fg, key, lambda: write_fgraph(fg, args.cycles, args.devices))
        files.append(fg)
        if args.graph_extra:
            fx = args.out / f"bench_{key}_fgraph{args.graph_extra}_ftrace.txt"
            _ensure(fx, f"{key} {args.graph_extra}",
                    lambda: write_fgraph(fx, args.cycles, args.devices, args.graph_extra))
            files.append(fx)
    if not args.no_perfetto:
        pf = args.out / f"bench_{key}.perfetto-trace"
        _ensure(pf, key, lambda: write_perfetto(pf, args.cycles, args.devices))
        files.append(pf)

    base = json.loads(subprocess.run([sys.executable, "-c", BASELINE], capture_output=True,
                                     text=True, check=True).stdout)["rss_mb"]
    print(f"interpreter + dpmlens.traces imported: {base:.0f} MB RSS "
          f"(load average {os.getloadavg()[0]:.1f})")
    print(f"{'file':<44} {'MB':>7} {'wall s':>7} {'cpu s':>7} {'MB/s wall':>9} "
          f"{'MB/s cpu':>9} {'RSS MB':>7} {'samples':>8} {'cycles':>6}")
    ok = True
    for f in files:
        m = measure(f)
        print(f"{m['file']:<44} {m['mb']:>7.1f} {m['wall']:>7.2f} {m['cpu']:>7.2f} "
              f"{m['mb_s_wall']:>9.1f} {m['mb_s_cpu']:>9.1f} {m['rss_mb']:>7.0f} "
              f"{m['samples']:>8} {m['cycles']:>6}")
        if m["errors"] or m["skipped"]:
            print(f"  errors={m['errors']} skipped={m['skipped']}")
            ok = False
        if f.suffix == ".txt":
            ok &= m["mb_s_cpu"] >= BUDGET_MB_S and m["rss_mb"] < BUDGET_RSS_MB
    print(f"budgets (ftrace text): >= {BUDGET_MB_S:.0f} MB/s on one core (CPU time), "
          f"peak RSS < {BUDGET_RSS_MB:.0f} MB: {'met' if ok else 'NOT met'}")
    size = ft.stat().st_size / 1e6
    out_json = args.out / "report.json"
    for extra in ([], ["--per-cycle"]):
        r = subprocess.run([sys.executable, "-c", REPORT, str(ft), str(out_json), *extra],
                           capture_output=True, text=True, check=True)
        m = json.loads(r.stdout.strip().splitlines()[-1])
        mb_s = size / m["cpu"]
        print(f"trace report --format json {' '.join(extra) or '(default)':<12} {ft.name}: "
              f"{m['cpu']:.2f} s CPU, {mb_s:.1f} MB/s, peak RSS {m['rss_mb']:.0f} MB, "
              f"JSON {m['json_mb']:.1f} MB")
        if not extra:
            met = mb_s >= BUDGET_REPORT_MB_S and m["rss_mb"] <= BUDGET_RSS_MB
            ok &= met
            print(f"budgets (report json): >= {BUDGET_REPORT_MB_S:.0f} MB/s on one core, peak "
                  f"RSS <= {BUDGET_RSS_MB:.0f} MB: {'met' if met else 'NOT met'}")
    out_json.unlink(missing_ok=True)
    if args.analysis:
        r = subprocess.run([sys.executable, "-c", ANALYSIS, str(ft)], capture_output=True,
                           text=True, check=True)
        a = json.loads(r.stdout)
        print(f"analysis of {ft.name} ({a.pop('intervals')} callback intervals), CPU s: "
              + ", ".join(f"{k} {v:.2f}" for k, v in a.items()))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

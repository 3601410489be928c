#!/usr/bin/env python3
"""Real A/B experiments from the capture lab, and the what-if of A checked against B.

For each kernel, four configurations are captured under qemu (lab/run_lab.py), each as
--parts boots of --cycles/--parts S3 cycles, boots interleaved A1, async0, fastenum, A2, A1, ...
so that host load spreads over all of them:
  A1, A2     defaults (run twice: their difference is the noise)
  async0     /sys/power/pm_async = 0
  fastenum   every USB port's quirks = 2 (USB_PORT_QUIRK_FAST_ENUM: 10-12 ms reset recovery)
Then, with the dpmlens CLI only, each B is compared with the what-if from A:
  async0   <- whatif A --sync all          A <- whatif async0 --async all
  fastenum <- whatif A --delay hub_port_reset=12 ; whatif A --spec-minimums --source T/drivers/usb
and --ordering 6.16 from A is reported (no 6.16 kernel to measure it against: see docs).
Medians per phase over cycles, 95% bootstrap intervals of the medians, the A1-vs-A2 noise.

    lab/ab_experiment.py --kernel 6.1 --cycles 16 --work build/lab/ab \
        --out test-fixtures/lab/ab/ab-6.1 --fixtures test-fixtures/lab/ab
    (--no-run: analyse captures already in --work; --work test-fixtures/lab/ab --no-run
    re-makes the summaries from the checked-in xz captures, as tests/test_lab_whatif.py does)

Starved boots (the rule, fixed before the 32-cycle 6.1 runs): under host load a TCG guest
is starved and every callback stretches. A boot is starved when the median over its cycles
of the e1000 0000:00:03.0 resume callback (CPU work, no sleep, no knob touches it) is more
than twice the median of that callback over all the kernel's boots; a starved boot is
re-run and listed in OUT.json ("starved"), never dropped silently.

Writes OUT.json and OUT.md (atomically).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOP = HERE.parent
PHASES = ["prepare", "suspend", "suspend_late", "suspend_noirq", "resume_noirq",
          "resume_early", "resume", "complete"]
CONFIGS = {"A1": [], "async0": ["--pm-async", "0"], "fastenum": ["--quirks", "2"], "A2": []}
TREES = {"6.1": "/work/linux/linux-source-6.1", "6.12": "/work/linux/linux-source-6.12"}
# The kernel's own phase lines (pm_debug_messages): "PM: resume of devices complete after 915.2 msecs"
KERNEL_LINE = re.compile(r"PM: (noirq |early |late )?(suspend|resume) of devices complete after ([0-9.]+) msecs")
KERNEL_PHASE = {("", "suspend"): "suspend", ("late ", "suspend"): "suspend_late",
                ("noirq ", "suspend"): "suspend_noirq", ("noirq ", "resume"): "resume_noirq",
                ("early ", "resume"): "resume_early", ("", "resume"): "resume"}


def dpmlens() -> list[str]:
    venv = TOP / ".venv" / "bin" / "dpmlens"
    return [str(venv)] if venv.exists() else ["dpmlens"]


def run_captures(args: argparse.Namespace) -> None:
    parts = args.parts
    per = max(1, args.cycles // parts)
    for part in range(1, parts + 1):
        for name, extra in CONFIGS.items():
            out = args.work / args.kernel / name / f"part{part}"
            if (out / "ftrace.txt").exists():
                continue
            cmd = [sys.executable, str(HERE / "run_lab.py"), "--quiet", "--kernel", args.kernel,
                   "--mode", "mem", "--cycles", str(per), "--retries", "5", "--nice", str(args.nice),
                   "--out", str(out)] + extra
            print(f"ab: {' '.join(cmd[1:])}", file=sys.stderr)
            subprocess.run(cmd, check=True)


def files(args: argparse.Namespace, name: str, kind: str) -> list[str]:
    """The capture files of run NAME (plain, or .xz/.gz as checked in under test-fixtures)."""
    folder = args.work / args.kernel / name
    return sorted(str(p) for ext in ("", ".xz", ".gz") for p in folder.glob(f"part*/{kind}.txt{ext}"))


def async_devices(args: argparse.Namespace, name: str) -> list[str]:
    """The devices that ran on an async worker in run NAME (those with power/async enabled:
    pm_async does not change that flag, the guest did not record sysfs)."""
    rep = report(args, name, ["--timeline"])
    out = set()
    for run in rep.get("timeline") or []:
        sync = run.get("sync_thread")
        for iv in run.get("callbacks", []):
            if iv.get("thread") != sync:
                out.add(iv["device"])
    return sorted(out)


def whatif(args: argparse.Namespace, name: str, options: list[str]) -> dict:
    out = subprocess.run(dpmlens() + ["trace", "whatif", *files(args, name, "ftrace"), *options,
                                      "--format", "json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def report(args: argparse.Namespace, name: str, extra: list[str] | None = None) -> dict:
    out = subprocess.run(dpmlens() + ["trace", "report", *files(args, name, "ftrace"), "--format", "json",
                                      *(extra or [])],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def per_cycle(result: dict, key: str) -> dict[str, list[float]]:
    values: dict[str, list[float]] = {p: [] for p in PHASES}
    for run in result["runs"]:
        if run["phase"] in values:
            values[run["phase"]].append(run[key] / 1000.0)
    return values


def kernel_lines(args: argparse.Namespace, name: str) -> dict[str, list[float]]:
    values: dict[str, list[float]] = {p: [] for p in KERNEL_PHASE.values()}
    for path in files(args, name, "dmesg"):
        for m in KERNEL_LINE.finditer(Path(path).read_text(errors="replace")):
            values[KERNEL_PHASE[(m.group(1) or "", m.group(2))]].append(float(m.group(3)))
    return values


def median_ci(xs: list[float], seed: int = 1) -> dict:
    if not xs:
        return {"n": 0, "median": None, "lo": None, "hi": None}
    rng = random.Random(seed)
    boots = sorted(statistics.median(rng.choices(xs, k=len(xs))) for _ in range(2000))
    return {"n": len(xs), "median": statistics.median(xs), "lo": boots[50], "hi": boots[1949]}


def path_devices(critical: list[dict], phase: str) -> dict[str, float]:
    """How often each device is on the critical path of PHASE (share of cycles), and the
    devices that carry >= 5% of the phase on at least half the cycles."""
    runs = [c for c in critical if c["phase"] == phase]
    seen: dict[str, int] = {}
    shares = []
    for run in runs:
        wall = run.get("predicted_us") or run.get("wall_us") or 1.0
        shares.append(sum(s["duration_us"] for s in run["chain"]) / wall)
        for dev in {f"{s['driver'] or '-'} {s['device']}" for s in run["chain"]
                    if s["duration_us"] >= 0.05 * wall}:
            seen[dev] = seen.get(dev, 0) + 1
    out = {d: n / len(runs) for d, n in sorted(seen.items()) if runs and n / len(runs) >= 0.5}
    if shares:  # how much of the phase the path's callbacks explain (the rest: waits)
        out["(callbacks' share of the phase)"] = statistics.median(shares)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kernel", choices=sorted(TREES), required=True)
    p.add_argument("--cycles", type=int, default=12)
    p.add_argument("--parts", type=int, default=2)
    p.add_argument("--work", type=Path, default=TOP / "build" / "lab" / "ab")
    p.add_argument("--out", type=Path, required=True, help="writes OUT.json and OUT.md")
    p.add_argument("--no-run", action="store_true")
    p.add_argument("--nice", type=int, default=5, help="qemu's niceness (run_lab.py --nice; "
                   "negative needs root: a loaded host starves TCG guests)")
    p.add_argument("--fixtures", type=Path, help="also write the captures as xz (ftrace, meta) "
                   "under FIXTURES/KERNEL/CONFIG/partN/ for the tests")
    args = p.parse_args()
    if not args.no_run:
        run_captures(args)
    for name in CONFIGS:
        if not files(args, name, "ftrace"):
            print(f"ab: no captures for {name} under {args.work / args.kernel}", file=sys.stderr)
            return 1
    measured = {name: per_cycle(whatif(args, name, []), "measured_us") for name in CONFIGS}
    kernel = {name: kernel_lines(args, name) for name in CONFIGS}
    source = Path(TREES[args.kernel]) / "drivers" / "usb"
    # pm_async=1 runs async only the devices whose power/async is enabled, and a capture
    # with pm_async=0 shows no lock (nothing runs at the same time): both are read from A2,
    # the other run of the defaults (which devices ran on workers; which delays never
    # overlapped), never its timings
    known = [x for d in async_devices(args, "A2") for x in ("--async", d)]
    locks = ["--locks-from", *files(args, "A2", "ftrace")]
    experiments = [  # (label, from, options, measured B)
        ("pm_async 1 -> 0: --sync all", "A1", ["--sync", "all"], "async0"),
        ("pm_async 0 -> 1: --async all", "async0", ["--async", "all"], "A1"),
        ("pm_async 0 -> 1: --async (A2's async devices) --locks-from A2", "async0",
         known + locks, "A1"),
        ("fast enumeration: --delay hub_port_reset:msleep(50)=12", "A1",
         ["--delay", "hub_port_reset:msleep(50)=12"], "fastenum"),
        ("fast enumeration: --delay hub_port_reset:msleep(50)=usleep_range(10000,12000)", "A1",
         ["--delay", "hub_port_reset:msleep(50)=usleep_range(10000,12000)"], "fastenum"),
        ("fast enumeration: --spec-minimums", "A1", ["--spec-minimums", "--source", str(source)], "fastenum"),
        ("--ordering 6.16 (no kernel to measure)", "A1", ["--ordering", "6.16"], None),
    ]
    result: dict = {"kernel": args.kernel, "cycles_per_run": {n: len(measured[n]["resume"]) for n in CONFIGS},
                    "host_load": sorted({line.split("load average:")[-1].strip()
                                         for n in CONFIGS for f in files(args, n, "meta")
                                         for line in Path(f).read_text().splitlines()
                                         if line.startswith("host_uptime")}),
                    # under load the HDA codec probe can time out at boot ("Cannot probe
                    # codecs"): that boot lacks the codec, whose suspend is ~0.6 s on 6.12
                    "boots_with_hda_codec": {n: f"{sum('Cannot probe codecs' not in Path(f).read_text(errors='replace') for f in files(args, n, 'dmesg'))} of {len(files(args, n, 'dmesg'))}"
                                             for n in CONFIGS},
                    "runs": {}, "noise": {}, "experiments": []}
    for name in CONFIGS:
        result["runs"][name] = {ph: median_ci(measured[name][ph]) for ph in PHASES}
        result["runs"][name]["kernel_lines"] = {ph: median_ci(v) for ph, v in kernel[name].items()}
    for ph in PHASES:
        a1, a2 = result["runs"]["A1"][ph]["median"], result["runs"]["A2"][ph]["median"]
        result["noise"][ph] = abs(a1 - a2) / max(a1, a2) * 100 if a1 and a2 else None
    for label, base, options, target in experiments:
        if not source.exists() and "--source" in options:
            result["experiments"].append({"label": label, "skipped": f"{source} is absent"})
            continue
        res = whatif(args, base, options)
        pred = per_cycle(res, "predicted_us")
        # the same what-if from A2, the other run of A: how much A's own noise moves it
        other = per_cycle(whatif(args, "A2", options), "predicted_us") if base == "A1" else None
        row: dict = {"label": label, "from": base, "measured_run": target, "options": options,
                     "not_replayed": res.get("not_replayed", []), "phases": {}}
        for ph in PHASES:
            pm = median_ci(pred[ph])
            entry = {"predicted": pm, "from_measured": result["runs"][base][ph]}
            if target:
                b = result["runs"][target][ph]
                entry["measured"] = b
                if b["median"] and pm["median"] is not None:
                    err = (pm["median"] - b["median"]) / b["median"] * 100
                    noise = result["noise"][ph] or 0.0
                    entry["error_pct"] = err
                    entry["within"] = abs(err) <= max(10.0, noise)
                    if other is not None and other[ph]:
                        o = median_ci(other[ph])
                        entry["predicted_from_A2"] = o
                        entry["error_from_A2_pct"] = (o["median"] - b["median"]) / b["median"] * 100
            row["phases"][ph] = entry
        row["critical_path_predicted"] = path_devices(res["critical_path"], "resume")
        if target:
            row["critical_path_measured"] = path_devices(report(args, target).get("critical_path") or [], "resume")
        result["experiments"].append(row)
    if args.fixtures:
        keep_fixtures(args)
    write(args.out.with_name(args.out.name + ".json"), json.dumps(result, indent=1) + "\n")
    write(args.out.with_name(args.out.name + ".md"), markdown(result))
    print(markdown(result))
    return 0


def keep_fixtures(args: argparse.Namespace) -> None:
    """xz -9e of each run's ftrace (~100 KB from ~3.3 MB; the loader reads .xz) and meta."""
    import lzma
    import shutil

    for name in CONFIGS:
        for src in sorted((args.work / args.kernel / name).glob("part*/ftrace.txt")):
            dest = args.fixtures / args.kernel / name / src.parent.name
            dest.mkdir(parents=True, exist_ok=True)
            data = lzma.compress(src.read_bytes(), preset=9 | lzma.PRESET_EXTREME)
            write_bytes(dest / "ftrace.txt.xz", data)
            if (src.parent / "meta.txt").exists():
                shutil.copyfile(src.parent / "meta.txt", dest / "meta.txt")


def write_bytes(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def fmt(m: dict) -> str:
    if not m or m.get("median") is None:
        return "-"
    return f"{m['median']:.1f} [{m['lo']:.1f}, {m['hi']:.1f}]"


def markdown(r: dict) -> str:
    out = [f"### Kernel {r['kernel']}: A/B under qemu (ms, median [95% CI], n = {r['cycles_per_run']})", "",
           f"Host load averages during the runs: {'; '.join(r['host_load'])}", "",
           "Boots whose HDA codec probed (the others lack it): "
           + ", ".join(f"{n} {v}" for n, v in r["boots_with_hda_codec"].items()), "",
           "| phase | A1 | A2 | noise A1/A2 | pm_async=0 | fast enum |", "|---|---|---|---|---|---|"]
    for ph in PHASES:
        runs = r["runs"]
        noise = r["noise"][ph]
        out.append(f"| {ph} | {fmt(runs['A1'][ph])} | {fmt(runs['A2'][ph])} | "
                   f"{'-' if noise is None else f'{noise:.1f}%'} | {fmt(runs['async0'][ph])} | {fmt(runs['fastenum'][ph])} |")
    kl = r["runs"]
    out += ["", "The kernel's own `PM: resume of devices complete after` lines (ms): "
            + ", ".join(f"{n} {fmt(kl[n]['kernel_lines']['resume'])}" for n in kl), ""]
    for e in r["experiments"]:
        if "skipped" in e:
            out += [f"**{e['label']}**: skipped ({e['skipped']})", ""]
            continue
        out += [f"**{e['label']}** (from {e['from']}" + (f", measured {e['measured_run']})" if e["measured_run"] else ")"),
                "", "| phase | from (measured) | predicted | measured B | error | within max(10%, noise) | from A2: predicted, error |",
                "|---|---|---|---|---|---|---|"]
        for ph, v in e["phases"].items():
            err = v.get("error_pct")
            e2 = v.get("error_from_A2_pct")
            a2 = "-" if e2 is None else f"{fmt(v['predicted_from_A2'])}, {e2:+.1f}%"
            out.append(f"| {ph} | {fmt(v['from_measured'])} | {fmt(v['predicted'])} | {fmt(v.get('measured', {}))} | "
                       f"{'-' if err is None else f'{err:+.1f}%'} | {v.get('within', '-')} | {a2} |")
        pred = ", ".join(f"{d} ({s:.0%})" for d, s in e["critical_path_predicted"].items()) or "-"
        out += ["", f"Resume critical path predicted (devices >= 5% of the phase, on >= half the cycles): {pred}"]
        if "critical_path_measured" in e:
            meas = ", ".join(f"{d} ({s:.0%})" for d, s in e["critical_path_measured"].items()) or "-"
            out.append(f"Measured in B: {meas}")
        if e["not_replayed"]:
            out.append("Not replayed: " + "; ".join(map(str, e["not_replayed"])))
        out.append("")
    return "\n".join(out) + "\n"


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


if __name__ == "__main__":
    sys.exit(main())

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
# Debian's source trees (apt-get install linux-source-6.x, extracted); DPMLENS_LINUX moves them.
LINUX = Path(os.environ.get("DPMLENS_LINUX", "/work/linux"))
TREES = {k: str(LINUX / f"linux-source-{k}") for k in ("6.1", "6.12")}
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
            if args.configs and name not in args.configs:
                continue
            out = args.work / args.kernel / name / f"part{part}"
            if (out / "ftrace.txt").exists():
                continue
            cmd = [sys.executable, str(HERE / "run_lab.py"), "--quiet", "--kernel", args.kernel,
                   "--mode", "mem", "--cycles", str(per), "--retries", "5", "--nice", str(args.nice),
                   "--out", str(out)] + extra + (["--sched"] if args.sched else []) + (["--no-kprobes"] if args.no_kprobes else [])
            print(f"ab: {' '.join(cmd[1:])}", file=sys.stderr)
            subprocess.run(cmd, check=True)


def all_parts(args: argparse.Namespace, name: str) -> list[Path]:
    """The boots of run NAME (partN folders holding an ftrace capture, plain or .xz/.gz)."""
    folder = args.work / args.kernel / name
    return sorted({p.parent for ext in ("", ".xz", ".gz")
                   for p in folder.glob(f"part*/ftrace.txt{ext}")},
                  key=lambda p: int(p.name[4:]) if p.name[4:].isdigit() else 0)


def part_files(parts: list[Path], kind: str) -> list[str]:
    return sorted(str(p) for part in parts for ext in ("", ".xz", ".gz")
                  for p in part.glob(f"{kind}.txt{ext}"))


def files(args: argparse.Namespace, name: str, kind: str) -> list[str]:
    """The capture files of run NAME's kept boots (args.keep; all boots before it is set)."""
    keep = getattr(args, "keep", None)
    return part_files(keep[name] if keep else all_parts(args, name), kind)


def boot_facts(args: argparse.Namespace) -> dict[str, dict[str, dict]]:
    """Per run and boot: the e1000 resume callback's median (the starvation yardstick: CPU
    work that no knob touches), whether the HDA codec probed, the host's load."""
    out: dict[str, dict[str, dict]] = {name: {} for name in CONFIGS}
    for name in CONFIGS:
        for part in all_parts(args, name):
            rep = report_files(part_files([part], "ftrace"))
            e1000 = [c["median_us"] / 1000 for c in rep["callbacks"]
                     if c["driver"] == "e1000" and c["phase"] == "resume"]
            codec = any(c["device"].startswith("hdaudioC") for c in rep["callbacks"])
            load = [line.split("load average:")[-1].strip()
                    for f in part_files([part], "meta") for line in Path(f).read_text().splitlines()
                    if line.startswith("host_uptime")]
            out.setdefault(name, {})[part.name] = {
                "e1000_resume_ms": e1000[0] if e1000 else None, "hda_codec": codec,
                "host_load": load[0] if load else None}
    ref = statistics.median([b["e1000_resume_ms"] for runs in out.values() for b in runs.values()
                             if b["e1000_resume_ms"] is not None] or [0.0])
    for runs in out.values():
        for b in runs.values():
            b["starved"] = b["e1000_resume_ms"] is not None and b["e1000_resume_ms"] > 2 * ref
    out["_rule"] = {"e1000_resume_ms_median_all_boots": ref,  # type: ignore[dict-item]
                    "starved_above_ms": 2 * ref}
    return out


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


# The CLI's answers, by (command, files, options): each asked once. An analysis is first run
# with RECORD set, which notes the calls it makes and answers them with EMPTY; those run in
# parallel (--jobs), then the analysis runs again on the answers (a call that depended on
# another's answer, the informed --async's device list, runs when it is met).
CACHE: dict[tuple, dict] = {}
RECORD: list[tuple] | None = None
EMPTY = {"whatif": {"runs": [], "critical_path": [], "not_replayed": []},
         "report": {"callbacks": [], "critical_path": [], "timeline": []}}


def cli(key: tuple) -> dict:
    if key in CACHE:
        return CACHE[key]
    if RECORD is not None:
        RECORD.append(key)
        return EMPTY[key[0]]
    command, paths, options = key
    out = subprocess.run(dpmlens() + ["trace", command, *paths, *options, "--format", "json"],
                         check=True, capture_output=True, text=True)
    CACHE[key] = json.loads(out.stdout)
    return CACHE[key]


def prefetched(jobs: int, fn, *a, **kw):  # any analysis
    """fn(*a, **kw) with the CLI calls it makes run JOBS at a time first."""
    global RECORD
    from concurrent.futures import ThreadPoolExecutor

    RECORD = []
    try:
        fn(*a, **kw)
        wanted = list(dict.fromkeys(k for k in RECORD if k not in CACHE))
    finally:
        RECORD = None
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        list(pool.map(cli, wanted))
    return fn(*a, **kw)


def whatif_files(paths: list[str], options: list[str]) -> dict:
    return cli(("whatif", tuple(paths), tuple(options)))


def whatif(args: argparse.Namespace, name: str, options: list[str]) -> dict:
    return whatif_files(files(args, name, "ftrace"), options)


def report_files(paths: list[str], extra: list[str] | None = None) -> dict:
    return cli(("report", tuple(paths), tuple(extra or [])))


def report(args: argparse.Namespace, name: str, extra: list[str] | None = None) -> dict:
    return report_files(files(args, name, "ftrace"), extra)


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


# 6.12's HDA codec suspends in ~610 ms when it probed at boot (under host load the probe can
# time out: "Cannot probe codecs"), so suspend is also compared over the boots without it,
# on both sides: this pseudo-phase
NOCODEC = "suspend (boots without the HDA codec)"


def experiments(args: argparse.Namespace) -> list[tuple[str, str, list[str], str | None]]:
    source = Path(TREES[args.kernel]) / "drivers" / "usb"
    # pm_async=1 runs async only the devices whose power/async is enabled, and a capture
    # with pm_async=0 shows no lock (nothing runs at the same time): both are read from A2,
    # the other run of the defaults (which devices ran on workers; which delays never
    # overlapped), never its timings
    known = [x for d in async_devices(args, "A2") for x in ("--async", d)] if args.keep.get("A2") else []
    locks = ["--locks-from", *files(args, "A2", "ftrace")]
    return [  # (label, from, options, measured B)
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


def analyse(args: argparse.Namespace, boots: dict[str, dict[str, dict]], cpus: list[str],
            rows: tuple[str, ...] | None = None) -> dict:
    """Medians, noise and every experiment over the boots in args.keep; CPUS: the what-if's
    options (--cpus, --no-sched, ...; empty: its defaults); ROWS: only the experiments whose
    labels start with one of these."""
    present = [n for n in CONFIGS if args.keep.get(n)]
    measured = {name: per_cycle(whatif(args, name, cpus), "measured_us") for name in present}
    kernel = {name: kernel_lines(args, name) for name in present}
    nocodec = {name: [p for p in args.keep[name] if not boots[name][p.name]["hda_codec"]]
               for name in present}
    compare_nocodec = any(boots[n][p.name]["hda_codec"] for n in present for p in args.keep[n])
    if compare_nocodec:
        for name in present:
            if nocodec[name]:
                measured[name][NOCODEC] = per_cycle(whatif_files(
                    part_files(nocodec[name], "ftrace"), cpus), "measured_us")["suspend"]
    phases = PHASES + ([NOCODEC] if compare_nocodec else [])
    result: dict = {"cycles_per_run": {n: len(measured[n]["resume"]) for n in present},
                    "boots_used": {n: [p.name for p in args.keep[n]] for n in present},
                    "runs": {}, "noise": {}, "experiments": []}
    for name in present:
        result["runs"][name] = {ph: median_ci(measured[name].get(ph, [])) for ph in phases}
        result["runs"][name]["kernel_lines"] = {ph: median_ci(v) for ph, v in kernel[name].items()}
    for ph in phases:
        a1, a2 = result["runs"]["A1"][ph]["median"], result["runs"]["A2"][ph]["median"]
        result["noise"][ph] = abs(a1 - a2) / max(a1, a2) * 100 if a1 and a2 else None
    for label, base, options, target in experiments(args):
        if rows is not None and not label.startswith(rows):
            continue
        if base not in present or (target is not None and target not in present):
            result["experiments"].append({"label": label, "skipped": "not captured: "
                                          + ", ".join(n for n in (base, target)
                                                      if n is not None and n not in present)})
            continue
        if "--source" in options and not Path(options[options.index("--source") + 1]).exists():
            result["experiments"].append({"label": label, "skipped":
                                          f"{options[options.index('--source') + 1]} is absent"})
            continue
        res = whatif(args, base, options + cpus)
        if "delay-unmeasured" in (res.get("change_kinds") or []):
            # the what-if says it cannot predict this from this evidence (no band): no row
            result["experiments"].append({"label": label, "skipped": "not predicted: "
                                          + (res.get("capture_next") or "nothing to replay")})
            continue
        pred = per_cycle(res, "predicted_us")
        # the same what-if from A2, the other run of A: how much A's own noise moves it
        other = per_cycle(whatif(args, "A2", options + cpus), "predicted_us") if base == "A1" else None
        if compare_nocodec:
            if nocodec[base]:
                pred[NOCODEC] = per_cycle(whatif_files(part_files(nocodec[base], "ftrace"),
                                                       options + cpus), "predicted_us")["suspend"]
            if other is not None and nocodec["A2"]:
                other[NOCODEC] = per_cycle(whatif_files(part_files(nocodec["A2"], "ftrace"),
                                                        options + cpus), "predicted_us")["suspend"]
        row: dict = {"label": label, "from": base, "measured_run": target, "options": options,
                     "not_replayed": res.get("not_replayed", []), "phases": {}}
        for ph in phases:
            pm = median_ci(pred.get(ph, []))
            entry = {"predicted": pm, "from_measured": result["runs"][base][ph]}
            if target:
                b = result["runs"][target][ph]
                entry["measured"] = b
                if b["median"] and pm["median"] is not None:
                    err = (pm["median"] - b["median"]) / b["median"] * 100
                    noise = result["noise"][ph] or 0.0
                    entry["error_pct"] = err
                    entry["within"] = abs(err) <= max(10.0, noise)
                    if other is not None and other.get(ph):
                        o = median_ci(other[ph])
                        entry["predicted_from_A2"] = o
                        entry["error_from_A2_pct"] = (o["median"] - b["median"]) / b["median"] * 100
            row["phases"][ph] = entry
        row["critical_path_predicted"] = path_devices(res["critical_path"], "resume")
        if target:
            row["critical_path_measured"] = path_devices(report(args, target).get("critical_path") or [], "resume")
        result["experiments"].append(row)
    return result


def compact(r: dict) -> dict:
    """The suspend and resume figures of an analysis (for the variants beside the main one)."""
    keep = ("suspend", "resume", NOCODEC)
    return {"cycles_per_run": r["cycles_per_run"], "boots_used": r["boots_used"],
            "runs": {n: {ph: v for ph, v in runs.items() if ph in keep} for n, runs in r["runs"].items()},
            "noise": {ph: v for ph, v in r["noise"].items() if ph in keep},
            "experiments": [{"label": e["label"], **({"skipped": e["skipped"]} if "skipped" in e else {
                "phases": {ph: {k: v for k, v in x.items() if k in ("predicted", "measured", "error_pct",
                                                                     "error_from_A2_pct", "within")}
                           for ph, x in e["phases"].items() if ph in keep}})}
                            for e in r["experiments"]]}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kernel", choices=sorted(TREES), required=True)
    p.add_argument("--cycles", type=int, default=12)
    p.add_argument("--parts", type=int, default=2)
    p.add_argument("--work", type=Path, default=TOP / "build" / "lab" / "ab")
    p.add_argument("--out", type=Path, required=True, help="writes OUT.json and OUT.md")
    p.add_argument("--no-run", action="store_true")
    p.add_argument("--sched", action="store_true",
                   help="capture sched_switch/sched_waking too (run_lab.py --sched): what each "
                        "callback waited for, for the CPU contention model")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                   help="dpmlens calls run at once (default: the CPU count)")
    p.add_argument("--evidence", action="store_true",
                   help="also predict the sync, async and delay rows from less evidence "
                        "(ignoring the delay kprobes, the scheduler's events, both): "
                        "OUT.json \"evidence\", for lab/band_table.py")
    p.add_argument("--evidence-only", action="store_true",
                   help="only the rows --evidence re-runs, and those variants (quicker)")
    p.add_argument("--no-kprobes", action="store_true",
                   help="capture without the delay kprobes (run_lab.py --no-kprobes)")
    p.add_argument("--configs", type=lambda s: s.split(","), default=None,
                   help="capture only these configurations (comma-separated, e.g. A1,async0,A2)")
    p.add_argument("--nice", type=int, default=5, help="qemu's niceness (run_lab.py --nice; "
                   "negative needs root: a loaded host starves TCG guests)")
    p.add_argument("--fixtures", type=Path, help="also write the captures as xz (ftrace, meta) "
                   "under FIXTURES/KERNEL/CONFIG/partN/ for the tests")
    args = p.parse_args()
    if not args.no_run:
        run_captures(args)
    for name in ("A1", "A2"):
        if not all_parts(args, name):
            print(f"ab: no captures for {name} under {args.work / args.kernel}", file=sys.stderr)
            return 1
    boots = prefetched(args.jobs, boot_facts, args)
    rule = boots.pop("_rule")
    args.keep = {n: [p for p in all_parts(args, n) if not boots[n][p.name]["starved"]] for n in CONFIGS}
    starved = {n: [b for b, f in boots[n].items() if f["starved"]] for n in CONFIGS}
    result: dict = {"kernel": args.kernel,
                    "host_load": sorted({b["host_load"] for runs in boots.values()
                                         for b in runs.values() if b["host_load"]}),
                    # under load the HDA codec probe can time out at boot ("Cannot probe
                    # codecs"): that boot lacks the codec, whose suspend is ~0.6 s on 6.12
                    "boots_with_hda_codec": {n: f"{sum(b['hda_codec'] for b in boots[n].values())} of {len(boots[n])}"
                                             for n in CONFIGS if boots[n]},
                    "boots": boots, "starved_rule": rule, "starved": starved}
    def variants() -> dict:
        if args.evidence_only:  # the evidence rows only (lab/band_table.py)
            out = dict(analyse(args, boots, ["--cpus", "off"], EVIDENCE_ROWS))
            out["evidence"] = {kind: compact(analyse(args, boots, opts, EVIDENCE_ROWS))
                               for kind, opts in evidence_options(args).items()}
            return out
        out = dict(analyse(args, boots, ["--cpus", "off"]))
        # the variants: with the CPU contention model (--cpus auto: the captures' #P:2; with
        # the scheduler's events when captured, and without them)
        out["with_contention"] = compact(analyse(args, boots, ["--cpus", "auto"]))
        if has_sched(args):
            out["sched_events"] = True
            out["with_contention_no_sched"] = compact(
                analyse(args, boots, ["--cpus", "auto", "--no-sched"]))
        if args.evidence:
            # the same predictions from less of the capture: what each kind of evidence is
            # worth (the error bands of traces/analysis/bands.yaml, lab/band_table.py)
            out["evidence"] = {kind: compact(analyse(args, boots, opts, EVIDENCE_ROWS))
                               for kind, opts in evidence_options(args).items()}
        return out

    result.update(prefetched(args.jobs, variants))
    if any(starved.values()) and not args.evidence_only:  # every boot, the starved ones too
        args.keep = {n: all_parts(args, n) for n in CONFIGS}
        result["with_starved_boots"] = compact(
            prefetched(args.jobs, analyse, args, boots, ["--cpus", "off"]))
    if args.fixtures:
        keep_fixtures(args)
    write(args.out.with_name(args.out.name + ".json"), json.dumps(result, indent=1) + "\n")
    write(args.out.with_name(args.out.name + ".md"), markdown(result))
    print(markdown(result))
    return 0


# the experiments the evidence variants re-run (one a change kind: sync, async, delay)
EVIDENCE_ROWS = ("pm_async 1 -> 0: --sync all", "pm_async 0 -> 1: --async (A2's",
                 "pm_async 0 -> 1: --async all",
                 "fast enumeration: --delay hub_port_reset:msleep(50)=12")


def evidence_options(args: argparse.Namespace) -> dict[str, list[str]]:
    """The what-if's options per evidence kind the captures allow: the delay kprobes (with
    their returns), the scheduler's events, both, neither (each less by ignoring events)."""
    sched = has_sched(args)
    kprobes = has_kprobes(args)
    have = {"kprobes+sched": sched and kprobes, "sched": sched, "kprobes": kprobes, "neither": True}
    return {kind: opts for kind, opts in EVIDENCE_OPTIONS.items() if have[kind]}


EVIDENCE_OPTIONS = {"kprobes+sched": [], "sched": ["--no-delays"], "kprobes": ["--no-sched"],
                    "neither": ["--no-sched", "--no-delays"]}


def has_kprobes(args: argparse.Namespace) -> bool:
    """Whether the boots were captured with delay kprobes and their returns (meta.txt
    "kprobes: msleep ...", the probes the guest could set)."""
    return any(line.startswith("kprobes:") and "msleep" in line for name in CONFIGS
               for f in part_files(all_parts(args, name), "meta")
               for line in Path(f).read_text().splitlines())


def has_sched(args: argparse.Namespace) -> bool:
    """Whether the boots were captured with the scheduler's events (meta.txt "sched: 1")."""
    return any(line.strip() == "sched: 1" for name in CONFIGS
               for f in part_files(all_parts(args, name), "meta")
               for line in Path(f).read_text().splitlines())


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
    rule = r["starved_rule"]
    out = [f"### Kernel {r['kernel']}: A/B under qemu (ms, median [95% CI], n = {r['cycles_per_run']})", "",
           f"Host load averages during the runs: {'; '.join(r['host_load'])}", "",
           "Boots whose HDA codec probed (the others lack it): "
           + ", ".join(f"{n} {v}" for n, v in r["boots_with_hda_codec"].items()), "",
           f"Starved boots (median e1000 resume callback > 2 x {rule['e1000_resume_ms_median_all_boots']:.1f} ms, "
           "the median over all boots; left out of the analysis, kept in the data): "
           + (", ".join(f"{n} {b} ({r['boots'][n][b]['e1000_resume_ms']:.1f} ms)"
                        for n, bs in r["starved"].items() for b in bs) or "none"), "",
           "| boot | " + " | ".join(CONFIGS) + " |", "|---|" + "---|" * len(CONFIGS)]
    for part in sorted({b for n in CONFIGS for b in r["boots"][n]}, key=lambda b: int(b[4:])):
        cells = []
        for n in CONFIGS:
            b = r["boots"][n].get(part)
            cells.append("-" if b is None else
                         f"e1000 {b['e1000_resume_ms']:.1f}{', codec' if b['hda_codec'] else ''}"
                         f"{', STARVED' if b['starved'] else ''}; load {b['host_load']}")
        out.append(f"| {part} | " + " | ".join(cells) + " |")
    out += ["", "| phase | A1 | A2 | noise A1/A2 | pm_async=0 | fast enum |", "|---|---|---|---|---|---|"]
    runs = r["runs"]
    for ph in r["noise"]:
        noise = r["noise"][ph]
        out.append(f"| {ph} | {fmt(runs['A1'][ph])} | {fmt(runs['A2'][ph])} | "
                   f"{'-' if noise is None else f'{noise:.1f}%'} | {fmt(runs.get('async0', {}).get(ph, {}))} | "
                   f"{fmt(runs.get('fastenum', {}).get(ph, {}))} |")
    kl = r["runs"]
    if any(kl[n]["kernel_lines"]["resume"]["n"] for n in kl):
        out += ["", "The kernel's own `PM: resume of devices complete after` lines (ms): "
                + ", ".join(f"{n} {fmt(kl[n]['kernel_lines']['resume'])}" for n in kl)]
    out.append("")
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
    for key, title in (("with_contention", "With the CPU contention model (`--cpus auto`: 2 CPUs"
                        + (", with the scheduler's events)" if r.get("sched_events") else ")")),
                       ("with_contention_no_sched", ("With the CPU contention model, without the "
                                                     "scheduler's events (`--cpus auto --no-sched`)")),
                       ("with_starved_boots", "With the starved boots (every boot)")):
        if key in r:
            out += variant(r[key], title)
    for kind, v in (r.get("evidence") or {}).items():
        out += variant(v, f"Evidence: {kind} (the what-if's defaults"
                       + (f", {' '.join(EVIDENCE_OPTIONS[kind])})" if EVIDENCE_OPTIONS[kind] else ")"))
    return "\n".join(out) + "\n"


def variant(v: dict, title: str) -> list[str]:
    out = [f"#### {title}: errors of the predictions (from A1; from A2)", "",
           f"n = {v['cycles_per_run']}; noise A1/A2: "
           + ", ".join(f"{ph} {x:.1f}%" for ph, x in v["noise"].items() if x is not None), "",
           "| what-if | " + " | ".join(v["noise"]) + " |", "|---|" + "---|" * len(v["noise"])]
    for e in v["experiments"]:
        if "skipped" in e:
            continue
        cells = []
        for ph in v["noise"]:
            x = e["phases"].get(ph, {})
            err, e2 = x.get("error_pct"), x.get("error_from_A2_pct")
            cells.append("-" if err is None else f"{err:+.1f}%" + ("" if e2 is None else f"; {e2:+.1f}%"))
        out.append(f"| {e['label']} | " + " | ".join(cells) + " |")
    return out + [""]


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


if __name__ == "__main__":
    sys.exit(main())

"""`dpmlens trace report FILE|DIR ...` and `dpmlens trace diff BEFORE ... --vs AFTER ...`.

Exit codes: 0 report written; 2 nothing could be read (every input failed) or a usage error.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import sys
from typing import Any

from dpmlens.commands import help_handler
from dpmlens.core import exit_codes
from dpmlens.core.errors import UsageError

# DiffRow fields in the order of the json objects and csv columns (csv puts "kind" first).
_DIFF_FIELDS = (
    "driver",
    "device",
    "phase",
    "n_before",
    "n_after",
    "median_before_us",
    "median_after_us",
    "change_us",
    "change_pct",
    "p",
    "verdict",
)

_LINKS_HELP = ("device links, one a line: `ls /sys/class/devlink` output "
               "(bus:supplier--bus:consumer) or 'SUPPLIER CONSUMER'; on resume a consumer "
               "waits for its suppliers, on suspend a supplier for its consumers")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("trace", help="measured suspend/resume callback latencies")
    sub = p.add_subparsers(title="trace commands", metavar="ACTION")
    rep = sub.add_parser(
        "report",
        help="slowest callbacks, phase wall times, mapping onto the source",
        description="Read dmesg (pm_print_times/initcall_debug), ftrace text (raw trace, "
        "trace-cmd report, sleepgraph *_ftrace.txt) and Perfetto traces, .gz or not; "
        "directories are read recursively (sleepgraph -multi output).",
    )
    rep.add_argument("paths", nargs="+", metavar="FILE|DIR")
    rep.add_argument(
        "--source", metavar="DIR", help="kernel tree or driver directory to map callbacks onto"
    )
    rep.add_argument("--format", choices=("table", "json", "csv", "html"), default="table")
    rep.add_argument("-o", "--output", metavar="FILE",
                     help="write the report here (html: the default is timeline.html)")
    rep.add_argument(
        "--top",
        type=int,
        default=None,
        metavar="N",
        help="show the N slowest callbacks (table default 25; json/csv: all)",
    )
    rep.add_argument("--links", metavar="FILE", help=_LINKS_HELP)
    rep.add_argument("--timeline", action="store_true",
                     help="json: add every callback interval per cycle and phase")
    rep.add_argument("--per-cycle", action="store_true",
                     help="json: add every cycle's critical path (by default the path of "
                     "each phase's median cycle and, per device, how often it is on the "
                     "path across cycles)")
    rep.set_defaults(handler=run_report)
    dif = sub.add_parser(
        "diff",
        help="before/after medians per callback and phase, Mann-Whitney U test",
        description="Compare two sets of captures; a significance test runs when both sides "
        "have >= 5 cycles.",
    )
    dif.add_argument("before", nargs="+", metavar="BEFORE")
    dif.add_argument("--vs", nargs="+", required=True, metavar="AFTER", dest="after")
    dif.add_argument("--format", choices=("table", "json", "csv"), default="table")
    dif.add_argument(
        "--top",
        type=int,
        default=25,
        metavar="N",
        help="callbacks to show, largest change first (default 25)",
    )
    dif.add_argument("--alpha", type=float, default=0.05, help="significance level (0.05)")
    dif.set_defaults(handler=run_diff)
    wi = sub.add_parser(
        "whatif",
        help="replay each phase with shorter delays or devices moved to/from async",
        description="Replay each phase's dependency graph (parents, children, threads, the "
        "synchronous loop) with changed durations and print measured and predicted phase "
        "times and the new critical path. With no change the replay reproduces the capture.",
    )
    wi.add_argument("paths", nargs="+", metavar="CAPTURE")
    wi.add_argument("--delay", action="append", default=[], metavar="FUNCTION[:DELAY[(VALUE)]]=MS",
                    help="delays called from FUNCTION (measured by sleepgraph's kprobes) "
                    "take MS milliseconds; FUNCTION:msleep only its msleep calls, "
                    "FUNCTION:msleep(50) only those requesting 50 (the delay function's "
                    "unit: msleep ms, usleep_range/udelay us) (repeatable)")
    wi.add_argument("--spec-minimums", action="store_true",
                    help="delays whose source site implements a spec quantity wait its "
                    "minimum (rules/tables/spec-delays.yaml; needs --source)")
    wi.add_argument("--source", metavar="DIR", help="kernel tree or driver directory")
    wi.add_argument("--async", dest="make_async", action="append", default=[],
                    metavar="DEVICE|DRIVER|all", help="run these callbacks asynchronously")
    wi.add_argument("--sync", dest="make_sync", action="append", default=[],
                    metavar="DEVICE|DRIVER|all", help="run these callbacks synchronously")
    wi.add_argument("--links", metavar="FILE", help=_LINKS_HELP)
    wi.add_argument("--ordering", choices=("auto", "legacy", "6.8", "6.16"), default="auto",
                    help="when async work starts: as the capture shows (auto: resume queued "
                    "upfront up to 6.7, by the synchronous loop since 6.8 and in stable "
                    "kernels with 7839d0078e0d, the 6.16 order when the capture names a "
                    "6.16+ kernel), forced to one of those (legacy, 6.8), or "
                    "as Linux 6.16 orders it (async work no longer waits for the "
                    "synchronous loop to reach the device; see docs/traces.md)")
    wi.add_argument("--locks-from", metavar="CAPTURE", nargs="+", action="extend", default=[],
                    help="infer the locks (delays that never overlap across threads) from "
                    "another capture of the same machine, for a capture that cannot show "
                    "them (pm_async=0 runs nothing at the same time)")
    wi.add_argument("--cpus", default=None, metavar="N|auto|off",
                    help="model CPU contention: callbacks running at once share N CPUs (their "
                    "work is de-contended from the capture and re-contended in the replay; "
                    "their waits for a device or timer, from the sched_switch/sched_waking "
                    "events, are kept); auto: the CPU count an ftrace capture states (#P:); "
                    "off: none. Default: auto for a capture with sched_switch events, else "
                    "off (without them every moment outside the measured delays counts as "
                    "work, which did not validate: docs/traces.md)")
    wi.add_argument("--no-sched", action="store_true",
                    help="ignore the capture's sched_switch/sched_waking events (the "
                    "contention model then counts a callback's waits as work)")
    wi.add_argument("--no-delays", action="store_true",
                    help="ignore the capture's delay kprobes (msleep_cal/_ret, ...): predict "
                    "as from a capture without them (the lab's error bands per evidence)")
    wi.add_argument("--patch", metavar="FILE",
                    help="replay the delay changes a unified diff makes (msleep, usleep_range, "
                    "mdelay, udelay, ... calls and the values they are given); with --source "
                    "the patched files are evaluated as the delay rules do (#defines, "
                    "variables), without it only constants on the diff's own lines")
    wi.add_argument("--format", choices=("table", "json"), default="table")
    wi.set_defaults(handler=run_whatif)
    from dpmlens.commands.trace_advise_cmd import register_advise

    register_advise(sub, _LINKS_HELP)
    p.set_defaults(handler=help_handler(p))


def _load(paths: list[str], extras: dict[str, Any] | None = None):  # noqa: ANN202 - TraceSet
    """`extras`, when given, gets what the captures hold beside the traces: "cpus" (the CPU
    count an ftrace header states) and "power_async" (device -> (value, sysfs path) from a
    `dpmlens capture` archive's power-async.txt)."""
    import gc

    from dpmlens.traces import load_traces

    # A one-shot command: the samples, timeline intervals and critical-path steps (10^6
    # objects on 100 cycles) live until it exits and hold no reference cycles, so the cyclic
    # collector would only rescan them again and again (a third of the analysis time).
    gc.disable()

    from dpmlens.capture.archive import ArchiveError, opened

    try:
        with opened(paths) as arch:  # `dpmlens capture` archives (.tar.gz) read as folders
            traces = load_traces(arch.paths)
            _archive_links(traces, arch)
            if extras is not None:
                from dpmlens.capture.archive import power_async
                from dpmlens.traces.analysis.contention import cpus_of

                extras["cpus"] = cpus_of(arch.paths)
                extras["power_async"] = power_async(arch.paths)
                extras["clock"] = _sleep_clock(traces, arch)
    except ArchiveError as exc:
        raise UsageError(str(exc)) from None
    for f in traces.files:
        f.path = arch.name(f.path)
    traces.errors = [arch.name(e) for e in traces.errors] + arch.warnings
    traces.ignored = [arch.name(e) for e in traces.ignored]
    if traces.sample_count == 0 and not traces.phase_times and traces.store.rpm is None:
        problems = "; ".join(traces.errors) or "; ".join(
            f"{f.path}: {', '.join(f.notes) or 'no PM callback samples'}" for f in traces.files
        )
        raise UsageError(f"no PM timing data read: {problems}")
    return traces


def _sleep_clock(traces: Any, arch: Any) -> Any:
    """How long an msleep() sleeps on the captured kernel (traces.analysis.sleep_calls):
    its release from a sleepgraph stamp or a meta.txt (`dpmlens capture`'s, the lab's),
    CONFIG_HZ from meta.txt's config_hz."""
    from pathlib import Path

    from dpmlens.capture.archive import read_meta
    from dpmlens.traces.analysis.sleep_calls import clock_of

    meta = dict(arch.meta)
    for p in arch.paths:
        root = Path(p)
        metas = sorted(root.rglob("meta.txt")) if root.is_dir() else [root.with_name("meta.txt")]
        for m in metas:
            if m.is_file():
                for k, v in read_meta(m).items():
                    meta.setdefault(k, v)
    version = next((f.kernel_version for f in traces.files if f.kernel_version), None)
    kernel = f"{version[0]}.{version[1]}" if version else meta.get("kernel")
    return clock_of(kernel, meta.get("config_hz"))


def _archive_links(traces: Any, arch: Any) -> None:
    """The device links a `dpmlens capture` archive holds (its devlink.txt), used unless
    --links or a .dpmlens.toml names others (_links, after this, replaces them)."""
    from dpmlens.traces.model.links import load_links

    for path in arch.links:
        try:
            links = load_links(str(path))
        except OSError:
            continue
        if links.count:
            links.source = arch.name(links.source)
            traces.device_links = links
            return


def run_report(args: argparse.Namespace) -> int:
    from dpmlens.traces import aggregate, phase_stats
    from dpmlens.traces.report.output import dumps, report_csv, report_json, report_text

    if args.top is not None and args.top < 1:
        raise UsageError("--top must be at least 1")
    traces = _load(args.paths)
    _links(traces, args.links, args.source)
    stats = aggregate(traces)
    phases = phase_stats(traces)
    from dpmlens.traces.analysis.rpm_stats import runtime_stats

    rpm = runtime_stats(traces)  # None without rpm_* events: no runtime section
    rpm_map = rpm_links = None
    mapped = None
    if args.source:
        from pathlib import Path

        if not Path(args.source).exists():
            raise UsageError(f"--source {args.source}: no such file or directory")
        from dpmlens.traces.model.names import candidates
        from dpmlens.traces.model.traceset import resolve_names
        from dpmlens.traces.source.mapping import build_index, map_to_source

        # a head with spaces may name any of its prefixes as the driver: look for all of them
        wanted = {s.driver for s in stats} | {
            c[0] for g in traces.store.ambiguous for c in candidates(g.raw_head or "")}
        if rpm is not None:
            wanted |= {d.driver for d in rpm.devices if d.driver}
        index = build_index(args.source, wanted)
        if traces.store.ambiguous:
            resolve_names(traces, set(index.drivers))
            stats = aggregate(traces)
        mapped = map_to_source(stats, index)
        if rpm is not None:
            from dpmlens.traces.source.rpm_source import map_runtime, rule_links

            rpm_map, rpm_links = map_runtime(rpm, index), rule_links(rpm, index)
        for e in index.errors:
            print(f"dpmlens: warning: {e}", file=sys.stderr)
    static = None
    if args.source:
        from dpmlens.traces.source.delay_sites import join_sites

        def static(sites: Any) -> None:
            join_sites(sites, args.source)

    from dpmlens.traces.report.rpm_output import runtime_json, runtime_text

    if args.format == "json":
        text = dumps(report_json(traces, stats, phases, mapped, args.top,
                                 timeline=args.timeline, static=static,
                                 runtime=runtime_json(rpm, rpm_map, rpm_links),
                                 per_cycle=args.per_cycle))
    elif args.format == "csv":
        text = report_csv(stats, mapped, args.top)
    elif args.format == "html":
        text = _html(traces, mapped, args.paths)
        args.output = args.output or "timeline.html"
    else:
        text = report_text(traces, stats, phases, mapped, args.top or 25, static,
                           runtime_text(rpm, rpm_map, rpm_links, args.top or 25))
    if args.output:
        from dpmlens.core.atomic import write_text_atomic

        try:
            write_text_atomic(args.output, text)
        except OSError as exc:
            raise UsageError(f"-o {args.output}: {exc.strerror or exc}") from exc
        print(f"dpmlens: wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    for e in traces.errors:
        print(f"dpmlens: warning: {e}", file=sys.stderr)
    return exit_codes.OK


def _links(traces: Any, path: str | None, source: str | None = None) -> None:
    """--links FILE: supplier/consumer pairs for the critical path (traces.links); without it,
    `[traces] links` of the `.dpmlens.toml` governing --source (else the current directory)."""
    option = "--links"
    if not path:
        from dpmlens.config.file import find_config, trace_links
        from dpmlens.core.errors import ConfigError

        found = find_config(source or os.getcwd())
        if found is None:
            return
        try:
            links_path = trace_links(found)
        except ConfigError as exc:
            raise UsageError(str(exc)) from None
        if links_path is None:
            return
        option, path = f"{found}: [traces] links", str(links_path)
    from dpmlens.traces.model.links import load_links

    try:
        traces.device_links = load_links(path)
    except OSError as exc:
        raise UsageError(f"{option} {path}: {exc.strerror or exc}") from exc
    if traces.device_links.count == 0:
        raise UsageError(f"{option} {path}: no link found (expected `ls /sys/class/devlink` "
                         "output or 'SUPPLIER CONSUMER' per line)")


def _html(traces: Any, mapped: Any, paths: list[str]) -> str:
    from dpmlens.traces.report.html import timeline_page

    try:
        return timeline_page(traces, mapped, paths)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def run_diff(args: argparse.Namespace) -> int:
    from dpmlens.traces import compare
    from dpmlens.traces.report.output import dumps, human_us
    from dpmlens.traces.report.table import table

    before = _load(args.before)
    after = _load(args.after)
    rows = compare(before, after, alpha=args.alpha)
    phases = [r for r in rows if r.kind == "phase"]
    callbacks = [r for r in rows if r.kind == "callback"][: args.top]
    from dpmlens.traces.analysis.rpm_diff import compare_runtime

    runtime = compare_runtime(before, after, alpha=args.alpha)  # None: no rpm_* events
    rt_rows = runtime[0][: args.top] if runtime else []
    if args.format == "json":

        def js(r: Any) -> dict[str, Any]:
            return {k: getattr(r, k) for k in _DIFF_FIELDS}

        sys.stdout.write(
            dumps(
                {
                    "version": 2,  # 2: runtime
                    "cycles_before": before.cycles,
                    "cycles_after": after.cycles,
                    "phases": [js(r) for r in phases],
                    "callbacks": [js(r) for r in callbacks],
                    "runtime": None if runtime is None else {
                        "transitions": [js(r) for r in rt_rows], "devices": runtime[1]},
                }
            )
        )
        return exit_codes.OK
    if args.format == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["kind", *_DIFF_FIELDS])
        for r in phases + callbacks + rt_rows:
            w.writerow([r.kind, *(getattr(r, k) for k in _DIFF_FIELDS)])
        sys.stdout.write(buf.getvalue())
        return exit_codes.OK

    def fmt(r: Any) -> list[str]:
        def med(v: float | None) -> str:
            return "-" if v is None else human_us(v)

        pct = "" if r.change_pct is None else f" ({r.change_pct:+.1f}%)"
        chg = (
            "-"
            if r.change_us is None
            else f"{'+' if r.change_us > 0 else ''}{human_us(r.change_us)}{pct}"
        )
        p = "-" if r.p is None else f"{r.p:.3g}"
        return [med(r.median_before_us), med(r.median_after_us), chg, p, r.verdict]

    out = [
        f"before: {before.cycles} cycle(s), {before.sample_count} samples; "
        f"after: {after.cycles} cycle(s), {after.sample_count} samples"
    ]

    rows_t = [["phase", "n", "median before", "median after", "change", "p", "verdict"]]
    for r in phases:
        rows_t.append([r.phase, f"{r.n_before}/{r.n_after}"] + fmt(r))
    out += ["", "Phases (wall time per cycle):", table(rows_t, {1, 2, 3, 4, 5})]
    rows_c = [
        [
            "driver",
            "device",
            "phase",
            "n",
            "median before",
            "median after",
            "change",
            "p",
            "verdict",
        ]
    ]
    for r in callbacks:
        rows_c.append([r.driver or "-", r.device, r.phase, f"{r.n_before}/{r.n_after}"] + fmt(r))
    out += ["", "Callbacks (largest change first):", table(rows_c, {3, 4, 5, 6, 7})]
    if runtime is not None:
        rows_r = [["device", "driver", "transition", "n", "median before", "median after",
                   "change", "p", "verdict"]]
        for r in rt_rows:
            rows_r.append([r.device, r.driver or "?", r.phase, f"{r.n_before}/{r.n_after}"]
                          + fmt(r))
        out += ["", "Runtime PM transitions (event to rpm_return_int, largest change first):",
                table(rows_r, {3, 4, 5, 6, 7})]

        def share(v: float | None) -> str:
            return "-" if v is None else f"{100 * v:.0f}%"

        rows_d = [["device", "suspends", "resumes", "< break-even", "errors"]]
        for d in runtime[1][: args.top]:
            eb, ea = sum(d["errors_before"].values()), sum(d["errors_after"].values())
            rows_d.append([d["device"], f"{d['suspends_before']} -> {d['suspends_after']}",
                           f"{d['resumes_before']} -> {d['resumes_after']}",
                           f"{share(d['short_share_before'])} -> {share(d['short_share_after'])}",
                           f"{eb} -> {ea}"])
        out += ["", "Runtime PM use per device (before -> after):", table(rows_d, set())]
    sys.stdout.write("\n".join(out) + "\n")
    return exit_codes.OK


def _ordering_name(ordering: str, runs: list) -> str:  # noqa: ANN001 - PhaseRun
    """--ordering auto: which one the capture showed."""
    if ordering != "auto":
        return ordering
    if any(r.async_616 for r in runs):
        return "6.16"
    return "6.8" if any(r.loop_dispatch for r in runs) else "legacy"


def _call_text(call: tuple[str, float]) -> str:
    """("usleep_range", 10.0 ms) -> usleep_range(10000): the value in the function's unit."""
    func, ms = call
    return f"{func}({ms * 1000 if func.startswith(('usleep', 'udelay')) else ms:g})"


def replay_input(args: argparse.Namespace, extras: dict[str, Any]) -> tuple[Any, list[Any]]:
    """The captures of a replay (whatif, advise), their links, and their runs; none is a
    usage error."""
    from dpmlens.traces.model.timeline import build_timeline

    traces = _load(args.paths, extras)
    _links(traces, args.links, args.source)
    runs = build_timeline(traces)
    if not runs:
        raise UsageError("no callback timestamps in the captures: nothing to replay")
    return traces, runs


def run_whatif(args: argparse.Namespace) -> int:
    from dpmlens.traces.analysis.delays import measured_delays
    from dpmlens.traces.analysis.whatif import (
        Changes,
        matcher,
        parse_call,
        parse_target,
        what_if,
    )
    from dpmlens.traces.model.timeline import build_timeline
    from dpmlens.traces.report.output import dumps
    from dpmlens.traces.report.whatif_output import whatif_json, whatif_text

    delays: dict[str, float] = {}
    replace: dict[str, tuple[str, float]] = {}
    for item in args.delay:
        fn, sep, ms = item.rpartition("=")
        call = parse_call(ms)
        if call is not None and sep and parse_target(fn) is not None:
            replace[fn.strip()] = call
            delays[fn.strip()] = call[1]
            continue
        try:
            value = float(ms)
        except ValueError:
            value = -1.0
        if not sep or parse_target(fn) is None or value < 0:
            raise UsageError(f"--delay {item}: expected FUNCTION=MS, FUNCTION:DELAY=MS or "
                             "FUNCTION:DELAY(VALUE)=MS, e.g. "
                             "hub_port_reset=10 or hub_port_reset:msleep(50)=12")
        delays[fn.strip()] = value
    cpus: int | None = None
    if args.cpus not in (None, "auto", "off"):
        try:
            cpus = int(args.cpus)
        except ValueError:
            cpus = 0
        if cpus < 1:
            raise UsageError(f"--cpus {args.cpus}: expected a CPU count, auto or off")
    if args.spec_minimums and not args.source:
        raise UsageError("--spec-minimums needs --source DIR: the spec quantity of a delay "
                         "comes from its call site in the source")
    extras: dict[str, Any] = {}
    traces, runs = replay_input(args, extras)
    if args.ordering in ("legacy", "6.8"):
        for r in runs:
            r.loop_dispatch = args.ordering == "6.8" and r.direction == "up"
            # (from a 6.16+ capture: the loop's dispatch is inferred from the measured starts)
            r.async_616 = False
    measured = [] if args.no_delays else measured_delays(traces, runs)
    sched = None if args.no_sched else traces.store.sched
    # auto, and the default for a capture with the scheduler's events (where it validated)
    if args.cpus == "auto" or (args.cpus is None and sched is not None):
        cpus = extras["cpus"]
    changes = Changes(delays=delays, make_async=matcher(args.make_async),
                      make_sync=matcher(args.make_sync),
                      ordering="6.16" if args.ordering == "6.16" else "legacy",
                      replace=replace, cpus=cpus, sched=sched, clock=extras["clock"])
    words = [f"--delay {k}={v:g}" if k not in replace else f"--delay {k}={v_call}"
             for k, v in delays.items()
             for v_call in [_call_text(replace[k]) if k in replace else ""]]
    words += [f"--async {x}" for x in args.make_async] + [f"--sync {x}" for x in args.make_sync]
    if args.ordering != "auto":
        words.append(f"--ordering {args.ordering}")
    if args.locks_from:
        from dpmlens.traces.analysis.exclusive import infer

        other = _load(args.locks_from)
        other_runs = build_timeline(other)
        changes.locks = (None if args.no_delays else
                         infer(other_runs, measured_delays(other, other_runs)))
        if not args.no_sched:  # hand-overs between callbacks (traces.analysis.handoffs)
            from dpmlens.traces.analysis.handoffs import ask_offsets, contention

            found = contention(other_runs, other.store.sched)
            if found is not None:
                changes.sched_locks = [(lk, ask_offsets(other_runs, lk, found))
                                       for lk in found.locks]
        if changes.locks is None and not changes.sched_locks:
            from dpmlens.traces.analysis.handoffs import topology_locks

            changes.name_locks = topology_locks(other_runs)
        if changes.locks is None and not changes.sched_locks and not changes.name_locks:
            print(f"dpmlens: warning: --locks-from {' '.join(args.locks_from)}: no delays "
                  "that never overlap across threads, no callbacks woken by each other",
                  file=sys.stderr)
    patch_notes: list[str] = []
    if args.patch:
        from dpmlens.commands.trace_advise_cmd import patch_changes

        patch_notes = patch_changes(args, measured, changes, words)
    if args.spec_minimums:
        from dpmlens.traces.analysis.delays import delay_sites
        from dpmlens.traces.source.delay_sites import join_sites, spec_minimums

        sites = delay_sites(measured, [])
        join_sites(sites, args.source)
        changes.site_ms = spec_minimums(sites)
        changes.spec_minimums = True
        words.append("--spec-minimums")
    result = what_if(runs, measured, changes)
    if args.spec_minimums:
        for s in sites:
            st = s.static
            key = (s.caller, s.func, s.requested_ms if s.requested_ms == s.requested_ms else -1.0)
            if key in changes.site_ms:
                result.assumptions.append(
                    f"{st['call']} in {s.caller} ({st['path']}:{st['line']}) waits "
                    f"{st['min_ms']:g} ms, the {st['spec']} minimum, instead of "
                    f"{st['value_ms']:g} ms")
        if not changes.site_ms:
            result.not_replayed.append("--spec-minimums: no measured delay was joined to a "
                                       "call site that implements a spec quantity")
    result.assumptions.extend(n for n in patch_notes if n.startswith("patch: "))
    result.not_replayed.extend(n for n in patch_notes if not n.startswith("patch: "))
    if args.format == "json":
        ordering = _ordering_name(args.ordering, runs)
        sys.stdout.write(dumps(whatif_json(traces, result, words, ordering)))
    else:
        sys.stdout.write(whatif_text(traces, result, words))
    for e in traces.errors:
        print(f"dpmlens: warning: {e}", file=sys.stderr)
    return exit_codes.OK


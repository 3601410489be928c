"""`dpmlens trace advise CAPTURE [--source TREE]` and the `--patch FILE` of `trace whatif`
(the trace command's parser and loading are in trace_cmd).

Exit codes: 0 written; 2 nothing could be read or a usage error.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from dpmlens.core import exit_codes
from dpmlens.core.errors import UsageError


def register_advise(sub: Any, links_help: str) -> None:
    adv = sub.add_parser(
        "advise",
        help="what to change first: ranked changes with the time each saves",
        description="Read a capture, list the changes that shorten the phases' critical paths "
        "(devices made async, delays at their spec minimum with --source, USB fast "
        "enumeration, busy-waits), replay each with the what-if and rank them by the time "
        "saved per cycle, with the band of that kind of change. Each row gives the knob to "
        "try now, the patch, and the `trace whatif` options that check it.",
    )
    adv.add_argument("paths", nargs="+", metavar="CAPTURE")
    adv.add_argument("--source", metavar="DIR",
                     help="kernel tree: delays are checked against their spec minimums, and the "
                     "async rows name the driver's probe (file:line)")
    adv.add_argument("--links", metavar="FILE", help=links_help)
    adv.add_argument("--top", type=int, default=10, metavar="N", help="rows to show (10)")
    adv.add_argument("--format", choices=("table", "json"), default="table")
    adv.add_argument("--no-sched", action="store_true",
                     help="ignore the capture's scheduler events (what a capture without them "
                     "would be advised)")
    adv.add_argument("--no-delays", action="store_true",
                     help="ignore the capture's delay kprobes (the same, without them)")
    adv.set_defaults(handler=run_advise)


def run_advise(args: argparse.Namespace) -> int:
    from dpmlens.traces.analysis.advise import Evidence, SiteMinimum, advise
    from dpmlens.traces.analysis.delays import measured_delays
    from dpmlens.traces.analysis.whatif import Changes
    from dpmlens.traces.report.advise_output import advise_json, advise_text
    from dpmlens.traces.report.output import dumps

    if args.top < 1:
        raise UsageError("--top must be at least 1")
    if args.source and not os.path.exists(args.source):
        raise UsageError(f"--source {args.source}: no such file or directory")
    from dpmlens.commands.trace_cmd import replay_input

    extras: dict[str, Any] = {}
    traces, runs = replay_input(args, extras)
    measured = [] if args.no_delays else measured_delays(traces, runs)
    sched = None if args.no_sched else traces.store.sched
    # the contention model where it validated: with the scheduler's events (as trace whatif)
    base = Changes(cpus=extras["cpus"] if sched is not None else None, sched=sched,
                   clock=extras["clock"])
    minimums = None
    if args.source:
        from dpmlens.traces.analysis.delays import delay_sites
        from dpmlens.traces.source.delay_sites import join_sites

        sites = delay_sites(measured, [])
        join_sites(sites, args.source)
        minimums = []
        for site in sites:
            st = site.static
            if st and st.get("min_ms") is not None and st["min_ms"] < (st.get("value_ms") or 0):
                req = site.requested_ms if site.requested_ms == site.requested_ms else -1.0
                minimums.append(SiteMinimum((site.caller, site.func, req), float(st["min_ms"]),
                                            float(st["value_ms"]), st["call"], st["path"],
                                            int(st["line"]), str(st["spec"])))
    ev = Evidence(delays=bool(measured), sched=sched is not None,
                  links=traces.device_links is not None)
    result = advise(runs, measured, base, ev, async_paths=extras["power_async"],
                    minimums=minimums, top=args.top)
    if args.source:
        _probe_patches(result, args.source)
    if args.format == "json":
        sys.stdout.write(dumps(advise_json(result)))
    else:
        sys.stdout.write(advise_text(result))
    for e in traces.errors:
        print(f"dpmlens: warning: {e}", file=sys.stderr)
    return exit_codes.OK


def patch_changes(args: argparse.Namespace, measured: Any, changes: Any,
                   words: list[str]) -> list[str]:
    """--patch FILE: its delay changes into `changes` (as --delay targets); returns notes on
    what is not replayed."""
    from pathlib import Path

    from dpmlens.traces.source import patch_delays as pd

    try:
        text = Path(args.patch).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise UsageError(f"--patch {args.patch}: {exc.strerror or exc}") from None
    try:
        files = pd.parse(text, args.patch)
        if args.source:
            found, notes = pd.changes_with_source(files, Path(args.source), args.patch)
        else:
            found, notes = pd.changes_from_diff(files)
    except pd.PatchError as exc:
        raise UsageError(str(exc)) from None
    if not found:
        notes.append(f"--patch {args.patch}: changes no delay call"
                     + ("" if args.source else " written with a constant on the diff's "
                        "lines (pass --source TREE to evaluate variables and #defines)"))
    delays, replace, more = pd.whatif_targets(
        found, [(d.caller, d.func, d.requested_ms) for d in measured])
    changes.delays.update(delays)
    changes.replace.update(replace)
    words.append(f"--patch {args.patch}")
    return [*(f"patch: {c.describe()}" for c in found), *notes, *more]


def _probe_patches(result: Any, source: str) -> None:
    """--source: the async rows' patch at the driver's probe function (file:line)."""
    from dpmlens.traces.source.probe_sites import bus_of, probe_sites

    rows = [a for a in result.items if a.kind == "async" and a.drivers]
    wanted = {d: bus_of(a.targets[0], a.parent) for a in rows for d in a.drivers}
    sites = probe_sites(source, wanted)
    for a in rows:
        for d in a.drivers:
            site = sites.get(d)
            if isinstance(site, tuple):
                path, line, probe = site
                a.patch = (f"{path}:{line}: in {probe}(): device_enable_async_suspend(dev) "
                           f"(the {d} driver's probe; once its suspend/resume depends only on "
                           "its parent and its device links)")
                break
            if site:
                a.patch = (f"device_enable_async_suspend(dev) in the probe of the {d} driver: "
                           f"{len(site)} drivers of that name under --source ({', '.join(site[:4])}"
                           f"{', ...' if len(site) > 4 else ''})")

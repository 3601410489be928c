#!/usr/bin/env python3
"""The analysis and JSON of `dpmlens trace report --format json` stage by stage, in one
process, after one load: each stage's CPU time, best of --runs (the cyclic GC off, as the
command runs), or, with --callgrind STAGE, one call of that stage inside functools.reduce so
that callgrind counts its instructions alone:

    python bench/trace_analysis_stages.py [--runs 7] [DIR]
    valgrind --tool=callgrind --toggle-collect=functools_reduce \\
        python bench/trace_analysis_stages.py --callgrind report DIR

DIR: the multitest by default (bench-data/pm-graph-multitest); PYTHONPATH picks the tree.
Stages: report (aggregate, phase_stats, report_json and the JSON text: what follows
load_traces), timeline, delays, paths (summarize_paths), aggregate, json.
"""

from __future__ import annotations

import argparse
import functools
import gc
import importlib
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "bench-data" / "pm-graph-multitest"
# (module, function) timed inside report_json and around it
TIMED = {
    "dpmlens.traces.model.timeline": ["build_timeline"],
    "dpmlens.traces.analysis.delays": ["measured_delays", "delay_sites"],
    "dpmlens.traces.analysis.critical": ["summarize_paths"],
    "dpmlens.traces.report.critical_output": ["delays_json", "devices_json", "path_json"],
    "dpmlens.traces.report.output": ["steps_json", "report_json", "dumps"],
    "dpmlens.traces.analysis.aggregate": ["aggregate", "phase_stats"],
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--callgrind", metavar="STAGE",
                    choices=("report", "timeline", "delays", "paths", "aggregate", "json"))
    ap.add_argument("dir", nargs="?", type=Path, default=DATA)
    args = ap.parse_args()
    from dpmlens.commands import trace_cmd
    from dpmlens.core.errors import UsageError

    try:
        traces = trace_cmd._load([str(args.dir)])  # (turns the cyclic GC off, as the command)
    except UsageError as exc:
        sys.exit(f"{args.dir}: {exc}")
    gc.disable()
    if args.callgrind:
        return _one(traces, args.callgrind)
    spent: dict[str, float] = defaultdict(float)
    for mod, names in TIMED.items():
        m = importlib.import_module(mod)
        for name in names:
            setattr(m, name, _timed(getattr(m, name), name, spent))
    best: dict[str, float] = {}
    for _ in range(args.runs):
        spent.clear()
        t = time.process_time()
        _report(traces)
        spent["all (aggregate .. JSON text)"] = time.process_time() - t
        for k, v in spent.items():
            best[k] = min(best.get(k, v), v)
    print(f"{args.dir}: CPU ms, best of {args.runs} (nested stages are inside report_json)")
    for k, v in sorted(best.items(), key=lambda kv: -kv[1]):
        print(f"  {k:30s} {v * 1e3:7.1f}")
    return 0


def _timed(fn: Callable[..., Any], name: str, spent: dict[str, float]) -> Callable[..., Any]:
    def run(*a: Any, **k: Any) -> Any:
        t = time.process_time()
        try:
            return fn(*a, **k)
        finally:
            spent[name] += time.process_time() - t
    return run


def _report(traces: Any) -> str:
    from dpmlens.traces.analysis import (
        aggregate as agg,  # (its functions, timed or not)
    )
    from dpmlens.traces.report import output

    return output.dumps(output.report_json(traces, agg.aggregate(traces),
                                           agg.phase_stats(traces), None, None))


def _one(traces: Any, stage: str) -> int:
    from dpmlens.traces import aggregate, phase_stats
    from dpmlens.traces.analysis.critical import summarize_paths
    from dpmlens.traces.analysis.delays import measured_delays
    from dpmlens.traces.model.timeline import build_timeline
    from dpmlens.traces.report.output import dumps, report_json

    runs = build_timeline(traces)
    delays = measured_delays(traces, runs)
    watched = {id(d.interval) for d in delays if d.interval}
    obj = report_json(traces, aggregate(traces), phase_stats(traces), None, None)
    stages: dict[str, Callable[[], object]] = {
        "report": lambda: _report(traces),
        "timeline": lambda: build_timeline(traces),
        "delays": lambda: measured_delays(traces, runs),
        "paths": lambda: summarize_paths(runs, watched),
        "aggregate": lambda: aggregate(traces),
        "json": lambda: dumps(obj),
    }
    stages[stage]()  # once outside the count: imports, first-call caches
    functools.reduce(lambda a, b: stages[stage](), [0, 0])
    return 0


if __name__ == "__main__":
    sys.exit(main())

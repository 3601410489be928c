"""Where callbacks' time went, from the scheduler's events (traces.analysis.waits): text and
JSON of `trace report`. Nothing without sched_switch events in the capture."""

from __future__ import annotations

from typing import Any

from dpmlens.traces.analysis.waits import GroupSplit
from dpmlens.traces.model.durations import format_us as human_us
from dpmlens.traces.report.table import table


def splits_text(rows: list[GroupSplit]) -> list[str]:
    if not rows:
        return []
    out = [["driver", "device", "phase", "n", "median", "on CPU", "waiting for a CPU",
            "threads it waited for", "device/timer", "other waits"]]
    for g in rows:
        out.append([g.key[0] or "-", g.key[1], g.key[3], str(g.n), human_us(g.median_us),
                    human_us(g.on_cpu), human_us(g.runnable), human_us(g.helpers),
                    human_us(g.device), human_us(g.other)])
    return ["\nWhere the time went (sched_switch/sched_waking; medians per part over the "
            "runs, by total time):", table(out, {3, 4, 5, 6, 7, 8, 9})]


def splits_json(rows: list[GroupSplit]) -> list[dict[str, Any]] | None:
    if not rows:
        return None
    return [{"driver": g.key[0], "device": g.key[1], "phase": g.key[3], "layer": g.key[4],
             "n": g.n, "median_us": round(g.median_us, 3), "on_cpu_us": round(g.on_cpu, 3),
             "runnable_us": round(g.runnable, 3), "helpers_us": round(g.helpers, 3),
             "device_wait_us": round(g.device, 3), "other_wait_us": round(g.other, 3)}
            for g in rows]

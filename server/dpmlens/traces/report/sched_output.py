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
            "threads it waited for", "device/timer", "other waits",
            "waiting for another callback"]]
    for g in rows:
        out.append([g.key[0] or "-", g.key[1], g.key[3], str(g.n), human_us(g.median_us),
                    human_us(g.on_cpu), human_us(g.runnable), human_us(g.helpers),
                    human_us(g.device), human_us(g.other),
                    human_us(g.callbacks) + (f" ({_names(g)})" if g.waited_for else "")])
    return ["\nWhere the time went (sched_switch/sched_waking; medians per part over the "
            "runs, by total time; \"waiting for another callback\": woken by that "
            "device's callback thread, a lock it held or work it finished, not this "
            "device's time):", table(out, {3, 4, 5, 6, 7, 8, 9})]


def _names(g: GroupSplit) -> str:
    """The devices it waited for, most runs first: "2-2 in 10/16 runs, 445 ms"."""
    rows = sorted(g.waited_for.items(), key=lambda kv: (-kv[1][0], kv[0]))
    return "; ".join(f"{d} in {n}/{g.n} runs, {human_us(us)}" for d, (n, us) in rows[:3])


def splits_json(rows: list[GroupSplit]) -> list[dict[str, Any]] | None:
    if not rows:
        return None
    return [{"driver": g.key[0], "device": g.key[1], "phase": g.key[3], "layer": g.key[4],
             "n": g.n, "median_us": round(g.median_us, 3), "on_cpu_us": round(g.on_cpu, 3),
             "runnable_us": round(g.runnable, 3), "helpers_us": round(g.helpers, 3),
             "device_wait_us": round(g.device, 3), "other_wait_us": round(g.other, 3),
             "other_callbacks_us": round(g.callbacks, 3),
             "waited_for": [{"device": d, "runs": n, "median_us": round(us, 3)}
                            for d, (n, us) in sorted(g.waited_for.items(),
                                                     key=lambda kv: (-kv[1][0], kv[0]))]}
            for g in rows]

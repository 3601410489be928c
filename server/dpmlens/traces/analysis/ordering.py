"""`dpmlens trace whatif --ordering 6.16`: when async suspend/resume work starts in Linux 6.16.

Until 6.15 (drivers/base/power/main.c, "legacy"):
  resume phases   every async device is queued at the phase start ("PM: Start asynchronous
                  resume threads upfront"); its worker then blocks in dpm_wait_for_superior()
                  until the parent (and suppliers) are done;
  suspend phases  the synchronous loop walks dpm_list backwards and queues an async device
                  when it reaches it (async_schedule_dev in dpm_suspend() and its late/noirq
                  siblings); the worker then waits for the children in
                  dpm_wait_for_subordinate(). An async device cannot start before the loop
                  got to it: the `dispatched` link of traces.critical.
6.16 (Rafael Wysocki's series, commits 0cbef962ce1f "PM: sleep: Resume children after
resuming the parent", aa7a9275ab81 "PM: sleep: Suspend async parents after suspending
children", 443046d1ad66 "PM: sleep: Make suspend of devices more asynchronous"):
  resume phases   only async devices without a parent are queued upfront; a device's async
                  children are queued when it is done (dpm_async_resume_children), and the
                  loop queues one it reaches that is not started yet. A child still starts
                  after its parent: the dependencies do not change, only the workers that
                  sat blocked on a parent are gone (the series says resume time does not
                  change measurably);
  suspend phases  async leaf devices (no children) are queued upfront, before the loop
                  (dpm_leaf_device); a device's async parent is queued when the device is
                  done (dpm_async_suspend_parent). An async device no longer waits for the
                  synchronous loop to reach it: it starts when its children are done.

What the replay changes under 6.16, and only that: in suspend, late and noirq phases
(freeze, poweroff, ... alike) an async callback loses its `dispatched` dependency; one left
with nothing to wait for starts the capture's median async start-up lag after the phase
start (queued upfront as a leaf). Everything else is kept: children and parents, the
synchronous loop, the capture's worker order (an async callback that followed another on the
same kworker still does), the lags. Assumed: a device without a callback of its own in the
phase (invisible to the trace) holds nobody back, and there are enough workers and CPUs (as
in the legacy replay).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpmlens.traces.model.durations import format_us

if TYPE_CHECKING:
    from dpmlens.traces.analysis.nodes import Nodes
    from dpmlens.traces.model.timeline import PhaseRun

# auto: the capture's own (timeline.loop_dispatch reads it from the capture); legacy: resume
# queues every async device upfront (up to 6.7); 6.8: the loop queues it (6.8-6.15 and the
# stable kernels with 7839d0078e0d); 6.16: predicted (order_616)
ORDERINGS = ("auto", "legacy", "6.8", "6.16")


def order_616(run: PhaseRun, nodes: Nodes, sync: int, lag_us: float,
              assumptions: set[str]) -> None:
    """Rewrite one phase run's dependencies for the 6.16 ordering (in place)."""
    if run.async_616:
        assumptions.add("6.16: the capture's kernel already orders async work this way "
                        "(its version is 6.16 or later): nothing to change")
        return
    if run.direction == "up" and not run.loop_dispatch:
        assumptions.add("6.16 resume: an async child is queued when its parent is done "
                        "instead of upfront; it still starts after its parent, so the "
                        "resume phases replay as measured")
        return
    changed = False
    for i in range(len(nodes)):
        if nodes.thread[i] == sync:
            continue
        deps = nodes.deps[i]
        kept = [(d, lk) for d, lk in deps if lk != "dispatched"]
        if len(kept) == len(deps):
            continue
        changed = True
        nodes.deps[i] = kept
        if not kept:  # a leaf: queued before the loop runs
            nodes.release[i] = min(nodes.release[i], lag_us)
    if changed and run.direction == "up":
        assumptions.add("6.16 resume (from a capture whose loop queued async devices as it "
                        "reached them, 6.8-6.15): an async device is queued when its parent "
                        "is done, no longer behind the synchronous loop")
    elif changed:
        assumptions.add("6.16 suspend: an async device no longer waits for the synchronous "
                        "loop to reach it; it starts when its children are done, a leaf "
                        f"{format_us(lag_us)} after the phase start (the capture's median "
                        "async start-up lag)")


def blocked_workers_note(runs: list[PhaseRun]) -> str | None:
    """What legacy resume costs in workers: every async device is queued at the phase start
    and its worker blocks until the parent is done (the trace shows the callback starts)."""
    count, blocked = 0, 0.0
    peak = 0
    for r in runs:
        # (a capture whose loop queued them, 6.8-6.15, had no workers blocked upfront)
        if r.direction != "up" or r.sync_thread < 0 or r.loop_dispatch:
            continue
        n = 0
        for iv in r.intervals:
            if iv.thread != r.sync_thread:
                n += 1
                blocked += max(0.0, iv.start - r.start) * 1e6
        count += n
        peak = max(peak, n)
    if not count:
        return None
    return (f"legacy resume queues every async device upfront: its worker blocks until the "
            f"parent is done ({count} async callback runs, up to {peak} in one phase, "
            f"{format_us(blocked)} of worker time blocked in all); 6.16 queues them when "
            "they can run. The replay assumes enough workers and CPUs either way, so this "
            "costs no wall time in it")

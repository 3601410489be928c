"""`dpmlens trace report --format html -o timeline.html`: one self-contained file (no network).

A cycle at a time (a selector picks it): a lane per thread per phase, a bar per callback, the
kernel steps above, delay marks inside the bars, the critical path outlined, a tooltip per bar,
and a click that opens the callback's source (`vscode://file/...` when mapped with --source).
The data is embedded as compact JSON (times in integer microseconds from the cycle start,
strings in one table) and drawn on a canvas, so 100 cycles of 2,000 devices stay responsive:
only the selected cycle is drawn.
"""

from __future__ import annotations

import html
import os
from typing import TYPE_CHECKING, Any

from dpmlens.core import jsonsafe
from dpmlens.traces.analysis.critical import CriticalPath
from dpmlens.traces.analysis.delays import MeasuredDelay, call_text
from dpmlens.traces.model.sample import Step
from dpmlens.traces.model.timeline import PhaseRun
from dpmlens.traces.model.traceset import TraceSet

if TYPE_CHECKING:  # source mapping (tree-sitter) only with --source: not imported
    from dpmlens.traces.source.mapping import MappedReport


class _Strings:
    def __init__(self) -> None:
        self.table: list[str] = []
        self._ids: dict[str, int] = {}

    def __call__(self, s: str) -> int:
        i = self._ids.get(s)
        if i is None:
            i = self._ids[s] = len(self.table)
            self.table.append(s)
        return i


def timeline_data(traces: TraceSet, runs: list[PhaseRun], paths: list[CriticalPath],
                  delays: list[MeasuredDelay], mapped: MappedReport | None) -> dict[str, Any]:
    """Per cycle: phases with lanes of bars, steps, delay marks (all us from the cycle start)."""
    st = _Strings()
    on_path = {id(x.interval) for p in paths for x in p.chain}
    by_iv: dict[int, list[MeasuredDelay]] = {}
    for d in delays:
        if d.interval is not None:
            by_iv.setdefault(id(d.interval), []).append(d)
    steps: dict[int, list[Step]] = {}
    for s in traces.store.steps:
        steps.setdefault(s.cycle, []).append(s)
    cycles: dict[int, list[PhaseRun]] = {}
    for r in runs:
        cycles.setdefault(r.cycle, []).append(r)
    names = traces.store.threads
    links: dict[tuple[str, str, str], int] = {}

    def link(drv: str, dev: str, phase: str) -> int:
        key = (drv, dev, phase)
        if key in links:
            return links[key]
        m = mapped.mappings.get(key) if mapped else None
        if m is None or m.source is None:
            links[key] = -1
        else:
            path = os.path.abspath(m.source.path)  # as the index read it, from the cwd
            links[key] = st(f"{path}:{m.source.line}|{m.source.function}")
        return links[key]

    out = []
    for cycle in sorted(cycles):
        rs = sorted(cycles[cycle], key=lambda r: r.start)
        cs = sorted(steps.get(cycle, []), key=lambda s: (s.start, -s.end))
        t0 = min([r.start for r in rs] + [s.start for s in cs])

        def us(t: float, t0: float = t0) -> int:
            return round((t - t0) * 1e6)

        phases = []
        for r in rs:
            lanes: dict[int, list] = {}
            for iv in r.intervals:
                marks = [[us(d.start), us(d.end), st(
                    f"{call_text(d)} from {d.caller}" + (f", {d.calls} calls from the "
                                                         "first to the last"
                                                         if d.calls > 1 else "")),
                          round(d.total_us)]
                         for d in by_iv.get(id(iv), ())]
                lanes.setdefault(iv.thread, []).append(
                    [us(iv.start), us(iv.end), st(iv.device), st(iv.driver), st(iv.parent),
                     1 if id(iv) in on_path else 0, link(iv.driver, iv.device, r.phase), marks])
            order = sorted(lanes, key=lambda t: (t != r.sync_thread, lanes[t][0][0]))
            phases.append({"phase": r.phase, "start": us(r.start), "end": us(r.end),
                           "lanes": [[st(names[t] if t >= 0 else "?"), lanes[t]]
                                     for t in order]})
        out.append({"cycle": cycle, "phases": phases,
                    "steps": [[st(s.label), us(s.start), us(s.end)] for s in cs]})
    return {"strings": st.table, "cycles": out}


def timeline_page(traces: TraceSet, mapped: MappedReport | None, paths: list[str]) -> str:
    """The whole page for loaded captures `paths` (the CLI's `--format html` and the editor's
    Open Timeline). ValueError when they hold no callback timestamps."""
    from dpmlens.traces.analysis.critical import critical_path
    from dpmlens.traces.analysis.delays import measured_delays
    from dpmlens.traces.model.timeline import build_timeline

    runs = build_timeline(traces)
    if not runs:
        raise ValueError("no callback timestamps in the captures: no timeline to draw")
    title = "dpmlens timeline: " + ", ".join(os.path.basename(os.path.normpath(p))
                                             for p in paths)
    return report_html(traces, runs, [critical_path(r) for r in runs],
                       measured_delays(traces, runs), mapped, title=title)


def report_html(traces: TraceSet, runs: list[PhaseRun], paths: list[CriticalPath],
                delays: list[MeasuredDelay], mapped: MappedReport | None,
                title: str = "dpmlens timeline") -> str:
    data = jsonsafe.dumps(
        timeline_data(traces, runs, paths, delays, mapped), separators=(",", ":")
    )
    # "</" inside a <script> would end it early
    data = data.replace("</", "<\\/")
    from dpmlens.traces.report.timeline_page import PAGE

    return PAGE.replace("@TITLE@", html.escape(title)).replace("@DATA@", data)



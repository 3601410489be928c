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
import json
import os
from typing import Any

from dpmlens.traces.critical import CriticalPath
from dpmlens.traces.delays import MeasuredDelay, call_text
from dpmlens.traces.mapping import MappedReport
from dpmlens.traces.sample import Step
from dpmlens.traces.timeline import PhaseRun
from dpmlens.traces.traceset import TraceSet


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
        cs = steps.get(cycle, [])
        t0 = min([r.start for r in rs] + [s.start for s in cs])
        us = lambda t: round((t - t0) * 1e6)  # noqa: E731 - local shorthand
        phases = []
        for r in rs:
            lanes: dict[int, list] = {}
            for iv in r.intervals:
                marks = [[us(d.start), us(d.end), st(f"{call_text(d)} from {d.caller}")]
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


def report_html(traces: TraceSet, runs: list[PhaseRun], paths: list[CriticalPath],
                delays: list[MeasuredDelay], mapped: MappedReport | None,
                title: str = "dpmlens timeline") -> str:
    data = json.dumps(timeline_data(traces, runs, paths, delays, mapped), separators=(",", ":"))
    # "</" inside a <script> would end it early
    data = data.replace("</", "<\\/")
    return _PAGE.replace("@TITLE@", html.escape(title)).replace("@DATA@", data)


_PAGE = r"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>@TITLE@</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
 body{font:13px system-ui,sans-serif;margin:0;background:#fff;color:#222}
 header{padding:6px 10px;border-bottom:1px solid #ccc;display:flex;gap:12px;align-items:center}
 #wrap{position:relative;overflow:auto;height:calc(100vh - 40px)}
 canvas{display:block}
 #tip{position:fixed;pointer-events:none;background:#ffe;border:1px solid #999;padding:4px 6px;
      font:12px monospace;white-space:pre;display:none;z-index:2}
 .legend span{display:inline-block;width:12px;height:10px;margin:0 3px 0 8px;vertical-align:middle}
</style></head><body>
<header><b>@TITLE@</b>
 <label>cycle <select id="cycle"></select></label>
 <label>zoom <input id="zoom" type="range" min="0" max="100" value="0"></label>
 <span class="legend"><span style="background:#7aa6d8"></span>callback
  <span style="background:#d9534f"></span>critical path<span style="background:#f0ad4e"></span>delay
  <span style="background:#bbb"></span>kernel step</span>
 <span id="info"></span></header>
<div id="wrap"><canvas id="c"></canvas></div><div id="tip"></div>
<script id="data" type="application/json">@DATA@</script>
<script>
"use strict";
const D = JSON.parse(document.getElementById("data").textContent), S = D.strings;
const sel = document.getElementById("cycle"), zoom = document.getElementById("zoom");
const cv = document.getElementById("c"), ctx = cv.getContext("2d"), tip = document.getElementById("tip");
const LANE = 16, LABEL = 230, PAD = 4;
let hits = [];
D.cycles.forEach((c, i) => { const o = document.createElement("option"); o.value = i;
  o.textContent = c.cycle; sel.appendChild(o); });
function fmt(us) { const a = Math.abs(us);
  return a >= 1e6 ? (us / 1e6).toFixed(2) + " s" : a >= 1e3 ? (us / 1e3).toFixed(2) + " ms" : us + " us"; }
function draw() {
  const c = D.cycles[+sel.value || 0]; if (!c) return;
  let end = 0; c.phases.forEach(p => end = Math.max(end, p.end)); c.steps.forEach(s => end = Math.max(end, s[2]));
  const rows = 1 + c.phases.reduce((n, p) => n + p.lanes.length + 1, 0);
  const width = Math.max(window.innerWidth - 20, LABEL + 200) * (1 + zoom.value / 5);
  const scale = (width - LABEL - PAD) / Math.max(end, 1);
  cv.width = width; cv.height = rows * LANE + 20; hits = [];
  ctx.font = "11px system-ui"; ctx.textBaseline = "middle";
  const x = t => LABEL + t * scale;
  let y = 0;
  ctx.fillStyle = "#222"; ctx.fillText("kernel steps", 4, y + LANE / 2);
  c.steps.forEach(s => { ctx.fillStyle = "#bbb"; const w = Math.max(1, (s[2] - s[1]) * scale);
    ctx.fillRect(x(s[1]), y + 2, w, LANE - 4);
    hits.push([x(s[1]), y, w, LANE, S[s[0]] + "\n" + fmt(s[2] - s[1]), null]); });
  y += LANE;
  for (const p of c.phases) {
    ctx.fillStyle = "#eef"; ctx.fillRect(x(p.start), y, Math.max(1, (p.end - p.start) * scale), LANE);
    ctx.fillStyle = "#000"; ctx.fillText(p.phase + "  " + fmt(p.end - p.start), 4, y + LANE / 2);
    y += LANE;
    for (const [thread, bars] of p.lanes) {
      ctx.fillStyle = "#555"; ctx.fillText("  " + S[thread], 4, y + LANE / 2);
      for (const b of bars) {
        const bx = x(b[0]), w = Math.max(1, (b[1] - b[0]) * scale);
        ctx.fillStyle = b[5] ? "#d9534f" : "#7aa6d8"; ctx.fillRect(bx, y + 2, w, LANE - 4);
        for (const m of b[7]) { ctx.fillStyle = "#f0ad4e";
          ctx.fillRect(x(m[0]), y + LANE - 5, Math.max(1, (m[1] - m[0]) * scale), 3); }
        const src = b[6] >= 0 ? S[b[6]].split("|") : null;
        let t = (S[b[3]] || "-") + " " + S[b[2]] + "\n" + p.phase + "  " + fmt(b[1] - b[0]) +
          "\nparent " + S[b[4]] + "\nthread " + S[thread] + (b[5] ? "\non the critical path" : "");
        for (const m of b[7]) t += "\n" + S[m[2]] + ": " + fmt(m[1] - m[0]);
        t += src ? "\n" + src[1] + "() " + src[0] : "\n(no source: report with --source)";
        hits.push([bx, y, w, LANE, t, src ? src[0] : null]);
      }
      y += LANE;
    }
  }
  document.getElementById("info").textContent = c.phases.length + " phases";
}
function hit(e) { const r = cv.getBoundingClientRect(), px = e.clientX - r.left, py = e.clientY - r.top;
  for (let i = hits.length - 1; i >= 0; i--) { const h = hits[i];
    if (px >= h[0] - 1 && px <= h[0] + h[2] + 1 && py >= h[1] && py < h[1] + h[3]) return h; }
  return null; }
cv.addEventListener("mousemove", e => { const h = hit(e);
  if (!h) { tip.style.display = "none"; return; }
  tip.textContent = h[4]; tip.style.display = "block";
  tip.style.left = (e.clientX + 12) + "px"; tip.style.top = (e.clientY + 12) + "px"; });
cv.addEventListener("click", e => { const h = hit(e); if (h && h[5]) window.location.href = "vscode://file" + (h[5].startsWith("/") ? "" : "/") + h[5]; });
sel.addEventListener("change", draw); zoom.addEventListener("input", draw);
window.addEventListener("resize", draw);
draw();
</script></body></html>
"""

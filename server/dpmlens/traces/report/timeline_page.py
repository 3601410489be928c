"""The page of `dpmlens trace report --format html` (see traces/html.py): style and script,
no network; @TITLE@ and @DATA@ are filled in. A module, not a data file, so that it ships
in the wheel with the code."""

PAGE = r"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>@TITLE@</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
 body{font:13px system-ui,sans-serif;margin:0;background:#fff;color:#222}
 header{padding:6px 10px;border-bottom:1px solid #ccc;display:flex;gap:12px;align-items:center}
 #wrap{position:relative;overflow:auto;height:calc(100vh - 40px)}
 canvas{display:block}
 #tip{position:fixed;pointer-events:none;background:#ffe;border:1px solid #999;padding:4px 6px;
      font:12px monospace;white-space:pre;display:none;z-index:2}
 .legend span{display:inline-block;width:12px;height:10px;margin:0 3px 0 8px;
   vertical-align:middle}
</style></head><body>
<header><b>@TITLE@</b>
 <label>cycle <select id="cycle"></select></label>
 <label>zoom <input id="zoom" type="range" min="0" max="100" value="0"></label>
 <span class="legend"><span style="background:#7aa6d8"></span>callback
  <span style="background:#d9534f"></span>critical path
  <span style="background:#f0ad4e"></span>delay
  <span style="background:#bbb"></span>kernel step</span>
 <span id="info"></span></header>
<div id="wrap"><canvas id="c"></canvas></div><div id="tip"></div>
<script id="data" type="application/json">@DATA@</script>
<script>
"use strict";
const D = JSON.parse(document.getElementById("data").textContent), S = D.strings;
const sel = document.getElementById("cycle"), zoom = document.getElementById("zoom");
const cv = document.getElementById("c"), ctx = cv.getContext("2d");
const tip = document.getElementById("tip");
const LANE = 16, LABEL = 230, PAD = 4;
let hits = [];
D.cycles.forEach((c, i) => { const o = document.createElement("option"); o.value = i;
  o.textContent = c.cycle; sel.appendChild(o); });
// core/durations.py format_us (test-fixtures/durations.json; tests/test_traces_durations.py)
function fmt(us) { const a = Math.abs(us);
  if (us !== us) return "-";
  return a >= 1e6 ? (us / 1e6).toFixed(2) + " s"
    : a >= 1e3 ? (us / 1e3).toFixed(2) + " ms"
    : us === Math.round(us) || a >= 10 ? us.toFixed(0) + " us" : us.toFixed(1) + " us"; }
function draw() {
  const c = D.cycles[+sel.value || 0]; if (!c) return;
  let end = 0;
  c.phases.forEach(p => end = Math.max(end, p.end));
  c.steps.forEach(s => end = Math.max(end, s[2]));
  const rows = 2 + c.phases.reduce((n, p) => n + p.lanes.length + 1, 0);
  const width = Math.max(window.innerWidth - 20, LABEL + 200) * (1 + zoom.value / 5);
  const scale = (width - LABEL - PAD) / Math.max(end, 1);
  cv.width = width; cv.height = rows * LANE + 20; hits = [];
  ctx.font = "11px system-ui"; ctx.textBaseline = "middle";
  const x = t => LABEL + t * scale;
  let y = 0;
  // time axis: a tick every 1, 2 or 5 x 10^n us, about 10 across
  const raw = end / 10, p10 = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1))));
  const step = [1, 2, 5, 10].map(m => m * p10).find(v => v >= raw) || p10;
  ctx.fillStyle = "#666"; ctx.fillText("time from cycle start", 4, y + LANE / 2);
  for (let t = 0; t <= end; t += step) { ctx.fillRect(x(t), y + LANE - 4, 1, 4);
    ctx.fillText(fmt(t), x(t) + 2, y + LANE / 2 - 1); }
  y += LANE;
  ctx.fillStyle = "#222"; ctx.fillText("kernel steps", 4, y + LANE / 2);
  c.steps.forEach(s => { ctx.fillStyle = "#bbb"; const w = Math.max(1, (s[2] - s[1]) * scale);
    ctx.fillRect(x(s[1]), y + 2, w, LANE - 4);
    hits.push([x(s[1]), y, w, LANE, S[s[0]] + "\n" + fmt(s[2] - s[1]), null]); });
  y += LANE;
  for (const p of c.phases) {
    ctx.fillStyle = "#eef";
    ctx.fillRect(x(p.start), y, Math.max(1, (p.end - p.start) * scale), LANE);
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
          "\nparent " + S[b[4]] + "\nthread " + S[thread] +
          (b[5] ? "\non the critical path" : "");
        for (const m of b[7]) t += "\n" + S[m[2]] + ": " + fmt(m[3]);
        t += src ? "\n" + src[1] + "() " + src[0] : "\n(no source: report with --source)";
        hits.push([bx, y, w, LANE, t, src ? src[0] : null]);
      }
      y += LANE;
    }
  }
  document.getElementById("info").textContent = c.phases.length + " phases";
}
function hit(e) {
  const r = cv.getBoundingClientRect(), px = e.clientX - r.left, py = e.clientY - r.top;
  for (let i = hits.length - 1; i >= 0; i--) { const h = hits[i];
    if (px >= h[0] - 1 && px <= h[0] + h[2] + 1 && py >= h[1] && py < h[1] + h[3]) return h; }
  return null; }
cv.addEventListener("mousemove", e => { const h = hit(e);
  if (!h) { tip.style.display = "none"; return; }
  tip.textContent = h[4]; tip.style.display = "block";
  tip.style.left = (e.clientX + 12) + "px"; tip.style.top = (e.clientY + 12) + "px"; });
// in a VS Code webview the extension opens the source; in a browser, a vscode:// link does
const vscodeApi = typeof acquireVsCodeApi === "function" ? acquireVsCodeApi() : null;
cv.addEventListener("click", e => { const h = hit(e);
  if (!h || !h[5]) return;
  if (vscodeApi) vscodeApi.postMessage({ open: h[5] });
  else window.location.href = "vscode://file" + (h[5].startsWith("/") ? "" : "/") + h[5];
});
sel.addEventListener("change", draw); zoom.addEventListener("input", draw);
window.addEventListener("resize", draw);
draw();
// for tests and the curious: when the first cycle was on screen
document.documentElement.setAttribute("data-drawn-ms", Math.round(performance.now()));
</script></body></html>
"""

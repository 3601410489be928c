"""Report stage, HTML printer: one self-contained page (inline CSS and SVG, no scripts from
anywhere), regressions first, each with its per-group distribution; then the drivers."""

from __future__ import annotations

import html
import json
from collections import defaultdict
from typing import Any

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:20px}h2{font-size:16px;margin-top:28px;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:8px 0}td,th{padding:3px 8px;border-bottom:1px solid #eee;
text-align:left;font-variant-numeric:tabular-nums}th{background:#f4f4f4}
.bad{color:#b00020;font-weight:600}.ok{color:#1b7f3b}.card{display:inline-block;
vertical-align:top;margin:6px 12px 12px 0}.muted{color:#777}svg text{font:11px sans-serif}
"""


def _e(s: Any) -> str:
    return html.escape(str(s if s is not None else ""))


def _notes(c: dict[str, Any]) -> str:
    """A change's notes: why it changed (its wait for other callbacks), its phase's change."""
    return "; ".join(n for n in (c.get("wait_note"), c.get("phase_note")) if n)


def _ms(us: float | None) -> str:
    return "-" if us is None else f"{us / 1000:.2f}"


def distribution_svg(title: str, rows: list[dict[str, Any]], highlight: set[str]) -> str:
    """Per group a bar from p50 to p95 with a whisker to p99 and a tick at p50 (ms)."""
    if not rows:
        return ""
    w, row_h, left = 420, 22, 90
    top = max((r["p99_us"] or 0) for r in rows) or 1.0
    scale = (w - left - 20) / top
    h = 30 + row_h * len(rows) + 18
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
             f'role="img" aria-label="{_e(title)}">',
             f'<text x="0" y="14" font-weight="600">{_e(title)}</text>']
    for i, r in enumerate(rows):
        y = 28 + i * row_h
        p50, p95, p99 = (r[k] or 0 for k in ("p50_us", "p95_us", "p99_us"))
        color = "#d0453c" if r["grp"] in highlight else "#4a78b8"
        parts.append(f'<text x="0" y="{y + 12}">{_e(r["grp"])}</text>')
        parts.append(f'<line x1="{left + p95 * scale:.1f}" x2="{left + p99 * scale:.1f}" '
                     f'y1="{y + 8}" y2="{y + 8}" stroke="{color}"/>')
        parts.append(f'<rect class="bar" x="{left + p50 * scale:.1f}" y="{y + 2}" '
                     f'width="{max((p95 - p50) * scale, 1):.1f}" height="12" fill="{color}" '
                     f'opacity="0.55"><title>{_e(r["grp"])}: p50 {_ms(p50)} ms, p95 '
                     f'{_ms(p95)} ms, p99 {_ms(p99)} ms, {r["n"]} runs</title></rect>')
        parts.append(f'<line x1="{left + p50 * scale:.1f}" x2="{left + p50 * scale:.1f}" '
                     f'y1="{y}" y2="{y + 16}" stroke="#111" stroke-width="2"/>')
    parts.append(f'<text x="{left}" y="{h - 4}" class="muted">0</text>'
                 f'<text x="{w - 70}" y="{h - 4}">{top / 1000:.1f} ms</text></svg>')
    return "".join(parts)


def _methods(reg: dict[str, Any]) -> str:
    return ", ".join(f"{n} {m}" for m, n in reg["methods"].items()) or "none"


def _not_tested(reg: dict[str, Any], by: str) -> str:
    """What the regression tests left out, and why: every callback, every group."""
    out = [f"<h3 id=not-tested>Not tested ({len(reg['not_tested'])})</h3>"]
    for g in reg["not_compared"]:
        out.append(f"<p class=muted>{_e(by)} {_e(g['group'])}: {_e(g['reason'])}</p>")
    if reg["not_tested"]:
        out.append("<table id=not-tested-table><tr><th>callback</th><th>phase</th>"
                   f"<th>{_e(by)}</th><th>runs</th><th>why</th></tr>")
        for s in reg["not_tested"]:
            out.append(f"<tr><td>{_e(s['driver'])} {_e(s['device'])}</td><td>{_e(s['phase'])}"
                       f"</td><td>{_e(s['before'])} → {_e(s['after'])}</td><td>{s['n_before']}"
                       f" → {s['n_after']}</td><td>{_e(s['reason'])}</td></tr>")
        out.append("</table>")
    return "".join(out)


def write(doc: dict[str, Any]) -> str:
    by = doc["by"]
    devs: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in doc["devices"]:
        devs[(r["driver"], r["device"], r["phase"])].append(r)
    drv: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in doc["drivers"]:
        drv[(r["driver"], r["phase"])].append(r)
    order = {g: i for i, g in enumerate(doc["groups"])}
    out = [f"<!doctype html><html lang=en><head><meta charset=utf-8><title>dpmlens fleet "
           f"report</title><style>{_CSS}</style></head><body>",
           f"<h1>dpmlens fleet report by {_e(by)}</h1><p class=muted>{_e(doc['store'])} · "
           f"groups: {_e(', '.join(doc['groups']))} · percentiles: {_e(doc['percentile'])}</p>"]
    reg = doc["regressions"]
    out.append(f"<h2 id=regressions>Regressions ({len(reg['changes'])})</h2><p class=muted>"
               f"{reg['tested']} callbacks tested over {len(reg['pairs'])} pair(s); "
               f"Mann-Whitney U, Benjamini-Hochberg at {reg['alpha']}, bootstrap 95% CI, "
               f"minimum effect {reg['min_effect_ms']} ms, at least {reg['min_runs']} runs a "
               f"side; U tests: {_e(_methods(reg))}; failures: Fisher's exact test.</p>")
    if reg["changes"]:
        out.append("<table id=changes><tr><th>change</th><th>callback</th><th>phase</th>"
                   f"<th>{_e(by)}</th><th>median ms</th><th>change ms [95% CI]</th>"
                   "<th>ms/cycle</th><th>fail rate</th><th>p (test)</th><th>q</th>"
                   "<th>changed from</th><th>note</th></tr>")
        for c in reg["changes"]:
            ci = f" [{c['ci_ms'][0]:+.2f}, {c['ci_ms'][1]:+.2f}]" if c["ci_ms"] else ""
            out.append(
                f"<tr class=change><td class=bad>{_e(c['kind'])}</td><td>{_e(c['driver'])} "
                f"{_e(c['device'])}</td><td>{_e(c['phase'])}</td><td>{_e(c['before'])} → "
                f"{_e(c['after'])}</td><td>{_ms(c['median_before_us'])} → "
                f"{_ms(c['median_after_us'])}</td><td>{c['change_ms']:+.2f}{ci}</td>"
                f"<td>{c['effect_ms_per_cycle']:+.2f}</td><td>"
                f"{c['fail_rate_before'] * 100:.1f}% → {c['fail_rate_after'] * 100:.1f}%</td>"
                f"<td>{c['p']:.2g} ({_e(c['method'])})</td><td>{c['q']:.2g}</td>"
                f"<td>{_e(c['changed_from'])}</td><td>{_e(_notes(c))}</td></tr>")
        out.append("</table><div>")
        for c in reg["changes"]:
            rows = sorted(devs.get((c["driver"], c["device"], c["phase"]), []),
                          key=lambda r: order.get(r["grp"], 0))
            after = {g for g in doc["groups"]
                     if order.get(g, 0) >= order.get(c["changed_from"] or c["after"], 0)}
            out.append("<div class='card plot'>" + distribution_svg(
                f"{c['driver']} {c['device']} {c['phase']} (ms)", rows, after) + "</div>")
        out.append("</div>")
    else:
        out.append("<p>none</p>")
    out.append(_not_tested(reg, by))
    out.append(f"<h2>Health</h2><table><tr><th>{_e(by)}</th><th>cycles</th><th>hosts</th>"
               "<th>pass</th><th>fail</th><th>suspend p50/p95 ms</th><th>resume p50/p95 ms"
               "</th><th>status</th></tr>")
    for h in doc["health"]:
        out.append(f"<tr><td>{_e(h['grp'])}</td><td>{h['cycles']}</td><td>{h['hosts']}</td>"
                   f"<td>{h['pass_rate'] * 100:.1f}%</td><td>{h['fail_rate'] * 100:.1f}%</td>"
                   f"<td>{_ms(h['suspend_p50_us'])}/{_ms(h['suspend_p95_us'])}</td>"
                   f"<td>{_ms(h['resume_p50_us'])}/{_ms(h['resume_p95_us'])}</td>"
                   f"<td class={_e(h['status'])}>{_e(h['status'])}</td></tr>")
    out.append("</table><h2>Drivers per phase (slowest p95 first)</h2><div>")
    ranked = sorted(drv.items(), key=lambda kv: -max((r["p95_us"] or 0) for r in kv[1]))
    for (d, ph), rows in ranked[:24]:
        rows = sorted(rows, key=lambda r: order.get(r["grp"], 0))
        out.append("<div class='card plot'>" + distribution_svg(f"{d} {ph} (ms)", rows, set())
                   + "</div>")
    out.append("</div><h2>Worst device per phase</h2><table><tr><th>phase</th>"
               f"<th>{_e(by)}</th><th>device</th><th>cycles slowest</th></tr>")
    for w in doc["worst_devices"]:
        out.append(f"<tr><td>{_e(w['phase'])}</td><td>{_e(w['grp'])}</td>"
                   f"<td>{_e(w['device'])}</td><td>{w['cycles']}</td></tr>")
    out.append("</table>")
    if doc["issues"]:
        out.append("<h2>dmesg issues</h2><table><tr><th>captures</th><th>hosts</th>"
                   "<th>pattern</th><th>example</th></tr>")
        for i in doc["issues"]:
            out.append(f"<tr><td>{i['captures']}</td><td>{i['hosts']}</td>"
                       f"<td>{_e(i['pattern'])}</td><td class=muted>{_e(i['example'])}</td></tr>")
        out.append("</table>")
    data = json.dumps(doc["regressions"]["changes"]).replace("</", "<\\/")
    out.append(f"<script type=application/json id=dpmlens-regressions>{data}</script>"
               "</body></html>\n")
    return "".join(out)

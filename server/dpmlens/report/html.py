"""A self-contained HTML page (no scripts, no external files), for CI artifacts.

Findings are grouped by file, each with its severity, rule (linked to the kernel
documentation), the quoted source line and the call chain.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from html import escape
from itertools import groupby
from typing import Any

from dpmlens import __version__
from dpmlens.engine.check import CheckRun

_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.1em; margin-top: 2em; font-family: monospace; }
.f { border-left: 4px solid #999; padding: .3em .8em; margin: .6em 0; background: #fafafa; }
.error { border-color: #c62828; } .warning { border-color: #ef6c00; }
.info, .hint { border-color: #1565c0; }
.sev { font-weight: 600; text-transform: uppercase; font-size: .8em; }
pre { margin: .3em 0; padding: .3em; background: #f0f0f0; overflow-x: auto; }
ol { margin: .2em 0; } .muted { color: #666; }
"""


def _rule_link(rule_id: str, kernel_type: str, urls: dict[str, str]) -> str:
    label = f"{escape(rule_id)} <span class=muted>({escape(kernel_type)})</span>"
    url = urls.get(rule_id)
    return f'<a href="{escape(url)}">{label}</a>' if url else label


def render(run: CheckRun, rules: Sequence[Any] = ()) -> str:
    urls = {r.id: r.url for r in rules if getattr(r, "url", "")}
    counts = Counter(str(f.severity) for f in run.findings)
    summary = ", ".join(f"{n} {sev}" for sev, n in sorted(counts.items())) or "no findings"
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>dpmlens report: {len(run.findings)} findings</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>dpmlens power-management review</h1>",
        f"<p>{run.files_checked} files checked ({run.files_analyzed} with PM code): "
        f"{escape(summary)}. dpmlens {escape(__version__)}.</p>",
    ]
    if run.errors:
        out.append("<h2>Skipped</h2><ul>")
        out += [f"<li><code>{escape(e.path)}</code>: {escape(e.message)}</li>" for e in run.errors]
        out.append("</ul>")
    for path, group in groupby(run.findings, key=lambda f: f.path):
        out.append(f"<h2>{escape(path)}</h2>")
        for f in group:
            sev = escape(str(f.severity))
            out.append(f'<div class="f {sev}">')
            out.append(
                f"<span class=sev>{sev}</span> line {f.span.line}, column {f.span.column} "
                f"&middot; {_rule_link(f.rule, f.kernel_type, urls)}"
            )
            out.append(f"<div>{escape(f.message)}</div>")
            quoted = run.source_lines.get((f.path, f.span.line))
            if quoted is not None:
                out.append(f"<pre>{f.span.line}: {escape(quoted)}</pre>")
            if f.chain:
                out.append("<ol>")
                out += [
                    f"<li>{escape(s.note or s.function + '()')} "
                    f"<span class=muted>{escape(s.path)}:{s.span.line}</span></li>"
                    for s in f.chain
                ]
                out.append("</ol>")
            out.append("</div>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"

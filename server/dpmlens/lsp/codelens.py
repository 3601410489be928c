"""Measured-latency CodeLens above PM callbacks and dev_pm_ops tables (with traces loaded), and
the fleet's figures above callbacks and delay calls (with a fleet store: fleet_lens.py).

Callback lens: `resume_noirq · median 1.98 ms · p95 2.4 ms · max 3.1 ms · 12 cycles · 0-0055`
(one per phase; with several devices the slowest is named and the others counted); over a
runtime PM callback: `runtime_resume · 412 × · median 1.8 ms · p95 3.1 ms · 31% of suspends
shorter than break-even · <device>` (traces.rpm_output.runtime_rows).
Table lens: the sum of the callbacks' medians per phase.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from lsprotocol import types

from dpmlens.core.findings import Span
from dpmlens.lsp import fleet_lens
from dpmlens.lsp.core import DpmlensServer, LanguageFeature
from dpmlens.lsp.diagnostics import Diagnostics
from dpmlens.lsp.documents import Document
from dpmlens.lsp.fleet_loader import Fleet
from dpmlens.lsp.trace_loader import Traces
from dpmlens.model.phases import AFTER_ALL_PHASES, PHASES
from dpmlens.traces.model.durations import format_us


def _order(phase: str) -> int:
    return PHASES[phase].order if phase in PHASES else AFTER_ALL_PHASES


def runtime_title(phase: str, group: list[dict[str, Any]]) -> str:
    """`runtime_resume · 412 × · median 1.8 ms · p95 3.1 ms · 31% of suspends shorter than
    break-even` (the device with the slowest median; the others counted)."""
    r = group[0]
    rt = r["runtime"]
    title = (f"{phase} · {r['n']} × · median {format_us(r['median_us'])} · "
             f"p95 {format_us(r['p95_us'])}")
    share = rt.get("short_share")
    if share is not None:
        title += f" · {100 * share:.0f}% of suspends shorter than break-even"
    errors = sum(e["count"] for e in rt.get("errors", []))
    if errors:
        names = sorted({e["name"] for e in rt["errors"]})
        title += f" · {errors} error{'s' if errors > 1 else ''} ({', '.join(names)})"
    title += f" · {r.get('device') or '?'}"
    if len(group) > 1:
        title += f" (slowest of {len(group)} devices)"
    return title


def callback_titles(rows: list[dict[str, Any]]) -> list[str]:
    by_phase: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_phase[r["phase"]].append(r)
    out = []
    for phase in sorted(by_phase, key=_order):
        group = sorted(by_phase[phase], key=lambda r: -r["median_us"])
        r = group[0]
        if "runtime" in r:
            out.append(runtime_title(phase, group))
            continue
        title = (
            f"{phase} · median {format_us(r['median_us'])} · p95 {format_us(r['p95_us'])} "
            f"· max {format_us(r['max_us'])} · {r['n']} cycles · {r.get('device') or '?'}"
        )
        if len(group) > 1:
            title += f" (slowest of {len(group)} devices)"
        via = (r.get("source") or {}).get("via")
        if via:
            title += f" · via {via}"
        crit = r.get("critical")
        if crit and crit.get("on_path"):
            title += f" · on the critical path in {crit['on_path']} of {crit['runs']} cycles"
        out.append(title)
    return out


def table_title(rows: list[dict[str, Any]]) -> str | None:
    sums: dict[str, float] = defaultdict(float)
    for r in rows:
        if "runtime" not in r:  # runtime PM is not part of a suspend/resume cycle
            sums[r["phase"]] += r["median_us"]
    if not sums:
        return None
    parts = [f"{p} {format_us(sums[p])}" for p in sorted(sums, key=_order)]
    return "dev_pm_ops · median sum per phase: " + " · ".join(parts)


def lenses_for(server: DpmlensServer, doc: Document) -> list[types.CodeLens]:
    traces = server.get_feature(Traces).state
    fleet = server.get_feature(Fleet).state
    if not traces.loaded and not fleet.loaded:
        return []
    res = server.get_feature(Diagnostics).current(doc)
    if res is None:
        return []
    model = res.model
    enc = server.encoding
    out: list[types.CodeLens] = []

    def lens(span: Span, title: str) -> None:
        line = span.line - 1
        rng = types.Range(
            start=doc.position_of_point(line, 0, enc), end=doc.position_of_point(line, 0, enc)
        )
        out.append(types.CodeLens(range=rng, command=types.Command(title=title, command="")))

    if fleet.loaded:
        for name, fn in sorted(model.functions.items(), key=lambda kv: kv[1].start_byte):
            for fleet_title in fleet_lens.callback_titles(fleet.callbacks_for(doc.path, name)):
                lens(fn.name_span, fleet_title)
        for site in fleet.delays_in(doc.uri, doc.version, model):
            lens(Span(site.line, 1, site.line, 1), site.title)
    if not traces.loaded:
        return out
    for table in model.pm_tables.values():
        names = {m.function for m in table.members if m.function}
        # The callbacks may be defined in another file of the driver: match by name.
        rows = [
            r
            for n in names
            for r in traces.callbacks_named(n)
            if any(m.member == r["phase"] and m.function == n for m in table.members)
        ]
        title = table_title(rows)
        if title:
            lens(table.span, title)
    # Every function of this document that measured callbacks map to (wherever its table is).
    for name, fn in sorted(model.functions.items(), key=lambda kv: kv[1].start_byte):
        for title in callback_titles(traces.callbacks_for(doc.path, name)):
            lens(fn.name_span, title)
    # Every delay call of this document that the traces measured (kprobes).
    if traces.result is not None and traces.result.parsed.delay_sites:
        for delay in traces.delay_lenses(doc, model):
            lens(Span(delay.line, 1, delay.line, 1), delay.title)
    return out


class CodeLens(LanguageFeature):
    name = "codeLens"

    def __init__(self, server: DpmlensServer) -> None:
        super().__init__(server)
        server.handle(types.TEXT_DOCUMENT_CODE_LENS, self.code_lens,
                      types.CodeLensOptions(resolve_provider=False))

    def code_lens(self, params: types.CodeLensParams) -> list[types.CodeLens] | None:
        doc = self.server.documents.get(params.text_document.uri)
        if doc is None:
            return None
        with self.server.guard("codeLens"):
            return lenses_for(self.server, doc)
        return None

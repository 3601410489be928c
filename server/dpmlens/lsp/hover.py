"""Hover on a dev_pm_ops member, a PM macro, a table or a callback name.

Says which phases the function runs in and what holds there (model/phases.py: device IRQs,
runtime PM, async), and, when traces are loaded, the measured latency per device; with a fleet
store, the fleet's figures per phase (and over a delay call, the call's).
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from dpmlens.lsp import fleet_lens
from dpmlens.lsp.core import DpmlensServer, LanguageFeature
from dpmlens.lsp.diagnostics import Diagnostics
from dpmlens.lsp.documents import Document
from dpmlens.lsp.fleet_loader import Fleet
from dpmlens.lsp.trace_loader import Traces
from dpmlens.lsp.traces_state import TraceState
from dpmlens.model import pm_macros
from dpmlens.model.callgraph import pm_callbacks
from dpmlens.model.phases import AFTER_ALL_PHASES, PHASES, Phase
from dpmlens.model.types import FileModel
from dpmlens.model.walker import Walker
from dpmlens.traces.model.durations import format_us

_KIND = {"system": "system sleep", "hibernate": "hibernation", "runtime": "runtime PM"}
_IDENT_TYPES = ("identifier", "field_identifier", "type_identifier")


def describe_phase(p: Phase) -> str:
    """One line of facts about a member (markdown)."""
    if p.kind == "runtime":
        facts = [
            "runtime PM, device IRQs on",
            "process context, may sleep",
            "the PM core never runs two runtime PM callbacks of one device at once",
        ]
    else:
        where = "going down" if p.direction == "down" else "coming up"
        facts = [f"{_KIND[p.kind]}, {p.stage} stage, {where}"]
        facts.append(
            "**device IRQs suspended**: handlers do not run, so no waiting for an interrupt"
            if p.irqs_suspended
            else "device IRQs on"
        )
        if p.runtime_pm_disabled:
            facts.append(
                "**runtime PM disabled** (from suspend_late to resume_early): "
                "`pm_runtime_get_sync()`/`resume` calls do not resume the device"
            )
        facts.append(
            "may run asynchronously with other devices (device_enable_async_suspend)"
            if p.may_run_async
            else "runs synchronously, in dpm list order"
        )
    return f"`{p.member}`: " + "; ".join(facts)


def _phase_order(member: str) -> int:
    return PHASES[member].order if member in PHASES else AFTER_ALL_PHASES


def _fmt_ms(us: float | None) -> str:
    return "-" if us is None else format_us(us)


_BARS = "▁▂▃▄▅▆▇█"


def sparkline(values: tuple[float, ...] | list[float], bins: int = 8) -> str:
    """A histogram of `values` in `bins` equal-width bins from min to max, as block glyphs."""
    if len(values) < 2:
        return ""
    lo, hi = min(values), max(values)
    if hi <= lo:
        return _BARS[-1]
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, int((v - lo) / (hi - lo) * bins))] += 1
    top = max(counts)
    return "".join(_BARS[(c * (len(_BARS) - 1)) // top] if c else " " for c in counts)


def measured_table(rows: list[dict[str, Any]], traces: TraceState | None = None) -> str:
    if not rows:
        return ""
    lines = [
        "| phase | device | n | min | median | p95 | max | distribution |",
        "|---|---|--:|--:|--:|--:|--:|---|",
    ]

    def order(r: dict[str, Any]) -> tuple[int, str]:
        return _phase_order(r["phase"]), r.get("device") or ""

    for r in sorted(rows, key=order):
        dist = sparkline(traces.durations_of(r)) if traces is not None else ""
        lines.append(
            f"| {r['phase']} | {r.get('device') or '?'} | {r['n']} | {_fmt_ms(r['min_us'])} "
            f"| {_fmt_ms(r['median_us'])} | {_fmt_ms(r['p95_us'])} | {_fmt_ms(r['max_us'])} "
            f"| `{dist}` |"
        )
    splits = [split_note(r) for r in sorted(rows, key=order) if r.get("time_split")]
    if splits:
        lines.append("\n**Where the time went** (scheduler events, medians): " + "; ".join(splits))
    return "\n".join(lines)


def split_note(r: dict[str, Any]) -> str:
    """`resume 2-1: 13.5 ms on a CPU, 2.1 ms waiting for one, 288 ms for a device or timer`."""
    sp = r["time_split"]
    parts = [f"{_fmt_ms(sp['on_cpu_us'])} on a CPU"]
    for key, what in (("runnable_us", "waiting for one"),
                      ("helpers_us", "in threads it waited for"),
                      ("device_wait_us", "for a device or timer"),
                      ("other_wait_us", "waiting on other threads"),
                      ("other_callbacks_us", "waiting for another callback")):
        if sp.get(key):
            parts.append(f"{_fmt_ms(sp[key])} {what}")
    who = [w["device"] for w in sp.get("waited_for") or []][:3]
    if sp.get("other_callbacks_us") and who:
        parts[-1] += f" ({', '.join(who)}: not this device's time)"
    return f"{r['phase']} {r.get('device') or '?'}: " + ", ".join(parts)


def critical_note(rows: list[dict[str, Any]]) -> str:
    """Which devices of these callbacks were on their phase's critical path, how often, and
    what they put on it (the chain itself: `dpmlens: Open Timeline`, or `trace report`)."""
    bits = []
    for r in rows:
        crit = r.get("critical")
        if crit and crit.get("on_path"):
            bits.append(f"{r.get('device') or '?'} in {r['phase']}: {crit['on_path']} of "
                        f"{crit['runs']} cycles, {_fmt_ms(crit['contribution_us'])} on the path")
    if not bits:
        return ""
    return "**On the critical path** (what the phase waited for): " + "; ".join(bits)


def runtime_details(rows: list[dict[str, Any]]) -> str:
    """What the runtime PM rows add to the measured table: per device the break-even, the
    suspended periods under it, the autosuspend delay seen, the parent's share, errors."""
    lines = []
    seen: set[str] = set()
    for r in rows:
        rt = r.get("runtime")
        dev = r.get("device") or "?"
        if rt is None or dev in seen:
            continue
        seen.add(dev)
        bits = []
        if rt.get("break_even_us") is not None:
            share = rt.get("short_share")
            bits.append(f"break-even {_fmt_ms(rt['break_even_us'])} (resume + suspend median)")
            if share is not None:
                bits.append(f"{rt['short_periods']} of {rt['suspended_periods']} suspended "
                            f"periods shorter ({100 * share:.0f}%)")
        total = (rt.get("suspended_us") or 0) + (rt.get("active_us") or 0)
        if total:
            bits.append(f"suspended {100 * rt['suspended_us'] / total:.0f}% of the time seen")
        if rt.get("autosuspend_median_us") is not None:
            bits.append(f"autosuspend after {_fmt_ms(rt['autosuspend_median_us'])} idle "
                        "(median, last put to suspend)")
        nested = [x.get("runtime", {}).get("nested_median_us") for x in rows
                  if x.get("device") == r.get("device") and x["phase"] == "runtime_resume"]
        if nested and nested[0]:
            bits.append(f"a resume first resumes its parent: {_fmt_ms(nested[0])} of it")
        for e in rt.get("errors", []):
            bits.append(f"`{e['call']}` returned {e['name']} {e['count']}×")
        if rt.get("states") != "rpm_status":
            bits.append("states inferred from the calls (no rpm_status event)")
        lines.append(f"- `{dev}`: " + "; ".join(bits))
    return "\n".join(lines)


def _roles_text(roles: list[Any]) -> list[str]:
    out = []
    for r in roles:
        if r.legacy:
            src = f"`.{getattr(r, 'field', r.member)}` of `{r.driver}` (legacy bus callback)"
        else:
            src = f"`{r.table}`" + ("" if r.via == "designated" else f" via `{r.via}`")
        phase = PHASES.get(r.member)
        out.append(f"- {describe_phase(phase) if phase else f'`{r.member}`'} (in {src})")
    return out


def _callers(model: FileModel, name: str, depth: int) -> list[tuple[list[Any], list[str]]]:
    """PM callbacks of this file that reach helper `name`: (their roles, the call chain)."""
    out = []
    walker = Walker(model, depth)  # the rules' walker: the same chain as their findings
    for cb, roles in pm_callbacks(model).items():
        if cb not in model.functions or cb == name:
            continue
        for reached in walker.reach(cb, towards=frozenset({name})):
            out.append((roles, [*reached.functions(), name]))
            break
    return out


def hover_markdown(
    server: DpmlensServer, doc: Document, model: FileModel, name: str, node_type: str
) -> str | None:
    traces = server.get_feature(Traces).state
    parts: list[str] = []
    if name in pm_macros.MEMBER_MACROS or name in pm_macros.TABLE_MACROS:
        fills = pm_macros.MEMBER_MACROS.get(name) or pm_macros.TABLE_MACROS[name].fills
        head = f"**{name}** fills these `dev_pm_ops` members:"
        if name in pm_macros.DEPRECATED_MEMBER_MACROS or (
            name in pm_macros.TABLE_MACROS and pm_macros.TABLE_MACROS[name].deprecated
        ):
            head += (
                "\n\n*Deprecated*: the callbacks need `__maybe_unused` or `#ifdef` guards; "
                "prefer the macros without `SET_`/`SIMPLE_` with `pm_ptr()`/`pm_sleep_ptr()`."
            )
        parts.append(head)
        parts.extend(f"- {describe_phase(PHASES[m])}" for m, _ in fills if m in PHASES)
        return "\n".join(parts)

    if node_type == "field_identifier" and name in PHASES:
        parts.append(f"**.{name}** (`struct dev_pm_ops`)\n\n{describe_phase(PHASES[name])}")
        return "\n".join(parts)

    if name in model.pm_tables:
        table = model.pm_tables[name]
        how = f" via `{table.macro}`" if table.macro else ""
        parts.append(f"**{name}**: `struct dev_pm_ops`{how}\n")
        for m in sorted(table.members, key=lambda m: _phase_order(m.member)):
            parts.append(f"- `{m.member}` -> `{m.function or 'NULL'}`")
        rows = _trace_rows(traces, doc, [m.function for m in table.members if m.function])
        if rows:
            parts.append("\n**Measured** (loaded traces)\n\n" + measured_table(rows, traces))
        return "\n".join(parts)

    roles = pm_callbacks(model).get(name)
    if not roles:
        if name not in model.functions:
            return None
        callers = _callers(model, name, server.settings.helper_depth)
        if not callers:
            return None
        parts.append(f"**{name}**: called from PM callbacks, so it runs in their phases\n")
        for cb_roles, chain in callers:
            parts.append(f"`{'()` -> `'.join(chain)}()`")
            parts.extend(_roles_text(cb_roles))
        return "\n".join(parts)
    parts.append(f"**{name}**: PM callback\n")
    parts.extend(_roles_text(roles))
    fleet = server.get_feature(Fleet).state
    section = fleet_lens.hover_section(fleet.callbacks_for(doc.path, name), fleet.store)
    if section:
        parts.append("\n" + section)
    rows = _trace_rows(traces, doc, [name])
    if rows:
        parts.append("\n**Measured** (loaded traces)\n\n" + measured_table(rows, traces))
        path_note = critical_note(rows)
        if path_note:
            parts.append("\n" + path_note)
        details = runtime_details(rows)
        if details:
            parts.append("\n**Runtime PM** (latency = rpm_* event to rpm_return_int)\n\n"
                         + details)
    elif traces.loaded:
        parts.append("\n*No measured samples map to this function in the loaded traces.*")
    return "\n".join(parts)


def _trace_rows(traces: TraceState, doc: Document, functions: list[str]) -> list[dict[str, Any]]:
    if not traces.loaded:
        return []
    out: list[dict[str, Any]] = []
    for fn in functions:
        out.extend(traces.callbacks_for(doc.path, fn))
    return out


def fleet_delay_hover(server: DpmlensServer, doc: Document, model: FileModel,
                      line: int) -> str | None:
    """The fleet's figures of the delay call on `line` (1-based), if the store has them."""
    fleet = server.get_feature(Fleet).state
    if not fleet.loaded:
        return None
    texts = [fleet_lens.delay_hover(d, fleet.store)
             for d in fleet.delays_in(doc.uri, doc.version, model) if d.line == line]
    return "\n\n".join(texts) or None


def hover_at(server: DpmlensServer, doc: Document, pos: types.Position) -> types.Hover | None:
    res = server.get_feature(Diagnostics).current(doc)
    if res is None:
        return None
    enc = server.encoding
    row, col = doc.point_of_position(pos, enc)
    tree = doc.ensure_tree()
    node = tree.root_node.named_descendant_for_point_range((row, col), (row, col))
    if node is None or node.type not in _IDENT_TYPES:
        return None
    name = doc.source[node.start_byte : node.end_byte].decode("utf-8", "replace")
    text = hover_markdown(server, doc, res.model, name, node.type)
    if text is None:
        text = fleet_delay_hover(server, doc, res.model, row + 1)
    if text is None:
        return None
    sr, sc = node.start_point
    er, ec = node.end_point
    return types.Hover(
        contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text),
        range=types.Range(
            start=doc.position_of_point(sr, sc, enc), end=doc.position_of_point(er, ec, enc)
        ),
    )


class Hover(LanguageFeature):
    name = "hover"

    def __init__(self, server: DpmlensServer) -> None:
        super().__init__(server)
        server.handle(types.TEXT_DOCUMENT_HOVER, self.hover)

    def hover(self, params: types.HoverParams) -> types.Hover | None:
        doc = self.server.documents.get(params.text_document.uri)
        if doc is None:
            return None
        with self.server.guard("hover"):
            return hover_at(self.server, doc, params.position)
        return None

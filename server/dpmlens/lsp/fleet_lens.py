"""The fleet's figures as CodeLens titles and hover text (fleet_state.py holds them).

Over a callback, one lens per phase it ran in:
`resume · p50 38.0 ms · p95 120 ms · 3,214 cycles on 41 machines (6.12) · +22.0 ms vs 6.11`
(the newest kernel that ran it; the change of its p50 from the kernel before). Over a delay
call: `msleep(200) · resume · p50 203 ms · p95 204 ms per cycle · 2 cycles on 1 machine
(4.6.0-rc4+) · on the critical path in 2 of 2 cycles`.
"""

from __future__ import annotations

from dpmlens.lsp.fleet_state import FleetDelay, MappedCallback
from dpmlens.model.phases import AFTER_ALL_PHASES, PHASES
from dpmlens.traces.model.durations import format_us


def _order(cb: MappedCallback) -> tuple[int, str]:
    phase = cb.figures.phase
    return (PHASES[phase].order if phase in PHASES else AFTER_ALL_PHASES), cb.figures.layer


def callback_titles(rows: list[MappedCallback]) -> list[str]:
    out = []
    for cb in sorted(rows, key=_order):
        title = f"{cb.figures.phase} · {cb.figures.figure.summary()}"
        if cb.via:
            title += f" · via {cb.via}"
        out.append(title)
    return out


def hover_section(rows: list[MappedCallback], store: str) -> str:
    """A markdown table of the figures per phase, under a `**Fleet**` heading."""
    if not rows:
        return ""
    lines = [f"**Fleet** (`{store}`, newest kernel per callback)", "",
             "| phase | kernel | cycles | machines | p50 | p95 | critical path | "
             "vs before | failures |",
             "|---|---|--:|--:|--:|--:|---|---|--:|"]
    for cb in sorted(rows, key=_order):
        f = cb.figures.figure
        change = f.change_us
        before = "-" if change is None else (
            f"{'+' if change >= 0 else '-'}{format_us(abs(change))} vs {f.prev_kernel}")
        path = (f"{f.cycles_on_path:,} of {f.cycles:,} cycles, p50 {format_us(f.path_p50_us)}"
                if f.cycles_on_path else "never")
        phase = cb.figures.phase + (f" (via {cb.via})" if cb.via else "")
        lines.append(f"| {phase} | {f.kernel} | {f.cycles:,} | {f.machines:,} | "
                     f"{format_us(f.p50_us)} | {format_us(f.p95_us)} | {path} | {before} | "
                     f"{cb.figures.failures:,} |")
    return "\n".join(lines)


def delay_hover(delay: FleetDelay, store: str) -> str:
    f = delay.figures.figure
    text = [f"**Fleet** (`{store}`): `{delay.call}` in `{delay.figures.caller}()`", "",
            f"- {delay.figures.phase or 'cycle'}: {f.summary(' per cycle')}",
            f"- {f.runs:,} calls in {f.cycles:,} cycles"]
    path = f.path_text()
    if path:
        text.append(f"- {path}")
    return "\n".join(text)

"""CodeLens over each delay call that ran in the loaded traces (sleepgraph's kprobes).

`msleep(50) · 8 × 55.0 ms per resume · on the critical path · at the 10 ms TRSTRCY minimum:
-320 ms of resume`. A measured site (calling function, delay function, requested value) is
matched to the call in the open document by the delay rules' own evaluation of the file
(traces/delay_sites.py `match_in_file`: same function, same delay, same value), which also
names the spec quantity the call implements and its minimum.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple, Protocol, TypeVar

from dpmlens.config.settings import Config
from dpmlens.lsp.trace_mapping import MeasuredSite
from dpmlens.model.types import FileModel
from dpmlens.traces.model.durations import format_us


class _HasCaller(Protocol):
    @property
    def caller(self) -> str: ...


_Site = TypeVar("_Site", bound=_HasCaller)


class DelayLens(NamedTuple):
    line: int  # 1-based
    call: str  # msleep(50), as written
    measured: str  # "measured 8 × 55.00 ms per resume · ..." (the delay diagnostics quote it)

    @property
    def title(self) -> str:
        return f"{self.call} · {self.measured}"


def delay_lenses(sites: list[MeasuredSite], model: FileModel) -> list[DelayLens]:
    """One lens for each measured delay site called in `model`."""
    return [
        DelayLens(int(static["line"]), str(static["call"]), measured(site, static))  # type: ignore[call-overload]
        for site, static in matched_sites(sites, model)
    ]


def matched_sites(
    sites: Sequence[_Site], model: FileModel
) -> list[tuple[_Site, dict[str, object]]]:
    """Each measured site (anything with `caller`, `func` and `requested_ms`: a trace's or a
    fleet's) whose call is in `model`, with that call as the delay rules evaluate it."""
    here = [s for s in sites if s.caller in model.functions]
    if not here:
        return []
    from dpmlens.rules.context import Context
    from dpmlens.rules.delays import analysis
    from dpmlens.traces.source.delay_sites import match_in_file

    ctx = Context(model, Config())
    try:
        a = analysis(ctx)
        path = Path(model.path)
        out = []
        for site in here:
            static = match_in_file(site, a, path, path)
            if static is not None:
                out.append((site, static))
        return out
    finally:
        ctx.close()


def title(site: MeasuredSite, static: dict[str, object]) -> str:
    return f"{static['call']} · {measured(site, static)}"


def measured(site: MeasuredSite, static: dict[str, object]) -> str:
    """What the captures measured at the call, and what its spec minimum would win back."""
    per_cycle = site.calls / max(1, site.cycles)
    phase = site.phases[0] if site.phases else "cycle"
    count = f"{per_cycle:.0f}" if per_cycle == int(per_cycle) else f"{per_cycle:.1f}"
    parts = [f"measured {count} × {format_us(site.mean_us)} per {phase}"]
    if site.on_path:
        parts.append("on the critical path" if site.on_path == site.calls
                     else f"{site.on_path} of {site.calls} calls on the critical path")
    padding, minimum = static.get("padding_ms"), static.get("min_ms")
    if isinstance(padding, float | int) and isinstance(minimum, float | int) and padding > 0:
        saving = padding * 1000 * per_cycle
        parts.append(f"at the {minimum:g} ms {static['spec']} minimum: "
                     f"-{format_us(saving)} of {phase}")
    return " · ".join(parts)

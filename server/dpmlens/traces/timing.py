"""`TimingIndex`: loaded traces + statistics + source mapping, for the language server.

    idx = TimingIndex.load(["/captures/run1"], source_roots=["/src/linux"])
    idx.status()                      # TraceStatus (docs/lsp-protocol.md)
    idx.slowest(50)                   # {"callbacks": [...], "phases": [...], "status": {...}}
    idx.for_function(path, "foo_suspend")   # [CallbackStats] measured in that callback
    idx.for_model(file_model)         # {function name: [CallbackStats]} for an open document
    lens_title(stats)                 # "resume_noirq · median 1.98 ms · p95 2.40 ms · ..."
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from dpmlens.model.types import FileModel
from dpmlens.traces.aggregate import CallbackStats, PhaseStats, aggregate, phase_stats
from dpmlens.traces.mapping import (
    MappedReport,
    SourceIndex,
    build_index,
    effective_name,
    file_modname,
    map_callback,
    map_to_source,
    module_names,
)
from dpmlens.traces.output import callback_json, phase_json, trace_status
from dpmlens.traces.traceset import TraceSet, load_traces


@dataclass
class TimingIndex:
    traces: TraceSet = field(default_factory=TraceSet)
    stats: list[CallbackStats] = field(default_factory=list)
    phases: list[PhaseStats] = field(default_factory=list)
    mapped: MappedReport | None = None
    index: SourceIndex | None = None

    @classmethod
    def load(cls, paths: list[str | os.PathLike[str]],
             source_roots: list[str | os.PathLike[str]] | None = None,
             progress: Callable[[str, int, int], None] | None = None,
             cancelled: Callable[[], bool] | None = None) -> TimingIndex:
        """Read traces, aggregate, and map onto the first existing source root (if any)."""
        traces = load_traces(paths, progress=progress, cancelled=cancelled)
        stats = aggregate(traces)
        out = cls(traces, stats, phase_stats(traces))
        for root in source_roots or ():
            if Path(root).exists():
                out.index = build_index(root, {s.driver for s in stats})
                out.mapped = map_to_source(stats, out.index)
                break
        return out

    def status(self) -> dict:
        return trace_status(self.traces, self.mapped, len(self.stats))

    def slowest(self, limit: int = 50) -> dict:
        return {
            "callbacks": [callback_json(s, self.mapped.mappings.get(s.key) if self.mapped
                                        else None) for s in self.stats[:limit]],
            "phases": [phase_json(p) for p in self.phases],
            "status": self.status(),
        }

    def for_function(self, path: str, function: str) -> list[CallbackStats]:
        """Callbacks the source index mapped to `function` defined in `path`."""
        if self.mapped is None:
            return []
        want = os.path.realpath(path)
        out = []
        for s in self.stats:
            m = self.mapped.mappings.get(s.key)
            if m is not None and m.source is not None and m.source.function == function \
                    and os.path.realpath(m.source.path) == want:
                out.append(s)
        return out

    def for_model(self, model: FileModel) -> dict[str, list[CallbackStats]]:
        """Map measured callbacks onto one parsed document, with no prebuilt index.

        Uses the document's own driver structs (KBUILD_MODNAME from the Makefile beside it)
        and tables; helpers defined elsewhere are not followed here.
        """
        names = {s.driver for s in self.stats}
        idx = SourceIndex(str(Path(model.path).parent))
        idx.models[model.path] = model
        mods = module_names(str(Path(model.path).parent))
        modname = file_modname(model.path, mods)
        for drv in model.drivers:
            name = effective_name(model, drv, modname, {})
            if name in names:
                idx.drivers.setdefault(name, []).append((model, drv))
        out: dict[str, list[CallbackStats]] = {}
        if not idx.drivers:
            return out
        for s in self.stats:
            if s.driver not in idx.drivers:
                continue
            m = map_callback(s, idx)
            if m.source is not None and m.source.path == model.path:
                out.setdefault(m.source.function, []).append(s)
        return out


def lens_title(stats: list[CallbackStats]) -> str:
    """One CodeLens line: the slowest device first, e.g.
    "resume_noirq · median 1.98 ms · p95 2.40 ms · max 3.10 ms · 12 cycles · 0-0055"."""
    from dpmlens.traces.output import human_us

    if not stats:
        return ""
    s = max(stats, key=lambda x: x.total_us)
    title = (f"{s.phase} · median {human_us(s.median_us)} · p95 {human_us(s.p95_us)} · "
             f"max {human_us(s.max_us)} · {s.cycles} cycle{'s' if s.cycles != 1 else ''} · "
             f"{s.device}")
    if len(stats) > 1:
        title += f" (+{len(stats) - 1} more)"
    return title

"""The traces the server has loaded, mapped to source, in the JSON shapes of docs/lsp-protocol.md.

Parsing and mapping run off the event loop (a thread); the mapping uses skeleton models of the
workspace (the index summaries plus the open documents). `install()` swaps the result in on the
loop, so a request never sees half a load.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dpmlens.lsp.core import DpmlensServer
from dpmlens.lsp.documents import Document
from dpmlens.lsp.workspace_index import WorkspaceIndex
from dpmlens.model.types import FileModel

if TYPE_CHECKING:  # imported when traces are first loaded (server start-up time)
    from dpmlens.lsp.delay_lens import DelayLens
    from dpmlens.lsp.trace_mapping import ParsedTraces


@dataclass
class TraceResult:
    parsed: ParsedTraces
    callbacks: list[dict[str, Any]]
    phases: list[dict[str, Any]]
    status: dict[str, Any]
    runtime: list[dict[str, Any]] = field(default_factory=list)  # runtime PM per callback


@dataclass
class TraceState:
    result: TraceResult | None = None
    manual_paths: list[str] = field(default_factory=list)  # from dpmlens.loadTraces
    auto_files: list[str] = field(default_factory=list)  # from traceGlobs
    # bumped when a load starts or the traces are cleared: a load or a re-mapping that began
    # before must not install its (older) result over the newer one
    generation: int = 0
    _by_function: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    _by_name: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    _durations: dict[tuple[str, str, str, str], tuple[float, ...]] | None = None
    _delay_lenses: dict[tuple[str, int | None], list[DelayLens]] = field(default_factory=dict)

    @property
    def loaded(self) -> bool:
        return self.result is not None and bool(self.result.callbacks or self.result.runtime)

    @property
    def files(self) -> list[str]:
        return list(self.result.parsed.paths) if self.result else []

    def clear(self) -> None:
        self.generation += 1
        self.result = None
        self.manual_paths = []
        self.auto_files = []
        self._by_function = {}
        self._by_name = {}
        self._delay_lenses = {}

    def status(self) -> dict[str, Any]:
        from dpmlens.traces.report.output import trace_status

        return dict(self.result.status) if self.result is not None else trace_status(None, None)

    def slowest(self, limit: int) -> dict[str, Any]:
        cbs = self.result.callbacks if self.result else []
        top = sorted(cbs, key=lambda c: -c["median_us"])[:limit]
        rt = sorted(self.result.runtime if self.result else [],
                    key=lambda c: -c["median_us"])[:limit]
        crit = self.result.parsed.critical_phases if self.result else []
        return {"callbacks": top, "phases": self.result.phases if self.result else [],
                "status": self.status(), "runtime": rt, "critical": crit}

    def callbacks_for(self, path: str, function: str) -> list[dict[str, Any]]:
        return self._by_function.get((os.path.realpath(path), function), [])

    def callbacks_named(self, function: str) -> list[dict[str, Any]]:
        return self._by_name.get(function, [])

    def delay_lenses(self, doc: Document, model: FileModel) -> list[DelayLens]:
        """delay_lens.DelayLens of the measured delay calls in `doc` (cached per version)."""
        from dpmlens.lsp.delay_lens import delay_lenses

        if self.result is None:
            return []
        key = (doc.uri, doc.version)
        hit = self._delay_lenses.get(key)
        if hit is None:
            hit = delay_lenses(self.result.parsed.delay_sites, model)
            # the latest version of each document only
            self._delay_lenses = {k: v for k, v in self._delay_lenses.items() if k[0] != doc.uri}
            self._delay_lenses[key] = hit
        return hit

    def durations_of(self, cb: dict[str, Any]) -> tuple[float, ...]:
        """The measured durations (us) behind one Callback dict, for histograms."""
        from dpmlens.lsp.trace_mapping import durations, sample_key

        if self.result is None:
            return ()
        if self._durations is None:
            self._durations = durations(self.result.parsed)
        return self._durations.get(sample_key(cb), ())

    def install(self, result: TraceResult) -> None:
        by_fn: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        for cb in [*result.callbacks, *result.runtime]:
            src = cb.get("source")
            if src:
                by_fn[(os.path.realpath(src["path"]), src["function"])].append(cb)
        by_name: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for (_path, fn), rows in by_fn.items():
            by_name[fn].extend(rows)
        self.result = result
        self._durations = None
        self._delay_lenses = {}
        self._by_function = dict(by_fn)
        self._by_name = dict(by_name)

    # -- computing (thread) ----------------------------------------------------------------

    def mapping_inputs(self, server: DpmlensServer) -> dict[str, Any]:
        """What the mapping needs from the server, captured on the loop thread."""
        models: dict[str, FileModel] = {}
        for s in server.get_feature(WorkspaceIndex).pm_summaries():
            models[s.path] = FileModel(
                path=s.path, source=b"", functions=dict(s.callbacks), calls=[],
                pm_tables=dict(s.pm_tables), drivers=list(s.drivers), defines={},
            )
        for doc in server.documents.docs.values():
            res = server.documents.analyses.get(doc.uri)
            if res is not None:
                models[doc.path] = res.model
        return {"models": list(models.values()), "map_path": server.settings.map_path}

    @staticmethod
    def compute(parsed: ParsedTraces, inputs: dict[str, Any]) -> TraceResult:
        from dpmlens.lsp.trace_mapping import map_traces

        callbacks, phases, status, runtime = map_traces(parsed, inputs["models"],
                                                        inputs["map_path"])
        return TraceResult(parsed, callbacks, phases, status, runtime)


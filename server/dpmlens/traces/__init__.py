"""Measured PM callback latencies: importers -> samples -> aggregation -> source mapping.

Entry points (see docs/traces.md):
  load_traces(paths) -> TraceSet          read dmesg / ftrace / Perfetto files and directories
  aggregate(traces) -> [CallbackStats]    per (driver, device, phase), slowest total first
  phase_stats(traces) -> [PhaseStats]     per phase wall time, mean +/- sd across cycles
  build_index(dir, names) -> SourceIndex  driver structs under a source tree
  map_to_source(stats, index) -> MappedReport
  compare(before, after) -> [DiffRow]     medians and Mann-Whitney U
"""

from typing import TYPE_CHECKING, Any

from dpmlens.traces.analysis.aggregate import CallbackStats, PhaseStats, aggregate, phase_stats
from dpmlens.traces.analysis.diff import DiffRow, compare, mann_whitney_u
from dpmlens.traces.model.sample import CallbackSample, FileReport, PhaseTime
from dpmlens.traces.model.traceset import TraceSet
from dpmlens.traces.read.load import load_traces
from dpmlens.traces.report.output import callback_json, report_json, trace_status

if TYPE_CHECKING:
    from dpmlens.traces.source.mapping import (
        MappedReport,
        SourceIndex,
        build_index,
        map_to_source,
    )

_LAZY = ("MappedReport", "SourceIndex", "build_index", "map_to_source")


def __getattr__(name: str) -> Any:
    """The source mapping (tree-sitter and the driver model, ~35 ms to import) only when
    asked for: `trace report` without --source does not need it."""
    if name in _LAZY:
        from dpmlens.traces.source import mapping

        return getattr(mapping, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "CallbackSample", "CallbackStats", "DiffRow", "FileReport", "MappedReport", "PhaseStats",
    "PhaseTime", "SourceIndex", "TraceSet", "aggregate", "build_index",
    "callback_json", "compare", "load_traces", "mann_whitney_u", "map_to_source",
    "phase_stats", "report_json", "trace_status",
]

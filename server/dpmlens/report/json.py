"""The JSON contract other tools read (version 1). Lines and columns are 1-based, end columns
exclusive; paths are as given on the command line.

    {"version": 1,
     "findings": [{"rule", "kernel_type", "severity", "path", "line", "column", "end_line",
                   "end_column", "message", "function", "phase", "chain": [...]}],
     "summary": {"files_checked", "findings", "by_severity", "by_rule", "errors", ...}}
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from dpmlens.core import jsonsafe
from dpmlens.core.findings import Finding, Severity, Span
from dpmlens.engine.check import CheckRun

VERSION = 1


def _span(span: Span) -> dict[str, int]:
    return {
        "line": span.line,
        "column": span.column,
        "end_line": span.end_line,
        "end_column": span.end_column,
    }


def finding_to_json(f: Finding) -> dict[str, Any]:
    return {
        "rule": f.rule,
        "kernel_type": f.kernel_type,
        "severity": str(f.severity),
        "path": f.path,
        **_span(f.span),
        "message": f.message,
        "function": f.function,
        "phase": f.phase,
        "chain": [
            {"function": s.function, "path": s.path, **_span(s.span), "note": s.note}
            for s in f.chain
        ],
        **extra_json(f),
    }


def extra_json(f: Finding) -> dict[str, Any]:
    """`dead` (why no real build enables the driver), `measured` (the delay site a
    `--traces` capture measured) and `fleet` (the delay site or callback as a `--fleet`
    store measured it), present only when known."""
    out: dict[str, Any] = {}
    if f.dead:
        out["dead"] = f.dead
    if f.measured is not None:
        out["measured"] = {**asdict(f.measured), "phases": list(f.measured.phases)}
    if f.fleet is not None:
        out["fleet"] = asdict(f.fleet)
    return out


def summary(run: CheckRun) -> dict[str, Any]:
    by_severity = Counter(str(f.severity) for f in run.findings)
    return {
        "files_checked": run.files_checked,
        "files_analyzed": run.files_analyzed,
        "bytes_checked": run.bytes_checked,
        "findings": len(run.findings),
        "by_severity": {str(s): by_severity.get(str(s), 0) for s in sorted(Severity, reverse=True)},
        "by_rule": dict(sorted(Counter(f.rule for f in run.findings).items())),
        "suppressed_by_baseline": run.baseline_suppressed,
        "quiet_hidden": getattr(run, "quiet_hidden", 0),
        "notes": list(getattr(run, "notes", [])),  # what was not read (a partial tree)
        "errors": [{"path": e.path, "message": e.message} for e in run.errors],
        "jobs": run.jobs,
        "elapsed_seconds": round(run.elapsed, 3),
    }


def render(run: CheckRun, rules: Sequence[Any] = ()) -> str:
    document = {
        "version": VERSION,
        "findings": [finding_to_json(f) for f in run.findings],
        "summary": summary(run),
    }
    return jsonsafe.dumps(document, indent=2) + "\n"

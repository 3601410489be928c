"""load_traces: progress per file, and cancellation between files (the language server's
loadTraces command relies on both)."""

from __future__ import annotations

from traces_helpers import FIXTURES

from dpmlens.traces import load_traces


def test_load_reports_progress_and_can_be_cancelled() -> None:
    seen: list[tuple[str, int, int]] = []
    traces = load_traces([str(FIXTURES)], progress=lambda p, i, n: seen.append((p, i, n)))
    # every file read is reported, the traces and those found in a folder holding none
    # (pasted logs without PM lines: traces.ignored)
    assert len(seen) == len(traces.files) + len(traces.ignored) and len(traces.files) >= 5
    assert [i for _, i, _ in seen] == list(range(len(seen)))
    stopped = load_traces([str(FIXTURES)], cancelled=lambda: True)
    assert stopped.files == [] and stopped.errors == ["loading cancelled"]

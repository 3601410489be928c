"""Paths shared by the trace tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "test-fixtures" / "traces"
# CI checks out ../shared beside the repository (the lead's DESIGN.md and real captures).
# DPMLENS_SHARED points elsewhere (a worktree whose ../shared is not the shared checkout).
SHARED_TRACES = Path(os.environ.get("DPMLENS_SHARED") or REPO.parent / "shared") / "traces"


def shared_traces() -> Path:
    if not SHARED_TRACES.is_dir():
        pytest.skip(f"real captures not found at {SHARED_TRACES} (../shared is absent)")
    return SHARED_TRACES


def by_key(traces) -> dict:  # noqa: ANN001 - TraceSet
    """(driver, device, phase) -> sorted durations."""
    out: dict = {}
    for s in traces.samples():
        out.setdefault((s.driver, s.device, s.phase), []).append(s.duration_us)
    return {k: sorted(v) for k, v in out.items()}

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


LAB = REPO / "test-fixtures" / "lab"


def smallest_lab_captures() -> list[Path]:
    """The smallest ftrace capture of each lab run directory under test-fixtures/lab."""
    smallest: dict[str, Path] = {}
    for p in sorted(LAB.rglob("*trace*.txt*")) if LAB.is_dir() else []:
        top = p.relative_to(LAB).parts[0]
        if top not in smallest or p.stat().st_size < smallest[top].stat().st_size:
            smallest[top] = p
    return list(smallest.values())


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


# Resume of three devices (p, c child of p, s without parent), async, for the device-links
# tests: without a link the critical path is p -> c; with the link s -> c, c waited for its
# supplier: s -> c.
LINKS_CAPTURE = [
    (1.000000, "bash-1", "suspend_resume: dpm_resume[16] begin"),
    (1.000010, "kworker/0:1-9", "device_pm_callback_start: p dev-p, parent: none, bus "
                                "[resume]"),
    (1.001010, "kworker/0:1-9", "device_pm_callback_end: p dev-p, err=0"),
    (1.000020, "bash-1", "device_pm_callback_start: s dev-s, parent: none, bus [resume]"),
    (1.010020, "bash-1", "device_pm_callback_end: s dev-s, err=0"),
    (1.010070, "kworker/0:2-10", "device_pm_callback_start: c dev-c, parent: dev-p, bus "
                                 "[resume]"),
    (1.030070, "kworker/0:2-10", "device_pm_callback_end: c dev-c, err=0"),
    (1.030100, "bash-1", "suspend_resume: dpm_resume[16] end"),
]


def write_links_capture(path: Path) -> Path:
    """LINKS_CAPTURE as an ftrace text capture at `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{task:>16} [000] .... {ts:.6f}: {x}\n"
                            for ts, task, x in sorted(LINKS_CAPTURE)))
    return path

"""Shared helpers for the model tests (real tree-sitter parses, no mocks)."""

from __future__ import annotations

from pathlib import Path

from kernel_trees import K612

from dpmlens.model.build import build_model
from dpmlens.model.types import FileModel

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "test-fixtures" / "model"
KERNEL = K612


def build(src: str, path: str = "drivers/misc/foo.c") -> FileModel:
    return build_model(path, src.encode())


def members(model: FileModel, table: str) -> dict[str, str | None]:
    """member -> function of one table (asserting each member is filled once)."""
    t = model.pm_tables[table]
    out: dict[str, str | None] = {}
    for m in t.members:
        assert m.member not in out, f"{m.member} filled twice in {table}"
        out[m.member] = m.function
    return out


SYSTEM = ("suspend", "freeze", "poweroff"), ("resume", "thaw", "restore")
LATE = (
    ("suspend_late", "freeze_late", "poweroff_late"),
    ("resume_early", "thaw_early", "restore_early"),
)
NOIRQ = (
    ("suspend_noirq", "freeze_noirq", "poweroff_noirq"),
    ("resume_noirq", "thaw_noirq", "restore_noirq"),
)


def sleep(kind: tuple[tuple[str, ...], tuple[str, ...]], s: str, r: str) -> dict[str, str]:
    down, up = kind
    return {**{m: s for m in down}, **{m: r for m in up}}


def runtime(s: str | None, r: str | None, i: str | None) -> dict[str, str | None]:
    return {"runtime_suspend": s, "runtime_resume": r, "runtime_idle": i}

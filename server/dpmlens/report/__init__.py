"""Printers. Each module has `render(run: CheckRun, rules: Sequence[Rule]) -> str`, all fed the
same findings; `rules` supplies the metadata some formats carry (SARIF's rule table)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dpmlens.engine.check import CheckRun

FORMATS = ("gnu", "checkpatch", "json", "sarif", "github", "html")

Renderer = Callable[["CheckRun", Sequence[Any]], str]


def renderer(fmt: str) -> Renderer:
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r} (expected one of: {', '.join(FORMATS)})")
    return importlib.import_module(f"dpmlens.report.{fmt}").render

"""What one run of the rules over an open document produced (diagnostics.analyze_document)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import tree_sitter as ts

from dpmlens.core.findings import Finding
from dpmlens.model.types import FileModel


@dataclass
class Analysis:
    version: int | None
    source: bytes  # the text the findings refer to
    _model: FileModel | None  # None: findings reused (incremental.py), model built on first use
    findings: list[Finding]
    seconds: float
    # for a reused analysis: (path, what gives the tree of `source`) to build the model from
    _lazy: tuple[str, Callable[[], ts.Tree]] | None = None
    how: str = ""  # incremental.Result.how: reused, judged again, or why in full

    @property
    def model(self) -> FileModel:
        if self._model is None:
            from dpmlens.model.build import build_model

            assert self._lazy is not None
            path, tree = self._lazy
            self._model, self._lazy = build_model(path, self.source, tree=tree()), None
        return self._model

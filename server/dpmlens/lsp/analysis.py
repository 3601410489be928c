"""What one run of the rules over an open document produced (diagnostics.analyze_document)."""

from __future__ import annotations

from dataclasses import dataclass

from dpmlens.findings import Finding
from dpmlens.model.types import FileModel


@dataclass
class Analysis:
    version: int | None
    source: bytes  # the text the findings refer to
    model: FileModel
    findings: list[Finding]
    seconds: float

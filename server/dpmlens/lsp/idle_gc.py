"""Garbage collection when the user stops typing, not in the middle of an analysis.

An analysis creates tens of thousands of objects and (measured on hub.c) almost no reference
cycles: refcounting frees them. The cyclic collector still ran on allocation counts, and its
generation-1/2 passes (20-50 ms) landed inside edit -> diagnostics latencies. So automatic
collection is off; a collection runs after IDLE_S without an analysis, and, as a safety net
for a client that never pauses, after every EVERY_RUNS analyses.
"""

from __future__ import annotations

import asyncio
import gc

from dpmlens.lsp.analysis import Analysis
from dpmlens.lsp.core import DpmlensServer, LanguageFeature
from dpmlens.lsp.documents import Document

IDLE_S = 1.5
EVERY_RUNS = 200


class IdleCollector(LanguageFeature):
    name = "idle gc"

    def __init__(self, server: DpmlensServer) -> None:
        super().__init__(server)
        self._timer: asyncio.TimerHandle | None = None
        self._runs = 0
        self.collections = 0

    def initialized(self) -> None:
        gc.disable()

    def document_analysed(self, doc: Document, analysis: Analysis) -> None:
        self.analysed()

    def traces_loaded(self) -> None:
        self.analysed()

    def analysed(self) -> None:
        self._runs += 1
        if self._runs >= EVERY_RUNS:
            self.collect()
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer = asyncio.get_running_loop().call_later(IDLE_S, self.collect)

    def collect(self) -> None:
        self._timer = None
        self._runs = 0
        gc.collect()
        self.collections += 1

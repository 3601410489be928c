"""The Traces feature: loads trace captures (dpmlens.loadTraces, `traceGlobs`), maps them onto
the workspace and keeps the result (traces_state.TraceState).

Loading runs in a thread (parsing a capture is CPU and I/O, and must not stall diagnostics); a
`$/cancelRequest` cancels the request and leaves the previous traces in place. After a load
the client is asked to refresh CodeLens and the features hear `traces_loaded`.
"""

from __future__ import annotations

import asyncio
import glob
import os
import threading
from collections.abc import Coroutine, Sequence
from fnmatch import fnmatch
from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path

from dpmlens.lsp.core import DpmlensServer, LanguageFeature
from dpmlens.lsp.settings import Settings
from dpmlens.lsp.traces_state import TraceState
from dpmlens.lsp.workspace_index import workspace_roots


def glob_trace_files(roots: list[str], globs: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for root in roots:
        for pattern in globs:
            for p in glob.iglob(os.path.join(root, pattern), recursive=True):
                if os.path.isfile(p) and p not in out:
                    out.append(p)
    return sorted(out)


def glob_match(path: str, pattern: str) -> bool:
    """`**/x` style match of a path against one trace glob."""
    base = pattern[3:] if pattern.startswith("**/") else pattern
    return fnmatch(os.path.basename(path), base) or fnmatch(path, pattern)


class Traces(LanguageFeature):
    name = "traces"

    def __init__(self, server: DpmlensServer) -> None:
        super().__init__(server)
        self.state = TraceState()

    # -- lifecycle -------------------------------------------------------------------------

    def initialized(self) -> None:
        self.spawn(self.load_globbed())

    def settings_changed(self, old: Settings, new: Settings) -> None:
        if old.trace_globs != new.trace_globs or old.path_mappings != new.path_mappings:
            self.spawn(self.load_globbed())

    def files_changed(self, changes: Sequence[types.FileEvent]) -> None:
        touched = {to_fs_path(c.uri) for c in changes}
        known = set(self.state.auto_files) | set(self.state.files)
        globs = self.server.settings.trace_globs
        if touched & known or any(
            any(glob_match(p, g) for g in globs) for p in touched if p
        ):
            self.spawn(self.load_globbed())

    def workspace_indexed(self) -> None:
        # Re-map when the index finishes: callbacks in files not yet indexed map now.
        if self.state.result is not None:
            self.spawn(self.remap())

    def index_updated(self, directory: str | None) -> None:
        # A directory of an open document was indexed: callbacks that did not map may now.
        if self.state.result is not None and self.state.status()["callbacks_unmapped"]:
            self.spawn(self.remap())

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)

        def done(t: asyncio.Task[None]) -> None:
            if not t.cancelled() and (exc := t.exception()) is not None:
                self.server.log_exception("traces", exc)

        task.add_done_callback(done)

    # -- loading ---------------------------------------------------------------------------

    async def load(self, paths: list[str],
                   token: types.ProgressToken | None = None) -> dict[str, Any]:
        """Parse `paths` in a thread, map them, install; a cancelled request changes nothing."""
        from dpmlens.lsp.trace_mapping import parse_traces
        from dpmlens.traces.model.links import project_links

        server = self.server
        traces = self.state
        progress = server.work_done_progress
        loop = asyncio.get_running_loop()
        stop = threading.Event()
        request = server.protocol.cancelled()  # $/cancelRequest of this request, if it is one

        def halted() -> bool:
            return stop.is_set() or request.is_set()

        def report(path: str, i: int, n: int) -> None:
            if token is not None:
                loop.call_soon_threadsafe(progress.report, token, types.WorkDoneProgressReport(
                    message=os.path.basename(path), percentage=int(100 * i / max(1, n))))

        if token is not None:
            progress.begin(token, types.WorkDoneProgressBegin(
                title="dpmlens: loading traces", message=f"{len(paths)} path(s)",
                cancellable=True))
            fut = progress.tokens.get(token)
            if fut is not None:  # window/workDoneProgress/cancel from the client
                fut.add_done_callback(lambda f: stop.set())
        traces.generation += 1
        generation = traces.generation
        try:
            links, warning = project_links(workspace_roots(server), server.settings.trace_links)
            if warning:
                server.log("warning", f"dpmlens: {warning}")
            parsed = await loop.run_in_executor(
                None, parse_traces, paths, halted, report, links)
            if halted():
                raise asyncio.CancelledError
            result = await loop.run_in_executor(
                None, traces.compute, parsed, traces.mapping_inputs(server))
            if halted():  # cancelled while mapping: the previous traces stay
                raise asyncio.CancelledError
            if traces.generation == generation:  # else a newer load (or a clear) won
                traces.install(result)
        except asyncio.CancelledError:
            stop.set()  # $/cancelRequest: the worker thread stops between files
            raise
        finally:
            if token is not None:
                progress.end(token, types.WorkDoneProgressEnd(message="done"))
                progress.tokens.pop(token, None)  # the client may use the token again
        status = traces.status()
        server.log("info", f"dpmlens: traces loaded: {status['samples']} samples from "
                           f"{status['files']} file(s), {status['callbacks_mapped']} callbacks "
                           "mapped")
        for err in status["errors"]:
            server.log("warning", f"dpmlens: trace: {err}")
        self.refresh_lenses()
        server.features.traces_loaded()
        return status

    def clear(self) -> None:
        self.state.clear()
        self.refresh_lenses()
        self.server.features.traces_loaded()  # (none now): diagnostics drop what they quoted

    async def remap(self) -> None:
        """Map the loaded traces again (the workspace index has more drivers now)."""
        traces = self.state
        base = traces.result
        if base is None:
            return
        loop = asyncio.get_running_loop()
        generation = traces.generation
        result = await loop.run_in_executor(
            None, traces.compute, base.parsed, traces.mapping_inputs(self.server))
        # traces loaded (or cleared) meanwhile: this mapping is of the old ones. A load that
        # began before this remap (its generation already counted) and installed while it
        # ran is seen by identity: installing here would bring the old capture back.
        if traces.generation != generation or traces.result is not base:
            return
        traces.install(result)
        self.refresh_lenses()

    def refresh_lenses(self) -> None:
        caps = self.server.client_capabilities.workspace
        lens = caps.code_lens if caps is not None else None
        if lens is not None and lens.refresh_support:
            with self.server.guard("codeLens refresh"):
                self.server.workspace_code_lens_refresh(None)

    async def load_globbed(self) -> None:
        """Load the trace files matching `traceGlobs` in the workspace (start, settings,
        change)."""
        server = self.server
        roots = workspace_roots(server)
        if not roots or not server.settings.trace_globs:
            return
        loop = asyncio.get_running_loop()
        files = await loop.run_in_executor(None, glob_trace_files, roots,
                                           server.settings.trace_globs)
        if files or self.state.auto_files:
            self.state.auto_files = files
            with server.guard("traces (globs)"):
                await self.load(files + self.state.manual_paths)

"""workspace/executeCommand handlers (docs/lsp-protocol.md) and trace globs.

Trace loading runs in a thread (parsing a capture is CPU and I/O, and must not stall
diagnostics); a `$/cancelRequest` cancels the request and leaves the previous traces in place.
After a load the client is asked to refresh CodeLens.
"""

from __future__ import annotations

import asyncio
import glob
import os
import threading
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from dpmlens.jsonsafe import finite
from dpmlens.lsp.diagnostics import rules_by_id
from dpmlens.lsp.server import COMMAND_PARAMS
from dpmlens.lsp.traces_state import TraceState
from dpmlens.lsp.workspace_index import workspace_roots

LOAD, CLEAR, STATUS, SLOWEST, EXPLAIN, TIMELINE = COMMANDS = (
    "dpmlens.loadTraces",
    "dpmlens.clearTraces",
    "dpmlens.traceStatus",
    "dpmlens.slowestCallbacks",
    "dpmlens.explainRule",
    "dpmlens.timelineHtml",
)  # the one list: extension/src/protocol.ts ServerCommand is tested against it


class CommandError(JsonRpcInvalidParams):
    """A bad argument: answered as InvalidParams (-32602) with this one-line message (pygls
    answers any other exception as InternalError with a traceback)."""


def _arg_object(args: tuple[Any, ...], command: str) -> dict[str, Any]:
    if not args:
        return {}
    if len(args) != 1 or not isinstance(args[0], dict):
        raise CommandError(f"{command}: expected one object argument, got {list(args)!r}")
    return args[0]


def _paths_arg(args: tuple[Any, ...]) -> list[str]:
    obj = _arg_object(args, LOAD)
    paths = obj.get("paths")
    if not isinstance(paths, list) or not paths or not all(isinstance(p, str) for p in paths):
        raise CommandError(f'{LOAD}: expected [{{"paths": ["/file-or-dir", ...]}}], got {obj!r}')
    return paths


def explain(server: Any, rule_id: Any) -> dict[str, Any]:
    from dpmlens.rules.loader import find_rule

    rules = rules_by_id(server)
    rule = find_rule(rules.values(), rule_id) if isinstance(rule_id, str) else None
    if rule is None:
        raise CommandError(f"{EXPLAIN}: unknown rule {rule_id!r}")
    md = [f"## {rule.id}: {rule.title}", "", f"`{rule.kernel_type}` · {rule.severity}", "",
          rule.note.strip()]
    if rule.fix:
        md += ["", f"**Quick fix**: {rule.fix.get('title', '')}"]
    md += ["", f"[Kernel documentation]({rule.url})"]
    return {
        "id": rule.id,
        "title": rule.title,
        "severity": str(rule.severity),
        "kernel_type": rule.kernel_type,
        "url": rule.url,
        "markdown": "\n".join(md),
    }


def glob_trace_files(roots: list[str], globs: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for root in roots:
        for pattern in globs:
            for p in glob.iglob(os.path.join(root, pattern), recursive=True):
                if os.path.isfile(p) and p not in out:
                    out.append(p)
    return sorted(out)


async def load_traces(server: Any, paths: list[str], token: Any = None) -> dict[str, Any]:
    """Parse `paths` in a thread, map them, install; a cancelled request changes nothing."""
    from dpmlens.lsp.trace_mapping import parse_traces
    from dpmlens.traces.links import project_links

    traces: TraceState = server.traces
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
            title="dpmlens: loading traces", message=f"{len(paths)} path(s)", cancellable=True))
        fut = progress.tokens.get(token)
        if fut is not None:  # window/workDoneProgress/cancel from the client
            fut.add_done_callback(lambda f: stop.set())
    try:
        links, warning = project_links(workspace_roots(server), server.settings.trace_links)
        if warning:
            server.log("warning", f"dpmlens: {warning}")
        parsed = await loop.run_in_executor(None, parse_traces, paths, halted, report, links)
        if halted():
            raise asyncio.CancelledError
        result = await loop.run_in_executor(
            None, traces.compute, parsed, traces.mapping_inputs(server))
        if halted():  # cancelled while mapping: the previous traces stay
            raise asyncio.CancelledError
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
                       f"{status['files']} file(s), {status['callbacks_mapped']} callbacks mapped")
    for err in status["errors"]:
        server.log("warning", f"dpmlens: trace: {err}")
    refresh_lenses(server)
    server.emit("traces_loaded")
    return status


async def remap(server: Any) -> None:
    """Map the loaded traces again (the workspace index has more drivers now)."""
    traces: TraceState = server.traces
    if traces.result is None:
        return
    loop = asyncio.get_running_loop()
    result = await loop.run_in_executor(
        None, traces.compute, traces.result.parsed, traces.mapping_inputs(server))
    traces.install(result)
    refresh_lenses(server)


def refresh_lenses(server: Any) -> None:
    caps = server.client_capabilities.workspace
    lens = caps.code_lens if caps is not None else None
    if lens is not None and lens.refresh_support:
        with server.guard("codeLens refresh"):
            server.workspace_code_lens_refresh(None)


async def load_globbed(server: Any) -> None:
    """Load the trace files matching `traceGlobs` in the workspace (start, settings, change)."""
    roots = workspace_roots(server)
    if not roots or not server.settings.trace_globs:
        return
    loop = asyncio.get_running_loop()
    files = await loop.run_in_executor(None, glob_trace_files, roots, server.settings.trace_globs)
    if files or server.traces.auto_files:
        server.traces.auto_files = files
        with server.guard("traces (globs)"):
            await load_traces(server, files + server.traces.manual_paths)


def setup(server: Any) -> None:
    server.traces = TraceState()

    def spawn(coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        task.add_done_callback(
            lambda t: (
                t.cancelled()
                or t.exception() is None
                or server.log_exception("traces", t.exception())
            )
        )

    server.on("initialized", "traces", lambda: spawn(load_globbed(server)))

    def on_settings(old: Any, new: Any) -> None:
        if old.trace_globs != new.trace_globs or old.path_mappings != new.path_mappings:
            spawn(load_globbed(server))

    server.on("settings_changed", "traces", on_settings)

    def on_watched(changes: list[types.FileEvent]) -> None:
        from pygls.uris import to_fs_path

        touched = {to_fs_path(c.uri) for c in changes}
        known = set(server.traces.auto_files) | set(server.traces.files)
        if touched & known or any(
            any(glob_match(p, g) for g in server.settings.trace_globs) for p in touched if p
        ):
            spawn(load_globbed(server))

    server.on("watched_files", "traces", on_watched)

    # Re-map when the index finishes: callbacks in files not yet indexed map now.
    def on_indexed() -> None:
        if server.traces.result is not None:
            spawn(remap(server))

    server.on("workspace_indexed", "traces", on_indexed)

    # A directory of an open document was indexed: callbacks that did not map may now.
    def on_dir_indexed(_directory: Any) -> None:
        if server.traces.result is not None and server.traces.status()["callbacks_unmapped"]:
            spawn(remap(server))

    server.on("index_updated", "traces", on_dir_indexed)

    @server.command(LOAD)
    async def cmd_load(ls: Any, *args: Any) -> dict[str, Any]:
        params = COMMAND_PARAMS.get()
        token = params.work_done_token if params is not None else None
        paths = _paths_arg(args)
        # As in the CLI: a bad or missing path is one error in the status, the others load.
        # Only a request naming nothing that exists is refused.
        existing = [p for p in paths if os.path.exists(p)]
        if not existing:
            raise CommandError(f"{LOAD}: no such file or directory: {', '.join(paths)}")
        missing = [p for p in paths if p not in existing]  # reported now, not kept
        wanted = list(dict.fromkeys(ls.traces.manual_paths + existing))
        # kept only once loaded: a cancelled load changes nothing, its paths included
        status = await load_traces(ls, ls.traces.auto_files + wanted + missing, token)
        ls.traces.manual_paths = wanted
        return finite(status)  # no NaN/Infinity in the JSON-RPC result

    @server.command(CLEAR)
    def cmd_clear(ls: Any, *args: Any) -> dict[str, Any]:
        ls.traces.clear()
        refresh_lenses(ls)
        ls.emit("traces_loaded")  # (none now): diagnostics drop the measurements they quoted
        return finite(ls.traces.status())

    @server.command(STATUS)
    def cmd_status(ls: Any, *args: Any) -> dict[str, Any]:
        return finite(ls.traces.status())

    @server.command(SLOWEST)
    def cmd_slowest(ls: Any, *args: Any) -> dict[str, Any]:
        obj = _arg_object(args, SLOWEST)
        limit = obj.get("limit", 50)
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise CommandError(f"{SLOWEST}: limit must be a positive integer, got {limit!r}")
        return finite(ls.traces.slowest(limit))

    @server.command(TIMELINE)
    async def cmd_timeline(ls: Any, *args: Any) -> dict[str, Any]:
        from dpmlens.lsp.trace_mapping import timeline_html

        files = ls.traces.files
        if not files:
            raise CommandError(f"{TIMELINE}: no traces loaded (dpmlens.loadTraces first)")
        models = ls.traces.mapping_inputs(ls)["models"]
        loop = asyncio.get_running_loop()
        try:
            html = await loop.run_in_executor(None, timeline_html, files, models)
        except ValueError as exc:
            raise CommandError(f"{TIMELINE}: {exc}") from None
        return {"html": html, "files": files}

    @server.command(EXPLAIN)
    def cmd_explain(ls: Any, *args: Any) -> dict[str, Any]:
        if len(args) != 1:
            raise CommandError(f'{EXPLAIN}: expected ["rule-id"], got {list(args)!r}')
        return explain(ls, args[0])


def glob_match(path: str, pattern: str) -> bool:
    """`**/x` style match of a path against one trace glob."""
    from fnmatch import fnmatch

    base = pattern[3:] if pattern.startswith("**/") else pattern
    return fnmatch(os.path.basename(path), base) or fnmatch(path, pattern)

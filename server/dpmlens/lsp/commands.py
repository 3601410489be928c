"""workspace/executeCommand handlers (docs/lsp-protocol.md), each with typed arguments
(command_args.py). The trace commands drive the Traces feature (trace_loader.py)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from dpmlens.core.jsonsafe import finite
from dpmlens.lsp.command_args import Command, CommandError, FieldError, NoArguments
from dpmlens.lsp.core import DpmlensServer, LanguageFeature
from dpmlens.lsp.protocol import COMMAND_PARAMS
from dpmlens.lsp.rulebook import RuleBook
from dpmlens.lsp.trace_loader import Traces

__all__ = ["COMMANDS", "CommandError", "Commands", "explain"]

LOAD, CLEAR, STATUS, SLOWEST, EXPLAIN, TIMELINE = COMMANDS = (
    "dpmlens.loadTraces",
    "dpmlens.clearTraces",
    "dpmlens.traceStatus",
    "dpmlens.slowestCallbacks",
    "dpmlens.explainRule",
    "dpmlens.timelineHtml",
)  # the one list: extension/src/protocol.ts ServerCommand is tested against it

T = TypeVar("T")


@dataclass(frozen=True)
class LoadTraces:
    paths: list[str]

    def __post_init__(self) -> None:
        if not self.paths:
            raise FieldError("paths", "empty, name at least one file or directory")


@dataclass(frozen=True)
class SlowestCallbacks:
    limit: int = 50

    def __post_init__(self) -> None:
        if self.limit < 1:
            raise FieldError("limit", f"must be a positive integer, got {self.limit}")


@dataclass(frozen=True)
class ExplainRule:
    rule: str  # a rule id or kernel type


LOAD_TRACES = Command(LOAD, LoadTraces, '[{"paths": ["/file-or-dir", ...]}]')
CLEAR_TRACES = Command(CLEAR, NoArguments, "[]", form="none")
TRACE_STATUS = Command(STATUS, NoArguments, "[]", form="none")
SLOWEST_CALLBACKS = Command(SLOWEST, SlowestCallbacks, '[{"limit": 50}] or []', optional=True)
EXPLAIN_RULE = Command(EXPLAIN, ExplainRule, '["rule-id"]', form="positional")
TIMELINE_HTML = Command(TIMELINE, NoArguments, "[]", form="none")


def _json(result: dict[str, Any]) -> dict[str, Any]:
    """`result` without NaN/Infinity (no JSON parser takes them)."""
    out: dict[str, Any] = finite(result)
    return out


def explain(rules: RuleBook, rule_id: str) -> dict[str, Any]:
    from dpmlens.rules.loader import find_rule

    rule = find_rule(rules.by_id().values(), rule_id)
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


class Commands(LanguageFeature):
    name = "commands"

    def __init__(self, server: DpmlensServer) -> None:
        super().__init__(server)
        self._async(LOAD_TRACES, self.load_traces)
        self._sync(CLEAR_TRACES, self.clear_traces)
        self._sync(TRACE_STATUS, self.trace_status)
        self._sync(SLOWEST_CALLBACKS, self.slowest_callbacks)
        self._sync(EXPLAIN_RULE, self.explain_rule)
        self._async(TIMELINE_HTML, self.timeline_html)

    # pygls passes the server first to a handler whose first parameter is `ls`, then the
    # JSON arguments untouched (*arguments): command.parse() types them.

    def _sync(self, command: Command[T], run: Callable[[T], object]) -> None:
        def handler(ls: DpmlensServer, *arguments: object) -> object:
            return run(command.parse(arguments))

        self.server.command(command.id)(handler)

    def _async(self, command: Command[T], run: Callable[[T], Awaitable[object]]) -> None:
        async def handler(ls: DpmlensServer, *arguments: object) -> object:
            return await run(command.parse(arguments))

        self.server.command(command.id)(handler)

    @property
    def traces(self) -> Traces:
        return self.server.get_feature(Traces)

    # -- the commands ----------------------------------------------------------------------

    async def load_traces(self, args: LoadTraces) -> dict[str, Any]:
        params = COMMAND_PARAMS.get()
        token = params.work_done_token if params is not None else None
        paths = args.paths
        state = self.traces.state
        # As in the CLI: a bad or missing path is one error in the status, the others load.
        # Only a request naming nothing that exists is refused.
        existing = [p for p in paths if os.path.exists(p)]
        if not existing:
            raise CommandError(f"{LOAD}: no such file or directory: {', '.join(paths)}")
        missing = [p for p in paths if p not in existing]  # reported now, not kept
        wanted = list(dict.fromkeys(state.manual_paths + existing))
        # kept only once loaded: a cancelled load changes nothing, its paths included
        status = await self.traces.load(state.auto_files + wanted + missing, token)
        state.manual_paths = wanted
        return _json(status)

    def clear_traces(self, args: NoArguments) -> dict[str, Any]:
        self.traces.clear()
        return _json(self.traces.state.status())

    def trace_status(self, args: NoArguments) -> dict[str, Any]:
        return _json(self.traces.state.status())

    def slowest_callbacks(self, args: SlowestCallbacks) -> dict[str, Any]:
        return _json(self.traces.state.slowest(args.limit))

    def explain_rule(self, args: ExplainRule) -> dict[str, Any]:
        return explain(self.server.get_feature(RuleBook), args.rule)

    async def timeline_html(self, args: NoArguments) -> dict[str, Any]:
        from dpmlens.lsp.trace_mapping import timeline_html

        state = self.traces.state
        files = state.files
        if not files:
            raise CommandError(f"{TIMELINE}: no traces loaded ({LOAD} first)")
        models = state.mapping_inputs(self.server)["models"]
        loop = asyncio.get_running_loop()
        try:
            html = await loop.run_in_executor(None, timeline_html, files, models)
        except ValueError as exc:
            raise CommandError(f"{TIMELINE}: {exc}") from None
        return {"html": html, "files": files}

"""What every rule needs to know about one file: its PM callbacks, what they reach, the tree,
and the one way to make a finding (`report`).

`Context.callbacks` lists (function, phase) pairs from the file's dev_pm_ops tables, the
legacy bus callbacks of its driver structs and the subsystem ops structs of
`rules/tables/subsystem-ops.yaml`. `Context.reach(fn)` is the model's path-aware call walker
(`model.walker`): calls from `fn` into helpers of the same file (or, with a resolver, of the
workspace) up to `config.helper_depth` hops, each with the chain that led to it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import tree_sitter as ts

from dpmlens.config.settings import Config
from dpmlens.core.findings import ChainStep, Finding, Fix, Severity, Span
from dpmlens.model import footprint
from dpmlens.model.callgraph import pm_callbacks
from dpmlens.model.phases import PHASES
from dpmlens.model.types import CallSite, FileModel, FunctionDef
from dpmlens.model.walker import Hop, Reached, Walker, chain_steps, via_text

__all__ = ["Callback", "Context", "Hop", "Reached"]


@dataclass(frozen=True)
class Callback:
    function: str
    phase: str  # a dev_pm_ops member
    span: Span  # where the table (or driver struct) names it
    source: str  # "foo_pm_ops" or "foo_driver (legacy .suspend)"


@dataclass
class Context:
    model: FileModel
    config: Config
    resolver: object | None = None
    # A function name: only what the per-function checkers (plugin.checker's `per_function`)
    # find in that function's own calls, for incremental.py's judgement of an edit in it
    only: str | None = None
    _cache: dict[str, Any] = field(default_factory=dict)  # per-file results shared by rules
    _walks: dict[str, list[Reached]] = field(default_factory=dict)  # full walks, by function

    def close(self) -> None:
        """Drop what the rules cached. Their results point back at the Context (a cycle that
        only the cyclic GC frees, and the server runs it only when idle): without this, every
        keystroke's walks and trees stayed in memory until then."""
        self._cache.clear()
        self._walks.clear()
        self.__dict__.pop("walker", None)
        self.__dict__.pop("callbacks", None)

    # --- callbacks and reachability -------------------------------------------------------

    @cached_property
    def callbacks(self) -> list[Callback]:
        """(function, phase) pairs, from model.callgraph.pm_callbacks (tables + legacy)."""
        found: dict[tuple[str, str], Callback] = {}
        for function, roles in pm_callbacks(self.model).items():
            for role in roles:
                if role.member in PHASES:
                    source = role.table or f"{role.driver} (legacy .{role.field})"
                    found.setdefault(
                        (function, role.member), Callback(function, role.member, role.span, source)
                    )
        return sorted(found.values(), key=lambda c: (PHASES[c.phase].order, c.function))

    def callbacks_in(self, phases: frozenset[str] | set[str]) -> list[Callback]:
        return [c for c in self.callbacks if c.phase in phases]

    @cached_property
    def walker(self) -> Walker:
        return Walker(self.model, self.config.helper_depth, self.resolver)

    def lookup(self, name: str, model: FileModel) -> tuple[FileModel, FunctionDef] | None:
        return self.walker.lookup(name, model)

    def reach(
        self, function: str, depth: int | None = None, towards: frozenset[str] | None = None
    ) -> Iterator[Reached]:
        """Every call site on a path that can run from `function` (model.walker.Walker).

        The full walk (no `depth`, no `towards`) is made once per function and file: several
        rules, and the runtime-PM state conditions, walk the same callbacks."""
        if depth is not None or towards is not None:
            return self.walker.reach(function, depth, towards)
        walk = self._walks.get(function)
        if walk is None:
            walk = self._walks[function] = list(self.walker.reach(function))
        return iter(walk)

    def chain(self, cb: Callback, reached: Reached) -> tuple[ChainStep, ...]:
        """callback -> helper -> ... -> the reached call, as findings.ChainStep."""
        cb_def = self.model.functions.get(cb.function)
        span = cb_def.name_span if cb_def else cb.span
        return chain_steps(reached, cb.function, self.model.path, span, f"{cb.phase} callback")

    @staticmethod
    def via(reached: Reached) -> str:
        """ " via foo_set_wake()" / " via a() -> b()" / "" for a direct call."""
        return via_text(reached)

    # --- findings ---------------------------------------------------------------------------

    def report(
        self,
        rule: Any,
        span: Span | CallSite,
        *,
        path: str | None = None,
        severity: Severity | None = None,
        function: str | None = None,
        phase: str | None = None,
        cb: Callback | None = None,
        reached: Reached | None = None,
        fixes: tuple[Fix, ...] = (),
        tags: tuple[str, ...] = (),
        **fields: object,
    ) -> Finding:
        """The finding of `rule` at `span` (or at a call site), its message formatted from
        `fields` (the loader checked that they cover the rule's placeholders), with the call
        chain from callback `cb` through `reached` when both are given."""
        if isinstance(span, CallSite):
            call = span
            span = call.span
            function = function if function is not None else call.caller
        if reached is not None and path is None:
            path = reached.model.path
        phase = phase if phase is not None else (cb.phase if cb else None)
        # `phase` and `function` are message placeholders too; explicit fields win
        fields = {"phase": phase, "function": function, **fields}
        chain = self.chain(cb, reached) if cb and reached else ()
        return Finding(
            rule=rule.id,
            kernel_type=rule.kernel_type,
            severity=rule.severity if severity is None else severity,
            path=path or self.model.path,
            span=span,
            message=rule.format_message(**fields),
            function=function,
            phase=phase,
            chain=chain,
            fixes=fixes,
            tags=tags,
        )

    # --- the tree ---------------------------------------------------------------------------

    def tree(self, model: FileModel | None = None) -> ts.Tree:
        """The tree of `model` (default: this file), parsed once by the walker if needed."""
        return self.walker.tree(model or self.model)

    def node(
        self, start: int, end: int, model: FileModel | None = None, kind: str = ""
    ) -> ts.Node | None:
        """The smallest node covering [start, end) (of `kind`, climbing, when given)."""
        footprint.read_range(model or self.model, start, end)
        node = self.tree(model).root_node.descendant_for_byte_range(start, end)
        while node is not None and (
            node.start_byte > start or node.end_byte < end or (kind and node.type != kind)
        ):
            node = node.parent
        return node

    def call_node(self, call: CallSite, model: FileModel | None = None) -> ts.Node | None:
        return self.walker.call_node(call, model or self.model)

    def file_calls_any(self, patterns: list[str] | tuple[str, ...]) -> bool:
        """Does the file call any of `patterns` (names, or `prefix*` globs)? An answer about
        the file (footprint.answer): an edit near such a call is judged by asking again."""
        ask = _CallsAny(tuple(patterns))
        return footprint.answer(self.model, f"<calls {' '.join(ask.patterns)}>", ask)

    def source_matches(self, pattern: str) -> bool:
        footprint.searched(self.model, re.compile(pattern.encode()))
        return re.search(pattern.encode(), self.model.source) is not None


@dataclass(frozen=True)
class _CallsAny:
    patterns: tuple[str, ...]

    def __call__(self, model: FileModel) -> bool:
        """A text search first, so that the model's call sites are only built where the
        name occurs."""
        src = model.source
        footprint.searched(model, *(p.rstrip("*") for p in self.patterns))
        for p in self.patterns:
            if p.endswith("*"):
                if re.search(rb"\b" + re.escape(p[:-1].encode()) + rb"\w*\s*\(", src):
                    return True
            elif p.encode() in src and model.calls_to(p):
                return True
        return False

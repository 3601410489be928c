"""What every rule needs to know about one file: its PM callbacks, what they reach, the tree.

`Context.callbacks` lists (function, phase) pairs from the file's dev_pm_ops tables and the
legacy bus callbacks of its driver structs. `Context.reach(fn)` follows calls from `fn` into
functions defined in the same file (or, with a resolver, in the workspace) up to
`config.helper_depth` hops and yields every call site with the chain that led to it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property

import tree_sitter as ts

from dpmlens.config import Config
from dpmlens.findings import ChainStep, Span
from dpmlens.model.callgraph import pm_callbacks
from dpmlens.model.phases import PHASES
from dpmlens.model.types import CallSite, FileModel, FunctionDef
from dpmlens.syntax.parser import parse


@dataclass(frozen=True)
class Callback:
    function: str
    phase: str  # a dev_pm_ops member
    span: Span  # where the table (or driver struct) names it
    source: str  # "foo_pm_ops" or "foo_driver (legacy .suspend)"


@dataclass(frozen=True)
class Hop:
    """One call on the way from a callback to a reached call: `call` in `model`."""

    call: CallSite
    model: FileModel


@dataclass(frozen=True)
class Reached:
    """A call site reached from a callback; `hops` are the helper calls before it."""

    call: CallSite
    model: FileModel  # the file the call is in (another file only through a resolver)
    hops: tuple[Hop, ...]  # helper calls from the callback down to call.caller

    @property
    def function(self) -> str | None:
        return self.call.caller


@dataclass
class Context:
    model: FileModel
    config: Config
    resolver: object | None = None
    _trees: dict[str, ts.Tree] = field(default_factory=dict)
    _leads: dict[tuple[str, str, int, frozenset[str]], bool] = field(default_factory=dict)

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

    def lookup(self, name: str, model: FileModel) -> tuple[FileModel, FunctionDef] | None:
        fn = model.functions.get(name)
        if fn is not None:
            return model, fn
        if model is self.model:
            fn = self.model.functions.get(name)
            if fn is not None:
                return self.model, fn
        if self.resolver is not None:
            try:
                return self.resolver.lookup(name)  # type: ignore[attr-defined]
            except Exception:  # a broken workspace index must not break the rules
                return None
        return None

    def reach(
        self, function: str, depth: int | None = None, towards: frozenset[str] | None = None
    ) -> Iterator[Reached]:
        """Every call site in `function` and in the helpers it calls, depth-first, in order.

        `towards` (callee names): yield only the calls to those names, exactly as without it
        (same order, same hops), entering only helpers from which one can be reached.
        """
        limit = self.config.helper_depth if depth is None else depth
        start = self.lookup(function, self.model)
        if start is None:
            return
        yield from self._reach(start[0], function, (), limit, {function}, towards)

    def _reach(
        self,
        model: FileModel,
        function: str,
        hops: tuple[Hop, ...],
        left: int,
        seen: set[str],
        towards: frozenset[str] | None = None,
    ) -> Iterator[Reached]:
        for call in model.calls_in(function):
            if not towards or call.callee in towards:
                yield Reached(call, model, hops)
            if left <= 0 or call.callee in seen:
                continue
            target = self.lookup(call.callee, model)
            if target is None:
                continue
            if towards and not self._leads_to(target[0], call.callee, left - 1, towards):
                continue
            seen.add(call.callee)
            yield from self._reach(
                target[0], call.callee, (*hops, Hop(call, model)), left - 1, seen, towards
            )
            seen.discard(call.callee)

    def _leads_to(self, model: FileModel, function: str, left: int, names: frozenset[str]) -> bool:
        """Can `_reach(model, function, left)` yield a call to one of `names`? (Memoized; it
        ignores the path's `seen` set, so it may say yes where the walk finds nothing.)"""
        key = (model.path, function, left, names)
        known = self._leads.get(key)
        if known is None:  # `left` falls on every level: no cycle can come back to `key`
            calls = model.calls_in(function)
            known = any(c.callee in names for c in calls) or (
                left > 0
                and any(
                    (t := self.lookup(c.callee, model)) is not None
                    and self._leads_to(t[0], c.callee, left - 1, names)
                    for c in calls
                )
            )
            self._leads[key] = known
        return known

    def chain(self, cb: Callback, reached: Reached) -> tuple[ChainStep, ...]:
        """callback -> helper -> ... -> the reached call, as findings.ChainStep."""
        steps = []
        cb_def = self.model.functions.get(cb.function)
        steps.append(
            ChainStep(
                cb.function,
                self.model.path,
                cb_def.name_span if cb_def else cb.span,
                f"{cb.phase} callback",
            )
        )
        for hop in reached.hops:
            steps.append(
                ChainStep(
                    hop.call.caller or "?",
                    hop.model.path,
                    hop.call.span,
                    f"calls {hop.call.callee}()",
                )
            )
        steps.append(
            ChainStep(
                reached.call.caller or "?",
                reached.model.path,
                reached.call.span,
                f"calls {reached.call.callee}()",
            )
        )
        return tuple(steps)

    @staticmethod
    def via(reached: Reached) -> str:
        """ " via foo_set_wake()" / " via a() -> b()" / "" for a direct call."""
        if not reached.hops:
            return ""
        return " via " + " -> ".join(f"{h.call.callee}()" for h in reached.hops)

    # --- the tree ---------------------------------------------------------------------------

    def tree(self, model: FileModel | None = None) -> ts.Tree:
        model = model or self.model
        if isinstance(model.tree, ts.Tree):
            return model.tree
        cached = self._trees.get(model.path)
        if cached is None:
            cached = self._trees[model.path] = parse(model.source)
        return cached

    def node(
        self, start: int, end: int, model: FileModel | None = None, kind: str = ""
    ) -> ts.Node | None:
        """The smallest node covering [start, end) (of `kind`, climbing, when given)."""
        node = self.tree(model).root_node.descendant_for_byte_range(start, end)
        while node is not None and (
            node.start_byte > start or node.end_byte < end or (kind and node.type != kind)
        ):
            node = node.parent
        return node

    def call_node(self, call: CallSite, model: FileModel | None = None) -> ts.Node | None:
        node = self.node(call.start_byte, call.end_byte, model)
        while node is not None and node.type != "call_expression":
            if node.type in ("function_definition", "translation_unit"):
                return None
            node = node.parent
        return node

    def file_calls_any(self, patterns: list[str] | tuple[str, ...]) -> bool:
        """Does the file call any of `patterns` (names, or `prefix*` globs)? A text search
        first, so that the model's call sites are only built where the name occurs."""
        src = self.model.source
        for p in patterns:
            if p.endswith("*"):
                if re.search(rb"\b" + re.escape(p[:-1].encode()) + rb"\w*\s*\(", src):
                    return True
            elif p.encode() in src and self.model.calls_to(p):
                return True
        return False

    def source_matches(self, pattern: str) -> bool:
        return re.search(pattern.encode(), self.model.source) is not None

"""The call walker: every call reachable from a function, on paths that can run.

One walker serves the rules (`rules.context.Context.reach`) and the editor's hover, so both
show the same chain for the same call.

    walker = Walker(model, depth=3, resolver=None)
    for reached in walker.reach("foo_suspend_noirq"):
        reached.call       # a CallSite in reached.model, in function reached.call.caller
        reached.hops       # the helper calls from the root down to that function

Depth-first in document order; `depth` is how many helper levels are entered; a function is
not re-entered on its own path (recursion ends). Helpers are looked up in the file first, then
through `resolver.lookup(name)` (the language server's workspace index).

Path-aware: a constant argument binds the helper's parameter (`foo_set(info, 1)` ->
`suspend` = 1 in `foo_set`), and calls in branches that the bound values rule out
(`if (suspend) ... else full_reset();`) are neither reported nor entered
(`model.condeval`). Calls through a function pointer that the file's `static const` structs
(or its structs handed out as match data) set (`pcie->soc->power_up(pcie)`) are followed into
each target (`model.ops_structs`).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Protocol

import tree_sitter as ts

from dpmlens.config.settings import DEFAULT_HELPER_DEPTH
from dpmlens.core.findings import ChainStep, Span
from dpmlens.model import condeval, footprint, ops_structs
from dpmlens.model.calls import anchors
from dpmlens.model.spliced import SplicedTree
from dpmlens.model.types import CallSite, FileModel, FunctionDef
from dpmlens.syntax.parser import OTHER_FILES

DEFAULT_DEPTH = DEFAULT_HELPER_DEPTH


class Resolver(Protocol):
    """Finds a function defined in another file (the language server's workspace index)."""

    def lookup(self, name: str) -> tuple[FileModel, FunctionDef] | None: ...


@dataclass(frozen=True)
class Hop:
    """One helper call on the way from the root to a reached call: `call` in `model`."""

    call: CallSite
    model: FileModel = field(compare=False, repr=False)


@dataclass(frozen=True)
class Reached:
    """A call site reached from the root; `hops` are the helper calls before it."""

    call: CallSite
    model: FileModel = field(compare=False, repr=False)  # the file the call is written in
    hops: tuple[Hop, ...] = ()

    @property
    def function(self) -> str | None:
        return self.call.caller

    def functions(self) -> list[str]:
        """The root, each helper entered, and the function the call is in."""
        root = self.hops[0].call.caller if self.hops else self.call.caller
        return [root or "?", *(h.call.callee for h in self.hops)]


def call_note(call: CallSite) -> str:
    if call.via_pointer:
        return f"calls {call.callee}() through ->{call.via_pointer}()"
    return f"calls {call.callee}()"


def via_text(reached: Reached) -> str:
    """ " via foo_set_wake()" / " via a() -> b()" / "" for a direct call."""
    if not reached.hops:
        return ""
    return " via " + " -> ".join(f"{h.call.callee}()" for h in reached.hops)


def chain_steps(
    reached: Reached, root: str, root_path: str, root_span: Span, root_note: str
) -> tuple[ChainStep, ...]:
    """root (a callback) -> each helper call -> the reached call, as findings.ChainStep."""
    steps = [ChainStep(root, root_path, root_span, root_note)]
    for hop in (*reached.hops, Hop(reached.call, reached.model)):
        steps.append(ChainStep(hop.call.caller or "?", hop.model.path, hop.call.span,
                               call_note(hop.call)))  # fmt: skip
    return tuple(steps)


# a parameter the function changes cannot be bound to the caller's constant
_ASSIGNED = re.compile(
    rb"\b(\w+)\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)|\b(\w+)\s*(?:\+\+|--)|(?:\+\+|--)\s*(\w+)\b"
)
# `&name`: its address taken (unary &) when what comes before the `&` is no operand; a
# binary `a & on` or `x && on` reads `on` only
_AMPERSAND = re.compile(rb"&\s*(\w+)\b")
_OPERAND_END = re.compile(rb"[\w)\]&]")


class Walker:
    def __init__(
        self,
        model: FileModel,
        depth: int = DEFAULT_DEPTH,
        resolver: Resolver | object | None = None,
    ) -> None:
        self.model = model
        self.depth = depth
        self.resolver = resolver
        self._leads: dict[tuple[str, str, int, frozenset[str]], bool] = {}
        self._calls: dict[tuple[str, str], list[CallSite]] = {}
        self._params: dict[tuple[str, str], list[str]] = {}
        self._changed: dict[tuple[str, str], frozenset[str]] = {}
        self._memos: dict[tuple[str, tuple[tuple[str, int], ...]], condeval.Memo] = {}
        self._exits: condeval.Exits = {}

    # --- lookup and trees ------------------------------------------------------------------

    def lookup(self, name: str, model: FileModel) -> tuple[FileModel, FunctionDef] | None:
        fn = model.functions.get(name)
        if fn is not None:
            return model, fn
        if model is not self.model:
            fn = self.model.functions.get(name)
            if fn is not None:
                return self.model, fn
        if self.resolver is not None:
            try:
                found = self.resolver.lookup(name)  # type: ignore[attr-defined]
            except Exception:  # a broken workspace index must not break the rules
                found = None
            if (fp := footprint.of(self.model)) is not None:
                fp.lookups[name] = (found[0].path, found[0].source) if found else None
            return found  # type: ignore[no-any-return]
        return None

    def tree(self, model: FileModel) -> ts.Tree:
        """The model's tree, or (tree-less index copies) a parse of its text, kept across
        analyses in `syntax.parser.OTHER_FILES`."""
        if isinstance(model.tree, ts.Tree):
            return model.tree
        if isinstance(model.tree, SplicedTree):  # (its nodes: those of the edited function)
            return model.tree  # type: ignore[return-value]
        return OTHER_FILES.get(model.path, model.source)

    def call_node(self, call: CallSite, model: FileModel) -> ts.Node | None:
        if (fp := footprint.of(model)) is not None:
            fp.range(call.start_byte, call.end_byte)
        node = self.tree(model).root_node.descendant_for_byte_range(call.start_byte, call.end_byte)
        while node is not None and not (
            node.type == "call_expression" and node.start_byte <= call.start_byte
        ):
            if node.type in ("function_definition", "translation_unit"):
                return None
            node = node.parent
        return node

    def calls_in(self, model: FileModel, function: str) -> list[CallSite]:
        """Direct calls and calls through the file's function pointers, in document order."""
        footprint.read_function(model, function)  # (also when remembered: see _leads_to)
        key = (model.path, function)
        calls = self._calls.get(key)
        if calls is None:
            calls = list(model.calls_in(function))
            indirect = ops_structs.pointer_calls(model, function)
            if indirect:
                calls = sorted(calls + indirect, key=lambda c: c.start_byte)
            self._calls[key] = calls
        return calls

    # --- the walk --------------------------------------------------------------------------

    def reach(
        self, function: str, depth: int | None = None, towards: frozenset[str] | None = None
    ) -> Iterator[Reached]:
        """Every call site in `function` and in the helpers it calls (see the module doc).

        `towards` (callee names): yield only the calls to those names, exactly as without it
        (same order, same hops), entering only helpers from which one can be reached.
        """
        limit = self.depth if depth is None else depth
        start = self.lookup(function, self.model)
        if start is None:
            return
        yield from self._reach(start[0], function, (), limit, {function}, towards, {})

    def _reach(
        self,
        model: FileModel,
        function: str,
        hops: tuple[Hop, ...],
        left: int,
        seen: set[str],
        towards: frozenset[str] | None,
        bindings: dict[str, int],
    ) -> Iterator[Reached]:
        defines = model.defines
        memo = self._memo_for(model, bindings) if bindings else None
        for call in self.calls_in(model, function):
            if memo is not None:
                hit = memo.get(-call.start_byte - 1)  # the call's own verdict, by position
                if hit is None:
                    node = self.call_node(call, model)
                    hit = int(
                        node is not None
                        and condeval.dead(node, bindings, defines, memo, self._exits)
                    )
                    memo[-call.start_byte - 1] = hit
                if hit:
                    continue
            if not towards or call.callee in towards:
                yield Reached(call, model, hops)
            if left <= 0 or call.callee in seen:
                continue
            target = self.lookup(call.callee, model)
            if target is None:
                continue
            if towards and not self._leads_to(target[0], call.callee, left - 1, towards):
                continue
            inner = self._bind(model, call, target[0], target[1], bindings)
            seen.add(call.callee)
            yield from self._reach(
                target[0], call.callee, (*hops, Hop(call, model)), left - 1, seen, towards, inner
            )
            seen.discard(call.callee)

    def bindings_after(self, hops: tuple[Hop, ...]) -> dict[str, int]:
        """The parameters the walk bound to constants on its way down `hops` (those of the
        function the last hop enters): `max310x_power(port, 1)` -> {"on": 1}."""
        bindings: dict[str, int] = {}
        for hop in hops:
            bindings = self.bind(hop.model, hop.call, bindings)
        return bindings

    def bind(self, model: FileModel, call: CallSite, bindings: Mapping[str, int]) -> dict[str, int]:
        """The callee's parameters that `call` (in `model`) passes a constant under
        `bindings`, as the walk binds them when it enters the callee."""
        target = self.lookup(call.callee, model)
        return {} if target is None else self._bind(model, call, target[0], target[1], bindings)

    def _memo_for(self, model: FileModel, bindings: Mapping[str, int]) -> condeval.Memo:
        """Decided conditions (by node id) and calls (by -start-1) of `model` under `bindings`:
        the same helper is walked from several callbacks, and with and without `towards`."""
        key = (model.path, tuple(sorted(bindings.items())))
        memo = self._memos.get(key)
        if memo is None:
            memo = self._memos[key] = {}
        return memo

    def _bind(
        self,
        model: FileModel,
        call: CallSite,
        target_model: FileModel,
        target: FunctionDef,
        bindings: Mapping[str, int],
    ) -> dict[str, int]:
        """The target's parameters that this call passes a constant (on this path)."""
        if not call.args or not any(_maybe_constant(a, bindings, model.defines) for a in call.args):
            return {}
        node = self.call_node(call, model)
        args_node = node.child_by_field_name("arguments") if node is not None else None
        if args_node is None:
            return {}
        args = [a for a in args_node.named_children if a.type != "comment"]
        params = self._parameters(target_model, target)
        out: dict[str, int] = {}
        changed = self._assigned(target_model, target)
        for name, arg in zip(params, args, strict=False):
            if not name or name in changed:
                continue
            value = condeval.evaluate(arg, bindings, model.defines)
            if value is not None:
                out[name] = value
        return out

    def _assigned(self, model: FileModel, fn: FunctionDef) -> frozenset[str]:
        """Names the function assigns, increments or takes the address of."""
        key = (model.path, fn.name)
        names = self._changed.get(key)
        if (fp := footprint.of(model)) is not None:
            fp.functions.add(fn.name)
        if names is None:
            source, start = model.source, fn.start_byte
            # (the byte before: where the searches' `\b` starts)
            names = self._changed[key] = assigned_names(
                source[max(0, start - 1) : fn.end_byte], start > 0)
        return names

    def _parameters(self, model: FileModel, fn: FunctionDef) -> list[str]:
        key = (model.path, fn.name)
        params = self._params.get(key)
        if (fp := footprint.of(model)) is not None:
            fp.functions.add(fn.name)
        if params is None:
            node = self.tree(model).root_node.descendant_for_byte_range(
                fn.start_byte, fn.start_byte
            )
            while node is not None and node.type != "function_definition":
                node = node.parent
            params = self._params[key] = parameter_names(node) if node is not None else []
        return params

    def _leads_to(self, model: FileModel, function: str, left: int, names: frozenset[str]) -> bool:
        """Can `_reach(model, function, left)` yield a call to one of `names`? (Memoized; it
        ignores the path's `seen` set and bindings, so it may say yes where the walk finds
        nothing.)"""
        key = (model.path, function, left, names)
        known = self._leads.get(key)
        if known is None:  # `left` falls on every level: no cycle can come back to `key`

            # Most functions probed lead nowhere and are never entered: an edit in one is
            # judged by probing it again (footprint.answer), not by a whole new analysis.
            # A walk that enters it reads it again (calls_in records every time).
            again = _Probe(function, left, names, self.depth, self.resolver)
            known = footprint.answer(
                model, again.key(), again, now=lambda: self._probe(model, function, left, names)
            )
            self._leads[key] = known
        return known

    def assume_probes(self, model: FileModel, answers: Mapping[str, tuple[object, object]]) -> None:
        """Take the `_leads_to` answers of a last analysis of an older text of `model`
        (`footprint.Footprint.answers`) as known: incremental.py, which computes again on
        the new text each one an edit touched, and drops the result if one changed."""
        for compute, value in answers.values():
            if (
                isinstance(compute, _Probe) and isinstance(value, bool)
                and compute.depth == self.depth and compute.resolver is self.resolver
            ):  # fmt: skip
                self._leads[(model.path, compute.function, compute.left, compute.names)] = value

    def _probe(self, model: FileModel, function: str, left: int, names: frozenset[str]) -> bool:
        if left <= 0 and not _may_call(model, function, names):
            footprint.read_function(model, function)  # (what calls_in would have recorded)
            return False
        calls = self.calls_in(model, function)
        return any(c.callee in names for c in calls) or (
            left > 0
            and any(
                (t := self.lookup(c.callee, model)) is not None
                and self._leads_to(t[0], c.callee, left - 1, names)
                for c in calls
            )
        )


def _may_call(model: FileModel, function: str, names: frozenset[str]) -> bool:
    """Can `calls_in(model, function)` hold a call to one of `names`? False only when no name
    is a function of the file (a call through a pointer is named for its target) and none is
    spelled inside the function's definitions: a call site's callee is its own text. Asked
    before the call sites are read (a tree query per function): most helpers a walk with
    `towards` probes at its last level call none of the names."""
    loader = model.loader
    if not model._lazy() or loader is None or "_calls_in" in model.__dict__ and (
        function in model.__dict__["_calls_in"]
    ):
        return True  # already read, or not read lazily: ask the call sites
    nodes = getattr(loader, "func_nodes", None)
    recovered = getattr(loader, "recovered", None)
    if nodes is None or recovered is None or any(n in model.functions for n in names):
        return True
    ranges = [recovered[function]] if function in recovered else [
        (d.start_byte, d.end_byte) for d in nodes.get(function, ())
    ]
    src = model.source
    return any(src.find(a, start, end) >= 0 for start, end in ranges for a in anchors(names))


@dataclass(frozen=True)
class _Probe:
    """One `_leads_to` question, to ask again of a model of a newer text (a new walker)."""

    function: str
    left: int
    names: frozenset[str]
    depth: int
    resolver: Resolver | object | None

    def key(self) -> str:
        """The question's footprint unit."""
        digest = zlib.crc32(" ".join(sorted(self.names)).encode())
        return f"<leads {self.function} {self.left} {digest:08x}>"

    def __call__(self, model: FileModel) -> bool:
        walker = Walker(model, self.depth, self.resolver)
        return walker._probe(model, self.function, self.left, self.names)


_CONSTANT_ARG = re.compile(
    r"^\s*(?:\(\s*\w+\s*\)\s*)?[-!~]?\s*(?:\d|true\b|false\b|NULL\b|[A-Z_][A-Z0-9_]*\s*$)"
)


def _maybe_constant(arg: str, bindings: Mapping[str, int], defines: Mapping[str, str]) -> bool:
    """A cheap text test before the tree is consulted: a literal, an upper-case macro, an
    enumerator or #define of the file, or a name bound on this path."""
    a = arg.strip()
    name = a.lstrip("!")
    return bool(_CONSTANT_ARG.match(a)) or name in bindings or name in defines


@lru_cache(maxsize=512)  # the same functions' texts, analysis after analysis of a document
def assigned_names(text: bytes, before: bool) -> frozenset[str]:
    """Names a function assigns, increments or takes the address of, in its `text` (after
    the byte before it, when `before`)."""
    start = 1 if before else 0
    found = set()
    for m in _ASSIGNED.finditer(text, start):
        found.add(next(g for g in m.groups() if g).decode("latin-1"))
    for m in _AMPERSAND.finditer(text, start):
        if not _binary_ampersand(text, m.start(), start):
            found.add(m.group(1).decode("latin-1"))
    return frozenset(found)


def _binary_ampersand(source: bytes, at: int, start: int) -> bool:
    """Is the `&` at `at` a binary operator (`a & b`, the second `&` of `&&`): does an
    operand end right before it? (`return &x` takes an address.)"""
    i = at - 1
    while i >= start and source[i] in b" \t\r\n":
        i -= 1
    if i < start or not _OPERAND_END.match(source, i):
        return False
    if source[i] == ord("&") or not source[i : i + 1].isalnum() and source[i] != ord("_"):
        return True
    j = i
    while j >= start and (source[j : j + 1].isalnum() or source[j] == ord("_")):
        j -= 1
    return source[j + 1 : i + 1] not in (b"return", b"sizeof", b"case")


def parameter_names(func: ts.Node) -> list[str]:
    """Parameter names of a function_definition, in order ("" where unnamed)."""
    decl = func.child_by_field_name("declarator")
    while decl is not None and decl.type != "function_declarator":
        decl = decl.child_by_field_name("declarator")
    if decl is None:
        return []
    params = decl.child_by_field_name("parameters")
    out: list[str] = []
    for p in params.named_children if params is not None else ():
        if p.type != "parameter_declaration":
            continue
        d = p.child_by_field_name("declarator")
        while d is not None and d.type != "identifier":
            d = d.child_by_field_name("declarator")
        out.append(d.text.decode("latin-1") if d is not None and d.text else "")
    return out

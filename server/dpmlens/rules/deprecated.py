"""Checker `deprecated-pm-ops`: SIMPLE_DEV_PM_OPS / UNIVERSAL_DEV_PM_OPS, and SET_*_PM_OPS in
tables whose callbacks hide from !CONFIG_PM builds behind __maybe_unused or #ifdef CONFIG_PM*.

The fix (only where no #ifdef is involved, so no callback can be undefined): rename the macro
(SIMPLE_DEV_PM_OPS -> DEFINE_SIMPLE_DEV_PM_OPS, SET_X_PM_OPS -> X_PM_OPS), drop
`__maybe_unused` from the callbacks, and wrap `.pm = &table` in pm_sleep_ptr()/pm_ptr().

Callbacks under `#ifdef CONFIG_PM*` are not reported when dropping the #ifdef would not build:
they (or the functions of the file they reach) use a name that exists only with the symbol on
(pm_guards: the tree's headers, and the file's other CONFIG_PM* blocks). The message names the
guard that is there (`#ifdef CONFIG_PM_SLEEP`, not always CONFIG_PM).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from functools import lru_cache

from dpmlens.core.findings import Finding, Fix, Span, TextEdit
from dpmlens.kbuild.dead import find_top
from dpmlens.model import footprint
from dpmlens.model.types import PmTable
from dpmlens.rules import pm_guards
from dpmlens.rules.context import Context
from dpmlens.rules.loader import Rule
from dpmlens.rules.plugin import Keywords, NoOptions, checker
from dpmlens.rules.textpos import Positions

_SET_RENAMES = {
    "SET_SYSTEM_SLEEP_PM_OPS": "SYSTEM_SLEEP_PM_OPS",
    "SET_LATE_SYSTEM_SLEEP_PM_OPS": "LATE_SYSTEM_SLEEP_PM_OPS",
    "SET_NOIRQ_SYSTEM_SLEEP_PM_OPS": "NOIRQ_SYSTEM_SLEEP_PM_OPS",
    "SET_RUNTIME_PM_OPS": "RUNTIME_PM_OPS",
}
_RUNTIME = ("runtime_suspend", "runtime_resume", "runtime_idle")
# bytes before a function definition searched for its `__maybe_unused`
_MAYBE_UNUSED_LOOKBACK = 200


@checker(
    "deprecated-pm-ops",
    NoOptions,
    fields={"what", "replacement", "ptr", "needs"},
    keywords=Keywords(words=("PM_OPS",)),
    warm=lambda path: _tree_headers(os.path.dirname(os.path.abspath(path))),
)
def run(rule: Rule, ctx: Context) -> Iterator[Finding]:
    if not ctx.model.pm_tables:
        return
    pos = Positions(ctx.model.source)
    for table in ctx.model.pm_tables.values():
        if table.macro in ("SIMPLE_DEV_PM_OPS", "UNIVERSAL_DEV_PM_OPS"):
            if _external(ctx, table):
                # callbacks from another file (rtlwifi's exported rtl_pci_suspend) are built
                # under that file's #ifdef: converting this table alone breaks !PM_SLEEP
                continue
            found = _whole_table(rule, ctx, pos, table)
            if found is not None:
                yield found
        elif table.macro is None:
            yield from _set_macros(rule, ctx, pos, table)


def _external(ctx: Context, table: PmTable) -> bool:
    """Does the table name a callback this file does not define (other than the runtime-PM
    helpers that are always built)?"""
    return any(
        n not in ctx.model.functions and not n.startswith("pm_runtime_force_")
        for n in _functions(ctx, table)
    )


def _functions(ctx: Context, table: PmTable, via: str | None = None) -> list[str]:
    names = []
    for m in table.members:
        if m.function and (via is None or m.via == via) and m.function not in names:
            names.append(m.function)
    return names


def _hidden(ctx: Context, table: PmTable, names: list[str]) -> tuple[bool, bool]:
    """(some callback or the table is __maybe_unused, ... is under #ifdef CONFIG_PM*)."""
    fns = [ctx.model.functions[n] for n in names if n in ctx.model.functions]
    maybe = table.maybe_unused or any(getattr(f, "maybe_unused", False) for f in fns)
    ifdef = table.under_config_ifdef or any(getattr(f, "under_config_ifdef", False) for f in fns)
    return maybe, ifdef


def _whole_table(
    rule: Rule, ctx: Context, pos: Positions, table: PmTable
) -> Finding | None:
    universal = table.macro == "UNIVERSAL_DEV_PM_OPS"
    start, end = pos.range(table.span)
    text = ctx.model.source[start:end]
    at = text.find(table.macro.encode()) if table.macro else -1
    span = pos.span(start + at, start + at + len(table.macro or "")) if at >= 0 else table.span
    message = dict(
        what=f"{table.macro}({table.name}, ...) is deprecated",
        replacement="DEFINE_RUNTIME_DEV_PM_OPS()" if universal else "DEFINE_SIMPLE_DEV_PM_OPS()",
        ptr="pm_ptr" if universal else "pm_sleep_ptr",
    )
    fixes: tuple[Fix, ...] = ()
    names = _functions(ctx, table)
    maybe, ifdef = _hidden(ctx, table, names)
    if ifdef and _needs_config(ctx, table, names):
        return None  # dropping the #ifdef would not build: no patch to suggest
    guard = _guard(ctx, table, names) if ifdef else None
    if guard is not None:
        message["needs"] = guard
    elif maybe:
        message["needs"] = "__maybe_unused"
    else:
        message["needs"] = (
            "__maybe_unused or #ifdef " + ("CONFIG_PM" if universal else "CONFIG_PM_SLEEP")
        )
    defined = all(n in ctx.model.functions for n in names)
    if not universal and at >= 0 and not ifdef and defined and not table.exported and rule.fix:
        edits = [TextEdit(ctx.model.path, span, "DEFINE_SIMPLE_DEV_PM_OPS")]
        edits += _drop_maybe_unused(ctx, pos, names)
        edits += _wrap_pm_pointer(ctx, pos, table.name, "pm_sleep_ptr")
        fixes = (Fix(str(rule.fix["title"]), tuple(edits)),)
    return _finding(rule, ctx, span, message, fixes)


def _set_macros(rule: Rule, ctx: Context, pos: Positions, table: PmTable) -> Iterator[Finding]:
    vias = []
    for m in table.members:
        if m.via in _SET_RENAMES and m.via not in vias:
            vias.append(m.via)
    if not vias:
        return
    all_names = _functions(ctx, table)
    maybe_all, ifdef_all = _hidden(ctx, table, all_names)
    if not (maybe_all or ifdef_all):
        return
    runtime = any(m.member in _RUNTIME and m.function for m in table.members)
    for via in vias:
        names = _functions(ctx, table, via)
        maybe, ifdef = _hidden(ctx, table, names)
        if not (maybe or ifdef or table.maybe_unused or table.under_config_ifdef):
            continue
        member = next(m for m in table.members if m.via == via)
        call = next(
            (
                c
                for c in ctx.model.calls_to(via)
                if c.span.line <= member.span.line <= c.span.end_line
            ),
            None,
        )
        span = call.callee_span if call else member.span
        if ifdef_all and _needs_config(ctx, table, all_names):
            return  # dropping the #ifdef would not build: no patch to suggest
        # the finding stands for the table (its fix converts every SET_ macro): name them all,
        # and how their callbacks are hidden, not one macro with another's #ifdef
        guard = _guard(ctx, table, all_names) if ifdef_all else None
        if guard is not None and maybe_all:
            hidden_by, needs = f"{guard} and __maybe_unused", f"{guard} or __maybe_unused"
        else:
            hidden_by = needs = guard or "__maybe_unused"
        message = dict(
            what=f"{' and '.join(v + '()' for v in vias)} in {table.name} with callbacks "
            f"hidden behind {hidden_by}",
            replacement=" and ".join(f"{_SET_RENAMES[v]}()" for v in vias),
            ptr="pm_ptr" if runtime else "pm_sleep_ptr",
            needs=needs,
        )
        fixes: tuple[Fix, ...] = ()
        defined = all(n in ctx.model.functions for n in all_names)
        if call is not None and not ifdef_all and defined and not table.exported and rule.fix:
            edits: list[TextEdit] = []
            for v in vias:
                for c in ctx.model.calls_to(v):
                    if c.caller is None and _inside(pos, c.span, table.span):
                        edits.append(TextEdit(ctx.model.path, c.callee_span, _SET_RENAMES[v]))
            edits += _drop_maybe_unused(ctx, pos, all_names)
            edits += _wrap_pm_pointer(ctx, pos, table.name, "pm_ptr" if runtime else "pm_sleep_ptr")
            fixes = (
                Fix(
                    f"Convert {table.name} to {', '.join(_SET_RENAMES[v] for v in vias)}",
                    tuple(edits),
                ),
            )
        yield _finding(rule, ctx, span, message, fixes)
        return  # one finding per table: the fix converts all of its SET_ macros at once


def _guard(ctx: Context, table: PmTable, names: list[str]) -> str | None:
    """The `#ifdef CONFIG_PM*` directive around the callbacks (or the table), as written."""
    src = ctx.model.source
    for n in names:
        fn = ctx.model.functions.get(n)
        if fn is not None and fn.under_config_ifdef:
            found = pm_guards.guard_at(src, fn.start_byte)
            if found is not None:
                return found
    at = Positions(src).range(table.span)[0]
    return pm_guards.guard_at(src, at) if table.under_config_ifdef else None


@lru_cache(maxsize=256)
def _top_of(directory: str) -> str | None:
    top = find_top(directory)
    return None if top is None else str(top)


def _tree_headers(directory: str) -> frozenset[str]:
    """What the headers of the kernel tree `directory` is in declare only under CONFIG_PM*
    (none outside a tree); the tree's top found once per directory."""
    top = _top_of(directory)
    return frozenset() if top is None else pm_guards.header_config_only(top)


# how far into the file's functions the callbacks' names are followed
_REACH_DEPTH = 4


def _needs_config(ctx: Context, table: PmTable, names: list[str]) -> bool:
    """Do the callbacks, or the functions of the file they reach, use a name that exists only
    with a CONFIG_PM* symbol on (outside the #ifdef blocks the fix drops)?"""
    model = ctx.model
    footprint.searched(model, "CONFIG_PM")
    fns = [model.functions[n] for n in names if n in model.functions]
    keep = tuple(f.start_byte for f in fns)
    # what does not depend on the table is read once per model: a file asks once per table
    cached = model.__dict__.get("_pm_guard_inputs")
    if cached is None:
        bodies = tuple((f.start_byte, f.end_byte) for f in model.functions.values())
        outside = pm_guards.local_header_config_only(model.path, model.source)
        outside |= _tree_headers(os.path.dirname(os.path.abspath(model.path)))
        cached = model.__dict__["_pm_guard_inputs"] = (bodies, outside)
    bodies, outside = cached
    # the file's functions are followed below, not blockers: a patch drops their #ifdef too
    # (and a prototype's `#else #define foo_resume NULL` with it)
    missing = {n for n in pm_guards.config_only(model.source, keep, bodies=bodies)
               if n not in model.functions}
    missing |= outside
    if not missing:
        return False
    seen: set[str] = set()
    todo = [(n, 0) for n in names if n in model.functions]
    while todo:
        name, depth = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        fn = model.functions[name]
        used = {m.decode() for m in _WORD.findall(model.source[fn.start_byte : fn.end_byte])}
        if used & missing:
            return True
        if depth < _REACH_DEPTH:
            todo += [(c.callee, depth + 1) for c in model.calls_in(name)
                     if c.callee in model.functions]  # fmt: skip
    return False


_WORD = re.compile(rb"\b[A-Za-z_]\w*\b")


def _inside(pos: Positions, inner: Span, outer: Span) -> bool:
    a, b = pos.range(inner)
    c, d = pos.range(outer)
    return c <= a and b <= d


def _drop_maybe_unused(ctx: Context, pos: Positions, names: list[str]) -> list[TextEdit]:
    edits = []
    for name in names:
        fn = ctx.model.functions.get(name)
        if fn is None or not getattr(fn, "maybe_unused", False):
            continue
        name_start = pos.offset(fn.name_span.line, fn.name_span.column)
        lo = max(0, fn.start_byte - _MAYBE_UNUSED_LOOKBACK)
        footprint.searched(ctx.model, "__maybe_unused")
        head = ctx.model.source[lo:name_start]
        found = list(re.finditer(rb"__maybe_unused\s*", head))
        if found:
            m = found[-1]
            edits.append(TextEdit(ctx.model.path, pos.span(lo + m.start(), lo + m.end()), ""))
    return edits


_PM_FIELD = re.compile(rb"(\.pm\s*=\s*)(&\s*(\w+))\b(?!\s*\))")


def _wrap_pm_pointer(ctx: Context, pos: Positions, table: str, ptr: str) -> list[TextEdit]:
    edits = []
    footprint.searched(ctx.model, _PM_FIELD)
    # table -> its `.pm = &table` fields, read in one pass per model (not one per table)
    fields: dict[str, list[tuple[int, int, str]]] | None = ctx.model.__dict__.get("_pm_fields")
    if fields is None:
        fields = ctx.model.__dict__["_pm_fields"] = {}
        for m in _PM_FIELD.finditer(ctx.model.source):
            fields.setdefault(m.group(3).decode("latin-1"), []).append(
                (m.start(2), m.end(2), m.group(2).decode()))
    for start, end, target in fields.get(table, ()):
        edits.append(TextEdit(ctx.model.path, pos.span(start, end), f"{ptr}({target})"))
    return edits


def _finding(
    rule: Rule, ctx: Context, span: Span, message: dict[str, str], fixes: tuple[Fix, ...]
) -> Finding:
    return ctx.report(rule, span, fixes=fixes, tags=("deprecated",), **message)

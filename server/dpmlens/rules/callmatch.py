"""The generic matcher `call-in-phase`: a call to one of these functions reachable from a
callback in one of these phases. Rule files configure it entirely:

    match:
      kind: call-in-phase
      phases: [noirq]                 # dev_pm_ops members or groups (rules/phasesel.py)
      calls: [enable_irq_wake, dev_pm_set_dedicated_wake_irq*]   # fnmatch patterns
      allow: [...]                    # never reported, even if a pattern matches
      skip_paths: ["*/irqchip/*"]     # files not checked (fnmatch on the path)
      skip_sources: ['struct\\s+irq_chip\\b']   # files not checked (regex on the text)
      unless: [pinned-active]         # named conditions (CONDITIONS below)
      calls_when_file_calls:          # more calls, reported only in files that also call
        calls: [device_init_wakeup]   # one of file_calls
        file_calls: [dev_pm_set_wake_irq]
      once_per_callback: true         # only the first (dominant) matching call of a callback
      grade: runtime-effect           # a named grader (GRADES below) sets {effect} and severity
      stop_after: [pm_runtime_enable] # a call to one of these ends the callback's walk,
      stop_unless: [undoes-own-disable]  # unless one of these (STOP_CONDITIONS) holds for it
      rollback:                       # `by` calls after an `of` call in the same callback
        of: [pm_runtime_get*]         # undo or balance it: never reported
        by: [pm_runtime_put*]

Message placeholders: {callee} {phase} {callback} {function} {via} {effect} (the grader's).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from dpmlens.core.findings import Finding, Fix, Severity, TextEdit
from dpmlens.model import footprint
from dpmlens.model.types import CallSite
from dpmlens.rules import runtime_state
from dpmlens.rules.context import Callback, Context
from dpmlens.rules.loader import Rule
from dpmlens.rules.phasesel import select
from dpmlens.rules.plugin import Keywords, checker

CONDITIONS: dict[str, Callable[[Context, Callback, CallSite], bool]] = {
    "pinned-active": runtime_state.pinned_active,
    "active-at-suspend": runtime_state.active_at_suspend,
    "count-only": runtime_state.count_only,
}
# a stop_after call that does not end the walk: it does not do what the stop assumes
STOP_CONDITIONS: dict[str, Callable[[Context, Callback, CallSite], bool]] = {
    "undoes-own-disable": runtime_state.undoes_own_disable,
}
# what a reported call does there: (a severity below the rule's, or None; the {effect} text)
GRADES: dict[str, Callable[[Context, Callback, CallSite], tuple[Severity | None, str]]] = {
    "runtime-effect": runtime_state.effect,
}


@dataclass(frozen=True)
class CallsWhen:
    calls: tuple[str, ...]
    file_calls: tuple[str, ...]


@dataclass(frozen=True)
class Rollback:
    of: tuple[str, ...]
    by: tuple[str, ...]


@dataclass(frozen=True)
class Options:
    phases: tuple[str, ...]
    calls: tuple[str, ...]
    allow: tuple[str, ...] = ()
    skip_paths: tuple[str, ...] = ()
    skip_sources: tuple[str, ...] = ()
    unless: tuple[Literal["pinned-active", "active-at-suspend", "count-only"], ...] = ()
    stop_after: tuple[str, ...] = ()
    stop_unless: tuple[Literal["undoes-own-disable"], ...] = ()
    calls_when_file_calls: CallsWhen | None = None
    once_per_callback: bool = False
    rollback: Rollback | None = None
    grade: Literal["runtime-effect"] | None = None

    def validate(self) -> str | None:
        if not self.phases or not self.calls:
            return "phases and calls must be non-empty lists"
        _phases, problem = select(self.phases)
        if problem:
            return problem
        for pattern in self.skip_sources:
            try:
                re.compile(pattern)
            except re.error as exc:
                return f"skip_sources: bad regex {pattern!r}: {exc}"
        return None


def _matcher(patterns: list[str]) -> Callable[[str], bool]:
    exact = {p for p in patterns if not any(ch in p for ch in "*?[")}
    globs = [p for p in patterns if p not in exact]
    return lambda name: name in exact or any(fnmatch.fnmatchcase(name, g) for g in globs)


def _named_in(source: bytes, patterns: list[str]) -> bool:
    """Does the text hold a name one of `patterns` could match (the part before any glob)?"""
    return any(re.split(r"[*?\[]", p, maxsplit=1)[0].encode() in source for p in patterns)


def file_skipped(
    ctx: Context, skip_paths: tuple[str, ...] | list[str], skip_sources: tuple[str, ...] | list[str]
) -> bool:
    path = ctx.model.path.replace("\\", "/")
    if any(fnmatch.fnmatch(path, p) for p in skip_paths):
        return True
    return any(ctx.source_matches(p) for p in skip_sources)


@checker(
    "call-in-phase",
    Options,
    fields={"callee", "phase", "callback", "function", "via", "effect"},
    keywords=Keywords(callbacks=True),
)
def run(rule: Rule, ctx: Context) -> Iterator[Finding]:
    """A call to one of `calls` reachable from a callback in one of `phases`."""
    opts: Options = rule.options
    phases, _ = select(opts.phases)
    callbacks = ctx.callbacks_in(phases)
    # Cheapest test first: most files have no callback in these phases (the path and
    # source tests below scan the whole text).
    if not callbacks or file_skipped(ctx, opts.skip_paths, opts.skip_sources):
        return
    patterns = list(opts.calls)
    extra = opts.calls_when_file_calls
    if extra and ctx.file_calls_any(extra.file_calls):
        patterns += extra.calls
    footprint.searched(ctx.model, *(p.rstrip("*") for p in patterns))
    if ctx.resolver is None and not _named_in(ctx.model.source, patterns):
        return  # without a resolver every reached call is in this file, so its name is too
    wanted = _matcher(patterns)
    allowed = set(opts.allow)
    unless = [CONDITIONS[n] for n in opts.unless]
    grade = GRADES[opts.grade] if opts.grade else None
    stops = _matcher(list(opts.stop_after)) if opts.stop_after else None
    go_on = [STOP_CONDITIONS[n] for n in opts.stop_unless]
    undone_by = _matcher(list(opts.rollback.by)) if opts.rollback else None
    undoes = _matcher(list(opts.rollback.of)) if opts.rollback else None
    seen: set[tuple[str, int]] = set()
    for cb in callbacks:
        opened = False  # an `of` call was reached earlier in this callback
        for reached in ctx.reach(cb.function):
            call = reached.call
            if stops is not None and stops(call.callee):
                if not any(cond(ctx, cb, call) for cond in go_on):
                    break  # what the rule is about no longer holds on this path
                continue
            if undoes is not None and undoes(call.callee):
                was_open, opened = opened, True
            else:
                was_open = opened
            if call.callee in allowed or not wanted(call.callee):
                continue
            if was_open and undone_by is not None and undone_by(call.callee):
                continue  # rolls back or balances a get of this callback: never reported
            if any(cond(ctx, cb, call) for cond in unless):
                continue
            key = (reached.model.path, call.start_byte)
            if key in seen:
                if opts.once_per_callback:
                    break
                continue
            seen.add(key)
            severity, effect = grade(ctx, cb, call) if grade is not None else (None, "")
            yield ctx.report(
                rule,
                call,
                cb=cb,
                reached=reached,
                severity=severity,
                fixes=_fixes(rule, reached.model.path, call),
                callee=call.callee,
                callback=cb.function,
                via=ctx.via(reached),
                effect=effect,
            )
            if opts.once_per_callback:
                break


def _fixes(rule: Rule, path: str, call: Any) -> tuple[Fix, ...]:
    fix = rule.fix
    if not fix or fix.get("kind") != "rename-callee":
        return ()
    new = fix.get("renames", {}).get(call.callee)
    if not new:
        return ()
    return (Fix(str(fix["title"]), (TextEdit(path, call.callee_span, str(new)),)),)

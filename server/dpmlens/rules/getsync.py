"""Checker `get-sync-leak`: pm_runtime_get_sync() whose failure path keeps the usage count.

pm_runtime_get_sync() raises the usage count even when it fails. getsync_flow finds where the
result goes (its test, a few statements later or after an #ifdef/#else block, or its return).
A failure branch leaks when it leaves the function (return, or goto a label whose code up to
the return holds no put) without a put, in the branch or in a same-file helper it calls.
Whether that is a leak of the function depends on who drops the reference on success:
- the function itself, on the straight path after the test: the early exit skips it: a leak;
- someone else (the reference outlives the function): a leak when the failure is reported to
  a caller that does not release on failure (kernel convention, and the `not_released` slots
  of rules/tables/callback-release.yaml, which also cover `return pm_runtime_get_sync()`);
  none when the framework calls the paired release anyway (`paired` slots), when every caller
  in the file ignores the result or is such a callback, or when the get takes back a reference
  the function dropped before; unknown (info) for a void function of no known pair.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import tree_sitter as ts

from dpmlens.core.findings import Finding, Fix, Severity, Span, TextEdit
from dpmlens.model import footprint
from dpmlens.model.types import CallSite
from dpmlens.rules import cnav
from dpmlens.rules import getsync_flow as flow
from dpmlens.rules.callback_release import ReleaseTable, SlotFact, load_release_table
from dpmlens.rules.context import Context
from dpmlens.rules.loader import Rule
from dpmlens.rules.ops_slots import Slot, slots_by_function
from dpmlens.rules.plugin import Keywords, NoOptions, checker
from dpmlens.syntax.parser import node_span

_CALLEE = "pm_runtime_get_sync"
_PUTS = frozenset(
    {
        "pm_runtime_put",
        "pm_runtime_put_noidle",
        "pm_runtime_put_sync",
        "pm_runtime_put_autosuspend",
        "pm_runtime_put_sync_autosuspend",
        "pm_runtime_put_sync_suspend",
        "__pm_runtime_put_autosuspend",
    }
)
# --- does the failure branch leave without a put? ----------------------------------------


class _Puts:
    """Put detection in code and in the same-file helpers it calls (memoized per file)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._helpers: dict[str, bool] = {}

    def in_node(self, node: ts.Node, start: int | None = None, end: int | None = None) -> bool:
        lo = node.start_byte if start is None else start
        hi = node.end_byte if end is None else end
        footprint.read_range(self.ctx.model, lo, hi)
        src = self.ctx.model.source[lo:hi].decode("utf-8", "replace")
        if flow.PUT_CALL.search(src):
            return True
        return any(
            lo <= call.start_byte < hi and self._helper_puts(name)
            for name, call in cnav.calls_under(node)
        )

    def _helper_puts(self, name: str) -> bool:
        known = self._helpers.get(name)
        if known is None:
            known = False
            if self.ctx.lookup(name, self.ctx.model) is not None:
                known = any(True for _ in self.ctx.reach(name, towards=_PUTS))
            self._helpers[name] = known
        return known


def _leaves_without_put(branch: ts.Node, func: ts.Node, puts: _Puts) -> str | None:
    """'return' / 'goto <label>' when the failure branch leaves the function without a put."""
    if puts.in_node(branch):
        return None
    last = branch
    if branch.type == "compound_statement":
        named = [c for c in branch.named_children if c.type != "comment"]
        if not named:
            return None
        last = named[-1]
    if last.type == "return_statement":
        return "return"
    if last.type == "goto_statement":
        label = cnav.text(last.child_by_field_name("label"))
        region = flow.label_region(func, label)
        if region is None or puts.in_node(func, *region):
            return None
        return f"goto {label}"
    return None


# --- the function's role ------------------------------------------------------------------


class _Roles:
    """Which callback slots the functions of this file fill (computed on first need)."""

    def __init__(self, ctx: Context, table: ReleaseTable) -> None:
        self.ctx = ctx
        self.table = table
        self._slots: dict[str, list[Slot]] | None = None

    def slots(self, function: str) -> list[Slot]:
        if self._slots is None:
            footprint.read_all(self.ctx.model, "callback slots of the whole tree")
            root = self.ctx.tree().root_node
            self._slots = slots_by_function(root, self.table.unique_members())
        return self._slots.get(function, [])

    def paired(self, function: str) -> SlotFact | None:
        return next(
            (f for s in self.slots(function) if (f := self.table.pairing(s.struct_type, s.member))),
            None,
        )

    def unreleased(self, function: str) -> Slot | None:
        """The slot `function` fills whose failure its framework does not release."""
        return next(
            (s for s in self.slots(function) if self.table.unreleased(s.struct_type, s.member)),
            None,
        )

    def callers_all_paired(self, function: str, is_static: bool) -> bool:
        """A static function called in this file only from paired callbacks."""
        calls = self._callers(function) if is_static else []
        return bool(calls) and all(self.paired(c.caller or "") is not None for c in calls)

    def _callers(self, function: str) -> list[CallSite]:
        return [c for c in self.ctx.model.calls_to(function) if c.caller and c.caller != function]

    def failure_unseen_by_callers(self, function: str, is_static: bool) -> bool:
        """A static function whose every caller in the file ignores its result or is a
        paired callback (the paired release runs anyway)."""
        if not is_static:
            return False
        calls = self._callers(function)
        if not calls:
            return False
        for call in calls:
            node = self.ctx.call_node(call)
            ignored = (
                node is not None
                and node.parent is not None
                and (node.parent.type == "expression_statement")
            )
            if not ignored and self.paired(call.caller or "") is None:
                return False
        return True


# --- the rule -----------------------------------------------------------------------------


# No options: the framework facts live in rules/tables/callback-release.yaml.
@checker(
    "get-sync-leak",
    NoOptions,
    fields={"function", "why", "advice"},
    keywords=Keywords(words=(_CALLEE,)),
    per_function=True,
)
def run(rule: Rule, ctx: Context) -> Iterator[Finding]:
    """pm_runtime_get_sync() whose failure path leaves with the usage count raised."""
    with footprint.unit(ctx.model, footprint.NAMES):
        calls = ctx.model.calls_to(_CALLEE)
    if not calls:
        return
    table = load_release_table(_rules_dir(rule))
    roles = _Roles(ctx, table)
    for call in calls:
        if call.caller is None or ctx.only is not None and call.caller != ctx.only:
            continue
        # what is read for the call is recorded as its function's (so the helpers' puts are
        # not remembered from one call's function to another's)
        with footprint.unit(ctx.model, call.caller):
            found = _at(rule, ctx, call, roles, _Puts(ctx))
        if found is not None:
            yield found


def _at(rule: Rule, ctx: Context, call: CallSite, roles: _Roles, puts: _Puts) -> Finding | None:
    node = ctx.call_node(call)
    func = cnav.function_of(node) if node is not None else None
    if node is None or func is None:
        return None
    use = flow.use_of(node)
    if use is None:
        return None
    verdict = _judge(call, node, func, use, ctx, roles, puts)
    if verdict is None:
        return None
    fixes: tuple[Fix, ...] = ()
    if verdict.fixable and rule.fix is not None and flow.value_dead_after(func, use):
        fixes = (_fix(rule, ctx, call, use),)
    return ctx.report(
        rule,
        call,
        severity=verdict.severity,
        fixes=fixes,
        why=verdict.why,
        advice=verdict.advice,
    )


def _rules_dir(rule: Rule) -> str | None:
    """The rules directory the rule came from (its table lives beside it)."""
    if not rule.path:
        return None
    return str(Path(rule.path).parent)


@dataclass(frozen=True)
class _Verdict:
    why: str
    fixable: bool  # pm_runtime_resume_and_get() is a correct edit (before the value check)
    severity: Severity | None = None  # None: the rule's
    advice: str = "use pm_runtime_resume_and_get()"


def _judge(
    call: CallSite,
    node: ts.Node,
    func: ts.Node,
    use: flow.Use,
    ctx: Context,
    roles: _Roles,
    puts: _Puts,
) -> _Verdict | None:
    name = call.caller or ""
    if use.kind == "return":
        slot = roles.unreleased(name)
        if slot is None:
            return None  # the caller decides; nothing known about it here
        why = (
            f"it returns the result as {slot.struct_type}.{slot.member}(), whose failure the "
            "framework does not release"
        )
        return _Verdict(why, True)
    if use.branch is None or use.if_node is None:
        return None
    exit_kind = _leaves_without_put(use.branch, func, puts)
    if exit_kind is None:
        return None
    path = "this error path" if exit_kind == "return" else f"its error path ({exit_kind})"
    why = f"{path} returns without a put"
    if not puts.in_node(func, use.if_node.end_byte, flow.success_end(use.if_node, func)):
        # The success path keeps the reference: does its release run when this failed?
        if _retakes(call, ctx):
            return None  # the caller's reference, dropped above: the caller's error path puts
        if roles.paired(name) is not None:
            return None  # the framework calls the paired release half anyway
        fn = ctx.model.functions.get(name)
        static = fn.is_static if fn else False
        if flow.returns_void(func):
            if roles.callers_all_paired(name, static):
                return None
            if _handed_over(call, ctx):
                # no put of the file is this reference's: the success path keeps it for
                # good too, so a put on the error path alone misses the real imbalance
                return None
            # Nobody sees the failure: whether the release half still runs is not known here.
            advice = "check that the put done elsewhere also runs when this failed"
            return _Verdict(why, False, Severity.INFO, advice)
        if roles.failure_unseen_by_callers(name, static):
            return None
        if roles.unreleased(name) is None and _counterpart(name, ctx) is not None:
            # `poweron_coreid()` / `poweroff_coreid()`: the driver's own release half runs
            # after a failure too (venus keeps the core marked acquired) and drops this
            # reference; a put here would underflow the count
            return None
    return _Verdict(why, use.kind == "pure")


# Only power on/off halves: a failed `enable`/`get`/`open` is not followed by its `disable`
# in practice (callers check the error), a power-on that leaves state behind may be.
_PARTNERS = (("poweron", "poweroff"), ("power_on", "power_off"), ("power_up", "power_down"))


def _counterpart(name: str, ctx: Context) -> str | None:
    """A function of the file named as the release half of `name` that puts a reference."""
    for on, off in _PARTNERS:
        if on not in name:
            continue
        other = name.replace(on, off)
        if other in ctx.model.functions and any(
            c.callee.startswith(("pm_runtime_put", "__pm_runtime_put"))
            for c in ctx.model.calls_in(other)
        ):
            return other
    return None


_GET_CALLS = ("pm_runtime_get_sync", "pm_runtime_resume_and_get", "pm_runtime_get",
              "pm_runtime_get_noresume")  # fmt: skip
# acquire/release halves whose get and put balance each other (`atomic_enable` gets,
# `atomic_disable` puts)
_HALVES = (*_PARTNERS, ("enable", "disable"))


def _handed_over(call: CallSite, ctx: Context) -> bool:
    """Is every put of the device in the file the release of another get: one in its own
    function, or in the function's acquire half (`foo_disable()` puts what `foo_enable()`
    got)? Then a function that keeps its reference on success (no put on any path) holds
    one that no put of the file drops: the failed get leaks no more than a successful one.
    A file with no put of the device (the release may live in another file) is not
    concluded on."""
    device = _arg(call)
    puts = [c for c in ctx.model.calls_to(*sorted(_PUTS)) if _arg(c) == device and c.caller]
    if not puts:
        return False
    gets = [c for c in ctx.model.calls_to(*_GET_CALLS)
            if _arg(c) == device and c.caller and c.start_byte != call.start_byte]  # fmt: skip
    holders = {c.caller for c in gets}
    for put in puts:
        caller = put.caller or ""
        acquire = {caller} | {caller.replace(off, on) for on, off in _HALVES if off in caller}
        if not acquire & holders:
            return False
    return True


def _arg(call: CallSite) -> str:
    return "".join(call.args[0].split()) if call.args else ""


def _retakes(call: CallSite, ctx: Context) -> bool:
    """Did the function drop more references on this device than it took before this get
    (`pm_runtime_put_sync(dev); ...; ret = pm_runtime_get_sync(dev);`)? Then the get takes
    back a reference its caller holds, and the caller's error path drops it."""
    device = call.args[0] if call.args else None
    balance = 0
    for c in ctx.model.calls_in(call.caller):
        if c.start_byte >= call.start_byte:
            break
        if not c.args or c.args[0] != device:
            continue
        if c.callee.startswith(("pm_runtime_put", "__pm_runtime_put")):
            balance -= 1
        elif c.callee.startswith("pm_runtime_get") or c.callee == "pm_runtime_resume_and_get":
            balance += 1
    return balance < 0


def _fix(rule: Rule, ctx: Context, call: CallSite, use: flow.Use) -> Fix:
    """Rename the call; turn `if (ret < 0)` into `if (ret)` (resume_and_get never returns 1)."""
    edits = [TextEdit(ctx.model.path, call.callee_span, "pm_runtime_resume_and_get")]
    cond = use.if_node.child_by_field_name("condition") if use.if_node is not None else None
    if cond is not None and use.subject.isidentifier() and not use.elsewhere:
        inner = cond.named_children[0] if cond.named_children else None
        if inner is not None and re.fullmatch(
            rf"{re.escape(use.subject)}\s*<\s*0", cnav.text(inner)
        ):
            span: Span = node_span(inner)
            edits.append(TextEdit(ctx.model.path, span, use.subject))
    return Fix(str(rule.fix["title"]) if rule.fix else "", tuple(edits))

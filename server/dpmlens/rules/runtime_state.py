"""What a callback can know about the device's runtime-PM state while runtime PM is disabled
(between suspend_late and resume_early), for `runtime-pm-while-disabled`'s `unless:`.

With runtime PM disabled, `rpm_resume()` returns 1 (success) for a device whose status is
RPM_ACTIVE (drivers/base/power/runtime.c, rpm_resume: "disable_depth > 0 ... RPM_ACTIVE"),
and puts only change the usage count. So a call is a problem only when the device may be
runtime-suspended there, or when the driver relies on a put to power the device off, or on a
get to power it up (`pm_runtime_enable(); pm_runtime_get_sync();` in a power-up helper shared
with probe, while the PM core's disable still holds: `undoes_own_disable`).
"""

from __future__ import annotations

import re

import tree_sitter as ts

from dpmlens.core.findings import Severity
from dpmlens.model.phases import PAIRS, PHASES
from dpmlens.model.types import CallSite
from dpmlens.rules import cnav
from dpmlens.rules.context import Callback, Context, Reached

# calls that leave the device RPM_ACTIVE (when runtime PM is enabled)
_ACTIVATES = frozenset({"pm_runtime_get_sync", "pm_runtime_resume_and_get", "pm_runtime_resume"})
_RESUMES = _ACTIVATES | {"pm_runtime_get", "pm_request_resume", "pm_runtime_get_if_in_use",
                         "pm_runtime_get_if_active"}  # fmt: skip
# calls that mark the device suspended although runtime PM is disabled
_FORCED_DOWN = frozenset({"pm_runtime_force_suspend", "pm_runtime_set_suspended"})
_SUSPENDS = frozenset({"pm_runtime_idle", "pm_request_idle", "pm_runtime_suspend",
                       "pm_runtime_autosuspend", "pm_request_autosuspend",
                       "pm_schedule_suspend"})  # fmt: skip
_DOWN_MAIN = frozenset({"prepare", "suspend", "freeze", "poweroff"})
_UP_MAIN = frozenset({"complete", "resume", "thaw", "restore"})
_DOWN = frozenset(m for m, p in PHASES.items() if p.direction == "down" and p.kind != "runtime")


_DISABLES = frozenset({"pm_runtime_disable", "__pm_runtime_disable"})


def undoes_own_disable(ctx: Context, cb: Callback, call: CallSite) -> bool:
    """Is `call` a `pm_runtime_enable()` in an up-phase late/noirq/early callback whose table
    also disables runtime PM on the way down (`pm_runtime_disable()` in .suspend, or in
    suspend_noirq through a power-down helper)? It then only takes back the driver's own
    disable: the PM core's `__pm_runtime_disable()` from device_suspend_late() holds
    disable_depth at 1 until device_resume_early() enables it again, so runtime PM stays
    disabled after it (drivers/base/power/main.c; runtime.c, pm_runtime_enable())."""
    if call.callee != "pm_runtime_enable":
        return False
    info = PHASES.get(cb.phase)
    if info is None or info.direction != "up" or info.kind == "runtime":
        return False
    return any(_reaches(ctx, c, _DISABLES) for c in _same_table(ctx, cb, _DOWN))


def own_enable_before(ctx: Context, cb: Callback, call: CallSite) -> str | None:
    """The down-phase callback whose pm_runtime_disable() the `pm_runtime_enable()` before
    `call` (a get/resume, on the callback's walk) takes back, or None: the driver then relies
    on the get to power the device up, as it does in probe."""
    if call.callee not in _RESUMES:
        return None
    enabled = False
    for r in ctx.reach(cb.function):
        if r.call.start_byte == call.start_byte and r.call.callee == call.callee:
            break
        if undoes_own_disable(ctx, cb, r.call):
            enabled = True
    if not enabled:
        return None
    for c in _same_table(ctx, cb, _DOWN):
        if _reaches(ctx, c, _DISABLES):
            return f"the {c.phase} callback {c.function}()"
    return None


def is_suspend_type(name: str) -> bool:
    return name.startswith("pm_runtime_put") or name in _SUSPENDS


def _same_table(ctx: Context, cb: Callback, phases: frozenset[str] | set[str]) -> list[Callback]:
    return [c for c in ctx.callbacks_in(phases) if c.source == cb.source]


def _net_drop(ctx: Context, cb: Callback) -> bool:
    """Does the callback drop a reference it did not take itself (a put with no get before
    it in the same callback)?"""
    taken = False
    for r in ctx.reach(cb.function):
        if r.call.callee in _RESUMES or r.call.callee == "pm_runtime_get_noresume":
            taken = True
        elif is_suspend_type(r.call.callee) and not taken:
            return True
    return False


def _activates_always(ctx: Context, cb: Callback, device: str) -> bool:
    """Does the callback runtime-resume `device` (the same argument text) on every path?
    Its paired callback then runs with that device RPM_ACTIVE (the PM core calls it only if
    this one succeeded, and with runtime PM disabled nothing suspends it in between)."""
    return any(
        r.call.callee in _ACTIVATES and _first_arg(r.call) == device and always_runs(ctx, r)
        for r in ctx.reach(cb.function)
    )


def _forced_down(ctx: Context, cb: Callback) -> bool:
    return any(_reaches(ctx, c, _FORCED_DOWN) for c in _same_table(ctx, cb, _DOWN))


def _reaches(
    ctx: Context, cb: Callback, names: frozenset[str] | None, suspends: bool = False
) -> bool:
    """Does the callback's walk (made once per Context) call one of `names`, or with
    `suspends` any put/suspend-type call?"""
    if suspends:
        return any(is_suspend_type(r.call.callee) for r in ctx.reach(cb.function))
    if not names:
        return False
    return any(r.call.callee in names for r in ctx.reach(cb.function))


def active_at_suspend(ctx: Context, cb: Callback, call: CallSite) -> bool:
    """The table's .prepare/.suspend runtime-resumes the device, and nothing on the way down
    marks it suspended: after device_prepare()'s reference (pm_runtime_get_noresume() before
    ->prepare) it cannot runtime-suspend, so it is RPM_ACTIVE in every late/noirq/early
    callback and gets succeed (puts only count).

    A driver that uses autosuspend is idle-suspended most of the time: there the resume
    must not be skippable. One in a loop over the controller's channels runs (the put after
    it cannot suspend the device: the prepare reference holds it), one behind an `if` (or
    the right side of `&&`/`||`, a `case`) may not: no guarantee."""
    down = _same_table(ctx, cb, _DOWN_MAIN)
    if not any(_reaches(ctx, c, _ACTIVATES) for c in down):
        return False
    if own_enable_before(ctx, cb, call) is not None:
        return False  # active or not, the driver relies on the get to power up
    if ctx.file_calls_any(_AUTOSUSPEND) and not any(
        r.call.callee in _ACTIVATES and always_runs(ctx, r, loops=False)
        for c in down
        for r in ctx.reach(c.function)
    ):
        return False
    return not _forced_down(ctx, cb)


_AUTOSUSPEND = ("pm_runtime_use_autosuspend",)
# `list_for_each_entry(pos, head, member) { ... }`: a loop macro, parsed as a call statement
# followed by a block
_LOOP_MACRO = re.compile(r"^\w*for_each\w*$")


def always_runs(ctx: Context, r: Reached, loops: bool = True) -> bool:
    """Does the reached call run whenever its root does: neither it nor a helper call on the
    way sits in a branch or the right side of `&&`/`||` (nor, with `loops`, a loop body)?"""
    for call, model in (*((h.call, h.model) for h in r.hops), (r.call, r.model)):
        node = ctx.call_node(call, model)
        if node is None or _conditional(node, loops):
            return False
    return True


_LOOPS = ("while_statement", "for_statement")


def _conditional(node: ts.Node, loops: bool = True) -> bool:
    cur = node
    while cur.parent is not None and cur.parent.type not in ("function_definition",
                                                              "translation_unit"):  # fmt: skip
        parent = cur.parent
        kind = parent.type
        if kind in _LOOPS and not loops:
            pass  # a loop's condition and body: run (a loop over the channels runs)
        elif kind in ("if_statement", "conditional_expression", *_LOOPS):
            cond = parent.child_by_field_name("condition")
            if cond is None or cur.start_byte >= cond.end_byte:
                return True  # in a branch or a loop body (a for's update too)
        elif kind == "do_statement":
            if loops:
                return True
        elif kind == "case_statement":
            return True
        elif kind == "binary_expression":
            op = parent.child_by_field_name("operator")
            left = parent.child_by_field_name("left")
            if op is not None and op.type in ("&&", "||") and left is not None and (
                cur.start_byte >= left.end_byte
            ):
                return True
        elif kind == "compound_statement" and cur.type == "compound_statement" and loops:
            prev = cur.prev_named_sibling
            call = prev.named_children[0] if prev is not None and prev.named_children else None
            if (
                prev is not None and prev.type == "expression_statement"
                and call is not None and call.type == "call_expression"
                and _LOOP_MACRO.match(cnav.text(call.child_by_field_name("function")))
            ):  # fmt: skip
                return True
        cur = parent
    return False


def pinned_active(ctx: Context, cb: Callback, call: CallSite) -> bool:
    """The driver holds a runtime-PM reference across the transition, so the call only
    balances it:

    - .suspend/.prepare take a reference and .resume/.complete drop it;
    - a put in an up-phase callback whose down-phase pair took the reference (get_noresume in
      suspend_noirq, put in resume_noirq);
    - a get in an up-phase callback whose down-phase pair dropped one: the reference it held
      kept the device active, and the put could not suspend it (runtime PM was disabled).
    """
    if _forced_down(ctx, cb):
        return False  # pm_runtime_force_suspend() on the way down: the device is suspended
    if own_enable_before(ctx, cb, call) is not None:
        return False  # the driver relies on the get to power up: that is the finding
    down = next((d for d, u in PAIRS.items() if u == cb.phase), None)
    if down is not None:
        pair = _same_table(ctx, cb, {down})
        if is_suspend_type(call.callee) and any(
            _reaches(ctx, c, _RESUMES | {"pm_runtime_get_noresume"}) for c in pair
        ):
            return True
        if call.callee in _RESUMES and any(_net_drop(ctx, c) for c in pair):
            return True
        if call.callee in _RESUMES and any(
            _activates_always(ctx, c, _first_arg(call)) for c in pair
        ):
            return True  # resume_early runs only after suspend_late's resume succeeded
    if not any(_reaches(ctx, c, _RESUMES) for c in _same_table(ctx, cb, _DOWN_MAIN)):
        return False
    return any(_reaches(ctx, c, None, suspends=True) for c in _same_table(ctx, cb, _UP_MAIN))


def count_only(ctx: Context, cb: Callback, call: CallSite) -> bool:
    """A put (or idle/suspend request) that no later get of the same callback relies on: it
    only changes the usage count, which is harmless. Reported is the power cycle that relies
    on it (`pm_runtime_put_sync(); ...; pm_runtime_get_sync();` to re-latch straps)."""
    if not is_suspend_type(call.callee):
        return False
    device = _first_arg(call)
    after = False
    for r in ctx.reach(cb.function):
        if r.call.start_byte == call.start_byte and r.call.callee == call.callee:
            after = True
        elif after and r.call.callee in _RESUMES and _first_arg(r.call) == device:
            return False  # the same device is resumed again: a power cycle
    return True


def _first_arg(call: CallSite) -> str:
    return "".join(call.args[0].split()) if call.args else ""


def effect(ctx: Context, cb: Callback, call: CallSite) -> tuple[Severity | None, str]:
    """What the reported call does with runtime PM disabled, and how serious that is.

    A get/resume fails with -EACCES when the device is runtime-suspended: from a
    suspend_late/suspend_noirq callback that error aborts the system suspend (warning). A
    put reported here is a power cycle (count_only passed it: a get of the same device
    follows): the put only drops the count and the get then returns at once, so the
    intended power cycle does not happen, but nothing fails (info)."""
    if is_suspend_type(call.callee):
        return Severity.INFO, (
            "so this only drops the usage count and the later runtime resume of the same"
            " device returns at once: the power cycle the callback intends does not happen"
            " (nothing fails; do it outside the late/noirq/early phases, or without runtime PM)"
        )
    undone = own_enable_before(ctx, cb, call)
    if undone is not None:
        # drivers/base/power/runtime.c rpm_resume(): with disable_depth > 0 it returns 1 if
        # the device was RPM_ACTIVE when the PM core disabled it, else -EACCES; no callback
        return Severity.INFO, (
            f"and the pm_runtime_enable() before it only takes back the driver's own"
            f" pm_runtime_disable() of {undone}: the PM core's disable from suspend_late"
            " holds until resume_early, so this get only raises the usage count (it returns"
            " 1 for a device that was active when the PM core disabled runtime PM, -EACCES"
            " otherwise) and runs no runtime_resume callback: unlike in probe, it powers"
            " nothing up"
        )
    info = PHASES.get(cb.phase)
    if info is not None and info.direction == "down":
        return None, (
            "so this resume fails with -EACCES if the device is runtime-suspended (nothing in"
            " .prepare/.suspend is sure to keep it active), and returned from this callback"
            " that aborts the system suspend"
        )
    return None, (
        "so this resume fails with -EACCES if the device is runtime-suspended (nothing on the"
        " way down keeps it active), and the device is not resumed"
    )

"""What a callback can know about the device's runtime-PM state while runtime PM is disabled
(between suspend_late and resume_early), for `runtime-pm-while-disabled`'s `unless:`.

With runtime PM disabled, `rpm_resume()` returns 1 (success) for a device whose status is
RPM_ACTIVE (drivers/base/power/runtime.c, rpm_resume: "disable_depth > 0 ... RPM_ACTIVE"),
and puts only change the usage count. So a call is a problem only when the device may be
runtime-suspended there, or when the driver relies on a put to power the device off.
"""

from __future__ import annotations

from dpmlens.model.phases import PAIRS, PHASES
from dpmlens.model.types import CallSite
from dpmlens.rules.context import Callback, Context

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


def _forced_down(ctx: Context, cb: Callback) -> bool:
    return any(_reaches(ctx, c, _FORCED_DOWN) for c in _same_table(ctx, cb, _DOWN))


def _reaches(
    ctx: Context, cb: Callback, names: frozenset[str] | None, suspends: bool = False
) -> bool:
    """Does the callback's walk (made once per Context) call one of `names`, or with
    `suspends` any put/suspend-type call?"""
    if suspends:
        return any(is_suspend_type(r.call.callee) for r in ctx.reach(cb.function))
    return bool(names) and any(r.call.callee in names for r in ctx.reach(cb.function))


def active_at_suspend(ctx: Context, cb: Callback, call: CallSite) -> bool:
    """The table's .prepare/.suspend runtime-resumes the device, and nothing on the way down
    marks it suspended: after device_prepare()'s reference it cannot runtime-suspend, so it
    is RPM_ACTIVE in every late/noirq/early callback and gets succeed (puts only count)."""
    if not any(_reaches(ctx, c, _ACTIVATES) for c in _same_table(ctx, cb, _DOWN_MAIN)):
        return False
    return not _forced_down(ctx, cb)


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
    down = next((d for d, u in PAIRS.items() if u == cb.phase), None)
    if down is not None:
        pair = _same_table(ctx, cb, {down})
        if is_suspend_type(call.callee) and any(
            _reaches(ctx, c, _RESUMES | {"pm_runtime_get_noresume"}) for c in pair
        ):
            return True
        if call.callee in _RESUMES and any(_net_drop(ctx, c) for c in pair):
            return True
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

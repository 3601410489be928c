"""Checker `wake-gating`: enable_irq_wake() on the suspend side not conditioned on the user's
wakeup policy, in a driver that declares its device wakeup-capable (warning).

(The resume side, a disable under a fresh device_may_wakeup() where suspend armed under more
conditions, was dropped after three blind reviews: the conditions that differ in text were
invariants in practice.)

"Conditioned" looks along the whole chain callback -> helper -> call: an enclosing `if`, an
earlier `if (!...) return`, `a && call`, or an argument passed down, whose text mentions
wake-up (device_may_wakeup(), priv->wakeup_enabled, ...).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from dpmlens.core.findings import Finding
from dpmlens.model import footprint
from dpmlens.rules import cnav
from dpmlens.rules.callmatch import file_skipped
from dpmlens.rules.context import Context, Reached
from dpmlens.rules.loader import Rule
from dpmlens.rules.plugin import Keywords, NoOptions, checker

_SUSPEND_SIDE = frozenset(
    {"prepare", "suspend", "suspend_late", "suspend_noirq", "poweroff", "poweroff_late",
     "poweroff_noirq"}
)  # fmt: skip
_WAKE_WORD = re.compile(r"wak|wol|wowl", re.IGNORECASE)  # wakeup, wake_enabled, wol, wowlan
_CAPABLE = ("device_init_wakeup", "devm_device_init_wakeup", "device_set_wakeup_capable")
_PROVIDERS = {
    "skip_paths": ["*/irqchip/*", "*/gpio/*", "*/pinctrl/*"],
    "skip_sources": [r"\.irq_set_wake\s*=", r"struct\s+irq_chip\b", r"struct\s+gpio_chip\b"],
}


def _is_enable(call_callee: str, args: tuple[str, ...]) -> bool | None:
    """True for arming, False for disarming, None for other calls."""
    if call_callee == "enable_irq_wake":
        return True
    if call_callee == "disable_irq_wake":
        return False
    if call_callee == "irq_set_irq_wake" and len(args) == 2:
        flag = args[1].strip()
        if flag in ("1", "true"):
            return True
        if flag in ("0", "false"):
            return False
    return None


def _conditions(ctx: Context, reached: Reached) -> list[str]:
    """Every condition text guarding the path, plus the arguments passed down the chain
    (`foo_set_wake(dev, device_may_wakeup(dev))`)."""
    out: list[str] = []
    steps = [(h.call, h.model) for h in reached.hops] + [(reached.call, reached.model)]
    for call, model in steps:
        node = ctx.call_node(call, model)
        if node is None:
            continue
        out += [c for c, _pos in cnav.enclosing_conditions(node)]
        out += cnav.guards_before(node)
    for h in reached.hops:
        out += list(h.call.args)
    return out


@checker("wake-gating", NoOptions, fields={"message"}, keywords=Keywords(callbacks=True))
def run(rule: Rule, ctx: Context) -> Iterator[Finding]:
    callbacks = ctx.callbacks_in(_SUSPEND_SIDE)
    if not callbacks:
        return
    # Without a resolver every reached call is in this file: no wake call named, no finding
    # (a substring test, far cheaper than walking every callback).
    footprint.searched(ctx.model, "irq_wake")
    if ctx.resolver is None and b"irq_wake" not in ctx.model.source:
        return
    if file_skipped(ctx, _PROVIDERS["skip_paths"], _PROVIDERS["skip_sources"]):
        return
    # The policy exists only for a device the driver declares wakeup-capable; without that,
    # gating on device_may_wakeup() would switch the wake source off for good.
    declares_wakeup = ctx.file_calls_any(_CAPABLE)
    seen: set[int] = set()
    for cb in callbacks:
        for reached in ctx.reach(cb.function):
            call = reached.call
            kind = _is_enable(call.callee, call.args)
            if kind is None or call.start_byte in seen:
                continue
            if kind and cb.phase in _SUSPEND_SIDE:
                if not declares_wakeup:
                    continue  # never wakeup-capable: device_may_wakeup() is always false
                conds = _conditions(ctx, reached)
                if any(_WAKE_WORD.search(c) for c in conds):
                    continue
                text = (
                    f"{call.callee}() in the {cb.phase} callback {cb.function}()"
                    f"{ctx.via(reached)} arms the wake IRQ without checking "
                    f"device_may_wakeup(): it wakes the system even when user space disabled "
                    f"wakeup for the device"
                )
                severity = rule.severity
            else:
                continue
            seen.add(call.start_byte)
            yield ctx.report(rule, call, severity=severity, cb=cb, reached=reached, message=text)

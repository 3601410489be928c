"""Checker `wake-gating`: enable_irq_wake() on the suspend side not conditioned on the user's
wakeup policy (warning); disable_irq_wake() on the resume side conditioned on a fresh
device_may_wakeup() instead of what suspend recorded (info).

"Conditioned" looks along the whole chain callback -> helper -> call: an enclosing `if`, an
earlier `if (!...) return`, `a && call`, or an argument passed down, whose text mentions
wake-up (device_may_wakeup(), priv->wakeup_enabled, ...).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from dpmlens.findings import Finding, Severity
from dpmlens.model.phases import PAIRS
from dpmlens.rules import cnav
from dpmlens.rules.callmatch import file_skipped
from dpmlens.rules.context import Context, Reached
from dpmlens.rules.loader import Rule
from dpmlens.rules.plugin import Keywords, checker

_SUSPEND_SIDE = frozenset(
    {"prepare", "suspend", "suspend_late", "suspend_noirq", "poweroff", "poweroff_late",
     "poweroff_noirq"}
)  # fmt: skip
_RESUME_SIDE = frozenset(
    {"resume", "resume_early", "resume_noirq", "restore", "restore_early", "restore_noirq",
     "complete"}
)  # fmt: skip
_WAKE_WORD = re.compile(r"wak|wol|wowl", re.IGNORECASE)  # wakeup, wake_enabled, wol, wowlan
_MAY_WAKEUP = re.compile(r"\bdevice_may_wakeup\s*\(")
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


def _conditions(
    ctx: Context, reached: Reached, with_args: bool = True, with_guards: bool = True
) -> list[str]:
    """Every condition text guarding the path, plus (`with_args`) the arguments passed down
    the chain (`foo_set_wake(dev, device_may_wakeup(dev))`)."""
    out: list[str] = []
    steps = [(h.call, h.model) for h in reached.hops] + [(reached.call, reached.model)]
    for call, model in steps:
        node = ctx.call_node(call, model)
        if node is None:
            continue
        out += [c for c, _pos in cnav.enclosing_conditions(node)]
        if with_guards:  # early exits: their conditions were false (polarity not kept)
            out += cnav.guards_before(node)
    for h in reached.hops if with_args else ():
        out += list(h.call.args)
    return out


# `ret`, `!err`, `(error < 0)`, `IS_ERR(x)`: the path of a failed suspend step
_ERROR_TEST = re.compile(
    r"^[!(]*(?:ret|rc|err|error|retval|rv|status|res|IS_ERR(?:_OR_NULL)?\(|unlikely\(\s*(?:ret|err))"
    r"(?:\b|$)"
)


def _conjuncts(cond: str) -> list[str]:
    """`(a && (b || c) && d)` -> [a, (b || c), d] (top-level && only)."""
    c = cond.strip()
    while c.startswith("(") and c.endswith(")") and _balanced(c[1:-1]):
        c = c[1:-1].strip()
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(c):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and c.startswith("&&", i):
            parts.append(c[start:i])
            start = i + 2
    parts.append(c[start:])
    return [p.strip() for p in parts if p.strip()]


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if depth < 0:
            return False
    return depth == 0


def _atom(text: str) -> str:
    """The tested expression without negations and outer parentheses."""
    t = text
    while True:
        if t.startswith("!"):
            t = t[1:]
        elif t.startswith("(") and t.endswith(")") and _balanced(t[1:-1]):
            t = t[1:-1]
        else:
            return t


def _norm(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _extra_arming_conditions(ctx: Context, cb: Any, disable: Any, disarm: list[str]) -> str:
    """A condition guarding the matching enable_irq_wake() (same IRQ argument) in the
    paired suspend-side callbacks of the same table that the disable's path does not test,
    or ""."""
    phase = cb.phase
    downs = {d for d, u in PAIRS.items() if u == phase} | (
        {"prepare"} if phase == "complete" else set()
    )
    irq = _norm(disable.args[0]) if disable.args else ""
    # a state flag tested either way on both sides (`!priv->suspended` / `priv->suspended`)
    have = {_atom(_norm(part)) for c in disarm for part in _conjuncts(c)}
    for other in ctx.callbacks_in(downs):
        if other.source != cb.source:
            continue
        for r in ctx.reach(other.function):
            c = r.call
            if _is_enable(c.callee, c.args) is not True or not c.args or _norm(c.args[0]) != irq:
                continue
            conds = _conditions(ctx, r, with_args=False, with_guards=False)
            for cond in (part for c in conds for part in _conjuncts(c)):
                n = _norm(cond)
                if _ERROR_TEST.match(n):
                    continue  # suspend failed: the PM core then never calls this resume
                if n and _atom(n) not in have and not _WAKE_WORD.search(cond) and n != irq:
                    return cond.strip()
    return ""


@dataclass(frozen=True)
class Options:
    """No options."""


@checker("wake-gating", Options, fields={"message"}, keywords=Keywords(callbacks=True))
def run(rule: Rule, ctx: Context) -> Iterator[Finding]:
    callbacks = ctx.callbacks_in(_SUSPEND_SIDE | _RESUME_SIDE)
    if not callbacks:
        return
    # Without a resolver every reached call is in this file: no wake call named, no finding
    # (a substring test, far cheaper than walking every callback).
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
            elif kind is False and cb.phase in _RESUME_SIDE:
                node = ctx.call_node(call, reached.model)
                if node is None:
                    continue
                inner = [c for c, _pos in cnav.enclosing_conditions(node)]
                if not inner or not _MAY_WAKEUP.search(inner[0]):
                    continue
                # Re-reading device_may_wakeup() is fine when suspend armed under that test
                # alone (user space is frozen in between): only an arming under more
                # conditions than the disarming leaves the disable unbalanced.
                extra = _extra_arming_conditions(ctx, cb, call, _conditions(ctx, reached))
                if not extra:
                    continue
                text = (
                    f"{call.callee}() in the {cb.phase} callback {cb.function}()"
                    f"{ctx.via(reached)} is conditioned on device_may_wakeup() alone, but"
                    f" suspend arms the IRQ only when `{extra}` holds too: when it does not,"
                    f' this disable is unbalanced ("Unbalanced IRQ wake disable"); disarm on'
                    f" a flag stored at suspend"
                )
                severity = Severity.INFO
            else:
                continue
            seen.add(call.start_byte)
            yield ctx.report(rule, call, severity=severity, cb=cb, reached=reached, message=text)

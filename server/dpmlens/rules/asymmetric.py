"""Checker `asymmetric`: a dev_pm_ops table that fills the suspend side of a pair but not the
resume side.

Warning only where the omission cannot be deliberate: a system-sleep `suspend_late` /
`suspend_noirq` (or `runtime_suspend`) that does real work while the table has *no* callback
on the way back up at any stage. Everything else (the work is undone in another stage, a
main-phase or hibernation-only callback, a check that only aborts) is info; a resume side
alone (restore state after firmware) is not reported.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from dpmlens.findings import Finding, Severity
from dpmlens.model.phases import PAIRS, PHASES
from dpmlens.rules.async_suspend import non_trivial
from dpmlens.rules.context import Context
from dpmlens.rules.loader import Rule
from dpmlens.rules.plugin import Keywords, checker

_UP_SIDE = {
    "system": ("resume_noirq", "resume_early", "resume", "complete"),
    "runtime": ("runtime_resume",),
}
# runtime_suspend alone is common and deliberate (flush, then power up lazily on next use)
_STRICT = frozenset({"suspend_late", "suspend_noirq"})
_WHY = {
    "late": "what the late suspend callback changes is never restored on resume",
    "noirq": "what the noirq suspend callback changes is never restored on resume",
    "main": "what the suspend callback changes is not undone on resume (often deliberate)",
    "prepare": "nothing undoes .prepare when the transition ends",
    "runtime": "the PM core treats a missing .runtime_resume as success without resuming",
}




@dataclass(frozen=True)
class Options:
    """No options."""

@checker(
    "asymmetric",
    Options,
    fields={"table", "member", "function", "pair", "why"},
    keywords=Keywords(callbacks=True),
)
def run(rule: Rule, ctx: Context) -> Iterator[Finding]:
    for table in ctx.model.pm_tables.values():
        filled = {m.member: m for m in table.members if m.function}
        for down, up in PAIRS.items():
            m = filled.get(down)
            if m is None or up in filled or m.function is None:
                continue
            phase = PHASES[down]
            severity = Severity.INFO
            why = _WHY[phase.stage]
            if down in _STRICT:
                up_side = _UP_SIDE[phase.kind]
                if any(u in filled for u in up_side):
                    why = f"the resume side is handled in another stage ({_first(filled, up_side)})"
                elif non_trivial(ctx, m.function):
                    severity = rule.severity
            yield Finding(
                rule=rule.id,
                kernel_type=rule.kernel_type,
                severity=severity,
                path=ctx.model.path,
                span=m.span,
                message=rule.format_message(
                    table=table.name, member=down, function=m.function, pair=up, why=why
                ),
                function=m.function,
                phase=down,
            )


def _first(filled: dict, members: tuple[str, ...]) -> str:
    return ", ".join(f".{u}" for u in members if u in filled)

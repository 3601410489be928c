"""Checker `asymmetric`: a dev_pm_ops table that fills the suspend side of a pair but not the
resume side. Late/noirq stages (and runtime) are warnings, main stage info; a resume side
alone is legitimate (restore state after firmware) and not reported."""

from __future__ import annotations

from collections.abc import Iterator

from dpmlens.findings import Finding, Severity
from dpmlens.model.phases import PAIRS, PHASES
from dpmlens.rules.context import Context
from dpmlens.rules.loader import Rule

_WHY = {
    "late": "state changed in the late suspend phase is never restored on resume",
    "noirq": "state changed in the noirq suspend phase is never restored on resume",
    "main": "what the suspend callback changes is not undone on resume (often deliberate)",
    "prepare": "nothing undoes .prepare when the transition ends",
    "runtime": "the PM core treats a missing .runtime_resume as success without resuming",
}


def run(rule: Rule, ctx: Context) -> Iterator[Finding]:
    for table in ctx.model.pm_tables.values():
        filled = {m.member: m for m in table.members if m.function}
        for down, up in PAIRS.items():
            m = filled.get(down)
            if m is None or up in filled:
                continue
            stage = PHASES[down].stage
            if stage in ("late", "noirq"):
                severity = rule.severity
            elif stage == "runtime":
                severity = Severity.INFO
            else:
                severity = Severity.INFO
            yield Finding(
                rule=rule.id,
                kernel_type=rule.kernel_type,
                severity=ctx.config.severity_for(rule.id, severity),
                path=ctx.model.path,
                span=m.span,
                message=rule.format_message(
                    table=table.name, member=down, function=m.function, pair=up, why=_WHY[stage]
                ),
                function=m.function,
                phase=down,
            )

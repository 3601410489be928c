"""Checker `asymmetric`: a dev_pm_ops table that fills the suspend side of a pair but not the
resume side, where that cannot be deliberate.

- warning: a system-sleep `suspend_late` / `suspend_noirq` that does real work in a table with
  no callback at all on the way back up (`resume_noirq`, `resume_early`, `resume`, `complete`);
- info: a `.prepare` that changes state (writes a register, a field, calls anything beyond
  checks, waits and runtime resumes: rules/tables/inert-calls.yaml) in a table with no
  callback on the way back up at any stage or transition.

Silent, because the omission is usually deliberate (a review of the 67 info findings on
linux 6.12 drivers/ found few to change): main-phase suspend/freeze/poweroff without its
pair (stop a vibrator, power a sensor down until its next use), hibernation-only late/noirq
callbacks (poweroff is followed by a reboot, not by restore of the same state), late/noirq
work undone in another stage, `runtime_suspend` alone (the device powers up on access), and
a `.prepare` that only checks, waits, runtime-resumes or returns a direct-complete hint.
"""

from __future__ import annotations

from collections.abc import Iterator

from dpmlens.core.findings import Finding, Severity
from dpmlens.model.phases import PAIRS, PHASES
from dpmlens.rules.context import Context
from dpmlens.rules.loader import Rule
from dpmlens.rules.plugin import Keywords, NoOptions, checker
from dpmlens.rules.pmwork import inert_prepare, non_trivial

_STRICT = frozenset({"suspend_late", "suspend_noirq"})
_SYSTEM_UP = ("resume_noirq", "resume_early", "resume", "complete")
_ANY_UP = tuple(m for m, p in PHASES.items() if p.kind != "runtime" and p.direction == "up")
_WHY = {
    "late": "what the late suspend callback changes is never restored on resume",
    "noirq": "what the noirq suspend callback changes is never restored on resume",
}


@checker(
    "asymmetric",
    NoOptions,
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
            if down in _STRICT:
                if any(u in filled for u in _SYSTEM_UP) or not non_trivial(ctx, m.function):
                    continue
                severity, why = rule.severity, _WHY[PHASES[down].stage]
            elif down == "prepare":
                if any(u in filled for u in _ANY_UP):
                    continue
                change = inert_prepare(ctx, m.function)
                if change is None:
                    continue
                # often deliberate (a one-way setting for the whole sleep): a hint
                severity = Severity.HINT
                why = (
                    f"{m.function}() changes state ({change}) and no callback on the way back "
                    "up restores it"
                )
            else:
                continue
            yield ctx.report(
                rule, m.span, severity=severity, function=m.function, phase=down,
                table=table.name, member=down, pair=up, why=why,
            )  # fmt: skip

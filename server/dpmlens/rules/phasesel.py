"""Phase selectors in rule files: member names or groups ("noirq", "late", "runtime", ...)."""

from __future__ import annotations

from dpmlens.model.phases import PHASES

GROUPS: dict[str, frozenset[str]] = {
    "all": frozenset(PHASES),
    "system": frozenset(m for m, p in PHASES.items() if p.kind != "runtime"),
    "runtime": frozenset(m for m, p in PHASES.items() if p.kind == "runtime"),
    "runtime-disabled": frozenset(m for m, p in PHASES.items() if p.runtime_pm_disabled),
    "down": frozenset(m for m, p in PHASES.items() if p.direction == "down"),
    "up": frozenset(m for m, p in PHASES.items() if p.direction == "up"),
}
for _stage in ("prepare", "main", "late", "noirq", "early", "complete"):
    GROUPS[_stage] = frozenset(m for m, p in PHASES.items() if p.stage == _stage)


def select(names: list[str] | tuple[str, ...]) -> tuple[frozenset[str], str | None]:
    """The members named by `names`, or an error message for an unknown name."""
    out: set[str] = set()
    for name in names:
        if name in PHASES:
            out.add(name)
        elif name in GROUPS:
            out |= GROUPS[name]
        else:
            known = ", ".join(sorted(GROUPS))
            return frozenset(), f"unknown phase {name!r} (a dev_pm_ops member or one of: {known})"
    return frozenset(out), None

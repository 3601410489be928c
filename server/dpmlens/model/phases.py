"""The spine: `struct dev_pm_ops` member names and what holds while each runs.

Rules, trace importers, hovers and CodeLens all speak these names. Facts come from
include/linux/pm.h, drivers/base/power/main.c and Documentation/power/runtime_pm.rst.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Phase:
    member: str
    kind: str  # "system" (suspend/resume), "hibernate", "runtime"
    stage: str  # prepare | main | late | noirq | early | complete | runtime
    direction: str  # "down" (towards low power) or "up"
    irqs_suspended: bool  # device IRQs already disabled by suspend_device_irqs()
    # between __pm_runtime_disable() in suspend_late and its enable in resume_early
    runtime_pm_disabled: bool
    may_run_async: bool  # device_enable_async_suspend() lets this phase run in parallel
    order: int  # position in a full suspend/resume cycle, for sorting


def _p(member: str, kind: str, stage: str, direction: str, order: int) -> Phase:
    between_late_and_early = stage in ("late", "noirq", "early")
    return Phase(
        member=member,
        kind=kind,
        stage=stage,
        direction=direction,
        irqs_suspended=stage == "noirq",
        runtime_pm_disabled=between_late_and_early,
        may_run_async=stage in ("main", "late", "noirq", "early"),
        order=order,
    )


PHASES: dict[str, Phase] = {
    p.member: p
    for p in (
        _p("prepare", "system", "prepare", "down", 0),
        _p("suspend", "system", "main", "down", 1),
        _p("suspend_late", "system", "late", "down", 2),
        _p("suspend_noirq", "system", "noirq", "down", 3),
        _p("resume_noirq", "system", "noirq", "up", 4),
        _p("resume_early", "system", "early", "up", 5),
        _p("resume", "system", "main", "up", 6),
        _p("complete", "system", "complete", "up", 7),
        _p("freeze", "hibernate", "main", "down", 11),
        _p("freeze_late", "hibernate", "late", "down", 12),
        _p("freeze_noirq", "hibernate", "noirq", "down", 13),
        _p("thaw_noirq", "hibernate", "noirq", "up", 14),
        _p("thaw_early", "hibernate", "early", "up", 15),
        _p("thaw", "hibernate", "main", "up", 16),
        _p("poweroff", "hibernate", "main", "down", 21),
        _p("poweroff_late", "hibernate", "late", "down", 22),
        _p("poweroff_noirq", "hibernate", "noirq", "down", 23),
        _p("restore_noirq", "hibernate", "noirq", "up", 24),
        _p("restore_early", "hibernate", "early", "up", 25),
        _p("restore", "hibernate", "main", "up", 26),
        _p("runtime_suspend", "runtime", "runtime", "down", 31),
        _p("runtime_resume", "runtime", "runtime", "up", 32),
        _p("runtime_idle", "runtime", "runtime", "down", 33),
    )
}

# The sort key of a name that is no phase: after every phase of PHASES.
AFTER_ALL_PHASES = 99

MEMBERS: tuple[str, ...] = tuple(PHASES)
SYSTEM_SLEEP_MEMBERS = tuple(m for m, p in PHASES.items() if p.kind != "runtime")
NOIRQ_MEMBERS = tuple(m for m, p in PHASES.items() if p.stage == "noirq")
RUNTIME_DISABLED_MEMBERS = tuple(m for m, p in PHASES.items() if p.runtime_pm_disabled)

# The member on the opposite side of the cycle (for asymmetric-callback checks).
PAIRS: dict[str, str] = {
    "suspend": "resume",
    "suspend_late": "resume_early",
    "suspend_noirq": "resume_noirq",
    "freeze": "thaw",
    "freeze_late": "thaw_early",
    "freeze_noirq": "thaw_noirq",
    "poweroff": "restore",
    "poweroff_late": "restore_early",
    "poweroff_noirq": "restore_noirq",
    "prepare": "complete",
    "runtime_suspend": "runtime_resume",
}

# Trace vocabulary: the kernel's pm_verb()/pm_event symbolic names (trace/events/power.h)
# combined with the stage word at the start of the callback-info string
# ("noirq bus ", "late power domain ", "early class ", "preparing type ", ...) -> member.
_VERB_STAGE_TO_MEMBER: dict[tuple[str, str], str] = {}
for _verb, (_main, _late, _noirq) in {
    "suspend": ("suspend", "suspend_late", "suspend_noirq"),
    "resume": ("resume", "resume_early", "resume_noirq"),
    "freeze": ("freeze", "freeze_late", "freeze_noirq"),
    "quiesce": ("freeze", "freeze_late", "freeze_noirq"),
    "hibernate": ("poweroff", "poweroff_late", "poweroff_noirq"),
    "thaw": ("thaw", "thaw_early", "thaw_noirq"),
    "recover": ("thaw", "thaw_early", "thaw_noirq"),
    "restore": ("restore", "restore_early", "restore_noirq"),
}.items():
    _VERB_STAGE_TO_MEMBER[(_verb, "main")] = _main
    _VERB_STAGE_TO_MEMBER[(_verb, "late")] = _late
    _VERB_STAGE_TO_MEMBER[(_verb, "early")] = _late
    _VERB_STAGE_TO_MEMBER[(_verb, "noirq")] = _noirq
    _VERB_STAGE_TO_MEMBER[(_verb, "prepare")] = "prepare"
    _VERB_STAGE_TO_MEMBER[(_verb, "complete")] = "complete"

_STAGE_WORDS = {
    "noirq": "noirq",
    "late": "late",
    "early": "early",
    "preparing": "prepare",
    "completing": "complete",
}


def split_layer(info: str) -> tuple[str, str]:
    """Split a callback-info string ("noirq power domain ") into (stage, layer).

    Layer is what remains: "power domain", "type", "class", "bus", "driver",
    "legacy bus", ... ; an empty info gives ("main", ""). The kernel prints "none " when
    the info pointer is NULL: that is no layer, not a layer called "none".
    """
    words = info.strip().split()
    if words == ["none"]:
        words = []
    stage = "main"
    if words and words[0].lower() in _STAGE_WORDS:
        stage = _STAGE_WORDS[words[0].lower()]
        words = words[1:]
    return stage, " ".join(words).lower()


def member_for_event(verb: str, info: str, default_stage: str = "main") -> str | None:
    """Map a trace event's verb ("suspend", "hibernate", ...) and info string to a member.

    Real traces (kernels 4.6 .. 6.12) emit `device_pm_callback_start` with an EMPTY info for
    every device in dpm_prepare() and dpm_complete(); the stage then comes from the enclosing
    `suspend_resume: dpm_prepare[N] begin` marker, passed here as `default_stage`.
    """
    stage, _layer = split_layer(info)
    if not info.strip() or info.strip().lower() == "none":
        stage = default_stage
    return _VERB_STAGE_TO_MEMBER.get((verb.strip().lower(), stage))


def member_for_stage(verb: str, stage: str) -> str | None:
    """(verb, stage) -> member, e.g. ("resume", "noirq") -> "resume_noirq"."""
    return _VERB_STAGE_TO_MEMBER.get((verb.strip().lower(), stage))


# pm_message_t.event values (include/linux/pm.h) -> the verb trace/events/power.h prints.
PM_EVENT_VERBS: dict[int, str] = {
    0x1: "freeze",
    0x2: "suspend",
    0x4: "hibernate",
    0x8: "quiesce",
    0x10: "resume",
    0x20: "thaw",
    0x40: "restore",
    0x80: "recover",
}

# `suspend_resume: <action>[event] begin|end` markers drivers/base/power/main.c emits around
# each phase -> the stage they delimit.
DPM_MARKER_STAGES: dict[str, str] = {
    "dpm_prepare": "prepare",
    "dpm_suspend": "main",
    "dpm_suspend_late": "late",
    "dpm_suspend_noirq": "noirq",
    "dpm_resume_noirq": "noirq",
    "dpm_resume_early": "early",
    "dpm_resume": "main",
    "dpm_complete": "complete",
}


def member_for_dmesg_phase(words: str) -> str | None:
    """Map the phase words of 'PM: <words> of devices complete after' to a member.

    e.g. "noirq suspend" -> suspend_noirq, "early resume" -> resume_early, "freeze" -> freeze.
    """
    parts = words.strip().lower().split()
    if not parts:
        return None
    if len(parts) == 1:
        return _VERB_STAGE_TO_MEMBER.get((parts[0], "main"))
    stage = _STAGE_WORDS.get(parts[0])
    if stage is None:
        return None
    return _VERB_STAGE_TO_MEMBER.get((parts[-1], stage))

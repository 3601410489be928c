"""What the build's configuration leaves of power management, for `dpmlens cc`.

include/linux/pm.h compiles the PM wiring by configuration: without CONFIG_PM_SLEEP the
`SET_*SYSTEM_SLEEP_PM_OPS()` macros expand to nothing, `pm_sleep_ptr()` and the members that
`SYSTEM_SLEEP_PM_OPS()`, `DEFINE_SIMPLE_DEV_PM_OPS()`, `DEFINE_NOIRQ_DEV_PM_OPS()` and
`DEFINE_RUNTIME_DEV_PM_OPS()` fill through it are NULL, and the PM core's system-sleep code
(drivers/base/power/main.c) is not built, so no system-sleep callback runs whatever wires it;
without CONFIG_PM `SET_RUNTIME_PM_OPS()` is empty, `pm_ptr()` is NULL and no PM callback runs at
all. So, with a configuration that says so, a finding in a system-sleep phase (or from a rule
about system sleep only) is dropped without CONFIG_PM_SLEEP, and a finding in any PM phase
without CONFIG_PM. As for `#ifdef`, a configuration is a closed world (kconfig.py): a
CONFIG_ symbol it does not define is off; a command line with no CONFIG_ macro at all (no
autoconf.h, no -DCONFIG_...) is no configuration and changes nothing.

The delay rules' jiffies arithmetic uses the configured CONFIG_HZ instead of the rule's default.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from dpmlens.core.findings import Finding
from dpmlens.kbuild.kconfig import Kconfig
from dpmlens.model.phases import PHASES

# Rules whose findings have no phase but are about system sleep only.
SLEEP_ONLY_RULES = frozenset({"async-suspend-not-enabled"})
HZ_CHOICES = (100, 250, 300, 1000)  # kernel/Kconfig.hz


def keep(finding: Finding, kconfig: Kconfig) -> bool:
    """False when the configuration compiles out the code path the finding is about."""
    phase = PHASES.get(finding.phase or "")
    if phase is not None and kconfig.enabled("CONFIG_PM") == 0:
        return False
    if kconfig.enabled("CONFIG_PM_SLEEP") == 0:
        if phase is not None and phase.kind != "runtime":
            return False
        if finding.rule in SLEEP_ONLY_RULES:
            return False
    return True


def configured_hz(kconfig: Kconfig) -> int | None:
    text = kconfig.macros.get("CONFIG_HZ", "").strip()
    return int(text) if text.isdigit() and int(text) in HZ_CHOICES else None


def with_configured_hz(rules: list[Any], kconfig: Kconfig | None) -> list[Any]:
    """The rules, those with an `hz` option set to the build's CONFIG_HZ."""
    hz = configured_hz(kconfig) if kconfig is not None else None
    if hz is None:
        return rules
    return [
        replace(r, options=replace(r.options, hz=hz)) if hasattr(r.options, "hz") else r
        for r in rules
    ]

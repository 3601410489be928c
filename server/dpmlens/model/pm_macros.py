"""The dev_pm_ops macro table: which members each kernel macro fills, as data.

Transcribed from include/linux/pm.h and include/linux/pm_runtime.h (6.12) and tested against
their #define bodies (tests/test_model_pm_macros.py). An entry value is either the index of
the macro argument that fills the member or literal text: a function name
(DEFINE_RUNTIME_DEV_PM_OPS puts pm_runtime_force_suspend/resume in the system-sleep members) or
"NULL" (DEFINE_SIMPLE_DEV_PM_OPS sets the runtime members to NULL explicitly).
"""

from __future__ import annotations

from dataclasses import dataclass

Fill = tuple[tuple[str, int | str], ...]  # (member, argument index or literal function)

_SLEEP_DOWN = ("suspend", "freeze", "poweroff")
_SLEEP_UP = ("resume", "thaw", "restore")


def _sleep(stage_suffix_down: str, stage_suffix_up: str, s: int | str, r: int | str) -> Fill:
    down = tuple((m + stage_suffix_down, s) for m in _SLEEP_DOWN)
    up = tuple((m + stage_suffix_up, r) for m in _SLEEP_UP)
    # header order: suspend, resume, freeze, thaw, poweroff, restore
    return tuple(x for pair in zip(down, up, strict=True) for x in pair)


def _system(s: int | str, r: int | str) -> Fill:
    return _sleep("", "", s, r)


def _late(s: int | str, r: int | str) -> Fill:
    # suspend_late/resume_early, freeze_late/thaw_early, poweroff_late/restore_early
    return _sleep("_late", "_early", s, r)


def _noirq(s: int | str, r: int | str) -> Fill:
    return _sleep("_noirq", "_noirq", s, r)


def _runtime(s: int | str, r: int | str, i: int | str) -> Fill:
    return (("runtime_suspend", s), ("runtime_resume", r), ("runtime_idle", i))


# Macros used *inside* a dev_pm_ops initializer.
MEMBER_MACROS: dict[str, Fill] = {
    "SYSTEM_SLEEP_PM_OPS": _system(0, 1),
    "LATE_SYSTEM_SLEEP_PM_OPS": _late(0, 1),
    "NOIRQ_SYSTEM_SLEEP_PM_OPS": _noirq(0, 1),
    "RUNTIME_PM_OPS": _runtime(0, 1, 2),
    "SET_SYSTEM_SLEEP_PM_OPS": _system(0, 1),
    "SET_LATE_SYSTEM_SLEEP_PM_OPS": _late(0, 1),
    "SET_NOIRQ_SYSTEM_SLEEP_PM_OPS": _noirq(0, 1),
    "SET_RUNTIME_PM_OPS": _runtime(0, 1, 2),
}

# Deprecated member macros (compiled out without CONFIG_PM*, so callbacks need guards).
DEPRECATED_MEMBER_MACROS = frozenset(
    {
        "SET_SYSTEM_SLEEP_PM_OPS",
        "SET_LATE_SYSTEM_SLEEP_PM_OPS",
        "SET_NOIRQ_SYSTEM_SLEEP_PM_OPS",
        "SET_RUNTIME_PM_OPS",
    }
)


@dataclass(frozen=True)
class TableMacro:
    """A macro that defines a whole `struct dev_pm_ops` variable."""

    name_arg: int  # argument holding the variable name
    fills: Fill  # members filled from the arguments
    maybe_unused: bool = False  # the expansion declares the table __maybe_unused
    exported: bool = False
    deprecated: bool = False
    # EXPORT_*_DEV_PM_OPS(name) / EXPORT_*_DEV_SLEEP_PM_OPS(name) only start a declaration:
    # the members come from the `= { ... }` initializer that follows.
    takes_initializer: bool = False


def _export_variants(stem: str) -> list[str]:
    # EXPORT_<stem>, EXPORT_GPL_<stem>, EXPORT_NS_<stem>, EXPORT_NS_GPL_<stem>
    return [f"EXPORT_{k}{stem}" for k in ("", "GPL_", "NS_", "NS_GPL_")]


TABLE_MACROS: dict[str, TableMacro] = {
    "_DEFINE_DEV_PM_OPS": TableMacro(0, _system(1, 2) + _runtime(3, 4, 5)),
    # _DEFINE_DEV_PM_OPS(name, s, r, NULL, NULL, NULL): the runtime members are NULL
    "DEFINE_SIMPLE_DEV_PM_OPS": TableMacro(0, _system(1, 2) + _runtime("NULL", "NULL", "NULL")),
    "DEFINE_NOIRQ_DEV_PM_OPS": TableMacro(0, _noirq(1, 2)),
    "DEFINE_RUNTIME_DEV_PM_OPS": TableMacro(
        0, _system("pm_runtime_force_suspend", "pm_runtime_force_resume") + _runtime(1, 2, 3)
    ),
    "SIMPLE_DEV_PM_OPS": TableMacro(0, _system(1, 2), maybe_unused=True, deprecated=True),
    "UNIVERSAL_DEV_PM_OPS": TableMacro(
        0, _system(1, 2) + _runtime(1, 2, 3), maybe_unused=True, deprecated=True
    ),
}
for _n in _export_variants("SIMPLE_DEV_PM_OPS"):
    TABLE_MACROS[_n] = TableMacro(0, _system(1, 2), exported=True)
for _n in _export_variants("RUNTIME_DEV_PM_OPS"):
    TABLE_MACROS[_n] = TableMacro(0, _runtime(1, 2, 3), exported=True)
for _n in _export_variants("DEV_PM_OPS") + _export_variants("DEV_SLEEP_PM_OPS"):
    TABLE_MACROS[_n] = TableMacro(0, (), exported=True, takes_initializer=True)

# Wrappers that only make a pointer conditional: pm_ptr(x) -> x.
POINTER_WRAPPERS = frozenset({"pm_ptr", "pm_sleep_ptr"})


def expand(macro: str, args: tuple[str, ...]) -> list[tuple[str, str]]:
    """(member, argument text) pairs a member or table macro fills for these arguments.

    Missing arguments are skipped; unknown macros give [].
    """
    fills = MEMBER_MACROS.get(macro)
    if fills is None:
        table = TABLE_MACROS.get(macro)
        if table is None:
            return []
        fills = table.fills
    out: list[tuple[str, str]] = []
    for member, src in fills:
        if isinstance(src, str):
            out.append((member, src))
        elif src < len(args):
            out.append((member, args[src]))
    return out

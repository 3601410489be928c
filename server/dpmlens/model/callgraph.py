"""PM callbacks of a file: which functions it installs as PM callbacks, and in which phases.

Sources: `struct dev_pm_ops` tables (every macro form), legacy bus callbacks of driver structs
(`.suspend` of a platform_driver), and members of subsystem ops structs that the subsystem's
own PM callbacks call (`rules/tables/subsystem-ops.yaml`, read by `model.ops_structs`).
What the callbacks reach is `model.walker`.
"""

from __future__ import annotations

from dataclasses import dataclass

from dpmlens.core.findings import Span
from dpmlens.model.buses import LEGACY_CALLBACKS
from dpmlens.model.ops_structs import ops_roles
from dpmlens.model.types import FileModel


@dataclass(frozen=True)
class Role:
    """One way a function is installed as a PM callback."""

    member: str  # dev_pm_ops member / phase (model.phases.PHASES key)
    table: str | None  # the dev_pm_ops variable; None for a legacy bus callback
    # "designated", the filling macro (SET_SYSTEM_SLEEP_PM_OPS, ...), "legacy", or for a
    # subsystem ops struct "<struct type>.<member>" ("tb_cm_ops.suspend_noirq")
    via: str
    driver: str | None  # variable of the driver struct using the table / holding the callback
    legacy: bool  # a legacy bus callback in the driver struct (.suspend of a platform_driver)
    span: Span  # where the function is named as this callback
    driver_name: str | None = None  # the registered driver name, when known
    bus: str | None = None  # the driver's bus, when known
    field: str | None = None  # the driver struct field for legacy callbacks ("reset_resume")


def pm_callbacks(model: FileModel) -> dict[str, list[Role]]:
    """function name -> its PM roles, from the file's dev_pm_ops tables and driver structs.

    Every table member naming a function is included (also functions defined elsewhere, such
    as pm_runtime_force_suspend filled in by DEFINE_RUNTIME_DEV_PM_OPS); check
    `model.functions` before following one. Roles of a function are in table order.
    """
    users: dict[str, tuple[str, str | None, str]] = {}
    for d in model.drivers:
        if d.pm is not None:
            users.setdefault(d.pm, (d.var_name, d.name, d.bus))
    out: dict[str, list[Role]] = {}
    for table in model.pm_tables.values():
        drv, drv_name, bus = users.get(table.name, (None, None, None))
        for m in table.members:
            if m.function is None:
                continue
            out.setdefault(m.function, []).append(
                Role(
                    member=m.member,
                    table=table.name,
                    via=m.via,
                    driver=drv,
                    legacy=False,
                    span=m.span,
                    driver_name=drv_name,
                    bus=bus,
                )
            )
    for d in model.drivers:
        for fld, fn in d.legacy.items():
            span = d.span if d.span is not None else Span(1, 1, 1, 1)
            out.setdefault(fn, []).append(
                Role(
                    member=LEGACY_CALLBACKS[fld],
                    table=None,
                    via="legacy",
                    driver=d.var_name,
                    legacy=True,
                    span=d.legacy_spans.get(fld, span),
                    driver_name=d.name,
                    bus=d.bus,
                    field=fld,
                )
            )
    for entry, phases in ops_roles(model):
        for phase in phases:
            out.setdefault(entry.function, []).append(
                Role(
                    member=phase,
                    table=entry.var,
                    via=f"{entry.struct_type}.{entry.member}",
                    driver=None,
                    legacy=False,
                    span=entry.span,
                )
            )
    return out

"""Checker `async-suspend`: drivers on buses that leave async suspend off, with real
system-sleep work, whose probe never calls device_enable_async_suspend()."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from dpmlens.findings import Finding, Span
from dpmlens.model.phases import SYSTEM_SLEEP_MEMBERS
from dpmlens.rules.context import Context
from dpmlens.rules.loader import Rule, load_table
from dpmlens.rules.plugin import Keywords, checker

_ENABLE = "device_enable_async_suspend"
# Calls that do not make a callback "non-trivial": getting at the driver data, logging.
_TRIVIAL_CALLS = frozenset(
    {"dev_get_drvdata", "platform_get_drvdata", "i2c_get_clientdata", "spi_get_drvdata",
     "to_platform_device", "to_i2c_client", "to_spi_device", "container_of", "dev_dbg",
     "dev_info", "pr_debug", "dev_warn", "dev_err", "pr_info", "acpi_driver_data",
     "dev_get_platdata", "serio_get_drvdata", "pnp_get_drvdata", "amba_get_drvdata"}
)  # fmt: skip




@dataclass(frozen=True)
class Options:
    """No options."""

@checker(
    "async-suspend",
    Options,
    fields={"bus", "driver", "callbacks", "probe"},
    keywords=Keywords(callbacks=True),
)
def run(rule: Rule, ctx: Context) -> Iterator[Finding]:
    if ctx.file_calls_any((_ENABLE,)):
        return
    table = load_table("async-buses")
    async_buses = set((table.get("async_buses") or {}).keys())
    sync_buses = set(table.get("sync_buses") or [])
    for drv in ctx.model.drivers:
        if drv.bus in async_buses or drv.bus not in sync_buses:
            continue
        if not drv.probe or drv.probe not in ctx.model.functions or not drv.pm:
            continue
        pm = ctx.model.pm_tables.get(drv.pm)
        if pm is None:
            continue
        busy = []
        for m in pm.members:
            fn = m.function
            if m.member in SYSTEM_SLEEP_MEMBERS and fn and fn not in busy and non_trivial(ctx, fn):
                busy.append(fn)
        if not busy:
            continue
        # Without a resolver the walk stays in this file, which does not call _ENABLE (above).
        if ctx.resolver is not None and any(r.call.callee == _ENABLE for r in ctx.reach(drv.probe)):
            continue
        span = drv.span or drv.name_span or Span(1, 1, 1, 1)
        yield Finding(
            rule=rule.id,
            kernel_type=rule.kernel_type,
            severity=rule.severity,
            path=ctx.model.path,
            span=Span(span.line, span.column, span.line, span.column + 1)
            if span.end_line != span.line
            else span,
            message=rule.format_message(
                bus=drv.bus,
                driver=drv.name or drv.var_name,
                callbacks=", ".join(f"{f}()" for f in busy),
                probe=drv.probe,
            ),
            function=drv.probe,
        )


def non_trivial(ctx: Context, function: str) -> bool:
    if function in ("pm_runtime_force_suspend", "pm_runtime_force_resume"):
        return True
    if function not in ctx.model.functions:
        return False
    return any(r.call.callee not in _TRIVIAL_CALLS for r in ctx.reach(function, depth=1))

"""Does a PM callback do real work? Shared by `asymmetric` (and once `async-suspend`)."""

from __future__ import annotations

from dpmlens.rules.context import Context

# Calls that do not make a callback "non-trivial": getting at the driver data, logging.
TRIVIAL_CALLS = frozenset(
    {"dev_get_drvdata", "platform_get_drvdata", "i2c_get_clientdata", "spi_get_drvdata",
     "to_platform_device", "to_i2c_client", "to_spi_device", "container_of", "dev_dbg",
     "dev_info", "pr_debug", "dev_warn", "dev_err", "pr_info", "acpi_driver_data",
     "dev_get_platdata", "serio_get_drvdata", "pnp_get_drvdata", "amba_get_drvdata"}
)  # fmt: skip


def non_trivial(ctx: Context, function: str) -> bool:
    """Does `function` (or a helper it calls directly) call anything beyond TRIVIAL_CALLS?"""
    if function in ("pm_runtime_force_suspend", "pm_runtime_force_resume"):
        return True
    if function not in ctx.model.functions:
        return False
    return any(r.call.callee not in TRIVIAL_CALLS for r in ctx.reach(function, depth=1))

"""Does a PM callback do real work, or change state that another callback must undo?"""

from __future__ import annotations

import re

from dpmlens.rules import cnav
from dpmlens.rules.context import Context
from dpmlens.rules.loader import load_table

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


def inert_prepare(ctx: Context, function: str) -> str | None:
    """None when `function` only checks, waits, runtime-resumes or hints (every call it and
    its same-file helpers make, also helpers passed by name such as the callback of
    device_for_each_child(), matches rules/tables/inert-calls.yaml, and it writes no field,
    global or pointer); otherwise the first thing it changes, as "iowrite32()" or "x->y =".
    """
    inert = _inert_pattern()
    todo, seen = [function], {function}
    while todo:
        fn = todo.pop()
        for r in ctx.reach(fn, depth=2):
            callee = r.call.callee
            if callee in TRIVIAL_CALLS or inert.fullmatch(callee):
                pass
            elif ctx.lookup(callee, r.model) is None:
                return f"{callee}()"
            for arg in r.call.args:  # a same-file function passed by name is called too
                name = arg.strip().lstrip("&")
                if name in ctx.model.functions and name not in seen:
                    seen.add(name)
                    todo.append(name)
        write = _state_write(ctx, fn)
        if write:
            return write
    return None


def _state_write(ctx: Context, function: str) -> str | None:
    fn = ctx.model.functions.get(function)
    node = ctx.node(fn.start_byte, fn.end_byte, kind="function_definition") if fn else None
    if node is None:
        return None
    stack = [node]
    while stack:
        n = stack.pop()
        target = None
        if n.type == "assignment_expression":
            target = n.child_by_field_name("left")
        elif n.type == "update_expression":
            target = n.child_by_field_name("argument")
        if target is not None and target.type != "identifier":
            return f"{cnav.text(target)} ="  # a field, an element or through a pointer
        stack.extend(n.children)
    return None


def _inert_pattern() -> re.Pattern[str]:
    patterns = load_table("inert-calls").get("patterns") or []
    return re.compile("|".join(f"(?:{p})" for p in patterns))

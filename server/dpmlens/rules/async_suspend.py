"""Checker `async-suspend`: a driver on a bus that leaves async suspend off, whose
system-sleep transition waits long in fixed delays, and whose probe never calls
device_enable_async_suspend().

Silent for resource providers (rules/tables/resource-providers.yaml: their consumers rely on
the synchronous order), for `.prepare`/`.complete` (the PM core always runs them
synchronously), and below the cost threshold of rules/tables/async-suspend-cost.yaml.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from dpmlens.core.findings import Finding, Span
from dpmlens.core.paths import rules_dir
from dpmlens.model import footprint
from dpmlens.model.types import DriverStruct, FileModel, PmTable
from dpmlens.rules.context import Context
from dpmlens.rules.delays import spec_table
from dpmlens.rules.loader import Rule, load_table
from dpmlens.rules.plugin import Keywords, NoOptions, checker
from dpmlens.rules.sleepcost import Cost, Estimator, Item

_ENABLE = "device_enable_async_suspend"
# The callbacks one transition runs for a device whose waits async can overlap
# (drivers/base/power/main.c). .prepare and .complete are left out: dpm_prepare() and
# dpm_complete() call them in a plain loop for every device, async or not (main.c:1917,
# :1120 in 6.12). So are the noirq callbacks: what waits there is a bus controller's link
# timing (a PCIe host's PERST#, a bridge's power-up), which its children wait for anyway
# (dpm_wait_for_superior()), and the noirq phase ends with async_synchronize_full() for all.
TRANSITIONS: dict[str, tuple[str, ...]] = {
    "suspend": ("suspend", "suspend_late"),
    "resume": ("resume_early", "resume"),
    "freeze": ("freeze", "freeze_late"),
    "thaw": ("thaw_early", "thaw"),
    "poweroff": ("poweroff", "poweroff_late"),
    "restore": ("restore_early", "restore"),
}
# Other drivers call into this device (`EXPORT_SYMBOL(tosa_bl_enable)`: a backlight writes to
# the panel's SPI device in its own resume): its users are not its children, so without
# device links (`device_link_add()`) async could resume it after them.
_EXPORTS = re.compile(rb"^EXPORT_SYMBOL(?:_GPL|_NS|_NS_GPL)?\s*\(\s*(\w+)", re.M)
_LINKS = "device_link_add"
# pm_runtime_force_suspend/resume() run the table's runtime callback
# (drivers/base/power/runtime.c:1993, :2045 in 6.12)
_FORCE = {
    "pm_runtime_force_suspend": "runtime_suspend",
    "pm_runtime_force_resume": "runtime_resume",
}
_SHOWN = 3  # delays named in the message


@dataclass(frozen=True)
class Transition:
    name: str  # "resume"
    cost: Cost
    score: float  # fixed delays + firmware loads, in ms


# No options: the threshold and the providers are tables (async-suspend-cost,
# resource-providers), kernel facts shared by every rule file of this checker.
@checker(
    "async-suspend",
    NoOptions,
    fields={"bus", "driver", "probe", "transition", "cost"},
    keywords=Keywords(callbacks=True),
)
def run(rule: Rule, ctx: Context) -> Iterator[Finding]:
    if ctx.file_calls_any((_ENABLE,)):
        return
    table = load_table("async-buses")
    async_buses = set((table.get("async_buses") or {}).keys())
    sync_buses = set(table.get("sync_buses") or [])
    candidates = [
        d
        for d in ctx.model.drivers
        if d.bus in sync_buses
        and d.bus not in async_buses
        and d.probe in ctx.model.functions
        and d.pm in ctx.model.pm_tables
    ]
    if not candidates:
        return
    costs = load_table("async-suspend-cost")
    estimator = _estimator(ctx, costs)
    min_ms = float(costs.get("min_ms", 50))
    firmware_ms = float(costs.get("firmware_ms", 0))
    provider: str | None = None
    for drv in candidates:
        worst = _worst(ctx.model.pm_tables[drv.pm or ""], estimator, firmware_ms)
        if worst is None or worst.score < min_ms:
            continue
        # asked only now: few drivers get this far, and the text search is the costly part
        if provider is None:
            provider = provides_resources(ctx) or _used_by_others(ctx) or ""
        if provider:
            return
        # Without a resolver the walk stays in this file, which does not call _ENABLE (above).
        if ctx.resolver is not None and any(
            r.call.callee == _ENABLE for r in ctx.reach(drv.probe or "")
        ):
            continue
        yield _finding(rule, ctx, drv, worst)


def _estimator(ctx: Context, costs: dict[str, Any]) -> Estimator:
    spec = spec_table(ctx)
    waits = {str(n): "wait" for n in costs.get("waits") or []}
    waits.update({str(n): "firmware" for n in costs.get("firmware") or []})
    defines = _LazyDefines(spec.unit_constants, ctx.model)
    return Estimator(
        ctx.model, ctx.tree(), spec.delay_functions, waits, defines, ctx.config.helper_depth
    )


def _worst(pm: PmTable, estimator: Estimator, firmware_ms: float) -> Transition | None:
    filled = {m.member: m.function for m in pm.members if m.function}
    worst: Transition | None = None
    for name, members in TRANSITIONS.items():
        functions: list[str] = []
        for member in members:
            fn = filled.get(member)
            fn = filled.get(_FORCE[fn], fn) if fn in _FORCE else fn
            if fn and fn not in functions:
                functions.append(fn)
        if not functions:
            continue
        cost = Cost()
        for fn in functions:
            cost = cost + estimator.function_cost(fn)
        firmware = sum(1 for i in cost.waits if i.kind == "firmware")
        t = Transition(name, cost, cost.ms + firmware * firmware_ms)
        if worst is None or t.score > worst.score:
            worst = t
    return worst


def _finding(rule: Rule, ctx: Context, drv: DriverStruct, t: Transition) -> Finding:
    span = drv.span or drv.name_span or Span(1, 1, 1, 1)
    if span.end_line != span.line:
        span = Span(span.line, span.column, span.line, span.column + 1)
    return ctx.report(
        rule,
        span,
        function=drv.probe,
        bus=drv.bus,
        driver=drv.name or drv.var_name,
        probe=drv.probe,
        transition=t.name,
        cost=describe(t.cost),
    )


def describe(cost: Cost) -> str:
    """`waits >= 120 ms in fixed delays (msleep(100) in foo_reset(), ...)`, then firmware."""
    parts: list[str] = []
    delays = sorted(cost.delays, key=lambda i: -i.ms)
    if delays:
        bound = "up to" if any(i.condition for i in delays) else ">="
        groups: dict[str, int] = {}  # the same call reached again counts again
        for i in delays:
            groups[_item(i)] = groups.get(_item(i), 0) + 1
        named = [f"{n} x {text}" if n > 1 else text for text, n in groups.items()]
        shown = ", ".join(named[:_SHOWN])
        more = f", and {len(named) - _SHOWN} more" if len(named) > _SHOWN else ""
        parts.append(f"waits {bound} {_ms(cost.ms)} in fixed delays ({shown}{more})")
    firmware = [i for i in cost.waits if i.kind == "firmware"]
    if firmware:
        parts.append("loads firmware (" + ", ".join(_item(i) for i in firmware[:2]) + ")")
    return " and ".join(parts)


def _item(i: Item) -> str:
    where = f"{i.call} in {i.function}()"
    if i.condition:
        cond = " ".join(i.condition.split())
        cond = cond if len(cond) <= 40 else cond[:37] + "..."
        where += f" if {cond}"
    return where


def _ms(ms: float) -> str:
    return f"{ms:.0f} ms" if ms >= 10 else f"{ms:.2g} ms"


class _LazyDefines(Mapping[str, str]):
    """The unit constants under the file's #defines (with its local headers), read on the
    first lookup: most files have no delay to evaluate."""

    def __init__(self, base: dict[str, str], model: FileModel) -> None:
        self._base, self._model = base, model
        self._all: dict[str, str] | None = None

    def _merged(self) -> dict[str, str]:
        if self._all is None:
            self._all = {**self._base, **self._model.all_defines()}
        return self._all

    def __getitem__(self, name: str) -> str:
        return self._merged()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._merged())

    def __len__(self) -> int:
        return len(self._merged())


def _used_by_others(ctx: Context) -> str | None:
    """"exports" when the file exports functions for other drivers and links no device."""
    footprint.searched(ctx.model, _EXPORTS)
    if _EXPORTS.search(ctx.model.source) is None or ctx.file_calls_any((_LINKS,)):
        return None
    return "exports"


def provides_resources(ctx: Context) -> str | None:
    """What the file provides to other devices ("clock", "drivers/gpio/", "ops"), or None."""
    path = "/" + ctx.model.path.replace("\\", "/").lstrip("/")
    paths, calls, structs = _providers(str(rules_dir()))
    for prefix in paths:
        if "/" + prefix in path:
            return prefix
    footprint.searched(ctx.model, calls, structs)
    m = calls.search(ctx.model.source)
    if m is not None:
        return m.lastgroup.replace("_", " ") if m.lastgroup else "provider"
    if structs.search(ctx.model.source):
        return "ops"
    return None


@lru_cache(maxsize=4)
def _providers(directory: str) -> tuple[list[str], re.Pattern[bytes], re.Pattern[bytes]]:
    """The path prefixes, one regex for every registration call (a named group per kind)
    and one for the ops/descriptor definitions of rules/tables/resource-providers.yaml."""
    data = load_table("resource-providers", directory)
    paths = [str(p).strip("/") + "/" for p in data.get("paths") or []]
    groups = []
    for kind, names in (data.get("registrations") or {}).items():
        words = "|".join(
            re.escape(str(n)[:-1]) + r"\w*" if str(n).endswith("*") else re.escape(str(n))
            for n in names or []
        )
        group = re.sub(r"\W", "_", str(kind))
        groups.append(f"(?P<{group}>{words})")
    calls = re.compile(rf"\b(?:{'|'.join(groups)})\s*\(".encode())
    names = "|".join(re.escape(str(s)) for s in data.get("structs") or [])
    structs = re.compile(rf"\bstruct\s+(?:{names})\s+\w+(?:\s*\[\w*\])?\s*=".encode())
    return paths, calls, structs

"""PM callbacks of a file and the calls reachable from them.

`pm_callbacks(model)` says which functions the file installs as PM callbacks and in which
phases; `reachable_calls(model, fn)` walks calls from a function into helpers defined in the
same file (or, through a resolver, other files) so rules can report the chain.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

from dpmlens.findings import ChainStep, Span
from dpmlens.model.buses import LEGACY_CALLBACKS
from dpmlens.model.types import CallSite, FileModel, FunctionDef

DEFAULT_DEPTH = 3


@dataclass(frozen=True)
class Role:
    """One way a function is installed as a PM callback."""

    member: str  # dev_pm_ops member / phase (model.phases.PHASES key)
    table: str | None  # the dev_pm_ops variable; None for a legacy bus callback
    via: str  # "designated", the filling macro (SET_SYSTEM_SLEEP_PM_OPS, ...), or "legacy"
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
    return out


class Resolver(Protocol):
    """Finds a function defined in another file (the language server's workspace index)."""

    def lookup(self, name: str) -> tuple[FileModel, FunctionDef] | None: ...


@dataclass(frozen=True)
class Hop:
    """A function on a call chain; `via` is the call (in the previous hop) that entered it."""

    function: str
    model: FileModel = field(compare=False, repr=False)
    via: CallSite | None = None

    @property
    def path(self) -> str:
        return self.model.path


def reachable_calls(
    model: FileModel,
    function: str,
    depth: int = DEFAULT_DEPTH,
    resolver: Resolver | None = None,
) -> Iterator[tuple[tuple[Hop, ...], CallSite]]:
    """Every call reachable from `function`, with the chain of functions that leads to it.

    Yields `(hops, call)`: `hops[0]` is `function` itself, each later hop a helper entered by
    `hop.via`; `call` is a call site written in `hops[-1].function` (of file
    `hops[-1].path`). `depth` is how many levels of helpers are entered: 0 yields only the
    calls written in `function`. Helpers are looked up in `model` first, then through
    `resolver.lookup(name)`. Breadth-first, each function is entered once (shortest chain
    first), so recursion and cycles terminate. Order: by level, then document order.
    """
    start = Hop(function, model, None)
    seen = {(model.path, function)}
    queue: deque[tuple[tuple[Hop, ...], int]] = deque([((start,), 0)])
    while queue:
        hops, level = queue.popleft()
        here = hops[-1]
        for call in here.model.calls_in(here.function):
            yield hops, call
            if level >= depth:
                continue
            target = _find(here.model, call.callee, resolver)
            if target is None:
                continue
            key = (target.path, call.callee)
            if key in seen:
                continue
            seen.add(key)
            queue.append((hops + (Hop(call.callee, target, call),), level + 1))


def _find(model: FileModel, name: str, resolver: Resolver | None) -> FileModel | None:
    if name in model.functions:
        return model
    if resolver is not None:
        found = resolver.lookup(name)
        if found is not None:
            return found[0]
    return None


def chain_steps(
    hops: tuple[Hop, ...], call: CallSite, root_note: str = ""
) -> tuple[ChainStep, ...]:
    """findings.ChainStep list for a `(hops, call)` pair from `reachable_calls`.

    One step per function on the chain, pointing at the call it makes next: the helper call
    for inner hops, `call` for the last. `root_note` (e.g. "suspend_noirq callback") is put on
    the first step; the others say "calls helper()".
    """
    steps: list[ChainStep] = []
    for i, hop in enumerate(hops):
        nxt = hops[i + 1].via if i + 1 < len(hops) else call
        assert nxt is not None
        note = f"calls {nxt.callee}()"
        if i == 0 and root_note:
            note = f"{root_note}: {note}"
        steps.append(ChainStep(function=hop.function, path=hop.path, span=nxt.span, note=note))
    return tuple(steps)

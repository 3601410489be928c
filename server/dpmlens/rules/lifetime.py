"""Checker `lifetime-balance`: PM state a probe sets up that a probe failure or an unbind
leaves behind (issue 30).

The resources and what undoes them are data: rules/tables/lifetime-pairs.yaml. For each
driver struct of the file whose probe sets one up (directly or in a same-file helper, the
helper's call in probe standing for it):

- every error exit of probe after the set-up (lifetime_paths: failure returns, gotos with
  their label ladder) that meets no undo on its way (in probe, in a helper it calls, in a
  devm action registered before it, or a managed `devm_` form) leaks it on that probe failure;
- the driver's `.remove` (`.remove_new`) that reaches no undo, with nothing managed, leaks it
  on every unbind; a driver with no remove and no `suppress_bind_attrs` too.

Per resource: `autosuspend` is reported only where runtime PM is disabled without turning
autosuspend off (a path that leaves runtime PM enabled as well is the enable rule's finding,
whose fix undoes both); `usage` only where probe itself drops the count on its success path
(a count kept over the driver's life is the bus's or the driver's design) and for a count
taken in `.remove` and never dropped. Calls on a child device the driver registers
(`&input->dev`) are left out: deleting that device undoes them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Literal

import tree_sitter as ts

from dpmlens.core.findings import ChainStep, Finding, Severity
from dpmlens.model import footprint, ops_structs
from dpmlens.model.types import DriverStruct
from dpmlens.model.walker import Reached, chain_steps, parameter_names
from dpmlens.rules import cnav
from dpmlens.rules import lifetime_paths as paths
from dpmlens.rules.context import Context
from dpmlens.rules.loader import Rule, load_table
from dpmlens.rules.plugin import Keywords, checker
from dpmlens.rules.severity_policy import quiet
from dpmlens.rules.sleep_slack import tree_version
from dpmlens.syntax.parser import node_span

Kind = Literal["enable", "autosuspend", "usage", "wakeup", "wake-irq"]
# helper levels followed from probe and remove: a set-up sits in probe or in its helper
# (on 6.12 drivers/, two levels found 4 more of 371 warnings: dwmac-stm32, rtc-cmos, at24;
# they cost ~3% of a whole check's time, over the 10% budget)
_DEPTH = 1
_DEVM_ACTIONS = frozenset({"devm_add_action", "devm_add_action_or_reset"})


@dataclass(frozen=True)
class Options:
    resource: Kind


@dataclass(frozen=True)
class Resource:
    name: str
    what: str
    acquire: frozenset[str]
    release: frozenset[str]
    managed: frozenset[str]
    undo: str
    managed_fix: str


@dataclass(frozen=True)
class Table:
    resources: dict[str, Resource]
    wakeup_off: frozenset[str]
    bus_undoes: dict[str, dict[str, str]]  # bus -> resource -> why
    holders: frozenset[str]
    teardown: dict[str, frozenset[str]]  # ops struct type -> members run at unbind
    acpi_buttons: tuple[bytes, ...]  # ids whose ACPI device's wakeup the ACPI core owns
    # calls that fail only when devres cannot allocate
    allocation_only: frozenset[str] = frozenset()
    cannot_defer: frozenset[str] = frozenset()

    def names(self) -> frozenset[str]:
        out: set[str] = set(_DEVM_ACTIONS)
        for r in self.resources.values():
            out |= r.acquire | r.release | r.managed
        return frozenset(out)


@lru_cache(maxsize=4)
def load_pairs(rules_dir: str | None) -> Table:
    data = load_table("lifetime-pairs", rules_dir)
    res = {
        str(k): Resource(
            str(k),
            str(v["what"]),
            frozenset(v["acquire"]),
            frozenset(v["release"]),
            frozenset(v.get("managed") or ()),
            str(v["undo"]),
            str(v.get("managed_fix") or ""),
        )
        for k, v in data["resources"].items()
    }
    buses: dict[str, dict[str, str]] = {}
    for bus, spec in (data.get("bus_undoes") or {}).items():
        for r in spec["resources"]:
            buses.setdefault(str(bus), {})[str(r)] = " ".join(str(spec["why"]).split())
    return Table(
        res,
        frozenset(str(a) for a in data.get("wakeup_off_args") or ()),
        buses,
        frozenset(str(h) for h in data.get("bound_holders") or ()),
        {
            str(k): frozenset(str(m) for m in v)
            for k, v in (data.get("teardown_callbacks") or {}).items()
        },
        tuple(str(i).encode() for i in data.get("acpi_core_wakeup_ids") or ()),
        frozenset(str(c) for c in data.get("allocation_only") or ()),
        frozenset(str(c) for c in data.get("cannot_defer") or ()),
    )


@dataclass(frozen=True)
class DriverFacts:
    remove: str | None  # None too for a remove that refuses (`return -EBUSY;`)
    modular: bool  # unbound by unloading the module (no suppress_bind_attrs)
    refuses: bool  # its remove only returns an error: the driver means to stay bound
    pinned: bool  # built in with suppress_bind_attrs: never unbound, no retry but a deferral
    no_bind: bool = False  # suppress_bind_attrs: no bind/unbind files in sysfs at all


def _rules_dir(rule: Rule) -> str | None:
    """The rules directory the rule came from (its table lives beside it)."""
    return os.path.dirname(rule.path) if rule.path else None


# --- events in probe ----------------------------------------------------------------------


@dataclass
class Event:
    kind: Literal["acquire", "release", "managed"]
    resource: str
    reached: Reached
    top: ts.Node  # the call written in probe (the helper call for a helper's event)
    node: ts.Node  # the call itself (in probe or in a helper)


@dataclass
class Probe:
    """What one probe function does, for every resource (computed once per file)."""

    name: str
    func: ts.Node
    params: frozenset[str]
    events: list[Event] = field(default_factory=list)
    _exits: list[paths.Exit] | None = None
    _managed_tests: list[ts.Node] | None = None

    def managed_tests(self) -> list[ts.Node]:
        """The tests of managed set-ups' results (`if (devm_pm_runtime_enable(dev))`)."""
        if self._managed_tests is None:
            tests = (paths.own_result_test(e.top) for e in self.events if e.kind == "managed")
            self._managed_tests = [t for t in tests if t is not None]
        return self._managed_tests

    def exits_after(self, after: int) -> Iterator[paths.Exit]:
        if self._exits is None:
            self._exits = paths.function_exits(self.func)
        return paths.exits_after(self._exits, after)


def _first_arg(call: ts.Node) -> str:
    args = call.child_by_field_name("arguments")
    named = [a for a in args.named_children if a.type != "comment"] if args else []
    return re.sub(r"\s+", "", cnav.text(named[0])) if named else ""


def _arg(call: ts.Node, i: int) -> str:
    args = call.child_by_field_name("arguments")
    named = [a for a in args.named_children if a.type != "comment"] if args else []
    return re.sub(r"\s+", "", cnav.text(named[i])) if len(named) > i else ""


def bound_device(arg: str, params: frozenset[str], holders: frozenset[str]) -> bool:
    """Is `arg` (a call's device argument, spaces removed) the device being bound?"""
    arg = arg.strip("()")
    if arg in params or arg == "dev" or arg.endswith("->dev") and not arg.startswith("&"):
        return True
    m = re.fullmatch(r"&(?:\(\*?)?([\w>.\-]*?)(\w+)\)?->dev", arg)
    if m:
        return m.group(2) in params or m.group(2) in holders
    return arg.endswith(".dev") and not arg.startswith("&")


_WAKEUP_SETTERS = frozenset({"device_init_wakeup", "device_set_wakeup_enable"})


def _wakeup_off(r: Reached, table: Table) -> bool:
    """`device_init_wakeup(dev, false)`: the call turns wakeup off."""
    return r.call.args[1:2] != () and r.call.args[1].strip() in table.wakeup_off


class _FileFacts:
    """Per file: probe walks, remove releases, devm actions (shared by the five rules)."""

    def __init__(self, ctx: Context, table: Table) -> None:
        self.ctx = ctx
        self.table = table
        self._probes: dict[str, Probe] = {}
        self._action_releases: dict[str, frozenset[str]] = {}
        self._reach_releases: dict[str, frozenset[str]] = {}
        self._drivers: dict[tuple[str, int], DriverFacts] = {}
        self._setup_callers: frozenset[str] | None = None
        self._teardown: frozenset[str] | None = None

    def setup_callers(self) -> frozenset[str]:
        """The functions of the file that call a set-up."""
        if self._setup_callers is None:
            names = sorted(n for r in self.table.resources.values() for n in r.acquire)
            with footprint.unit(self.ctx.model, footprint.NAMES):
                calls = self.ctx.model.calls_to(*names)
            self._setup_callers = frozenset(c.caller for c in calls if c.caller)
        return self._setup_callers

    def driver(self, d: DriverStruct) -> DriverFacts:
        """Its remove, whether it can be unbound, once per file."""
        key = (d.var_name, d.span.line if d.span else 0)
        known = self._drivers.get(key)
        if known is None:
            remove, suppress = _remove_of(self.ctx, d)
            # sh_tmu (6.12): suppress_bind_attrs and a subsys_initcall (its Kconfig symbol is
            # a bool): a timer meant to be built in, whatever module_exit() it also names
            modular = _modular(self.ctx, d) and not (suppress and _early_initcall(self.ctx))
            refuses = remove is not None and _refuses(self.ctx, remove)
            known = self._drivers[key] = DriverFacts(
                None if refuses else remove,
                not suppress and modular and not refuses,
                refuses,
                suppress and not modular,
                suppress,
            )
        return known

    def teardown_releases(self) -> frozenset[str]:
        """Resources a framework teardown callback of the file releases (the host1x client's
        `.exit`, a component's `.unbind`: lifetime-pairs.yaml `teardown_callbacks`)."""
        if self._teardown is None:
            found: set[str] = set()
            table = self.table.teardown
            functions = self.ctx.model.functions
            for e in ops_structs.entries(self.ctx.model):
                if e.member in table.get(e.struct_type, ()) and e.function in functions:
                    found |= self.releases_in(e.function)
            self._teardown = frozenset(found)
        return self._teardown

    def call_node(self, r: Reached) -> ts.Node | None:
        return self.ctx.call_node(r.call, r.model) if r.model is self.ctx.model else None

    def releases_in(self, function: str) -> frozenset[str]:
        """Resources whose release `function` reaches (itself or its helpers)."""
        known = self._reach_releases.get(function)
        if known is None:
            names = self.table.names()
            found: set[str] = set()
            for r in self.ctx.reach(function, depth=_DEPTH, towards=names):
                found |= self._released_by(r.call.callee, r)
            known = self._reach_releases[function] = frozenset(found)
        return known

    def _released_by(self, callee: str, r: Reached | None) -> set[str]:
        out = set()
        for res in self.table.resources.values():
            if callee in res.release and callee not in _WAKEUP_SETTERS:
                out.add(res.name)
        if callee in _WAKEUP_SETTERS and r is not None and _wakeup_off(r, self.table):
            out.add("wakeup")  # device_set_wakeup_enable(dev, false): device_wakeup_disable()
        return out

    def probe(self, name: str) -> Probe | None:
        if name in self._probes:
            return self._probes[name]
        found = self.ctx.lookup(name, self.ctx.model)
        if found is None or found[0] is not self.ctx.model:
            return None
        fdef = found[1]
        func = self.ctx.node(fdef.start_byte, fdef.end_byte, kind="function_definition")
        if func is None:
            return None
        params = frozenset(p for p in parameter_names(func) if p)
        probe = Probe(name, func, params)
        self._probes[name] = probe
        setups = self.setup_callers()
        if name not in setups and not any(
            c.callee in setups for c in self.ctx.walker.calls_in(self.ctx.model, name)
        ):
            return probe  # no set-up in probe or in a helper it calls: nothing to balance
        names = self.table.names()
        for r in self.ctx.reach(name, depth=_DEPTH, towards=names):
            top_call = r.hops[0].call if r.hops else r.call
            node = self.call_node(r)
            top = self.ctx.call_node(top_call, self.ctx.model)
            if node is None or top is None:
                continue
            probe.events.extend(self._events(r, node, top, params if not r.hops else None))
        self._probes[name] = probe
        return probe

    def _events(
        self, r: Reached, node: ts.Node, top: ts.Node, params: frozenset[str] | None
    ) -> Iterator[Event]:
        callee = r.call.callee
        if callee in _DEVM_ACTIONS:
            action = _arg(node, 1)
            action = action.split(")")[-1]  # a cast: (void (*)(void *))pm_runtime_disable
            rel = self._released_by(action, None)
            if action in self.ctx.model.functions:
                rel |= self.releases_in(action)
            for managed in rel:
                yield Event("managed", managed, r, top, node)
            return
        for released in self._released_by(callee, r):
            yield Event("release", released, r, top, node)
        for res in self.table.resources.values():
            if callee in res.managed:
                yield Event("managed", res.name, r, top, node)
            if callee in res.acquire:
                if callee == "device_init_wakeup" and (
                    not r.call.args[1:2] or _wakeup_off(r, self.table)
                ):
                    continue
                holders = self.table.holders
                if bound_device(_first_arg(node), params or frozenset(), holders):
                    yield Event("acquire", res.name, r, top, node)


# --- the driver's remove --------------------------------------------------------------------

_REMOVE = re.compile(rb"\.\s*(?:remove(?:_new)?|disconnect)\s*=\s*(?:__exit_p\s*\(\s*)?&?\s*(\w+)")
_SUPPRESS = re.compile(rb"\.\s*suppress_bind_attrs\s*=\s*(?:true|1)\b")


def _remove_of(ctx: Context, d: DriverStruct) -> tuple[str | None, bool]:
    """(the remove function a driver struct names, whether it suppresses bind attributes)."""
    if d.span is None:
        return None, False
    sp = d.span
    node = ctx.tree().root_node.descendant_for_point_range(
        (sp.line - 1, sp.column - 1), (sp.end_line - 1, max(sp.end_column - 1, 0))
    )
    if node is None:
        return None, False
    footprint.read_range(ctx.model, node.start_byte, node.end_byte)
    text = ctx.model.source[node.start_byte : node.end_byte]
    m = _REMOVE.search(text)
    name = m.group(1).decode() if m else None
    if name in ("NULL", None):
        name = None
    return name, _SUPPRESS.search(text) is not None


def _refuses(ctx: Context, remove: str) -> bool:
    """A remove whose whole body is `return -E...;`: sh_mtu2_remove() (6.1 sh_mtu2.c:487-490,
    `return -EBUSY; /* cannot unregister clockevent */`). The driver core ignores the value
    and unbinds anyway (platform_remove() warns), but the driver's own timer keeps running: a
    runtime PM undo at unbind (or a devm_ form, whose action runs then) would pull runtime PM
    from under it, so there is no unbind leak to report and no devm_ fix to offer."""
    found = ctx.lookup(remove, ctx.model)
    if found is None or found[0] is not ctx.model:
        return False
    fdef = found[1]
    func = ctx.node(fdef.start_byte, fdef.end_byte, kind="function_definition")
    body = func.child_by_field_name("body") if func is not None else None
    if body is None:
        return False
    stmts = [c for c in body.named_children if c.type != "comment"]
    if len(stmts) != 1 or stmts[0].type != "return_statement":
        return False
    return re.fullmatch(r"return\s*\(?\s*-\s*E[A-Z]+\s*\)?\s*;", cnav.text(stmts[0])) is not None


_EARLY_INITCALL = re.compile(
    rb"^\s*(?:(?:core|postcore|arch|subsys|fs)_initcall(?:_sync)?|\w*early_platform_init)\s*\(",
    re.MULTILINE,
)


def _early_initcall(ctx: Context) -> bool:
    """Does the file register at an initcall level before device drivers (subsys_initcall(),
    an early platform driver)? Together with suppress_bind_attrs: a built-in driver."""
    footprint.searched(ctx.model, _EARLY_INITCALL)
    return _EARLY_INITCALL.search(ctx.model.source) is not None


def _modular(ctx: Context, d: DriverStruct) -> bool:
    """Can the driver be unbound by unloading it? (`module_*_driver()`, or a module_exit();
    a built-in driver with no .remove is never unbound in practice: every resource it holds
    stays, so a PM undo alone is no fix.)"""
    if d.registration and d.registration.startswith("module_"):
        return True
    footprint.searched(ctx.model, b"module_exit(")
    return b"module_exit(" in ctx.model.source


# --- the rule -----------------------------------------------------------------------------


def _keywords(opts: Options) -> Keywords:
    words = {
        "enable": ("pm_runtime_enable",),
        "autosuspend": ("pm_runtime_use_autosuspend",),
        # a count probe takes and drops, or remove takes, comes with runtime PM set up in the
        # file (not the runtime gets of the I/O paths, which would parse ~150 more files of
        # drivers/ for nothing)
        "usage": ("pm_runtime_enable", "pm_runtime_get_sync"),
        "wakeup": ("device_init_wakeup", "device_wakeup_enable"),
        "wake-irq": ("dev_pm_set_wake_irq", "dev_pm_set_dedicated_wake_irq"),
    }[opts.resource]
    # the rule reads only a probe of a driver struct of the file (model.buses.PROBE_PATHS:
    # `.probe`, `.probe_new`, `.driver.probe`, ACPI's `.ops.add`): 43 of the 240 files of
    # 6.12's drivers/ kept only for these words have none; a usage count needs a get too
    needs: tuple[tuple[str, ...], ...] = ((".probe", ".add"),)
    if opts.resource == "usage":
        needs += (("pm_runtime_get", "pm_runtime_resume_and_get"),)
    return Keywords(words=words, needs=needs)


@checker(
    "lifetime-balance",
    Options,
    fields={"call", "function", "via", "what", "paths", "fix"},
    keywords=_keywords,
)
def run(rule: Rule, ctx: Context) -> Iterator[Finding]:
    """PM state set up in probe that a probe failure or an unbind leaves behind."""
    opts: Options = rule.options
    if not any(d.probe and d.probe in ctx.model.functions for d in ctx.model.drivers):
        return  # no probe of a driver of this file to read (a library, a header)
    table = load_pairs(_rules_dir(rule))
    res = table.resources[opts.resource]
    if opts.resource not in _set_up(ctx, table):
        return
    facts = ctx._cache.get("lifetime")
    if not isinstance(facts, _FileFacts) or facts.table is not table:
        facts = ctx._cache["lifetime"] = _FileFacts(ctx, table)
    seen: set[tuple[str, int]] = set()
    for d in ctx.model.drivers:
        if not d.probe or opts.resource in table.bus_undoes.get(d.bus, {}):
            continue
        if opts.resource == "wakeup" and d.bus == "acpi" and _acpi_button(ctx, table):
            continue
        probe = facts.probe(d.probe)
        if probe is None:
            continue
        df = facts.driver(d)
        if opts.resource == "usage":
            found = list(_usage(rule, ctx, facts, probe, df.remove, d))
        else:
            found = list(_leaks(rule, ctx, facts, probe, df, res))
        for f in found:
            key = (f.path, f.span.line)
            if key not in seen:
                seen.add(key)
                yield _pinned(f) if df.pinned else f


def _acpi_button(ctx: Context, table: Table) -> bool:
    """Does the file name an ACPI button or lid id (lifetime-pairs.yaml acpi_core_wakeup_ids)?"""
    src = ctx.model.source
    for i in table.acpi_buttons:
        footprint.searched(ctx.model, i)
        if i in src:
            return True
    return False


def _pinned(f: Finding) -> Finding:
    """A built-in driver with suppress_bind_attrs (clk-dra7-atl, pci-rcar-gen2): nothing
    unbinds it, and after a failed probe the driver core tries again only on -EPROBE_DEFER
    (driver_probe_device() -> driver_deferred_probe_add(), drivers/base/dd.c:910-911 in 6.12; other
    errors leave the device driverless for good, device_unbind_cleanup() at dd.c:607-619
    undoing nothing of this). The leak shows only as 'Unbalanced pm_runtime_enable!' on a
    deferred re-probe: a quiet hint."""
    return quiet(replace(f, message=f"{f.message} [built in and never unbound "
                         "(suppress_bind_attrs): only a re-probe after -EPROBE_DEFER meets it]"))


def _set_up(ctx: Context, table: Table) -> frozenset[str]:
    """The resources the file calls a set-up of (one search for the five rules)."""
    known = ctx._cache.get("lifetime-set-up")
    if not isinstance(known, frozenset):
        names = frozenset(n for r in table.resources.values() for n in r.acquire)
        with footprint.unit(ctx.model, footprint.NAMES):
            called = {c.callee for c in ctx.model.calls_to(*sorted(names))}
        known = frozenset(r.name for r in table.resources.values() if r.acquire & called)
        ctx._cache["lifetime-set-up"] = known
    return known


def _events(probe: Probe, resource: str, kind: str) -> list[Event]:
    return [e for e in probe.events if e.resource == resource and e.kind == kind]


def _acquires(probe: Probe, resource: str) -> list[Event]:
    """One event per probe-level statement (a helper that sets up and undoes on its own
    failure counts once, as a set-up); none for a set-up undone right below it."""
    out: dict[int, Event] = {}
    releases = _events(probe, resource, "release")
    for e in _events(probe, resource, "acquire"):
        if any(_undone_below(e.node, r.node) for r in releases):
            continue
        if resource == "enable" and _reenables(e, releases):
            continue
        if e.reached.hops and _balanced_helper(e.node, [r.node for r in releases]):
            continue
        out.setdefault(e.top.start_byte, e)
    return list(out.values())


def _reenables(a: Event, releases: list[Event]) -> bool:
    """pm_runtime_enable() right after the probe's own pm_runtime_disable() of the device
    (6.1 mlx90632.c:965-971: disable, set_active, enable): it gives back the disable depth
    the disable took, it does not enable runtime PM; nothing is left to undo."""
    return any(
        r.node.type == "call_expression"
        and cnav.text(r.node.child_by_field_name("function")) == "pm_runtime_disable"
        and r.reached.call.caller == a.reached.call.caller
        and r.node.end_byte <= a.node.start_byte
        and _first_arg(r.node) == _first_arg(a.node)
        and paths.reaches(r.node, a.node)
        for r in releases
    )


def _balanced_helper(acquire: ts.Node, releases: list[ts.Node]) -> bool:
    """Does the helper that takes the resource give it back itself: a release in its body's
    own block after the set-up, and one before every return in between? at24_read() (6.1
    at24.c:434-457) takes a usage count, drops it with pm_runtime_put_noidle() before its
    error return and with pm_runtime_put() at its end."""
    func = acquire
    while func.parent is not None and func.type != "function_definition":
        func = func.parent
    body = func.child_by_field_name("body") if func.type == "function_definition" else None
    if body is None:
        return False
    mine = [n for n in releases if body.start_byte <= n.start_byte < body.end_byte]
    ends = [n for n in mine if n.start_byte > acquire.end_byte
            and cnav.statement_of(n).parent is not None
            and cnav.statement_of(n).parent.id == body.id]
    if not ends:
        return False
    last = min(n.start_byte for n in ends)
    stack = [body]
    while stack:
        node = stack.pop()
        if node.type == "return_statement" and acquire.end_byte < node.start_byte < last:
            block = node.parent
            if block is None or not any(block.start_byte <= n.start_byte < node.start_byte
                                        for n in mine):
                return False
        stack.extend(node.named_children)
    return True


def _undone_below(acquire: ts.Node, release: ts.Node) -> bool:
    """Is `release` a later statement of the acquire's own block, with nothing in between
    that leaves it? silead_ts_setup() (6.12 silead.c:527-536) enables runtime PM, suspends
    the stuck chip and disables it again in one block; caam_jr_probe() (jr.c:676-677) calls
    device_init_wakeup(dev, 1) and at once device_set_wakeup_enable(dev, false)."""
    first, last = cnav.statement_of(acquire), cnav.statement_of(release)
    block = first.parent
    if block is None or last.parent is None or last.parent.id != block.id:
        return False
    if last.start_byte <= first.end_byte:
        return False
    own = paths.own_result_test(acquire)
    for stmt in block.named_children:
        if not first.end_byte <= stmt.start_byte < last.start_byte or not _may_leave(stmt):
            continue
        # `err = device_init_wakeup(dev, true); if (err) return err;` (dwmac-stm32.c:495):
        # the set-up's own failure test leaves with nothing set up
        if own is not None and stmt.id == own.id:
            continue
        return False
    return True


def _may_leave(node: ts.Node, nested: bool = False) -> bool:
    """A return or goto anywhere in `node`; a break or continue of its own (one inside a
    loop or switch of `node` stays in it)."""
    if node.type in ("return_statement", "goto_statement"):
        return True
    if node.type in ("break_statement", "continue_statement"):
        return not nested
    inner = nested or node.type in ("for_statement", "while_statement", "do_statement",
                                    "switch_statement")
    return any(_may_leave(c, inner) for c in node.named_children)


def _released_for(exit_: paths.Exit, a: Event, probe: Probe, resource: str) -> bool:
    """Is the resource undone on the way from `a` out through `exit_`?"""
    e = exit_.node
    for ev in probe.events:
        if ev.resource != resource:
            continue
        if ev.kind == "managed" and ev.top.start_byte < e.start_byte:
            return True
        if ev.kind != "release" or ev.top.start_byte == a.top.start_byte:
            continue
        if paths.on_path(ev.top, a.top.end_byte, e):
            return True
        if exit_.region and exit_.region[0] <= ev.top.start_byte < exit_.region[1]:
            return True
    return False


def _leaks(
    rule: Rule,
    ctx: Context,
    facts: _FileFacts,
    probe: Probe,
    df: DriverFacts,
    res: Resource,
) -> Iterator[Finding]:
    name = res.name
    remove, modular = df.remove, df.modular
    check = "enable" if name == "autosuspend" else name  # what must be undone on the path
    managed_anywhere = bool(_events(probe, name, "managed"))
    remove_releases = facts.releases_in(remove) if remove else frozenset()
    if remove:
        remove_releases |= facts.teardown_releases()
    for a in _acquires(probe, name):
        if paths.leaves_on_success(a.top):
            continue
        own = paths.own_result_test(a.top)
        after = a.top.end_byte
        if own is not None and paths.success_leaves(own):
            after = own.end_byte  # `if (!ret) return 0;`: below it the set-up failed
            if a.reached.hops:
                continue  # a helper that failed undid its own set-up
        leaking = []
        tail = _helper_tail(a)
        for x in probe.exits_after(after):
            if own is not None and own.start_byte <= x.node.start_byte < own.end_byte:
                continue
            if tail is not None and _returns_var(x, tail, a.top):
                continue  # the helper failed, so it never got to its last step, the set-up
            if _excused(x, probe, name) or _allocation_failure(x, facts.table):
                continue
            if not paths.reaches(a.top, x.node) or _released_for(x, a, probe, name):
                continue
            if name == "autosuspend" and not _released_for(x, a, probe, check):
                continue  # runtime PM left enabled too: the enable rule's finding
            leaking.append(x)
        unbind = None
        success_release = any(
            ev.top.start_byte > a.top.end_byte and paths.on_success_path(ev.top, probe.func)
            for ev in _events(probe, name, "release")
        )
        if not managed_anywhere and not success_release:
            if remove is not None and remove not in ctx.model.functions:
                pass  # a remove the parser lost (ohci-at91.c 6.1: a loop macro): no claim
            elif remove is not None and name not in remove_releases:
                if name != "autosuspend" or check in remove_releases:
                    unbind = f"at unbind: {remove}() has no {res.undo}"
            elif remove is None and modular and name != "autosuspend":
                unbind = "at unbind or module unload: the driver has no .remove"
        if not leaking and unbind is None:
            continue
        found = _finding(rule, ctx, probe, a, leaking, unbind, res, remove,
                         managed_ok=not df.refuses)
        if unbind is None and _never_retried(ctx, leaking, facts.table):
            # (with suppress_bind_attrs there is no bind file either: drivers/base/bus.c)
            again = (" the device is never probed again (suppress_bind_attrs: no sysfs bind)"
                     if df.no_bind else " only a manual bind through sysfs re-probes")
            yield quiet(replace(found, message=f"{found.message} [built in only, and "
                                f"{_failed_call(leaking[0])}() cannot return -EPROBE_DEFER:"
                                f"{again}]"))
            continue
        if not leaking and remove is None and name == "enable":
            # no .remove at all: a driver not written to be unbound (its other state often
            # outlives an unbind too: hidma_mgmt's sysfs objects, mtk_jpegdec_hw's slot in
            # its master); whether to add a remove or suppress_bind_attrs is the maintainer's
            # choice, not a patch of one undo (blind round 3): info
            found = replace(
                found,
                severity=min(found.severity, Severity.INFO),
                message=found.message + "; or, if it is not meant to be unbound, set"
                " .suppress_bind_attrs",
            )
        yield found


def _finding(
    rule: Rule,
    ctx: Context,
    probe: Probe,
    a: Event,
    leaking: list[paths.Exit],
    unbind: str | None,
    res: Resource,
    remove: str | None,
    managed_ok: bool = True,
    undo: str | None = None,
) -> Finding:
    """`managed_ok`: the devm_ form may be offered (not for a driver meant to stay bound);
    `undo`: the file's own undo helper for a set-up done by its helper (msm dsi_phy:
    dsi_phy_disable_resource() for dsi_phy_enable_resource()), named instead of a bare put."""
    parts = []
    if leaking:
        # no line numbers in the message (the notes carry them, and move with edits above)
        more = f" and {len(leaking) - 1} more error paths" if len(leaking) > 1 else ""
        parts.append(f"when probe fails ({_exit_text(leaking[0])}){more}")
    if unbind:
        parts.append(unbind)
    where = []
    if leaking:
        where.append("on the error path" + ("s" if len(leaking) > 1 else ""))
        label = _shared_label(probe, a, leaking[0]) if res.name in _HARMED else None
        if label:
            where[0] += (f" (under a new label just above {label}:, which is also reached from"
                         " before the set-up)")
    if unbind and remove:
        where.append(f"in {remove}()")
    elif unbind:
        where.append("in a .remove callback")
    undo = undo or res.undo
    fix = f"add {undo} " + " and ".join(where) if where else f"add {undo}"
    again = _retaken(probe, leaking[0], res.name) if leaking else None
    if again:
        fix += f"; the error path's own {again}() takes another count that nothing drops"
    if (res.managed_fix and res.name != "autosuspend" and managed_ok
            and _tree_has_managed(ctx, res)):
        fix += f", or use {res.managed_fix}"
    if res.name == "enable":
        auto = [e for e in _acquires(probe, "autosuspend")]
        if auto and not _events(probe, "autosuspend", "release"):
            fix += " (it also undoes pm_runtime_use_autosuspend())"
    elif res.name == "autosuspend":
        # it may suspend the device at once when no usage count is held (spi-s3c64xx, whose
        # clocks devres turns off afterwards): before the count is dropped
        # right after the disable: with runtime PM disabled it runs no suspend callback
        # (rpm_idle() -> rpm_check_suspend_allowed() returns -EACCES, runtime.c:265 in
        # 6.12), so it needs no usage count held and no lock free. Before the disable, with no
        # count held, it suspends at once: spi-s3c64xx's clocks (devres turns them off again),
        # trf7970a's remove, whose disable is in trf7970a_shutdown() under trf->lock that the
        # suspend callback takes.
        helpers = {e.reached.hops[0].call.callee for e in _events(probe, "enable", "release")
                   if e.reached.hops and leaking}
        forced = False
        if unbind and remove:
            helper, forced = _disabled_in_helper(ctx, remove)
            helpers.add(helper or "")
        helpers.discard("")
        at = f" (in {remove}(): after pm_runtime_force_suspend(), which disables it)" if (
            forced and not helpers) else ""
        if helpers:
            names = " and ".join(f"{h}()" for h in sorted(helpers))
            others = _other_callers(ctx, helpers, {probe.name, remove or ""})
            at = f" (after the call of {names}, which disables it"
            at += f"; not inside it: {others[0]}() calls it too)" if others else ")"
        fix = (f"call {res.undo} right after pm_runtime_disable() there{at}; with runtime PM "
               "disabled it runs no suspend callback")
    call = a.reached.call
    steps = _steps(ctx, probe, a, leaking, unbind, remove, replace(res, undo=undo))
    finding = ctx.report(
        rule,
        call,
        path=a.reached.model.path,
        function=probe.name,
        call=call.callee,
        via=ctx.via(a.reached),
        what=res.what,
        paths="; ".join(parts),
        fix=fix,
    )
    return replace(finding, chain=steps)


# Resources whose undo harms a path that never set them up: pm_runtime_disable() there raises
# disable_depth, so the next probe's pm_runtime_enable() leaves runtime PM disabled; a put
# there drops a count someone else holds. (Wakeup off and dev_pm_clear_wake_irq() with nothing
# set up do nothing.)
_HARMED = frozenset({"enable", "usage"})


def _helper_tail(a: Event) -> str | None:
    """For a set-up a helper makes as its last step before `return 0;` (hid-google-hammer.c
    6.12:236-237, `device_init_wakeup(&pdev->dev, true); return 0;`), the variable probe
    keeps the helper's result in (`retval = __cbas_ec_probe(pdev);`); else None."""
    if not a.reached.hops:
        return None
    nxt = paths.next_statement(cnav.statement_of(a.node))
    if nxt is None or nxt.type != "return_statement" or not paths.is_success(nxt):
        return None
    assigned = paths.assigned_call(cnav.statement_of(a.top))
    return assigned[0] if assigned is not None and assigned[0].isidentifier() else None


def _returns_var(x: paths.Exit, var: str, top: ts.Node) -> bool:
    """Does the exit return `var` (itself, or at the end of its goto's label) with no other
    assignment to it after `top`?"""
    func = top
    while func.parent is not None and func.type != "function_definition":
        func = func.parent
    end = x.region[1] if x.region else x.node.end_byte
    text = (func.text or b"")[top.end_byte - func.start_byte : end - func.start_byte].decode(
        "utf-8", "replace"
    )
    if re.search(rf"(?<![\w.>]){re.escape(var)}\s*=(?!=)", text):
        return False
    last = re.findall(r"return\s+([^;]*);", text)
    return bool(last) and last[-1].strip(" ()") == var


def _shared_label(probe: Probe, a: Event, x: paths.Exit) -> str | None:
    """The label of a goto exit that a goto before the set-up jumps to as well: an undo
    written under it would run on paths that never set up (6.12 spi-cadence-quadspi.c:
    probe_setup_failed is reached from 1965 and 1973, before the get at 1980)."""
    if not x.kind.startswith("goto "):
        return None
    label = x.kind[5:].strip()
    before = (e for e in probe.exits_after(-1) if e.node.start_byte < a.top.start_byte)
    return label if any(e.kind == x.kind for e in before) else None


def _retaken(probe: Probe, x: paths.Exit, resource: str) -> str | None:
    """A set-up of the same resource on the goto's own ladder: 6.12 spi-cadence-quadspi.c:1999
    `if (pm_runtime_get_sync(&pdev->dev) >= 0) clk_disable_unprepare(...)` under the label:
    a put alone leaves that count (7.2 drops the get there)."""
    if x.region is None or resource != "usage":
        return None
    for e in probe.events:
        if (e.kind == "acquire" and e.resource == resource and not e.reached.hops
                and x.region[0] <= e.top.start_byte < x.region[1]):
            return e.reached.call.callee
    return None


def _other_callers(ctx: Context, helpers: set[str], mine: set[str]) -> list[str]:
    """Functions other than probe and remove that call one of `helpers` (trf7970a_suspend()
    calls trf7970a_shutdown(): autosuspend turned off inside it would stay off on resume)."""
    with footprint.unit(ctx.model, footprint.NAMES):
        calls = ctx.model.calls_to(*sorted(helpers))
    return sorted({c.caller for c in calls if c.caller and c.caller not in mine})


_DISABLES = frozenset({"pm_runtime_disable", "__pm_runtime_disable", "pm_runtime_force_suspend"})


def _disabled_in_helper(ctx: Context, remove: str) -> tuple[str | None, bool]:
    """(the helper of remove that disables runtime PM when remove does not itself: 6.1
    trf7970a_remove() -> trf7970a_shutdown(), called under trf->lock; whether the disable is
    pm_runtime_force_suspend(): 6.12 sun6i_spi_remove())"""
    for r in ctx.reach(remove, depth=_DEPTH, towards=_DISABLES):
        if r.call.callee in _DISABLES:
            helper = r.hops[0].call.callee if r.hops else None
            return helper, r.call.callee == "pm_runtime_force_suspend"
    return None, False


# devm_device_init_wakeup() and devm_pm_set_wake_irq() are in v6.15 and later kernels
_MANAGED_SINCE = {"wakeup": (6, 15), "wake-irq": (6, 15)}


def _tree_has_managed(ctx: Context, res: Resource) -> bool:
    since = _MANAGED_SINCE.get(res.name)
    if since is None:
        return True
    version = tree_version(os.path.dirname(os.path.abspath(ctx.model.path)))
    return version is None or version >= since


def _exit_text(x: paths.Exit) -> str:
    """`goto err_clk` / `return ret` / `return dev_err_probe(...)`: the exit as written."""
    if x.region is not None:
        return x.kind
    text = " ".join(cnav.text(x.node).split()).rstrip(";")
    if len(text) > 40 and "(" in text:
        text = text[: text.index("(")] + "(...)"
    return text


def _steps(
    ctx: Context,
    probe: Probe,
    a: Event,
    leaking: list[paths.Exit],
    unbind: str | None,
    remove: str | None,
    res: Resource,
) -> tuple[ChainStep, ...]:
    fdef = ctx.model.functions[probe.name]
    steps = list(chain_steps(a.reached, probe.name, ctx.model.path, fdef.name_span, "probe"))
    for x in leaking[:3]:
        steps.append(
            ChainStep(
                probe.name,
                ctx.model.path,
                node_span(x.node),
                f"probe fails here ({_exit_text(x)}) without {res.undo}",
            )  # fmt: skip
        )
    if unbind and remove and remove in ctx.model.functions:
        rdef = ctx.model.functions[remove]
        steps.append(ChainStep(remove, ctx.model.path, rdef.name_span, f"no {res.undo}"))
    return tuple(steps)


# --- usage counts ---------------------------------------------------------------------------


def _usage(
    rule: Rule,
    ctx: Context,
    facts: _FileFacts,
    probe: Probe,
    remove: str | None,
    d: DriverStruct,
) -> Iterator[Finding]:
    res = facts.table.resources["usage"]
    releases = _events(probe, "usage", "release")
    acquires = _acquires(probe, "usage")
    # every count taken, those undone right below too: a drop gives back the latest one
    kept = _kept_for_life(probe, _events(probe, "usage", "acquire"), releases)
    for a in acquires:
        if paths.leaves_on_success(a.top) or a.top.start_byte in kept:
            continue
        # probe drops the count itself on its success path: its error paths must too
        drops = [
            ev for ev in releases
            if ev.top.start_byte > a.top.end_byte and paths.on_success_path(ev.top, probe.func)
        ]  # fmt: skip
        if not drops:
            continue
        last = max(ev.top.start_byte for ev in drops)
        own = paths.own_result_test(a.top)
        leaking = [
            x
            for x in probe.exits_after(a.top.end_byte)
            if x.node.start_byte < last
            and not (own is not None and own.start_byte <= x.node.start_byte < own.end_byte)
            and paths.reaches(a.top, x.node)
            and not _released_for(x, a, probe, "usage")
            and not _excused(x, probe, "usage")
        ]
        if leaking:
            last_drop = max(drops, key=lambda ev: ev.top.start_byte)
            helper = last_drop.reached.hops[0].call.callee if last_drop.reached.hops else None
            yield _finding(rule, ctx, probe, a, leaking, None, res, remove,
                           undo=f"{helper}()" if helper else None)
    if remove and "usage" not in facts.table.bus_undoes.get(d.bus, {}):
        yield from _usage_in_remove(rule, ctx, facts, remove, res)


def _kept_for_life(probe: Probe, acquires: list[Event], releases: list[Event]) -> set[int]:
    """The counts probe's success path never drops, by their statement's start: each drop
    on that path gives back the latest count taken before it (6.1 stm32-dmamux.c: get_noresume
    at :247, get_noresume at :286, put at :292; the first is kept for the driver's life, so
    its error paths leak nothing the success path does not keep too: blind round 5)."""
    steps = sorted(
        [(a.top.start_byte, 1, a) for a in acquires
         if paths.on_success_path(a.top, probe.func)]
        + [(r.top.start_byte, 0, r) for r in releases
           if paths.on_success_path(r.top, probe.func)],
        key=lambda t: (t[0], -t[1]),
    )  # fmt: skip
    open_: list[int] = []
    seen: set[tuple[int, int]] = set()
    for start, is_acquire, _ev in steps:
        if (start, is_acquire) in seen:
            continue  # one statement, several events (a helper's): one count
        seen.add((start, is_acquire))
        if is_acquire:
            open_.append(start)
        elif open_:
            open_.pop()
    return set(open_)


def _excused(x: paths.Exit, probe: Probe, resource: str) -> bool:
    """Exits that leak nothing worth a patch: under `if (!pm_runtime_enabled(dev))` (runtime
    PM is off, CONFIG_PM=n: the set-up was a no-op), and the failure branch of a managed
    set-up such as devm_pm_runtime_enable() (it fails only when devres cannot allocate)."""
    if resource != "wakeup" and resource != "wake-irq" and _runtime_pm_off(x.node):
        return True
    return any(t.start_byte <= x.node.start_byte < t.end_byte for t in probe.managed_tests())


def _allocation_failure(x: paths.Exit, table: Table) -> bool:
    """An exit taken only when a call of `allocation_only` failed: `return
    devm_rtc_register_device(rtc);`, or inside `if (ret)` right after `ret = that call;`."""
    calls = table.allocation_only
    return bool(calls) and (_returned_call(x) in calls or _guard_call(x) in calls)


def _returned_call(x: paths.Exit) -> str | None:
    """`return call(...);`: the call."""
    if x.node.type != "return_statement":
        return None
    value = cnav.text(x.node).removeprefix("return").strip(" ;\t\n")
    name = value.split("(", 1)[0].strip()
    return name if "(" in value and name.isidentifier() else None


def _failed_call(x: paths.Exit) -> str | None:
    """The call whose failure the exit is taken on: the one whose result the `if` around the
    exit tests, else `return call(...);`; None when not read so."""
    return _guard_call(x) or _returned_call(x)


def _guard_call(x: paths.Exit) -> str | None:
    """The exit inside `if (<var>...)` right after `var = call(...);`: the call."""
    cur = x.node
    while cur.parent is not None and cur.type != "if_statement":
        cur = cur.parent
    if cur.type != "if_statement":
        return None
    assigned = paths.assigned_call(paths.previous_statement(cur))
    cond = cur.child_by_field_name("condition")
    if assigned is None or cond is None:
        return None
    var, call = assigned
    callee = cnav.text(call.child_by_field_name("function")).strip()
    return callee if var in cnav.identifiers_in(cond) else None


def _never_retried(ctx: Context, leaking: list[paths.Exit], table: Table) -> bool:
    """Every exit is taken on a call that cannot return -EPROBE_DEFER (`cannot_defer` in
    lifetime-pairs.yaml), in a driver only ever built in (kbuild/builtin.py): after any other
    error the driver core leaves the device driverless for good (driver_probe_device() retries
    only on -EPROBE_DEFER, drivers/base/dd.c:834-836 in 6.1), and no module reload probes it
    again: only a manual bind through sysfs would meet what the exit leaves set up."""
    if not leaking or not table.cannot_defer:
        return False
    if any(_failed_call(x) not in table.cannot_defer for x in leaking):
        return False
    from dpmlens.kbuild.builtin import built_in_only

    return built_in_only(ctx.model.path) is True


def _runtime_pm_off(node: ts.Node) -> bool:
    """Under `if (!pm_runtime_enabled(dev))`: a get there failed and holds nothing."""
    return any(
        "pm_runtime_enabled" in cond
        and not positive
        or cond.strip("() \t").startswith("!pm_runtime_en")
        for cond, positive in cnav.enclosing_conditions(node)
    )


_TAKES = frozenset({"pm_runtime_get_sync", "pm_runtime_resume_and_get", "pm_runtime_get"})


def _usage_in_remove(
    rule: Rule, ctx: Context, facts: _FileFacts, remove: str, res: Resource
) -> Iterator[Finding]:
    """A count taken in remove (to power the device for its teardown) and never dropped."""
    names = res.acquire | res.release | res.managed
    walk = list(ctx.reach(remove, depth=_DEPTH, towards=frozenset(names)))
    for i, r in enumerate(walk):
        if r.call.callee not in _TAKES or r.hops:
            continue
        later = [w for w in walk[i + 1 :] if w.call.callee in res.release]
        if later:
            continue
        node = facts.call_node(r)
        if (
            node is None
            or paths.own_result_test(node) is not None
            and any(w.call.callee in res.release for w in walk)
        ):
            continue
        yield ctx.report(
            rule,
            r.call,
            function=remove,
            call=r.call.callee,
            via="",
            what="a runtime PM usage count taken",
            paths=f"at unbind: {remove}() takes it and never drops it",
            fix=f"add {res.undo} after pm_runtime_disable() in {remove}()",
        )

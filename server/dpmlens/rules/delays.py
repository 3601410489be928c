"""Checker `delays`: fixed delays on PM paths, for three rules (match.report):

- `beyond-spec` (delay-beyond-spec): waits longer than a known spec minimum, or long waits
  whose comment admits padding (warning), other long waits in PM callbacks (info);
- `msleep-under-20ms`: msleep() below 20 ms on a PM path, by its real worst case per HZ;
- `busy-wait` (busy-wait-in-pm-callback): mdelay()/udelay() >= min_ms on a sleepable PM path.

The spec table is `delay_spec`, the worst-path totals `delay_paths`, the msleep() arithmetic
`sleep_slack`, where sleeping is not allowed `locks`; this module finds and evaluates the
delays of a file and of the helpers its callbacks reach, and words the findings.
"""

from __future__ import annotations

import fnmatch
import re
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import tree_sitter as ts

from dpmlens.core.findings import Finding, Fix, Severity, TextEdit
from dpmlens.model import condeval, footprint, ops_structs, words
from dpmlens.model.build import build_model
from dpmlens.model.consteval import eval_int
from dpmlens.model.phases import PHASES
from dpmlens.model.types import CallSite, FileModel
from dpmlens.rules import cnav, severity_policy
from dpmlens.rules.context import Callback, Context, Hop, Reached
from dpmlens.rules.delay_paths import (
    ZERO,
    Decide,
    PathCost,
    alt,
    branch_when,
    checks_first,
    conditional_if,
    counted_loop,
    leaves_function,
    only_when,
    path_conditions,
    path_cost,
    runs_once,
)
from dpmlens.rules.delay_spec import UNIT_MS, Quantity, SpecTable, fmt_ms
from dpmlens.rules.delay_spec import load_spec as _spec
from dpmlens.rules.delayvalue import Value, evaluate
from dpmlens.rules.loader import Rule, load_table
from dpmlens.rules.locks import atomic_callers, lock_held, lock_wrappers
from dpmlens.rules.plugin import Keywords, checker
from dpmlens.rules.sibling_waits import sibling_wait
from dpmlens.rules.sleep_slack import extra_jiffies, msleep_worst_ms, worst_case_text
from dpmlens.syntax.parser import OTHER_FILES

_LOOPS = frozenset({"for_statement", "while_statement", "do_statement"})


def spec_table(ctx: Context) -> SpecTable:
    return _spec(tuple(sorted(ctx.config.spec_overrides.items())))


@dataclass
class Delay:
    call: CallSite
    node: ts.Node | None
    value: Value
    unit: str
    in_loop: bool
    file: _FileDelays  # the file the delay is in, whose context evaluated it

    @property
    def ms(self) -> float:
        return self.value.base * UNIT_MS[self.unit]

    @property
    def most_ms(self) -> float:
        return self.value.most * UNIT_MS[self.unit]


class _Defines(Mapping[str, str]):
    """`base` (unit and spec constants) under the file's and its local headers' #defines,
    merged on the first lookup: most delays are literals, which need no header read."""

    def __init__(self, base: dict[str, str], model: FileModel) -> None:
        self._base, self._model = base, model
        self._merged: dict[str, str] | None = None

    def _all(self) -> dict[str, str]:
        if self._merged is None:
            self._merged = {**self._base, **self._model.all_defines()}
        return self._merged

    def __getitem__(self, name: str) -> str:
        return self._all()[name]

    def __contains__(self, name: object) -> bool:
        return name in self._all()

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def __bool__(self) -> bool:  # never empty; and `defines or {}` must not merge
        return True


class _FileDelays:
    """Every evaluated delay of one file, in that file's context (its #defines, comments,
    loops), and which PM callbacks of the analysed file reach each."""

    def __init__(
        self, ctx: Context, spec: SpecTable, model: FileModel, only: str | None = None,
        skip: frozenset[str] = frozenset(),
    ) -> None:  # fmt: skip
        """`only`: the delays of that function alone; `skip`: not those of these functions
        until a walk reaches them (`evaluate`)."""
        self.ctx, self.spec, self.model = ctx, spec, model
        names = frozenset(spec.delay_functions)
        defines = dict(spec.unit_constants)
        for name, (_q, raw, _unit, _doc) in spec.constants.items():
            defines[name] = str(raw)
        self.defines = _Defines(defines, model)
        self.delays: dict[int, Delay] = {}
        # delays whose value is a parameter of their function: call -> parameter index
        self.by_param: dict[int, tuple[CallSite, int]] = {}
        # first (by phase order) callback reaching each delay
        self.reached_by: dict[int, tuple[Callback, Reached]] = {}
        # the delay calls of the `skip` functions, not evaluated (yet): function -> calls
        self.skipped: dict[str, list[CallSite]] = {}
        with footprint.unit(model, footprint.NAMES):
            calls = model.calls_to(*names)
        for call in calls:
            if call.caller is None or only is not None and call.caller != only:
                continue
            if call.caller in skip:
                self.skipped.setdefault(call.caller, []).append(call)
                continue
            self._evaluate(call)

    def _evaluate(self, call: CallSite) -> None:
        with self.reading(call):  # each function's delays are read on their own
            d = self._delay(call)
            if d is not None:
                self.delays[call.start_byte] = d
            else:
                index = self._param_index(call)
                if index is not None:
                    self.by_param[call.start_byte] = (call, index)

    def evaluate(self, function: str) -> None:
        """The delays of skipped `function` after all (a walk reached one of them)."""
        for call in self.skipped.pop(function, ()):
            self._evaluate(call)

    def reading(self, call: CallSite) -> AbstractContextManager[None]:
        """Record what is read about delay `call` into its function's footprint unit."""
        return footprint.unit(self.model, call.caller or "")

    def _param_index(self, call: CallSite) -> int | None:
        """Index of the enclosing function's parameter the delay argument names, if any."""
        arg_index, _unit = self.spec.delay_functions[call.callee]
        if len(call.args) <= arg_index:
            return None
        node = self.ctx.call_node(call, self.model)
        func = cnav.function_of(node) if node is not None else None
        if func is None:
            return None
        params = cnav.parameter_names(func)
        name = call.args[arg_index].strip()
        return params.index(name) if name in params else None

    def delay_from_caller(self, r: Reached, caller: _FileDelays) -> None:
        """`helper(dev, 10)` -> `msleep(delay)`: evaluate the argument at the call site
        (in `caller`, the file of that call)."""
        if not r.hops or r.hops[-1].call.callee != r.call.caller:
            return
        hop = r.hops[-1]
        call, index = self.by_param[r.call.start_byte]
        if len(hop.call.args) <= index:
            return
        at = self.ctx.call_node(hop.call, caller.model)
        value = evaluate(hop.call.args[index], at, caller.defines, caller.model.source,
                         self.ctx.tree(caller.model).root_node)
        if value is not None and value.base >= 0:
            d = self._delay(call, value)
            if d is not None:
                self.delays[call.start_byte] = d

    def _delay(self, call: CallSite, value: Value | None = None) -> Delay | None:
        arg_index, unit = self.spec.delay_functions[call.callee]
        if len(call.args) <= arg_index:
            return None
        node = self.ctx.call_node(call, self.model)
        if value is None:
            value = evaluate(call.args[arg_index], node, self.defines, self.model.source,
                             self.ctx.tree(self.model).root_node)
        if value is None or value.base < 0:
            return None
        in_loop = False
        cur = node
        while cur is not None and cur.type != "function_definition":
            if cur.type in _LOOPS:
                in_loop = True
                break
            cur = cur.parent
        # A weak proxy: a strong back-reference would make a cycle that keeps each file's
        # tree alive until the cyclic GC runs (+55 MB peak RSS over drivers/).
        return Delay(call, node, value, unit, in_loop, weakref.proxy(self))

    # --- what the comments and constants say --------------------------------------------

    def comments(self, d: Delay) -> list[str]:
        out: list[str] = []
        if d.node is not None:
            out += cnav.comments_near(d.node)
            stmt = cnav.statement_of(d.node)
            if stmt.parent is not None and stmt.parent.type == "if_statement":
                # `/* T_PVPERL ... */ if (slot_ctl) msleep(100);`: the if's comment
                out += cnav.comments_near(stmt.parent)
        for n in d.value.nodes:
            out += _pair_comments(n) if n.type == "initializer_pair" else cnav.comments_near(n)
        source = self.model.source
        for name in d.value.identifiers:
            if name in self.model.defines:
                pattern = _define_of(name)
                footprint.searched(self.model, pattern)
                m = _first_define(source, name, pattern)
                if m:
                    line = m.group(0).decode("utf-8", "replace")
                    if "/*" in line or "//" in line:
                        out.append(line[line.find("/") :])
                    # the line above: `/* Time to first communication after power up
                    # (tINT_T) */` over `#define PAC1921_POWERUP_TIME_MS 20` (pac1921.c:60)
                    end = source.rfind(b"\n", 0, m.start())
                    start = source.rfind(b"\n", 0, end) + 1 if end > 0 else 0
                    prev = source[start:end].decode("utf-8", "replace").strip() if end > 0 else ""
                    if prev.startswith(("/*", "//", "*")) or prev.endswith("*/"):
                        out.append(prev)
        return out

    def spec_link(self, d: Delay, comments: list[str]) -> tuple[Quantity, str, str] | None:
        """The spec quantity this delay implements, how we know, and where the padding is
        documented (empty when it is not)."""
        for name in sorted(d.value.identifiers):
            if name not in self.spec.constants:
                continue
            quantity, raw, unit, documented = self.spec.constants[name]
            # a local redefinition counts only with the header's value (`#include "../pci.h"`);
            # the local headers are read only here, for a delay naming a spec constant
            local = self.model.all_defines()
            if name in local and eval_int(name, local) != raw:
                continue
            return quantity, f"{name} = {fmt_ms(raw * UNIT_MS[unit])}", documented
        text = "\n".join(comments)
        for q in self.spec.quantities if text else ():
            for kw in q.keywords:
                m = _keyword_re(kw).search(text)
                if m:
                    said = q.id if m.group(0) == q.id else f'"{m.group(0)}"'
                    return q, f"the comment names {said}", ""
        nxt = _next_statement(d.node) if d.node is not None else None
        for q in self.spec.quantities if nxt else ():
            where = self.model.path.replace("\\", "/")
            if q.followed_by_in and not any(part in where for part in q.followed_by_in):
                continue
            if q.followed_by is not None and (m := q.followed_by.search(nxt or "")):
                return q, f"it is followed by `{m.group(0).strip()}`", ""
        return None


def _next_statement(call: ts.Node) -> str | None:
    """The text of the statement after the one holding `call`, in the same block."""
    stmt = cnav.statement_of(call)
    nxt = stmt.next_named_sibling
    while nxt is not None and nxt.type == "comment":
        nxt = nxt.next_named_sibling
    return nxt.text.decode("latin-1") if nxt is not None and nxt.text is not None else None


@lru_cache(maxsize=512)
def _keyword_re(keyword: str) -> re.Pattern[str]:
    """A spec keyword as a word: symbols (TRSTRCY) case-sensitively, phrases in any case."""
    flags = re.IGNORECASE if " " in keyword else 0
    return re.compile(rf"(?<![\w-]){re.escape(keyword)}(?![\w])", flags)


class _Analysis:
    """The delays of the analysed file and, with a resolver, those its PM callbacks reach in
    helpers of other files (each evaluated in its own file); computed once per Context."""

    def __init__(
        self, ctx: Context, only: str | None = None, keep: frozenset[str] = frozenset()
    ) -> None:
        """`only`: the delays of that function alone, as if no callback reached them.
        `keep`: functions of this file whose delays are neither evaluated nor reported unless
        a callback's walk reaches one (incremental.py keeps their last findings: `kept`)."""
        self.ctx = ctx
        self.spec = spec_table(ctx)
        self.delay_names = frozenset(self.spec.delay_functions)
        self.local = _FileDelays(ctx, self.spec, ctx.model, only, keep)
        self.others: dict[str, _FileDelays] = {}  # path -> delays of a helper file
        # one walk per function: SIMPLE_DEV_PM_OPS names each function in three phases
        self.walks: dict[str, list[Reached]] = {}
        self._costs: dict[tuple[str, bool], PathCost] = {}
        self._spins: dict[tuple[str, int], bool] = {}  # delays busy-wait-in-pm-callback reports
        # Without a resolver the walk stays in this file: no delay here, nothing to reach.
        walk_needed = only is None and bool(
            self.local.delays or self.local.by_param or self.local.skipped
            or ctx.resolver is not None
        )  # fmt: skip
        if only is None and not walk_needed:
            # no callback was followed: a delay typed anywhere may be reached (footprint.NAMES
            # is set aside only for a function that the callbacks' walks did not enter)
            footprint.searched(ctx.model, *self.delay_names)
        # the callbacks whose last walk reached nothing and read nothing an edit changed
        # (incremental.py): not walked again, as empty as it was
        unwalked = ctx._cache.get(_UNWALKED, frozenset()) if only is None else frozenset()
        self.unwalked: set[str] = set()
        for cb in ctx.callbacks if walk_needed else ():
            walk = self.walks.get(cb.function)
            if walk is None and cb.function in unwalked:
                walk = self.walks[cb.function] = []
                self.unwalked.add(cb.function)
            elif walk is None:
                with footprint.walk(ctx.model, cb.function) as reached:
                    walk = self.walks[cb.function] = list(
                        ctx.reach(cb.function, towards=self.delay_names)
                    )
                    reached += walk
            for r in walk:
                fd = self.file_of(r.model)
                if fd is None:
                    continue
                if r.call.caller in fd.skipped:
                    fd.evaluate(r.call.caller)  # (reached: not kept after all)
                start = r.call.start_byte
                if start in fd.by_param and start not in fd.delays:
                    caller = self.file_of(r.hops[-1].model) if r.hops else None
                    if caller is not None:
                        fd.delay_from_caller(r, caller)
                if start in fd.delays:
                    fd.reached_by.setdefault(start, (cb, r))

        # the `keep` functions whose delays no walk reached: neither evaluated nor reported
        self.kept = frozenset(self.local.skipped)

    def cost(self, function: str, spinning: bool = False) -> PathCost:
        """The worst-path fixed-delay cost of callback `function`, through the helpers and
        delays its walk (ctx.reach) reached: a helper the walk did not enter costs nothing.
        `spinning`: the busy-waits only (mdelay(), udelay(), ndelay())."""
        hit = self._costs.get((function, spinning))
        if hit is None:
            walk = self.walks.get(function, [])
            delays = {
                (r.model.path, r.call.start_byte)
                for r in walk
                if not spinning or r.call.callee in _SPINNING
            }
            # a call through a function pointer enters each target the walk followed
            entered: dict[tuple[str, int], list[Hop]] = {}
            for r in walk:
                for h in r.hops:
                    targets = entered.setdefault((h.model.path, h.call.start_byte), [])
                    if all(t.call.callee != h.call.callee for t in targets):
                        targets.append(h)
            hit = self._costs[(function, spinning)] = _PathWalk(self, delays, entered).function(
                self.ctx.model, function, {}
            )
        return hit

    def file_of(self, model: FileModel) -> _FileDelays | None:
        """The delays of the file `model` is (this one, or a helper's file found through the
        resolver); None for a stale copy of this file."""
        if model is self.ctx.model:
            return self.local
        if model.path == self.ctx.model.path:
            return None
        fd = self.others.get(model.path)
        if fd is None:
            fd = self.others[model.path] = _FileDelays(self.ctx, self.spec, _full(model))
        return fd

    def delays(self) -> Iterator[Delay]:
        """This file's delays, then those of other files that a callback of this one reaches
        (only those: the others are that file's own business)."""
        yield from self.local.delays.values()
        # (a copy: what is done with each delay may read a helper file's delays for the first
        # time; a file or delay added now was reached by no walk, so it yields nothing)
        for fd in list(self.others.values()):
            for start, d in list(fd.delays.items()):
                if start in fd.reached_by:
                    yield d


def _pair_comments(pair: ts.Node) -> list[str]:
    """Comments on the lines of an initializer pair (`.reset_ms = 100, /* T_PVPERL */`) and
    just above it."""
    out: list[str] = []
    prev = pair.prev_named_sibling
    if prev is not None and prev.type == "comment" and pair.start_point[0] - prev.end_point[0] <= 1:
        before = prev.prev_sibling  # not the trailing comment of the pair above
        if before is None or before.end_point[0] < prev.start_point[0]:
            out.append(cnav.text(prev))
    nxt = pair.next_named_sibling
    if nxt is not None and nxt.type == "comment" and nxt.start_point[0] == pair.end_point[0]:
        out.append(cnav.text(nxt))
    return out


class _PathWalk:
    """Worst-path costs of the functions one callback's walk went through: a call costs its
    delay when the walk reached that delay, or its helper's own path cost when the walk
    entered that helper there (so a helper the walk pruned costs nothing)."""

    def __init__(
        self,
        a: _Analysis,
        delays: set[tuple[str, int]],
        entered: dict[tuple[str, int], list[Hop]],
    ) -> None:
        self.a, self.delays, self.entered = a, delays, entered
        self.memo: dict[tuple[str, str, tuple[tuple[str, int], ...]], PathCost] = {}

    def function(self, model: FileModel, name: str, bindings: dict[str, int]) -> PathCost:
        """`name`'s worst path with its parameters bound as the walk bound them (`bindings`:
        `max310x_power(port, 1)` pays the `if (on)` wait)."""
        fd = self.a.file_of(model)
        fn = model.functions.get(name)
        if fd is None or fn is None:
            return ZERO
        key = (model.path, name, tuple(sorted(bindings.items())))
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        self.memo[key] = ZERO  # a recursive call costs nothing more
        node = self.a.ctx.node(fn.start_byte, fn.end_byte, fd.model, kind="function_definition")
        body = node.child_by_field_name("body") if node is not None else None
        decide = _decider(fd.model, bindings)
        cost = (
            path_cost(body, lambda call: self._leaf(fd, call, bindings), decide)
            if body is not None
            else ZERO
        )
        self.memo[key] = cost
        return cost

    def _leaf(self, fd: _FileDelays, call: ts.Node, bindings: dict[str, int]) -> PathCost | None:
        key = (fd.model.path, call.start_byte)
        if key in self.delays:
            d = fd.delays.get(call.start_byte)
            if d is None:
                return None
            if d.most_ms > d.ms and d.value.conditional:
                return PathCost(d.ms, ((d.value.conditional[0], d.most_ms - d.ms),))
            return PathCost(d.ms)
        worst: PathCost | None = None
        for hop in self.entered.get(key, ()):
            # a direct call enters its one callee; a call through a function pointer
            # (`pcie->soc->power_up(pcie)`) each target the walk followed: the worst counts
            target = self.a.ctx.lookup(hop.call.callee, fd.model)
            if target is not None:
                inner = self.a.ctx.walker.bind(fd.model, hop.call, bindings)
                cost = self.function(target[0], hop.call.callee, inner)
                worst = cost if worst is None else alt(worst, cost)
        return worst


_FULL: OrderedDict[str, FileModel] = OrderedDict()
_FULL_SIZE = 16


def _decider(model: FileModel, bindings: dict[str, int]) -> Decide | None:
    """A condition's value under the constants the walk bound (None without any: the walk
    prunes nothing else either)."""
    if not bindings:
        return None
    return lambda node: condeval.evaluate(node, bindings, model.defines)


def _full(model: FileModel) -> FileModel:
    """`model` with its tree and header loader: the workspace index hands out tree-less
    copies, and a delay needs its file's tree (loops, comments) and headers (#defines)."""
    if model.tree is not None:
        return model
    hit = _FULL.get(model.path)
    if hit is None or hit.source != model.source:
        tree = OTHER_FILES.get(model.path, model.source)  # the walker's parse of that file
        hit = _FULL[model.path] = build_model(model.path, model.source, tree=tree)
        while len(_FULL) > _FULL_SIZE:
            _FULL.popitem(last=False)
    _FULL.move_to_end(model.path)
    return hit


def analysis(ctx: Context) -> _Analysis:
    """The file's delay analysis, made once per Context and shared by the three rules."""
    hit = ctx._cache.get("delays")
    if hit is None:
        # with ctx.only, incremental.py asks about that function, which no walk entered
        keep = ctx._cache.get(_KEEP, frozenset()) if ctx.only is None else frozenset()
        hit = ctx._cache["delays"] = _Analysis(ctx, only=ctx.only, keep=keep)
    return hit  # type: ignore[no-any-return]


_KEEP = "delays:keep"
_UNWALKED = "delays:unwalked"


def keep_unreached(
    ctx: Context, functions: frozenset[str], unwalked: frozenset[str] = frozenset()
) -> None:
    """Before the rules run in `ctx`: the delays of `functions` (of ctx's file) are to be
    neither evaluated nor reported unless a callback's walk reaches one, for incremental.py,
    which keeps their last findings (a delay no walk reaches is judged on its own function:
    `Context.only`); `kept_unreached` says afterwards which ones were. The callbacks
    `unwalked` are not walked: their walk is known to reach nothing (`footprint.WALK_EMPTY`);
    `unwalked_callbacks` says afterwards which ones were not."""
    ctx._cache[_KEEP] = functions
    ctx._cache[_UNWALKED] = unwalked


def unwalked_callbacks(ctx: Context) -> frozenset[str]:
    hit = ctx._cache.get("delays")
    return frozenset() if hit is None else frozenset(hit.unwalked)


def kept_unreached(ctx: Context) -> frozenset[str]:
    """Of the functions given to `keep_unreached`, those whose delays no walk reached (none
    of their findings reported here)."""
    hit = ctx._cache.get("delays")
    if hit is None:  # the delay rules did not run: nothing of theirs was reported
        return frozenset()
    return hit.kept  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Options:
    report: Literal["beyond-spec", "msleep-under-20ms", "busy-wait"]
    min_ms: float = 10  # busy-wait: shortest reported busy-wait
    # busy-wait: calls that sleep (a bus transfer); a retry loop that makes one is no atomic
    # code, and its wait is the device's normal busy answer, not a rare timeout
    sleeping_calls: tuple[str, ...] = ()
    # msleep-under-20ms: the CONFIG_HZ severity assumes (kernel/Kconfig.hz default), and the
    # worst case / request ratios from which a short msleep() is a warning, an info
    hz: Literal[100, 250, 1000] = 250
    warn_ratio: float = 2.0
    info_ratio: float = 1.5

    def validate(self) -> str | None:
        if not 1 <= self.info_ratio <= self.warn_ratio:
            return "need 1 <= info_ratio <= warn_ratio"
        return None


def _keywords(_opts: Options) -> Keywords:
    """Callbacks; and spec words (quantity names, padded constants), which make a delay
    spec-linked wherever it is, but only in a file that names a delay function."""
    table = load_table("spec-delays")
    words: list[str] = []
    for q in table.get("quantities", []):
        words += [str(k) for k in q.get("keywords", []) or []]
        words += [str(c) for c in (q.get("constants") or {})]
    gate = tuple(str(n) for n in table.get("delay_functions") or {})
    return Keywords(gated=tuple(words), gate=gate, callbacks=True)


@checker(
    "delays",
    Options,
    fields={"delay", "via", "reason", "cycle", "arg", "value", "where", "worst", "range",
            "bound", "loop", "callee", "phase", "callback", "when", "instead", "total"},
    keywords=_keywords,
    per_function=True,
)  # fmt: skip
def run(rule: Rule, ctx: Context) -> Iterator[Finding]:
    a = analysis(ctx)
    opts: Options = rule.options
    if opts.report == "beyond-spec":
        yield from _beyond_spec(rule, a)
    elif opts.report == "msleep-under-20ms":
        yield from _msleep_short(rule, a, opts)
    elif opts.report == "busy-wait":
        yield from _busy_wait(rule, a, opts.min_ms, opts.sleeping_calls)


def _where(a: _Analysis, d: Delay) -> tuple[Callback | None, Reached | None, str]:
    hit = d.file.reached_by.get(d.call.start_byte)
    if hit is None:
        return None, None, ""
    cb, r = hit
    return cb, r, f" in the {cb.phase} callback {cb.function}(){a.ctx.via(r)}"


def _report(
    rule: Rule, a: _Analysis, d: Delay, severity: Severity, cb: Callback | None,
    r: Reached | None, fixes: tuple[Fix, ...] = (), repeated: bool = False,
    spin_ms: float | None = None, **fields: object,
) -> Finding:  # fmt: skip
    """The finding at delay `d`, in its own file, with the chain from `cb` when reached,
    under the severity policy (phase kind x size, rules/tables/severity-policy.yaml);
    `repeated`: a counted loop pays it once per iteration."""
    found = a.ctx.report(
        rule, d.call, path=d.file.model.path, severity=severity, cb=cb, reached=r,
        fixes=fixes, **fields,
    )  # fmt: skip
    reached = cb is not None  # (no callback reaches it: no callback, runtime or other, to ask)
    facts = severity_policy.DelayFacts(
        d.call.callee, d.ms if spin_ms is None else spin_ms, d.file.model.path,
        _runtime_reach(a, d) if reached else None, _shared_op(a, d, r) if reached else None,
        _ifdef_configs(a, d, r), _error_path(a, d, r), repeated,
        _hibernation_only(a, d, cb, r),
    )  # fmt: skip
    return severity_policy.cap_delay(found, facts)


# `!(pdev->dev.power.power_state.event == PM_EVENT_SUSPEND)`: not after a system suspend
_NOT_AFTER_SUSPEND = re.compile(
    r"!\(\s*([\w.>-]*power_state\.event\s*==\s*PM_EVENT_SUSPEND)\s*\)"
    r"|([\w.>-]*power_state\.event\s*!=\s*PM_EVENT_SUSPEND)"
)
# the suspend callback keeps the message it got (`pdev->dev.power.power_state = state;`)
_STORES_STATE = re.compile(rb"power_state\s*=(?!=)\s*(?!PMSG_ON\b)[A-Za-z_]")


def _hibernation_only(
    a: _Analysis, d: Delay, cb: Callback | None, r: Reached | None
) -> str | None:
    """The condition, as written, that keeps the delay off a resume from system suspend: a
    legacy `.resume` (called for resume, thaw and restore) whose path needs the stored PM
    event not to be PM_EVENT_SUSPEND, in a driver whose suspend stores the message it got
    (isp1362_resume(): after a suspend it only resumes the root hub ports and returns)."""
    info = PHASES.get(cb.phase) if cb is not None else None
    if info is None or r is None or info.kind != "system" or info.direction != "up":
        return None
    m = _NOT_AFTER_SUSPEND.search(_path_conditions(a, d, r))
    if m is None:
        return None
    models = [d.file.model, r.model, *(h.model for h in r.hops)]
    if not any(_STORES_STATE.search(model.source) for model in models):
        return None
    return " ".join((m.group(1) or m.group(2)).split()).replace(" == ", " != ")


_ERRNO = re.compile(r"^\(?-\s*E[A-Z0-9]+\)?$")
_LOOPS = ("for_statement", "while_statement", "do_statement")
_FLOW = ("if_statement", "switch_statement", "goto_statement", "break_statement",
         "continue_statement", "labeled_statement", *_LOOPS)  # fmt: skip


def _path_nodes(a: _Analysis, d: Delay, r: Reached | None) -> list[ts.Node]:
    """The delay's call node and the helper calls on the way to it (those whose file parsed)."""
    nodes = [d.node] if d.node is not None else []
    for hop in r.hops if r is not None else ():
        fd = a.file_of(hop.model)
        node = a.ctx.call_node(hop.call, fd.model) if fd is not None else None
        if node is not None:
            nodes.append(node)
    return nodes


def _error_path(a: _Analysis, d: Delay, r: Reached | None) -> str | None:
    """`returns -EBUSY` when the delay (or a helper call on its way) is followed in its block
    by a `return -E...` with only plain statements between: it runs only when something
    failed (a poll that timed out), not on every suspend or resume."""
    nodes = _path_nodes(a, d, r)
    for node in nodes:
        why = _errno_return_after(node)
        if why:
            return why
    return None


def _errno_return_after(node: ts.Node) -> str | None:
    cur = node
    while cur.parent is not None and cur.type != "function_definition":
        parent = cur.parent
        if parent.type in _LOOPS:
            return None  # after the body the loop goes round again
        if parent.type == "compound_statement":
            for sib in parent.named_children:
                if sib.start_byte <= cur.start_byte or sib.type == "comment":
                    continue
                if sib.type == "return_statement":
                    value = (sib.text or b"").decode("latin-1")[len("return"):].strip(" ;\t\n")
                    return f"returns {value}" if _ERRNO.match(value) else None
                if sib.type in _FLOW:
                    return None  # control flow between: not a fact read simply
        if parent.type == "function_definition":
            return None
        cur = parent
    return None


_IFDEF = re.compile(r"#\s*ifdef\s+CONFIG_(\w+)\s*$")
_IF_DEFINED = re.compile(
    r"#\s*if\s+(?:defined|IS_ENABLED|IS_BUILTIN)\s*\(?\s*CONFIG_(\w+)\s*\)?\s*$"
)


def _ifdef_configs(a: _Analysis, d: Delay, r: Reached | None) -> tuple[str, ...]:
    """The CONFIG_ symbols whose `#ifdef` (not its `#else`) encloses the delay or a helper
    call on the way to it: the delay is only compiled when they are set."""
    nodes = _path_nodes(a, d, r)
    out: list[str] = []
    for cur in nodes:
        parent = cur.parent
        while parent is not None:
            if parent.type in ("preproc_ifdef", "preproc_if"):
                alt = parent.child_by_field_name("alternative")
                if alt is None or alt.id != cur.id:
                    head = (parent.text or b"").split(b"\n", 1)[0].decode("latin-1").strip()
                    m = _IFDEF.match(head) or _IF_DEFINED.match(head)
                    if m:
                        out.append(m.group(1))
            cur, parent = parent, parent.parent
    return tuple(dict.fromkeys(out))


def _runtime_reach(a: _Analysis, d: Delay) -> str | None:
    """The runtime-PM callback whose walk reaches `d` (the cost then repeats), if any."""
    for cb in a.ctx.callbacks:
        info = PHASES.get(cb.phase)
        if info is None or info.kind != "runtime":
            continue
        for r in a.walks.get(cb.function, ()):
            if r.call.start_byte == d.call.start_byte and r.model.path == d.file.model.path:
                return f"{cb.phase} callback {cb.function}()"
    return None


_PM_MEMBER = re.compile(r"suspend|resume|freeze|thaw|poweroff|restore|prepare|complete|pm",
                        re.IGNORECASE)  # fmt: skip
# a subsystem's ops table (fb_ops, net_device_ops, snd_pcm_ops): its other callers are the
# subsystem's; not match data (`struct foo_pdata .power_up`), which only the driver calls
_SUBSYSTEM_OPS = re.compile(r"_ops$|_operations$|_funcs$")


def _shared_op(a: _Analysis, d: Delay, r: Reached | None) -> str | None:
    """`foo_set_par()` holding the delay (or a helper on the way) is also `.fb_set_par` of a
    subsystem's (non-PM) ops struct of the file: the callback reaches a wait that is that
    op's."""
    if r is None or not r.hops:
        return None  # the callback's own wait
    names = [h.call.callee for h in r.hops] + [d.call.caller or ""]
    models = [a.ctx.model] + ([] if d.file.model is a.ctx.model else [d.file.model])
    for model in models:
        for e in ops_structs.entries(model):
            if (
                e.function in names
                and _SUBSYSTEM_OPS.search(e.struct_type)
                and e.struct_type != "dev_pm_ops"
                and not _PM_MEMBER.search(e.member)
            ):
                return f"{e.function}() is also struct {e.struct_type} .{e.member}"
    return None


def _call_text(d: Delay) -> str:
    return f"{d.call.callee}({', '.join(d.call.args)})"


_Place = tuple[ts.Node, "Decide | None", str]


def _places(a: _Analysis, d: Delay, r: Reached | None) -> list[_Place]:
    """The delay's call node and each helper call on its way (innermost first), each with
    what the walk's constants decide in its function (`max310x_power(port, 1)`: `on` is 1
    there, so `if (on)` is no condition) and that function's name."""
    hops = r.hops if r is not None else ()
    out: list[_Place] = []
    if d.node is not None:
        decide = _decider(d.file.model, a.ctx.walker.bindings_after(hops))
        out.append((d.node, decide, d.call.caller or "?"))
    for k in range(len(hops) - 1, -1, -1):
        hop = hops[k]
        fd = a.file_of(hop.model)
        node = a.ctx.call_node(hop.call, fd.model) if fd is not None else None
        if node is not None:
            decide = _decider(hop.model, a.ctx.walker.bindings_after(hops[:k]))
            out.append((node, _either_branch(node, decide), hop.call.caller or "?"))
    return out


def _either_branch(call: ts.Node, decide: Decide | None) -> Decide | None:
    """`decide`, and the `if`s whose both branches call the same helper as `call` decided:
    `if (A) stex_hba_stop(hba, x); else stex_hba_stop(hba, ST_IGNORED);` (stex_suspend())
    reaches the helper either way, so A is no condition of its waits (r9)."""
    callee = cnav.text(call.child_by_field_name("function")).strip()
    if call.type != "call_expression" or not callee.isidentifier():
        return decide
    both: set[int] = set()
    cur = call
    while cur.parent is not None and cur.parent.type != "function_definition":
        parent = cur.parent
        cons = parent.child_by_field_name("consequence")
        alt = parent.child_by_field_name("alternative")
        cond = parent.child_by_field_name("condition")
        if parent.type == "if_statement" and cons is not None and alt is not None and cond:
            other = alt if cons.start_byte <= call.start_byte < cons.end_byte else cons
            if any(name == callee for name, _c in cnav.calls_under(other)):
                both.add(cond.start_byte)
        cur = parent
    if not both:
        return decide

    def either(cond: ts.Node) -> int | None:
        if cond.start_byte in both:
            return 1  # (a value, so no condition; which one does not matter here)
        return decide(cond) if decide is not None else None

    return either


def _condition(a: _Analysis, d: Delay, r: Reached | None) -> str | None:
    """The `if` branch that the delay, or a helper call on its way, depends on (one the
    path's constants decide is none): a wait in either branch of an if/else is not paid on
    every cycle."""
    found: list[str] = []
    for node, decide, _fn in _places(a, d, r):
        # the branch it sits in, and the `if` without else around it (megasas_resume():
        # `if (megasas_transition_to_ready(...)) { if (... != MFI_SERIES) ... else ssleep(30); }`)
        for cond in (branch_when(node, decide), only_when(node, decide)):
            if cond and cond not in found and len(found) < 2:
                found.append(cond)
    return _conjunction(found[::-1]) if found else None


def _repeated(a: _Analysis, d: Delay, r: Reached | None) -> tuple[str, str] | None:
    """(loop head, function) of the counted loop that repeats the delay, or a helper call on
    its way, on every iteration (`for (i = 0; i < s->devtype->nr; i++)
    max310x_power(&s->p[i].port, 1);`), when every loop around them counts that way. None
    when there is no loop, or one that polls (its wait is no fixed cost)."""
    found = None
    for node, _decide, function in _places(a, d, r):
        cur: ts.Node | None = node
        while cur is not None and cur.type != "function_definition":
            if cur.type in _LOOPS:
                head = counted_loop(cur)
                if head is None:
                    return None
                found = (head, function)
            cur = cur.parent
    return found


def _once(a: _Analysis, d: Delay, r: Reached | None) -> str | None:
    """The state that lets the delay run only the first time (`if (nvm->buf) return 0;`
    before it, in its function or before a helper call on its way, and set after), or None:
    such a wait is paid once, not on every cycle."""
    places = [(d.node, d.file.model, d.call.caller)]
    for hop in r.hops if r is not None else ():
        fd = a.file_of(hop.model)
        node = a.ctx.call_node(hop.call, fd.model) if fd is not None else None
        places.append((node, hop.model, hop.call.caller))
    for node, model, function in places:
        state = runs_once(node) if node is not None else None
        if state and not _cleared_elsewhere(model, function, state):
            return state
    return None


def _cleared_elsewhere(model: FileModel, function: str | None, state: str) -> bool:
    """Does a function other than `function` reset the state (`lcd->powered_on = false` in
    the power-off path)? Then the early return skips only a repeated power-on, and the wait
    runs on every cycle."""
    field = re.split(r"\s*(?:->|\.)\s*", state)[-1]
    cleared = re.compile(
        rb"(?:->|\.)\s*" + re.escape(field.encode()) + rb"\s*=\s*(?:0|NULL|false)\b"
        rb"|\b(?:kfree|kvfree|vfree|devm_kfree)\s*\([^;]*(?:->|\.)\s*"
        + re.escape(field.encode()) + rb"\s*\)"
    )
    footprint.searched(model, cleared)
    fn = model.functions.get(function or "")
    for m in cleared.finditer(model.source):
        if fn is None or not fn.start_byte <= m.start() < fn.end_byte:
            return True
    return False


_QUIRK = re.compile(r"quirk", re.IGNORECASE)


def _exceptional(d: Delay) -> bool:
    """Is the delay in an `if` (without else) on a quirk flag, or in one that leaves the
    function (an error or early-exit path)? What the note recommends for device-specific
    waits, or no cost of a normal cycle."""
    branch = conditional_if(d.node) if d.node is not None else None
    if branch is None:
        return False
    return bool(_QUIRK.search(cnav.text(branch.child_by_field_name("condition")))) or (
        leaves_function(branch)
    )


def _path_conditions(a: _Analysis, d: Delay, r: Reached) -> str:
    """Every condition on the way from the callback to the delay (`if`s, `else`s, `case`s,
    `#ifdef`s of each helper call and of the delay itself), outermost first; not those the
    path's constants decide, nor the error exits it got past (delay_paths.path_conditions)."""
    parts: list[str] = []
    for node, decide, _fn in reversed(_places(a, d, r)):
        parts += path_conditions(node, decide)
    return _conjunction(list(dict.fromkeys(parts)))


def _conjunction(parts: list[str]) -> str:
    """`a && b`, a part with a top-level `||` or `?:` in parentheses: `(A || B) && C`."""
    if len(parts) < 2:
        return "".join(parts)
    return " && ".join(f"({p})" if _loose(p) else p for p in parts)


def _loose(cond: str) -> bool:
    depth = 0
    for i, ch in enumerate(cond):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and (cond.startswith("||", i) or ch == "?"):
            return True
    return False


def _quote(cond: str, limit: int = 60) -> str:
    return f"`{cond}`" if len(cond) <= limit else f"`{cond[: limit - 3]}...`"


def _cycle(a: _Analysis, cb: Callback, named_loop: str | None = None) -> str:
    """What the callback waits in fixed delays on its worst path, conditional ones apart
    (`named_loop`: a loop head the message has already named, called "that loop")."""
    cost = a.cost(cb.function)
    if cost.fixed:
        text = (
            f"the longest path through {cb.function}() waits {fmt_ms(cost.fixed)} in fixed"
            f" delays per {cb.phase}"
        )
    else:
        text = f"{cb.function}() has no unconditional fixed delay per {cb.phase}"
    # sub-millisecond conditional waits (a udelay(50) behind a flag) are noise here
    conds = sorted((c for c in cost.conditional if c[1] >= 1), key=lambda c: -c[1])
    if conds:
        text += ", " + ", ".join(f"+ {fmt_ms(ms)} only with {_quote(c)}" for c, ms in conds[:2])
        if len(conds) > 2:
            rest = fmt_ms(sum(ms for _c, ms in conds[2:]))
            n = len(conds) - 2
            text += f", + {rest} under {n} other condition{'s' if n > 1 else ''}"
    for head, ms in cost.repeated[:2]:
        loop = "that loop" if head == named_loop else _quote(head, 80)
        text += f", + {fmt_ms(ms)} per iteration of {loop}"
    if cost.looped:
        text += " (waits in loops not counted)"
    return text


def _quirk_branch(d: Delay) -> bool:
    """Is the delay in either branch of a quirk test (`if (x->quirks & FAST) ... else
    msleep(50)`)? The driver then already has the quirk structure this rule recommends."""
    if d.node is None:
        return False
    return any(re.search(r"quirk", c, re.I) for c, _pos in cnav.enclosing_conditions(d.node))


def _variants(d: Delay) -> str:
    """` (`.reset_ms` is 100 in a_data, 150 in b_data)` for a field several structs set."""
    v = d.value
    if len({n for _s, n in v.variants}) < 2:
        return ""
    field = re.split(r"->|\.", d.call.args[0])[-1].strip()
    shown = ", ".join(f"{n} in {s or '?'}" for s, n in v.variants[:4])
    more = f", {len(v.variants) - 4} more" if len(v.variants) > 4 else ""
    return f" (`.{field}` is {shown}{more})"


def _each_delay(a: _Analysis, at: Callable[[Delay], Finding | None]) -> Iterator[Finding]:
    """`at(d)` for each delay, what it reads recorded as read for the delay's function (see
    `_FileDelays.reading`)."""
    for d in a.delays():
        with d.file.reading(d.call):
            found = at(d)
        if found is not None:
            yield found


def _beyond_spec(rule: Rule, a: _Analysis) -> Iterator[Finding]:
    yield from _each_delay(a, lambda d: _beyond_spec_at(rule, a, d))


def _beyond_spec_at(rule: Rule, a: _Analysis, d: Delay) -> Finding | None:
    cb, r, where = _where(a, d)
    if cb is not None and _once(a, d, r):
        return None  # paid the first time only: no cost of the cycle
    comments = d.file.comments(d)
    text = "\n".join(comments)
    admit = a.spec.padding_words.search(text)
    if admit is not None and a.spec.need_before.search(text[: admit.start()]):
        admit = None  # "needs some extra time": what the device needs, not a margin
    link = d.file.spec_link(d, comments)
    variants = _variants(d)
    waits = f"{_call_text(d)} waits {'up to ' if variants else ''}{fmt_ms(d.ms)}{variants}"
    if d.most_ms > d.ms and d.value.conditional:
        waits += f" ({fmt_ms(d.most_ms)} with `{d.value.conditional[0]}`)"
    cond = _condition(a, d, r)
    if cond:
        waits += f" only with {_quote(cond)}"
    # a counted loop around the delay or a helper call on its way (a loop over the ports):
    # the wait is paid once per iteration, on every cycle
    repeated = _repeated(a, d, r) if cb is not None and not cond else None
    # an early `return 0` before it skips it on some iterations (tifm: empty sockets)
    past = _path_conditions(a, d, r) if repeated is not None and r is not None else ""
    if repeated is not None:
        head, function = repeated
        waits += f" on each iteration of {_quote(head, 80)}"
        if cb is not None and function != cb.function:
            waits += f" in {function}()"
        if past:
            waits += f" with {_quote(past)}"
    # Info only for what a maintainer can act on: a margin the comment itself admits,
    # paid by every device on every cycle. A wait some devices or states pay (a quirk,
    # a chip revision, a loop over ports), padding a header documents, or a margin
    # nobody admits states a cost, not a defect: a hint.
    every_cycle = not cond and not d.in_loop and not variants and not _quirk_branch(d)
    if link is not None:
        quantity, how, documented = link
        padding = d.ms - quantity.min_ms
        if padding <= 0:
            return None  # at or below the spec minimum: what the spec asks for
        reason = (
            f": {fmt_ms(padding)} beyond the {fmt_ms(quantity.min_ms)} {quantity.id} minimum"
            f" ({quantity.source}; {how})"
        )
        if documented:
            reason += f"; deliberate padding, {documented}"
            severity = Severity.HINT
        elif admit:
            reason += f'; the comment admits the margin ("{admit.group(0)}")'
            severity = Severity.INFO if every_cycle else Severity.HINT
        else:
            severity = Severity.HINT
    else:
        if cb is None or (d.in_loop and repeated is None) or d.ms < a.spec.report_from_ms:
            return None
        if _exceptional(d):
            return None  # a quirk's or an error path's wait: not paid on every cycle
        if _spin_reported(a, d):
            return None  # busy-wait-in-pm-callback reports this cost (one finding per wait)
        stated = _stated_need(text, d.ms)
        if not admit and _TIMING_SYMBOL.search(text):
            # `/* Time to first communication after power up (tINT_T) */` over the constant:
            # the wait is the datasheet's parameter, a known requirement (r10, pac1921.c:60)
            return None
        if not admit and _cites_time(a.spec, text, d.ms):
            # "The YAS530 datasheet says TVSKW is up to 30 ms, after that 1 ms ...": the
            # comment cites the requirement the wait implements, so it has a known minimum
            return None
        if not admit and not variants and _states_figure(text, d.ms):
            # "OTP registers can't be accessed for 20 ms after streaming starts" before
            # msleep(20): the comment is the device's requirement, and the wait meets it
            return None
        if admit and stated is not None:
            # "It takes 100ms to wake up so, 10ms extra should be enough": the comment
            # states the need and the margin; the margin is the cost to name
            reason = (
                f": {fmt_ms(d.ms - stated)} beyond the {fmt_ms(stated)} the comment states"
                f' ("{admit.group(0)}")'
            )
            severity = Severity.INFO if every_cycle else Severity.HINT
        elif admit:
            reason = f': the comment admits padding ("{admit.group(0)}"), no spec minimum known'
            severity = Severity.INFO if every_cycle else Severity.HINT
        else:
            # a datasheet wait with no spec to hold it against states a cost, not a
            # defect: a hint (the editor shows it faintly; CI does not fail on it)
            reason = ": a fixed wait with no known spec minimum"
            severity = Severity.HINT
        if (
            repeated is not None
            and not variants
            and not _quirk_branch(d)
            and not past  # (an early `return 0` skips it for some)
        ):
            # the loop multiplies the wait (max310x: 50 ms per port on every resume): a
            # patch can often wait once for all iterations; the severity policy caps it
            reason += f", which the loop repeats: every {cb.phase} pays it once per iteration"
            severity = Severity.WARNING
    if cb is not None:
        cycle = _cycle(a, cb, repeated[0] if repeated is not None else None)
    else:
        cycle = (
            f"every call pays {fmt_ms(d.ms)} (no PM callback of this file reaches it; its"
            " callers may be in other files)"
        )
    return _report(
        rule, a, d, severity, cb, r, repeated=repeated is not None,
        delay=waits, reason=reason, via=where, cycle=cycle,
    )  # fmt: skip


_STATED = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|msec|msecs|milliseconds?|us|usec|usecs|s)\b", re.I)


# words of a stated requirement ("can't be accessed for 20 ms", "needs at least 10 ms")
_REQUIRES = re.compile(
    r"\b(?:must|can(?:no|')t|not (?:be )?allowed|needs?|needed|requires?|required|at least"
    r"|minimum|takes?|until|after|before|datasheet|spec(?:ification)?|ready)\b",
    re.IGNORECASE,
)


# a datasheet timing parameter's symbol, as datasheets write them: tINT_T, tPOR, t_RST, tSU_STA
_TIMING_SYMBOL = re.compile(r"(?<![\w-])t_?[A-Z]{2,}[A-Z0-9_]*\b")


def _cites_time(spec: SpecTable, text: str, delay_ms: float) -> bool:
    """Does the comment cite the hardware's documentation (a datasheet, a spec, a manual:
    `citation_words` of rules/tables/spec-delays.yaml) and state a time that accounts for
    most of the delay (at least 75% of it: "up to 30 ms, after that 1 ms" before a 31 ms
    wait)? The delay's own figure is no citation ("The datasheet does not specify ... reset
    time is < 10ms, I sleep 20ms to be sure": a need of half the wait, and the wait); a
    comment whose only figure is the delay's is `_states_figure`'s case."""
    if not spec.citation_words.search(text):
        return False
    for m in _STATED.finditer(text):
        unit = m.group(2).lower()
        scale = 1.0 if unit.startswith("m") else (1000.0 if unit == "s" else 0.001)
        value = float(m.group(1)) * scale
        if value >= 0.75 * delay_ms and abs(value - delay_ms) > 1e-9:
            return True
    return False


def _states_figure(text: str, delay_ms: float) -> bool:
    """Does the comment state the delay's own length as what the device requires?"""
    if not _REQUIRES.search(text):
        return False
    same = False
    for m in _STATED.finditer(text):
        unit = m.group(2).lower()
        scale = 1.0 if unit.startswith("m") else (1000.0 if unit == "s" else 0.001)
        value = float(m.group(1)) * scale
        if value < delay_ms - 1e-9:
            return False  # "reset takes < 10 ms, I sleep 20 ms to be sure": a need below it
        same = same or abs(value - delay_ms) < 1e-9
    return same


def _stated_need(text: str, delay_ms: float) -> float | None:
    """The largest time the comment states that is below the delay but covers at least 75%
    of it (the need the delay pads), or None."""
    best = None
    for m in _STATED.finditer(text):
        unit = m.group(2).lower()
        scale = 1.0 if unit.startswith("m") else (1000.0 if unit == "s" else 0.001)
        value = float(m.group(1)) * scale
        if 0.75 * delay_ms <= value < delay_ms and (best is None or value > best):
            best = value
    return best


_SLEEPING = frozenset({"msleep", "msleep_interruptible", "ssleep", "usleep_range", "fsleep"})
_SPINNING = frozenset({"mdelay", "udelay", "ndelay"})


def _context_switched(d: Delay, pm_condition: bool = False) -> bool:
    """`if (in_suspend) mdelay(x); else msleep(x);`: the driver already picks the primitive
    by context; the branch taken during PM is its business, not a finding. With
    `pm_condition`, only when the condition is about suspend/resume (an msleep() on the
    other branch of `if (can_sleep)` still runs on the PM path)."""
    node = d.node
    if node is None:
        return False
    mine = _SLEEPING if d.call.callee in _SLEEPING else _SPINNING
    other = _SPINNING if mine is _SLEEPING else _SLEEPING
    cur = node
    while cur.parent is not None and cur.parent.type != "function_definition":
        parent = cur.parent
        if parent.type == "if_statement":
            cond = cnav.text(parent.child_by_field_name("condition"))
            if pm_condition and not re.search(r"suspend|resum", cond, re.IGNORECASE):
                return False
            for field in ("consequence", "alternative"):
                branch = parent.child_by_field_name(field)
                if branch is None or branch.start_byte <= node.start_byte < branch.end_byte:
                    continue
                if any(name in other for name, _n in cnav.calls_under(branch)):
                    return True
            return False
        cur = parent
    return False


_JIFFY_DEADLINE = re.compile(r"\btime_(?:before|after)(?:_eq)?\b|\btime_is_\w+|\bjiffies\b")


def _waits_for_a_jiffy_deadline(d: Delay) -> bool:
    """`if (time_before(jiffies, ohci->next_statechange)) msleep(5);`: the sleep waits for a
    jiffies deadline, which only a jiffies-based sleep is sure to pass (at HZ=100,
    usleep_range(5000, 6000) can wake before jiffies moves)."""
    if d.node is None:
        return False
    return any(
        positive and _JIFFY_DEADLINE.search(cond)
        for cond, positive in cnav.enclosing_conditions(d.node)
    )


# the callback's other fixed delays make the rounding irrelevant beyond this many times it
_SWAMPED = 5
_TUNED = re.compile(
    r"without (?:this|it|the (?:delay|sleep|msleep))|work[- ]?around|otherwise|hangs?\b"
    r"|lock(?:s|ed)? up|keeps? generating|errata|erratum",
    re.IGNORECASE,
)


def _largest_other_wait(a: _Analysis, cb: Callback, d: Delay) -> float:
    """The longest single delay the callback reaches besides `d`, polling loops included (a
    loop that sleeps `msleep(50)` per poll waits at least that once)."""
    key = f"delays:largest:{cb.function}"
    waits = a.ctx._cache.get(key)
    if waits is None:
        waits = []
        for r in a.ctx.reach(cb.function, towards=a.delay_names):
            fd = a.file_of(r.model)
            other = fd.delays.get(r.call.start_byte) if fd is not None else None
            if other is not None:
                waits.append((r.call.start_byte, other.ms))
        a.ctx._cache[key] = waits
    return max((ms for start, ms in waits if start != d.call.start_byte), default=0.0)


def _msleep_short(rule: Rule, a: _Analysis, opts: Options) -> Iterator[Finding]:
    """msleep(m) for 0 < m < 20, by how much longer than m it can really sleep at the HZ the
    rule assumes (match.hz): warning from warn_ratio times m, info from info_ratio."""
    yield from _each_delay(a, lambda d: _msleep_short_at(rule, a, opts, d))


def _msleep_short_at(rule: Rule, a: _Analysis, opts: Options, d: Delay) -> Finding | None:
    hz, warn_ratio, info_ratio = opts.hz, opts.warn_ratio, opts.info_ratio
    if d.call.callee != "msleep" or not (0 < d.value.base < 20) or _context_switched(d, True):
        return None
    if not d.in_loop and _waits_for_a_jiffy_deadline(d):
        return None
    cb, r, where = _where(a, d)
    if cb is None:
        return None
    ms = d.value.base
    extra = extra_jiffies(d.file.model.path)  # 6.1's msleep() sleeps a jiffy more
    ratio = msleep_worst_ms(ms, hz, extra) / ms
    if ratio < info_ratio:
        return None  # within the slack a sleep of this length has anyway
    loop = (
        " (in a loop: the rounding lengthens every iteration, but check the loop's"
        " timeout, which a shorter sleep also shortens)"
        if d.in_loop
        else ""
    )
    # A warning only where the rounding is the point: a sleep the loop repeats, a few ms
    # over what a smaller ratio allows, or slack swamped by the callback's other fixed
    # waits (an msleep(100) next to it) is not worth a patch on its own: a hint.
    excess = msleep_worst_ms(ms, hz, extra) - ms
    # a comment that calls the sleep a tuned workaround ("Without this msleep the channel
    # keeps generating interrupts"): its length may matter, shortening it needs hardware
    tuned = any(_TUNED.search(c) for c in d.file.comments(d))
    warn = ratio >= warn_ratio and not d.in_loop and not tuned
    swamped = warn and (  # (the costlier tests only where a warning is still possible)
        a.cost(cb.function).fixed >= _SWAMPED * excess
        or _largest_other_wait(a, cb, d) >= _SWAMPED * excess
        or sibling_wait(a.ctx, cb.function) >= _SWAMPED * excess
    )
    severity = rule.severity if warn and not swamped else Severity.HINT
    once = _once(a, d, r)
    if once:
        severity = Severity.HINT  # the rounding is paid once, not on every cycle
        loop += f" (only the first time: until `{once}` is set)"
    fixes = () if d.in_loop or tuned else _sleep_fixes(d)
    return _report(
        rule, a, d, severity, cb, r, fixes,
        arg=d.call.args[0],
        value=ms,
        # atomisp_mrfld_power(): `if (IS_BYT && enable) msleep(10);` is paid on Baytrail only
        when=f" only with {_quote(cond)}" if (cond := _condition(a, d, r)) else "",
        where=where,
        worst=worst_case_text(ms, hz, extra),
        range=f"{ms * 1000}, {(ms + 1) * 1000}",
        bound=ms + 1,
        loop=loop,
    )  # fmt: skip


def _sleep_fixes(d: Delay) -> tuple[Fix, ...]:
    """msleep(m) -> usleep_range(m ms, m + 1 ms): never longer than msleep(m) at any HZ (its
    best case, HZ=1000, is m + 1 ms), and shorter at HZ=100 and 250. Not fsleep(): up to 6.12
    it is usleep_range(us, 2 * us) here, longer than msleep() at HZ=1000."""
    arg = d.call.args[0].strip()
    path = d.file.model.path
    if re.fullmatch(r"\d+", arg):
        lo, hi = str(int(arg) * 1000), str((int(arg) + 1) * 1000)
    else:
        # a name or a member chain (`p->desc->ms`) needs no parentheses; `x-1` does
        inner = (
            arg
            if re.fullmatch(r"[A-Za-z_]\w*(?:\s*(?:->|\.)\s*[A-Za-z_]\w*)*", arg)
            else f"({arg})"
        )
        lo, hi = f"{inner} * USEC_PER_MSEC", f"({inner} + 1) * USEC_PER_MSEC"
    new = f"usleep_range({lo}, {hi})"
    return (Fix(f"Use {new}", (TextEdit(path, d.call.span, new),)),)


def _loop_text(d: Delay, looped: bool) -> str:
    """How often a busy-wait in a loop runs: a `do { mdelay(); } while (busy)` waits at
    least once, a loop that checks first may not wait at all."""
    if not looped:
        return ""
    node = _enclosing_loop(d)
    if node is not None and d.node is not None:
        if checks_first(node, d.node):
            return " per poll of a loop (not at all when the first poll succeeds)"
        return " per poll of a loop (at least once: it waits before its first check)"
    return " per call from a polling loop"


def _hop_in_loop(a: _Analysis, r: Reached) -> bool:
    """Is a helper call on the way to the delay made from inside a loop?"""
    for hop in r.hops:
        fd = a.file_of(hop.model)
        node = a.ctx.call_node(hop.call, fd.model) if fd is not None else None
        while node is not None and node.type != "function_definition":
            if node.type in _LOOPS:
                return True
            node = node.parent
    return False


def _busy_wait(
    rule: Rule, a: _Analysis, min_ms: float, sleeping: tuple[str, ...] = ()
) -> Iterator[Finding]:
    yield from _each_delay(a, lambda d: _busy_wait_at(rule, a, min_ms, d, sleeping))


# busy-wait-in-pm-callback's match.min_ms (rules/busy-wait-in-pm-callback.yaml): what
# delay-beyond-spec leaves to it (both rules' delays are 20 ms and more there)
_SPIN_MIN_MS = 10.0


def _spin_reported(a: _Analysis, d: Delay) -> bool:
    """Does busy-wait-in-pm-callback report this delay (a busy-wait a PM callback reaches
    where it could sleep)? Then it states the wait's cost, and delay-beyond-spec does not
    repeat it as a hint of its own."""
    key = (d.file.model.path, d.call.start_byte)
    hit = a._spins.get(key)
    if hit is None:
        hit = a._spins[key] = (
            d.call.callee in _SPINNING and d.ms >= _SPIN_MIN_MS and _spin_site(a, d) is not None
        )
    return hit


def _spin_site(a: _Analysis, d: Delay) -> tuple[Callback, Reached] | None:
    """The callback and path of a busy-wait that could sleep instead: reached from a PM
    callback, the driver not choosing mdelay()/msleep() by context, no lock or atomic caller,
    not in a runtime callback of an irq-safe device."""
    if d.call.callee not in _SPINNING or _context_switched(d):
        return None
    cb, r, _where_text = _where(a, d)
    if cb is None or r is None:
        return None
    if PHASES[cb.phase].kind == "runtime" and a.ctx.file_calls_any(("pm_runtime_irq_safe",)):
        return None
    wrappers = a.ctx._cache.setdefault("delays:lock-wrappers", {})

    def wrappers_of(model: FileModel) -> dict[str, int]:
        w = wrappers.get(model.path)
        if w is None:
            w = wrappers[model.path] = lock_wrappers(model)
        return w  # type: ignore[no-any-return]

    if lock_held(r.model, r.call, wrappers_of(r.model)) or any(
        lock_held(h.model, h.call, wrappers_of(h.model)) for h in r.hops
    ):
        return None
    if r.hops and atomic_callers(r.model, d.call.caller, wrappers_of(r.model)):
        return None  # a helper shared with atomic callers cannot simply sleep
    return cb, r


def _busy_wait_at(
    rule: Rule, a: _Analysis, min_ms: float, d: Delay, sleeping: tuple[str, ...] = ()
) -> Finding | None:
    if d.call.callee not in _SPINNING or d.ms < min_ms:
        return None
    site = _spin_site(a, d)
    if site is None:
        return None
    cb, r = site
    # A polling loop (`do { if (ready) break; mdelay(10); } while (...)`, also one that
    # calls the helper holding the mdelay()) lives in low-level code that is often shared
    # with atomic paths: advisory only.
    # A busy-wait in a polling or retry loop (or in a helper a loop calls) often does not
    # run at all on a normal cycle (the first poll succeeds): a hint, not a finding.
    severity = Severity.HINT if d.in_loop or _hop_in_loop(a, r) else rule.severity
    # ...unless a bounded loop retries a transfer that sleeps (hdc3020_write_bytes():
    # i2c_transfer() then mdelay(10), up to 10 times, while the sensor measures): no atomic
    # caller can be there, and the device's busy answer is its normal one: the severity
    # policy prices the wait at every try
    retry = _sleeping_retry(d, sleeping) if d.in_loop else None
    if retry is not None:
        severity = rule.severity
    helper = _sleep_helper(r.model)
    if helper is not None and severity != Severity.HINT:
        # the driver's own helper picks mdelay() or msleep() by context (radeon_msleep()):
        # that helper, not msleep(), is the fix, and it knows contexts this rule does not
        severity = Severity.INFO
    cond = _path_conditions(a, d, r)
    looped = d.in_loop or _hop_in_loop(a, r)
    once = _once(a, d, r)
    if once:
        severity = Severity.HINT  # paid the first time only, not on every cycle
    if cond and _EVENT_FLAG.search(cond) and severity != Severity.HINT:
        severity = Severity.INFO  # after a rare event (a reset interrupt's flag), not per cycle
    return _report(
        rule, a, d, severity, cb, r,
        callee=d.call.callee,
        arg=d.call.args[0],
        value=f"{d.ms:g}",
        callback=cb.function,
        via=a.ctx.via(r),
        total=_spin_total(a, cb, d),
        when=(f" when {_quote(cond, 160)}" if cond else "") + _loop_text(d, looped)
        + (f" (only the first time: until `{once}` is set)" if once else ""),
        instead=(f"{helper}()" if helper else "msleep() or fsleep()") + (
            f" (the loop retries {retry[0]}(), which sleeps, so nothing atomic runs it: up"
            f" to {retry[1]} tries, {fmt_ms(retry[1] * d.ms)} of one CPU while the device is"
            " busy)" if retry is not None else ""
        ),
        spin_ms=retry[1] * d.ms if retry is not None else None,
    )  # fmt: skip


def _tries(d: Delay, loop: ts.Node) -> int | None:
    """How many times a `for (i = 0; i < N; i++)` loop runs at most, N a constant."""
    if loop.type != "for_statement":
        return None
    cond = loop.child_by_field_name("condition")
    init = loop.child_by_field_name("initializer")
    if cond is None or cond.type != "binary_expression":
        return None
    op = cond.child_by_field_name("operator")
    right = cond.child_by_field_name("right")
    defines = d.file.model.defines
    bound = eval_int(cnav.text(right), defines) if right is not None else None
    start_text = cnav.text(init).rsplit("=", 1)[-1].strip(" ;") if init is not None else ""
    start = eval_int(start_text, defines) if start_text else None
    if op is None or bound is None or start is None or op.type not in ("<", "<="):
        return None
    n = bound - start + (op.type == "<=")
    return n if 0 < n <= 1000 else None


def _enclosing_loop(d: Delay) -> ts.Node | None:
    """The innermost loop around the delay in its function, if any."""
    node = d.node
    while node is not None and node.type not in _LOOPS and node.type != "function_definition":
        node = node.parent
    return node if node is not None and node.type in _LOOPS else None


def _sleeping_retry(d: Delay, sleeping: tuple[str, ...]) -> tuple[str, int] | None:
    """(the sleeping call, `sleeping`'s fnmatch patterns, made in the loop around the delay;
    how many times that loop runs at most) when the loop is bounded to more than one try."""
    loop = _enclosing_loop(d) if sleeping else None
    if loop is None:
        return None
    name = next(
        (name for name, _c in cnav.calls_under(loop)
         if any(fnmatch.fnmatchcase(name, p) for p in sleeping)),
        None,
    )  # fmt: skip
    tries = _tries(d, loop) if name is not None else None
    return (name, tries) if name is not None and tries is not None and tries > 1 else None


def _spin_total(a: _Analysis, cb: Callback, d: Delay) -> str:
    """` (X ms of busy-waits on the longest path through cb())` when the callback's worst
    path spins longer than this one wait (two mdelay(100) in a power-up: 200 ms)."""
    cost = a.cost(cb.function, spinning=True)
    if cost.fixed <= d.ms:
        return ""
    return f" ({fmt_ms(cost.fixed)} of busy-waits on the longest path through {cb.function}())"


_EVENT_FLAG = re.compile(r"\btest_(?:and_(?:clear|set)_)?bit\s*\(")
_DRIVER_SLEEP = re.compile(r"[a-z0-9]+_(?:msleep|sleep_or_delay|delay_or_sleep)")


def _sleep_helper(model: FileModel) -> str | None:
    """A small function of the file that calls both a sleeping and a spinning delay (a
    wrapper that chooses by context, like radeonfb's radeon_msleep())."""
    cached = model.__dict__.get("_sleep_helper", False)
    if cached is not False:
        return cached  # type: ignore[no-any-return]
    # it reads every msleep() of the file: an edit near one is judged by the answer
    found = footprint.answer(model, "<sleep helper>", _find_sleep_helper)
    model.__dict__["_sleep_helper"] = found
    return found


def _find_sleep_helper(model: FileModel) -> str | None:
    found = None
    for c in model.calls_to(*_SLEEPING):
        fn = model.functions.get(c.caller or "")
        if fn is None or fn.span.end_line - fn.span.line > 30 or not c.args:
            continue
        # a wrapper passes its caller's time to both (`msleep(ms)` and `mdelay(ms)`); a
        # function that sleeps 2 ms here and spins 20 ms there is no such helper
        wait = c.args[0].strip()
        if wait.isidentifier() and any(
            x.callee in _SPINNING and x.args and x.args[0].strip() == wait
            for x in model.calls_in(fn.name)
        ):
            found = fn.name
            break
    if found is None:  # defined in the driver's header: `radeon_msleep()` called here
        found = next(
            (n for n in sorted(model.callee_names(matching=_DRIVER_SLEEP))
             if n not in _SLEEPING and n not in _SPINNING),
            None,
        )  # fmt: skip
    return found


@lru_cache(maxsize=512)
def _define_of(name: str) -> re.Pattern[bytes]:
    return re.compile(rb"#\s*define\s+" + re.escape(name.encode()) + rb"\b[^\n]*")


def _first_define(source: bytes, name: str, pattern: re.Pattern[bytes]) -> re.Match[bytes] | None:
    """`pattern.search(source)`, tried only where `name` occurs after `#define` (a search of
    the whole text per delay is quadratic in a file whose delays grow with its length)."""
    for p in words.positions(source, name):
        q = words.spaces_before(source, p)
        if q == p or source[q - 6 : q] != b"define":
            continue
        r = words.spaces_before(source, q - 6)
        if r > 0 and source[r - 1] == 0x23:  # #
            m = pattern.match(source, r - 1)
            if m is not None:
                return m
    return None

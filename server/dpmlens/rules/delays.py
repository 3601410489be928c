"""Checker `delays`: fixed delays on PM paths, for three rules (match.report):

- `beyond-spec` (delay-beyond-spec): waits longer than a known spec minimum, or long waits
  whose comment admits padding (warning), other long waits in PM callbacks (info);
- `msleep-under-20ms`: msleep() below 20 ms on a PM path;
- `busy-wait` (busy-wait-in-pm-callback): mdelay()/udelay() >= min_ms on a sleepable PM path.
"""

from __future__ import annotations

import re
import weakref
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

import tree_sitter as ts

from dpmlens.findings import Finding, Fix, Severity, TextEdit
from dpmlens.model.build import build_model
from dpmlens.model.phases import PHASES
from dpmlens.model.types import CallSite, FileModel
from dpmlens.paths import rules_dir
from dpmlens.rules import cnav
from dpmlens.rules.context import Callback, Context, Reached
from dpmlens.rules.delayvalue import Value, evaluate
from dpmlens.rules.loader import Rule, RuleError, load_table
from dpmlens.rules.plugin import Keywords, checker

_UNIT_MS = {"s": 1000.0, "ms": 1.0, "us": 0.001, "ns": 0.000001}
_LOOPS = frozenset({"for_statement", "while_statement", "do_statement"})
_LOCKS = re.compile(
    r"\b(?:raw_)?spin_lock(?:_irq|_irqsave|_bh)?\s*\(|\blocal_irq_(?:disable|save)\s*\(|"
    r"\bpreempt_disable\s*\(|\b(?:read|write)_lock(?:_irq|_irqsave|_bh)?\s*\("
)
_UNLOCKS = re.compile(
    r"\b(?:raw_)?spin_unlock(?:_irq|_irqrestore|_bh)?\s*\(|\blocal_irq_(?:enable|restore)\s*\(|"
    r"\bpreempt_enable\s*\(|\b(?:read|write)_unlock(?:_irq|_irqrestore|_bh)?\s*\("
)


@dataclass(frozen=True)
class Quantity:
    id: str
    title: str
    min_ms: float
    source: str
    keywords: tuple[str, ...]


@dataclass(frozen=True)
class SpecTable:
    quantities: tuple[Quantity, ...]
    constants: dict[str, tuple[Quantity, int, str, str]]  # name -> (q, raw, unit, documented)
    padding_words: re.Pattern[str]
    delay_functions: dict[str, tuple[int, str]]
    report_from_ms: float
    unit_constants: dict[str, str]


@lru_cache(maxsize=4)
def _spec(overrides: tuple[tuple[str, float], ...]) -> SpecTable:
    try:
        return _parse_spec(load_table("spec-delays"), dict(overrides))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        if isinstance(exc, RuleError):
            raise
        where = rules_dir() / "tables" / "spec-delays.yaml"
        raise RuleError(f"{where}: malformed spec table: {type(exc).__name__}: {exc}") from None


def _parse_spec(data: dict[str, Any], over: dict[str, float]) -> SpecTable:
    quantities = []
    constants: dict[str, tuple[Quantity, int, str, str]] = {}
    for q in data.get("quantities", []):
        quantity = Quantity(
            id=str(q["id"]),
            title=str(q.get("title", q["id"])),
            min_ms=float(over.get(str(q["id"]), q["min_ms"])),
            source=str(q.get("source", "")),
            keywords=tuple(str(k) for k in q.get("keywords", []) or []),
        )
        quantities.append(quantity)
        for name, c in (q.get("constants") or {}).items():
            constants[str(name)] = (
                quantity,
                int(c["value"]),
                str(c.get("unit", "ms")),
                str(c.get("documented", "")),
            )
    for name, (_q, _raw, unit, _doc) in constants.items():
        if unit not in _UNIT_MS:
            raise ValueError(f"constant {name}: unknown unit {unit!r}")
    for name, v in (data.get("delay_functions") or {}).items():
        if str(v.get("unit", "ms")) not in _UNIT_MS:
            raise ValueError(f"delay function {name}: unknown unit {v.get('unit')!r}")
    words = "|".join(re.escape(w) for w in data.get("padding_words", []))
    return SpecTable(
        quantities=tuple(quantities),
        constants=constants,
        padding_words=re.compile(rf"\b(?:{words})\b", re.IGNORECASE) if words else re.compile("$^"),
        delay_functions={
            str(k): (int(v.get("arg", 0)), str(v.get("unit", "ms")))
            for k, v in (data.get("delay_functions") or {}).items()
        },
        report_from_ms=float(data.get("report_from_ms", 20)),
        unit_constants={str(k): str(v) for k, v in (data.get("unit_constants") or {}).items()},
    )


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
        return self.value.base * _UNIT_MS[self.unit]

    @property
    def most_ms(self) -> float:
        return self.value.most * _UNIT_MS[self.unit]


def _fmt(ms: float) -> str:
    if ms >= 10:
        return f"{round(ms):g} ms"
    if ms >= 1 or ms == 0:
        return f"{round(ms, 2):g} ms"
    return f"{ms * 1000:g} us"


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

    def __init__(self, ctx: Context, spec: SpecTable, model: FileModel) -> None:
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
        for call in model.calls_to(*names):
            if call.caller is not None:
                d = self._delay(call)
                if d is not None:
                    self.delays[call.start_byte] = d
                else:
                    index = self._param_index(call)
                    if index is not None:
                        self.by_param[call.start_byte] = (call, index)

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
        value = evaluate(hop.call.args[index], at, caller.defines)
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
            value = evaluate(call.args[arg_index], node, self.defines)
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
        for n in d.value.nodes:
            out += cnav.comments_near(n)
        source = self.model.source
        for name in d.value.identifiers:
            if name in self.model.defines:
                m = re.search(rb"#\s*define\s+" + re.escape(name.encode()) + rb"\b[^\n]*", source)
                if m:
                    line = m.group(0).decode("utf-8", "replace")
                    if "/*" in line or "//" in line:
                        out.append(line[line.find("/") :])
        return out

    def spec_link(self, d: Delay, comments: list[str]) -> tuple[Quantity, str, str] | None:
        """The spec quantity this delay implements, how we know, and where the padding is
        documented (empty when it is not)."""
        for name in sorted(d.value.identifiers):
            if name in self.spec.constants and name not in self.model.all_defines():
                quantity, raw, unit, documented = self.spec.constants[name]
                return quantity, f"{name} = {_fmt(raw * _UNIT_MS[unit])}", documented
        text = "\n".join(comments)
        for q in self.spec.quantities:
            for kw in q.keywords:
                if re.search(rf"(?<![\w-]){re.escape(kw)}(?![\w])", text):
                    return q, f"the comment names {q.id}", ""
        return None


class _Analysis:
    """The delays of the analysed file and, with a resolver, those its PM callbacks reach in
    helpers of other files (each evaluated in its own file); computed once per Context."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.spec = spec_table(ctx)
        self.delay_names = frozenset(self.spec.delay_functions)
        self.local = _FileDelays(ctx, self.spec, ctx.model)
        self.others: dict[str, _FileDelays] = {}  # path -> delays of a helper file
        # each callback's total of fixed delays
        self.total_ms: dict[str, float] = {}
        # Without a resolver the walk stays in this file: no delay here, nothing to reach.
        walk_needed = bool(self.local.delays or self.local.by_param or ctx.resolver is not None)
        # one walk per function: SIMPLE_DEV_PM_OPS names each function in three phases
        walks: dict[str, list[Reached]] = {}
        for cb in ctx.callbacks if walk_needed else ():
            seen: set[tuple[str, int]] = set()
            total = 0.0
            walk = walks.get(cb.function)
            if walk is None:
                walk = walks[cb.function] = list(ctx.reach(cb.function, towards=self.delay_names))
            for r in walk:
                fd = self.file_of(r.model)
                if fd is None:
                    continue
                start = r.call.start_byte
                if start in fd.by_param and start not in fd.delays:
                    caller = self.file_of(r.hops[-1].model) if r.hops else None
                    if caller is not None:
                        fd.delay_from_caller(r, caller)
                if start not in fd.delays:
                    continue
                fd.reached_by.setdefault(start, (cb, r))
                if (fd.model.path, start) not in seen:
                    seen.add((fd.model.path, start))
                    total += fd.delays[start].ms
            self.total_ms.setdefault(cb.function, total)

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
        for fd in self.others.values():
            for start, d in fd.delays.items():
                if start in fd.reached_by:
                    yield d


_FULL: OrderedDict[str, FileModel] = OrderedDict()
_FULL_SIZE = 16


def _full(model: FileModel) -> FileModel:
    """`model` with its tree and header loader: the workspace index hands out tree-less
    copies, and a delay needs its file's tree (loops, comments) and headers (#defines)."""
    if model.tree is not None:
        return model
    hit = _FULL.get(model.path)
    if hit is None or hit.source != model.source:
        hit = _FULL[model.path] = build_model(model.path, model.source)
        while len(_FULL) > _FULL_SIZE:
            _FULL.popitem(last=False)
    _FULL.move_to_end(model.path)
    return hit


_CACHE: dict[int, tuple[Context, _Analysis]] = {}


def analysis(ctx: Context) -> _Analysis:
    hit = _CACHE.get(id(ctx))
    if hit is None or hit[0] is not ctx:
        _CACHE.clear()
        hit = _CACHE[id(ctx)] = (ctx, _Analysis(ctx))
    return hit[1]




@dataclass(frozen=True)
class Options:
    report: Literal["beyond-spec", "msleep-under-20ms", "busy-wait"]
    min_ms: float = 10  # busy-wait: shortest reported busy-wait


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
    fields={"delay", "via", "reason", "cycle", "arg", "value", "function", "where", "loop",
            "callee", "phase", "callback"},
    keywords=_keywords,
)  # fmt: skip
def run(rule: Rule, ctx: Context) -> Iterator[Finding]:
    a = analysis(ctx)
    report = rule.match.get("report")
    if report == "beyond-spec":
        yield from _beyond_spec(rule, a)
    elif report == "msleep-under-20ms":
        yield from _msleep_short(rule, a)
    elif report == "busy-wait":
        yield from _busy_wait(rule, a, float(rule.match.get("min_ms", 10)))


def _where(a: _Analysis, d: Delay) -> tuple[Callback | None, Reached | None, str]:
    hit = d.file.reached_by.get(d.call.start_byte)
    if hit is None:
        return None, None, ""
    cb, r = hit
    return cb, r, f" in the {cb.phase} callback {cb.function}(){a.ctx.via(r)}"


def _finding(
    rule: Rule, a: _Analysis, d: Delay, severity: Severity, message: str,
    cb: Callback | None, r: Reached | None, fixes: tuple[Fix, ...] = (),
) -> Finding:  # fmt: skip
    return Finding(
        rule=rule.id,
        kernel_type=rule.kernel_type,
        severity=severity,
        path=d.file.model.path,
        span=d.call.span,
        message=message,
        function=d.call.caller,
        phase=cb.phase if cb else None,
        chain=a.ctx.chain(cb, r) if cb and r else (),
        fixes=fixes,
    )


def _call_text(d: Delay) -> str:
    return f"{d.call.callee}({', '.join(d.call.args)})"


def _beyond_spec(rule: Rule, a: _Analysis) -> Iterator[Finding]:
    for d in a.delays():
        cb, r, where = _where(a, d)
        comments = d.file.comments(d)
        link = d.file.spec_link(d, comments)
        waits = f"{_call_text(d)} waits {_fmt(d.ms)}"
        if d.most_ms > d.ms and d.value.conditional:
            waits += f" ({_fmt(d.most_ms)} with `{d.value.conditional[0]}`)"
        if link is not None:
            quantity, how, documented = link
            padding = d.ms - quantity.min_ms
            if padding <= 0:
                continue
            reason = (
                f": {_fmt(padding)} beyond the {_fmt(quantity.min_ms)} {quantity.id} minimum"
                f" ({quantity.source}; {how})"
            )
            severity = Severity.WARNING
            if documented:
                reason += f"; deliberate padding, {documented}"
                severity = Severity.INFO
        else:
            if cb is None or d.in_loop or d.ms < a.spec.report_from_ms:
                continue
            text = "\n".join(comments)
            admit = a.spec.padding_words.search(text)
            stated = _stated_need(text, d.ms)
            if admit and stated is not None:
                # "It takes 100ms to wake up so, 10ms extra should be enough": a stated need
                # plus a small, explained margin is reported with the margin, as info.
                reason = (
                    f': {_fmt(d.ms - stated)} of admitted margin ("{admit.group(0)}") over the'
                    f" {_fmt(stated)} the comment states"
                )
                severity = Severity.INFO
            elif admit:
                reason = f': the comment admits padding ("{admit.group(0)}"), no spec minimum known'
                severity = Severity.WARNING
            else:
                reason = ": a fixed wait with no known spec minimum"
                severity = Severity.INFO
        if cb is not None:
            total = _fmt(a.total_ms.get(cb.function, d.ms))
            cycle = f"{cb.function}() waits {total} in fixed delays on every {cb.phase}"
        else:
            cycle = (
                f"every call pays {_fmt(d.ms)} (no PM callback of this file reaches it; its"
                " callers may be in other files)"
            )
        message = rule.format_message(delay=waits, reason=reason, via=where, cycle=cycle)
        yield _finding(rule, a, d, severity, message, cb, r)


_STATED = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|msec|msecs|milliseconds?|us|usec|usecs|s)\b", re.I)


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


def _msleep_short(rule: Rule, a: _Analysis) -> Iterator[Finding]:
    for d in a.delays():
        if d.call.callee != "msleep" or not (0 < d.value.base < 20) or _context_switched(d, True):
            continue
        cb, r, where = _where(a, d)
        if cb is None:
            continue
        loop = (
            " (in a loop: the rounding lengthens every iteration, but check the loop's"
            " timeout, which a shorter sleep also shortens)"
            if d.in_loop
            else ""
        )
        message = rule.format_message(
            arg=d.call.args[0], value=d.value.base, function=d.call.caller, where=where, loop=loop
        )
        severity = Severity.INFO if d.in_loop else rule.severity
        fixes = () if d.in_loop else _sleep_fixes(a, d)
        yield _finding(rule, a, d, severity, message, cb, r, fixes)


def _sleep_fixes(a: _Analysis, d: Delay) -> tuple[Fix, ...]:
    """msleep(N) -> fsleep(N * 1000 us); for a literal also usleep_range(N000, 2 * N000)."""
    arg = d.call.args[0].strip()
    path = d.file.model.path
    if re.fullmatch(r"\d+", arg):
        us = int(arg) * 1000
        return (
            Fix(f"Use fsleep({us})", (TextEdit(path, d.call.span, f"fsleep({us})"),)),
            Fix(
                f"Use usleep_range({us}, {2 * us})",
                (TextEdit(path, d.call.span, f"usleep_range({us}, {2 * us})"),),
            ),
        )
    inner = arg if re.fullmatch(r"[A-Za-z_]\w*", arg) else f"({arg})"
    new = f"fsleep({inner} * USEC_PER_MSEC)"
    return (Fix(f"Use {new}", (TextEdit(path, d.call.span, new),)),)


def _net_locks(text: str, wrappers: dict[str, int]) -> int:
    """Locks taken minus released in `text`, counting the file's own lock wrappers."""
    n = len(_LOCKS.findall(text)) - len(_UNLOCKS.findall(text))
    for name, delta in wrappers.items():
        n += delta * len(re.findall(rf"\b{re.escape(name)}\s*\(", text))
    return n


_LOCKS_B = re.compile(_LOCKS.pattern.encode())
_UNLOCKS_B = re.compile(_UNLOCKS.pattern.encode())


def _lock_wrappers(model: Any) -> dict[str, int]:
    """Functions of the file that leave a lock taken (tg3_full_lock) or release one."""
    starts = sorted((fn.start_byte, fn.end_byte, name) for name, fn in model.functions.items())
    keys = [s for s, _e, _n in starts]
    net: dict[str, int] = {}
    for pattern, delta in ((_LOCKS_B, 1), (_UNLOCKS_B, -1)):
        for m in pattern.finditer(model.source):
            i = bisect_right(keys, m.start()) - 1
            if i >= 0 and starts[i][0] <= m.start() < starts[i][1]:
                net[starts[i][2]] = net.get(starts[i][2], 0) + delta
    return {name: (1 if n > 0 else -1) for name, n in net.items() if n}


def _lock_held(ctx: Context, model: Any, call: CallSite, wrappers: dict[str, int]) -> bool:
    """Is a spinlock / irq-off / preempt-off section open at `call` in its function?"""
    fn = model.functions.get(call.caller) if call.caller else None
    if fn is None:
        return False
    before = model.source[fn.start_byte : call.start_byte].decode("utf-8", "replace")
    return _net_locks(before, wrappers) > 0


# Registrations whose callback runs in atomic context: (registering call, argument index).
_ATOMIC_REGISTRATIONS = {
    "timer_setup": 1,
    "setup_timer": 1,
    "tasklet_setup": 1,
    "tasklet_init": 1,
    "request_irq": 1,
    "devm_request_irq": 2,
    "request_any_context_irq": 1,
    "request_threaded_irq": 1,  # the hard handler; the thread function may sleep
    "devm_request_threaded_irq": 2,
    "hrtimer_setup": 1,
}


# Callbacks the kernel calls with BHs or IRQs off: netdev watchdog/xmit/rx-mode, irq_chip ops.
_ATOMIC_FIELDS = re.compile(
    rb"\.(?:ndo_tx_timeout|ndo_start_xmit|ndo_set_rx_mode|irq_[a-z_]+)\s*=\s*&?\s*(\w+)"
)


def _atomic_entries(model: Any) -> set[str]:
    """Functions of the file that run in atomic context: IRQ handlers, timer and tasklet
    callbacks (by registration, and functions returning irqreturn_t)."""
    out: set[str] = set()
    for c in model.calls_to(*_ATOMIC_REGISTRATIONS):
        index = _ATOMIC_REGISTRATIONS.get(c.callee)
        if index is not None and len(c.args) > index:
            out.add(c.args[index].strip().lstrip("&"))
    for name, fn in model.functions.items():
        if b"irqreturn_t" in model.source[fn.start_byte : fn.start_byte + 60]:
            out.add(name)
    for m in _ATOMIC_FIELDS.finditer(model.source):
        out.add(m.group(1).decode())
    return out


def _atomic_callers(
    ctx: Context, model: Any, function: str | None, wrappers: dict[str, int]
) -> bool:
    """Is `function`, or a function calling it (three levels up), called with a lock held
    or from an atomic entry point (IRQ handler, timer, tasklet)?"""
    atomic = _atomic_entries(model)
    todo: list[str | None] = [function]
    seen: set[str] = set()
    for _level in range(4):
        nxt: list[str | None] = []
        for name in todo:
            if name is None or name in seen:
                continue
            seen.add(name)
            if name in atomic:
                return True
            for c in model.calls_to(name):
                if c.caller:
                    if _lock_held(ctx, model, c, wrappers):
                        return True
                    nxt.append(c.caller)
        todo = nxt
    return False


def _busy_wait(rule: Rule, a: _Analysis, min_ms: float) -> Iterator[Finding]:
    irq_safe = a.ctx.file_calls_any(("pm_runtime_irq_safe",))
    wrappers: dict[str, dict[str, int]] = {}  # path -> that file's lock wrappers

    def wrappers_of(model: FileModel) -> dict[str, int]:
        w = wrappers.get(model.path)
        if w is None:
            w = wrappers[model.path] = _lock_wrappers(model)
        return w

    for d in a.delays():
        if d.call.callee not in _SPINNING or d.ms < min_ms or _context_switched(d):
            continue
        cb, r, where = _where(a, d)
        if cb is None or r is None:
            continue
        if irq_safe and PHASES[cb.phase].kind == "runtime":
            continue
        if _lock_held(a.ctx, r.model, r.call, wrappers_of(r.model)) or any(
            _lock_held(a.ctx, h.model, h.call, wrappers_of(h.model)) for h in r.hops
        ):
            continue
        if r.hops and _atomic_callers(a.ctx, r.model, d.call.caller, wrappers_of(r.model)):
            continue  # a helper shared with atomic callers cannot simply sleep
        message = rule.format_message(
            callee=d.call.callee,
            arg=d.call.args[0],
            value=f"{d.ms:g}",
            phase=cb.phase,
            callback=cb.function,
            via=a.ctx.via(r),
        )
        # A polling loop (`do { if (ready) break; mdelay(10); } while (...)`) lives in low-level
        # helpers that are often shared with atomic paths: advisory only.
        severity = Severity.INFO if d.in_loop else rule.severity
        yield _finding(rule, a, d, severity, message, cb, r)

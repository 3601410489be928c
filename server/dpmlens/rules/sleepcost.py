"""The static cost of a callback: the fixed delays on its worst path, and the waits it may do.

A small estimator for `async-suspend-not-enabled`. It walks the syntax tree of a function and
of the helpers it calls in the same file: a sequence adds up, `if`/`else`, `switch` and `?:`
keep their costlier side, a branch that handles a failure (`if (ret) ...`, or one that logs an
error or warning) costs nothing (no device pays it on a good resume), a block stops at its
`return` (what follows is reached through goto labels), and a delay inside a loop is a poll,
not a fixed delay. A helper called with a constant argument (`foo_power(p, OFF)`) takes that
branch when the condition evaluates, and claims neither side when it does not. A delay under
a condition, or after a non-error early return, is named with that condition. Delay values
come from `delayvalue.evaluate` (literals, #defines, locals, the caller's constants).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass, field

import tree_sitter as ts

from dpmlens.config.settings import DEFAULT_HELPER_DEPTH
from dpmlens.model import footprint, words
from dpmlens.model.consteval import eval_int
from dpmlens.model.types import FileModel
from dpmlens.rules import cnav
from dpmlens.rules.delayvalue import evaluate

_WORD = re.compile(r"\b[A-Za-z_]\w*\b")
# An argument that fixes a callee's branches: a literal, an upper-case constant, a boolean.
_CONSTANT = re.compile(r"-?(?:0[xX][0-9a-fA-F]+|\d+)[uUlL]*|[A-Z][A-Z0-9_]*|true|false|NULL")
_UNIT_MS = {"s": 1000.0, "ms": 1.0, "us": 0.001, "ns": 0.000001}
_LOOPS = frozenset({"for_statement", "while_statement", "do_statement"})
_PAREN_LOOKAHEAD = 64  # bytes after a name searched for the `(` that makes it a call
# An `if` condition that tests a failure (not negated): its branch is an error path, retries
# included (`if (ret) { msleep(50); ret = retry(); }`).
_ERROR_TEST = re.compile(r"\b(?:ret|rc|err|error|retval|status|rv|result)\b|IS_ERR|<\s*0")
_SUCCESS_TEST = re.compile(r"==\s*0\b|>=\s*0\b|!\s*(?:ret|rc|err|error)\b")
# A branch that logs at error or warning level handles a failure, whatever its condition.
_ERROR_LOG = re.compile(r"^(?:dev|pr|netdev|drm|DRM|dev_err_probe)_?(?:err|warn|WARN|ERROR)|^WARN")


class _Undecided(Exception):
    """A branch depends on a constant argument that cannot be evaluated here."""


@dataclass(frozen=True)
class Item:
    """One cost on the path: `msleep(100)` in foo_reset(), maybe under a condition."""

    call: str  # the call as written, e.g. "msleep(100)"
    function: str  # the function it is in
    ms: float  # fixed milliseconds (0 for a wait of unknown length)
    kind: str  # "delay", "wait", "firmware"
    condition: str = ""  # the condition it runs under, as the callback's reader sees it
    line: int = 0


@dataclass(frozen=True)
class Cost:
    ms: float = 0.0  # fixed delays on the costliest path
    items: tuple[Item, ...] = ()  # what makes up `ms`, then the waits (kind != "delay")

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.ms + other.ms, self.items + other.items)

    @property
    def delays(self) -> tuple[Item, ...]:
        return tuple(i for i in self.items if i.kind == "delay")

    @property
    def waits(self) -> tuple[Item, ...]:
        return tuple(i for i in self.items if i.kind != "delay")


def _max(a: Cost, b: Cost) -> Cost:
    """The costlier alternative; waits of both stay known (either may run)."""
    keep, other = (a, b) if a.ms >= b.ms else (b, a)
    extra = tuple(i for i in other.waits if i not in keep.items)
    return Cost(keep.ms, keep.items + extra)


@dataclass
class Estimator:
    """Costs of the functions of one file; `tree` is that file's syntax tree."""

    model: FileModel
    tree: ts.Tree
    delay_functions: dict[str, tuple[int, str]]  # name -> (argument index, unit)
    wait_functions: dict[str, str]  # name -> kind ("wait" or "firmware")
    defines: dict[str, str]
    depth: int = DEFAULT_HELPER_DEPTH
    _memo: dict[tuple[str, int, tuple[tuple[str, str], ...]], Cost] = field(default_factory=dict)
    # parameters of the function being walked that its caller passed a constant: name -> text
    _consts: dict[str, str] = field(default_factory=dict)
    _marks: list[int] | None = None  # start bytes of the calls that can cost something

    def _interesting(self, node: ts.Node) -> bool:
        """Does `node` hold a delay, a wait, or a call to a helper that (within `depth`)
        reaches one? Subtrees without one cost nothing and are not walked."""
        if self._marks is None:
            self._marks = self._find_marks()
        i = bisect_left(self._marks, node.start_byte)
        return i < len(self._marks) and self._marks[i] < node.end_byte

    def _find_marks(self) -> list[int]:
        """Start bytes of the costly calls and of the calls to helpers leading to them (the
        helpers by a text search: a hit outside a call only makes the walk enter a subtree)."""
        calls = self.model.calls_to(*self.delay_functions, *self.wait_functions)
        marks = [c.start_byte for c in calls]
        seen = {c.caller for c in calls if c.caller}
        names = set(seen)
        if not names:
            return marks
        spans = sorted((f.start_byte, f.end_byte, f.name) for f in self.model.functions.values())
        starts = [sp[0] for sp in spans]
        src = self.model.source
        for _ in range(self.depth):
            callers: set[str] = set()
            for name in names:
                footprint.searched(self.model, name)
                for pos in _call_positions(src, name):
                    marks.append(pos)
                    i = bisect_left(starts, pos + 1) - 1
                    if i >= 0 and pos < spans[i][1]:
                        callers.add(spans[i][2])
            names = callers - seen
            seen |= callers
            if not names:
                break
        return sorted(marks)

    def function_cost(
        self, name: str, depth: int | None = None, consts: dict[str, str] | None = None
    ) -> Cost:
        left = self.depth if depth is None else depth
        key = (name, left, tuple(sorted((consts or {}).items())))
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        self._memo[key] = Cost()  # recursion: a cycle adds nothing
        node = self._definition(name)
        body = node.child_by_field_name("body") if node is not None else None
        outer, self._consts = self._consts, dict(consts or {})
        try:
            cost = self._cost(body, name, left, "") if body is not None else Cost()
        finally:
            self._consts = outer
        self._memo[key] = cost
        return cost

    def _bound(self, node: ts.Node, callee: str) -> dict[str, str]:
        """The callee's parameters that this call passes a constant (`foo_power(x, OFF)`)."""
        definition = self._definition(callee)
        args = node.child_by_field_name("arguments")
        if definition is None or args is None:
            return {}
        params = cnav.parameter_names(definition)
        texts = [cnav.text(a).strip() for a in args.named_children if a.type != "comment"]
        out: dict[str, str] = {}
        for param, arg in zip(params, texts, strict=False):
            arg = self._consts.get(arg, arg)
            if param and _CONSTANT.fullmatch(arg):
                out[param] = arg
        return out

    def _decide(self, condition: str) -> bool | None:
        """True/False when `condition` is fixed by a constant argument, None when it is not
        about one; raises _Undecided when it is but cannot be evaluated here."""
        names = set(_WORD.findall(condition)) & self._consts.keys()
        if not names:
            return None
        expr = _WORD.sub(lambda m: self._consts.get(m.group(0), m.group(0)), condition)
        value = eval_int(expr, self.defines)
        if value is None:
            raise _Undecided
        return value != 0

    def _definition(self, name: str) -> ts.Node | None:
        fn = self.model.functions.get(name)
        if fn is None:
            return None
        footprint.read_function(self.model, name)
        node = self.tree.root_node.descendant_for_byte_range(fn.start_byte, fn.end_byte)
        while node is not None and node.type != "function_definition":
            node = node.parent
        if node is None or node.start_byte > fn.start_byte or node.end_byte < fn.end_byte:
            return None
        return node

    def _cost(self, node: ts.Node, fn: str, left: int, cond: str) -> Cost:
        if not self._interesting(node):
            return Cost()
        kind = node.type
        if kind == "if_statement":
            return self._if(node, fn, left, cond)
        if kind == "conditional_expression":
            c = node.child_by_field_name("condition")
            total = self._cost(c, fn, left, cond) if c is not None else Cost()
            a, b = node.child_by_field_name("consequence"), node.child_by_field_name("alternative")
            ca = self._cost(a, fn, left, cnav.text(c)) if a is not None else Cost()
            cb = self._cost(b, fn, left, cnav.text(c)) if b is not None else Cost()
            return total + _max(ca, cb)
        if kind == "switch_statement":
            if set(cnav.identifiers_in(node.child_by_field_name("condition") or node)) & set(
                self._consts
            ):
                return Cost()  # a switch on a constant argument: which case runs is not known
            body = node.child_by_field_name("body")
            best = Cost()
            for case in body.named_children if body is not None else ():
                best = _max(best, self._seq(case.named_children, fn, left, "switch case"))
            return best
        if kind in _LOOPS:
            if kind == "do_statement" and cnav.text(node.child_by_field_name("condition")) in (
                "(0)", "0"
            ):  # fmt: skip
                return self._seq(node.children, fn, left, cond)
            inner = self._seq(node.children, fn, left, cond)
            return Cost(0.0, inner.waits + tuple(_poll(i) for i in inner.delays))
        if kind == "call_expression":
            return self._call(node, fn, left, cond)
        return self._seq(node.children, fn, left, cond)

    def _seq(self, nodes: list[ts.Node], fn: str, left: int, cond: str) -> Cost:
        total = Cost()
        for child in nodes:
            if child.is_named and child.type != "comment":
                total = total + self._cost(child, fn, left, cond)
                if child.type == "return_statement":
                    break  # what follows is reached only through a goto label: error paths
                if not cond:  # `if (!x->needs_resume) return 0;`: the rest runs only if x
                    cond = _early_exit(child)
        return total

    def _if(self, node: ts.Node, fn: str, left: int, cond: str) -> Cost:
        c = node.child_by_field_name("condition")
        ctext = _condition(node)
        total = self._cost(c, fn, left, cond) if c is not None else Cost()
        cons, alt = node.child_by_field_name("consequence"), node.child_by_field_name("alternative")
        try:
            decided = self._decide(ctext)
        except _Undecided:  # `if (POWER_IS_ON(power))` with power = a constant: which side
            return total  # runs is unknown, and claiming either would name the wrong one
        if decided is not None:
            taken = cons if decided else alt
            return total + (self._cost(taken, fn, left, cond) if taken is not None else Cost())
        error_branch = _is_error_test(ctext)
        a = Cost()
        if cons is not None and not error_branch and not _logs_error(cons):
            a = self._cost(cons, fn, left, ctext)
        b = Cost()
        if alt is not None and not _logs_error(alt):
            b = self._cost(alt, fn, left, f"!({ctext})")
        return total + _max(a, b)

    def _call(self, node: ts.Node, fn: str, left: int, cond: str) -> Cost:
        args = node.child_by_field_name("arguments")
        total = self._seq(args.children, fn, left, cond) if args is not None else Cost()
        callee = cnav.text(node.child_by_field_name("function"))
        line = node.start_point[0] + 1
        if callee in self.delay_functions:
            ms = self._delay_ms(node, callee)
            if ms is not None and ms > 0:
                item = Item(_short(node), fn, ms, "delay", cond, line)
                return total + Cost(ms, (item,))
            return total
        wait = self.wait_functions.get(callee)
        if wait is not None:
            return total + Cost(0.0, (Item(_short(node), fn, 0.0, wait, cond, line),))
        if left > 0 and callee in self.model.functions and callee != fn:
            inner = self.function_cost(callee, left - 1, self._bound(node, callee))
            if cond:  # the condition of this call, the one the callback's reader sees
                inner = Cost(inner.ms, tuple(_under(i, cond) for i in inner.items))
            return total + inner
        return total

    def _delay_ms(self, node: ts.Node, callee: str) -> float | None:
        index, unit = self.delay_functions[callee]
        args = node.child_by_field_name("arguments")
        named = [a for a in args.named_children if a.type != "comment"] if args else []
        if len(named) <= index:
            return None
        expr = cnav.text(named[index])
        if self._consts:  # `foo_reset(priv, 100)` -> `msleep(ms)`: the caller's constant
            expr = _WORD.sub(lambda m: self._consts.get(m.group(0), m.group(0)), expr)
        value = evaluate(expr, node, self.defines, self.model.source, self.tree.root_node)
        if value is None or value.base < 0:
            return None
        return value.base * _UNIT_MS[unit]


def _condition(if_node: ts.Node) -> str:
    ctext = cnav.text(if_node.child_by_field_name("condition")).strip()
    return ctext[1:-1].strip() if ctext.startswith("(") and ctext.endswith(")") else ctext


def _is_error_test(ctext: str) -> bool:
    return (
        not ctext.startswith("!")
        and _ERROR_TEST.search(ctext) is not None
        and _SUCCESS_TEST.search(ctext) is None
    )


def _early_exit(stmt: ts.Node) -> str:
    """The condition under which the code after `stmt` runs, if `stmt` is a non-error early
    exit (`if (!glue->needs_resume) return 0;` -> "glue->needs_resume"); else ""."""
    if stmt.type != "if_statement" or stmt.child_by_field_name("alternative") is not None:
        return ""
    cons = stmt.child_by_field_name("consequence")
    ctext = _condition(stmt)
    if cons is None or not cnav._exits(cons) or _is_error_test(ctext) or _logs_error(cons):
        return ""
    if re.fullmatch(r"!\s*\w+", ctext):  # `if (!musb) return 0;`: a validity check
        return ""
    if re.fullmatch(r"!\s*[\w>.-]+", ctext):
        return ctext[1:].strip()
    return f"!({ctext})"


def _call_positions(src: bytes, name: str) -> list[int]:
    """Where `name` is written as a whole word followed by `(`."""
    size = len(name.encode())
    return [
        pos
        for pos in words.positions(src, name)
        if src[pos + size : pos + size + _PAREN_LOOKAHEAD].lstrip()[:1] == b"("
    ]


def _logs_error(node: ts.Node) -> bool:
    return any(_ERROR_LOG.match(name) for name, _n in cnav.calls_under(node))


def _poll(item: Item) -> Item:
    return Item(item.call, item.function, 0.0, "wait", item.condition, item.line)


def _under(item: Item, cond: str) -> Item:
    return Item(item.call, item.function, item.ms, item.kind, cond, item.line)


def _short(node: ts.Node, limit: int = 60) -> str:
    s = " ".join(cnav.text(node).split())
    return s if len(s) <= limit else s[: limit - 4] + "...)"

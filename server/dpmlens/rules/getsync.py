"""Checker `get-sync-leak`: pm_runtime_get_sync() whose failure path keeps the usage count.

pm_runtime_get_sync() raises the usage count even when it fails. Where its result goes:
    if (pm_runtime_get_sync(dev) < 0) ...      (also inside unlikely()/WARN_ON())
    ret = pm_runtime_get_sync(dev); ... if (ret < 0) ...   (the first statement that reads
        `ret`, a few statements later, or after an #ifdef/#else block)
    return pm_runtime_get_sync(dev);  /  ret = ...; return ret;
A failure branch leaks when it leaves the function (return, or goto a label whose code up to
the return holds no put) without a put, in the branch or in a helper it calls. Whether that is
a leak of the function depends on who drops the reference on success:
- the function itself, later (a put after the test): the early exit skips it: a leak;
- someone else (the reference outlives the function): a leak when the failure is reported to
  a caller that does not release on failure (kernel convention, and the callback slots of
  rules/tables/callback-release.yaml `not_released`); none when the framework calls the paired
  release anyway (`paired` slots, and void functions whose failure nobody sees), or when every
  caller in the file ignores the result.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import tree_sitter as ts

from dpmlens.findings import Finding, Fix, Severity, Span, TextEdit
from dpmlens.model.types import CallSite
from dpmlens.rules import cnav
from dpmlens.rules.callback_release import ReleaseTable, SlotFact, load_release_table
from dpmlens.rules.context import Context
from dpmlens.rules.loader import Rule
from dpmlens.rules.ops_slots import Slot, slots_by_function
from dpmlens.rules.plugin import Keywords, checker
from dpmlens.syntax.parser import node_span

_CALLEE = "pm_runtime_get_sync"
_PUT = re.compile(r"\b(?:__)?pm_runtime_put\w*\s*\(")
_PUTS = frozenset(
    {
        "pm_runtime_put",
        "pm_runtime_put_noidle",
        "pm_runtime_put_sync",
        "pm_runtime_put_autosuspend",
        "pm_runtime_put_sync_autosuspend",
        "pm_runtime_put_sync_suspend",
        "__pm_runtime_put_autosuspend",
    }
)
_WRAPPERS = ("unlikely", "WARN_ON", "WARN_ON_ONCE")  # transparent around a condition
_PREPROC_ALT = ("preproc_else", "preproc_elif", "preproc_elifdef")
_EXITS = ("return_statement", "goto_statement", "break_statement", "continue_statement")


@dataclass(frozen=True)
class _Use:
    """What is done with the result: tested by `if_node` ('pure'/'extra' failure test, the
    failure branch) or returned ('return')."""

    kind: str  # "pure" | "extra" | "return"
    subject: str  # the variable, or the call's text for the direct forms
    if_node: ts.Node | None = None
    branch: ts.Node | None = None  # the statement run on failure
    via_else: bool = False  # the test is for success; `branch` is its else
    elsewhere: bool = False  # the test is outside the call's #if branch (may test other values)


# --- what the result flows into -----------------------------------------------------------


def _strip(cond: str) -> str:
    c = cond.strip()
    while True:
        if c.startswith("(") and c.endswith(")") and _balanced(c[1:-1]):
            c = c[1:-1].strip()
            continue
        m = re.fullmatch(rf"(?:{'|'.join(_WRAPPERS)})\s*\((.*)\)", c, re.S)
        if m and _balanced(m.group(1)):
            c = m.group(1).strip()
            continue
        return c


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if depth < 0:
            return False
    return depth == 0


def _test_of(cond: str, subject: str) -> tuple[str, bool] | None:
    """(kind, failure_when_true): how `cond` tests `subject`. 'pure' tests only the result
    for failure (or its negation, for success), 'extra' adds conditions with &&."""
    c = _strip(cond)
    s = re.escape(subject)
    if re.fullmatch(rf"{s}(\s*<\s*0|\s*!=\s*0)?", c) or re.fullmatch(
        rf"IS_ERR_VALUE\s*\(\s*{s}\s*\)", c
    ):
        return "pure", True
    if re.fullmatch(rf"{s}\s*>=\s*0|!\s*{s}|{s}\s*==\s*0", c):
        return "pure", False
    if re.match(rf"{s}\s*<\s*0\s*&&", c):
        return "extra", True
    return None


def _use_of(node: ts.Node) -> _Use | None:
    cur = node
    while cur.parent is not None and (
        cur.parent.type in ("binary_expression", "parenthesized_expression", "unary_expression")
        or (cur.parent.type == "argument_list" and _wrapper_call(cur.parent.parent))
        or (cur.parent.type == "call_expression" and _wrapper_call(cur.parent))
    ):
        cur = cur.parent
    parent = cur.parent
    if parent is None:
        return None
    if parent.type == "if_statement" and parent.child_by_field_name("condition") == cur:
        return _if_use(parent, cnav.text(node))
    if parent.type == "return_statement" and cur.type in (
        "call_expression",
        "parenthesized_expression",
    ):
        return _Use("return", cnav.text(node))
    var, stmt = _assigned(node)
    if var is None or stmt is None:
        return None
    for s in _following(stmt):
        if var in cnav.identifiers_in(s):
            if s.type == "if_statement":
                cond = s.child_by_field_name("condition")
                use = (
                    _if_use(s, var)
                    if cond is not None and var in cnav.identifiers_in(cond)
                    else None
                )
                return replace(use, elsewhere=s.parent != stmt.parent) if use else None
            if s.type == "return_statement" and _strip(cnav.text(s)[6:].rstrip(";")) == var:
                return _Use("return", var)
            return None
        if _PUT.search(cnav.text(s)) or s.type in _EXITS:
            return None  # put (or left) before the result is looked at
    return None


def _wrapper_call(node: ts.Node | None) -> bool:
    if node is None or node.type != "call_expression":
        return False
    return cnav.text(node.child_by_field_name("function")) in _WRAPPERS


def _if_use(if_node: ts.Node, subject: str) -> _Use | None:
    cond = if_node.child_by_field_name("condition")
    found = _test_of(cnav.text(cond), subject) if cond is not None else None
    if found is None:
        return None
    kind, failure_when_true = found
    branch = if_node.child_by_field_name("consequence" if failure_when_true else "alternative")
    if branch is not None and branch.type == "else_clause":
        branch = next((c for c in branch.named_children if c.type != "comment"), None)
    if branch is None:
        return None
    return _Use(kind, subject, if_node, branch, via_else=not failure_when_true)


def _assigned(node: ts.Node) -> tuple[str | None, ts.Node | None]:
    """`ret = call;` / `int ret = call;` -> ("ret", the statement)."""
    parent = node.parent
    if parent is None or parent.parent is None:
        return None, None
    if parent.type == "assignment_expression":
        op = parent.child_by_field_name("operator")
        left = parent.child_by_field_name("left")
        if (
            op is not None
            and op.type == "="
            and left is not None
            and left.type == "identifier"
            and parent.parent.type == "expression_statement"
        ):
            return cnav.text(left), parent.parent
    elif parent.type == "init_declarator":
        decl = parent.child_by_field_name("declarator")
        if decl is not None and decl.type == "identifier" and parent.parent.type == "declaration":
            return cnav.text(decl), parent.parent
    return None, None


def _following(stmt: ts.Node) -> Iterator[ts.Node]:
    """The statements after `stmt` in its block, in order; out of an `#if`/`#else` branch
    the walk goes on after the `#endif` (the other branch is skipped)."""
    cur = stmt
    while True:
        sib = cur.next_named_sibling
        while sib is not None and sib.type not in _PREPROC_ALT:
            if sib.type != "comment":
                yield sib
            sib = sib.next_named_sibling
        parent = cur.parent
        while parent is not None and parent.type in _PREPROC_ALT:
            parent = parent.parent
        if parent is None or parent.type not in ("preproc_if", "preproc_ifdef"):
            return
        cur = parent


# --- does the failure branch leave without a put? ----------------------------------------


class _Puts:
    """Put detection in code and in the same-file helpers it calls (memoized per file)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._helpers: dict[str, bool] = {}

    def in_node(self, node: ts.Node, start: int | None = None, end: int | None = None) -> bool:
        lo = node.start_byte if start is None else start
        hi = node.end_byte if end is None else end
        src = self.ctx.model.source[lo:hi].decode("utf-8", "replace")
        if _PUT.search(src):
            return True
        return any(
            lo <= call.start_byte < hi and self._helper_puts(name)
            for name, call in cnav.calls_under(node)
        )

    def _helper_puts(self, name: str) -> bool:
        known = self._helpers.get(name)
        if known is None:
            known = False
            if self.ctx.lookup(name, self.ctx.model) is not None:
                known = any(True for _ in self.ctx.reach(name, towards=_PUTS))
            self._helpers[name] = known
        return known


def _leaves_without_put(branch: ts.Node, func: ts.Node, puts: _Puts) -> str | None:
    """'return' / 'goto <label>' when the failure branch leaves the function without a put."""
    if puts.in_node(branch):
        return None
    last = branch
    if branch.type == "compound_statement":
        named = [c for c in branch.named_children if c.type != "comment"]
        if not named:
            return None
        last = named[-1]
    if last.type == "return_statement":
        return "return"
    if last.type == "goto_statement":
        label = cnav.text(last.child_by_field_name("label"))
        region = _label_region(func, label)
        if region is None or puts.in_node(func, *region):
            return None
        return f"goto {label}"
    return None


def _label_region(func: ts.Node, label: str) -> tuple[int, int] | None:
    """Byte range from `label:` to the end of the first return after it (None: not found)."""
    body = func.child_by_field_name("body")
    stack = [body] if body is not None else []
    target = None
    while stack and target is None:
        n = stack.pop()
        if n.type == "labeled_statement" and cnav.text(n.child_by_field_name("label")) == label:
            target = n
        stack.extend(n.children)
    if target is None:
        return None
    for n in _document_order(func):
        if n.start_byte >= target.start_byte and n.type == "return_statement":
            return target.start_byte, n.end_byte
    return target.start_byte, func.end_byte


def _document_order(node: ts.Node) -> Iterator[ts.Node]:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


# --- the function's role ------------------------------------------------------------------


def _returns_void(func: ts.Node) -> bool:
    kind = func.child_by_field_name("type")
    decl = func.child_by_field_name("declarator")
    return cnav.text(kind) == "void" and decl is not None and decl.type == "function_declarator"


class _Roles:
    """Which callback slots the functions of this file fill (computed on first need)."""

    def __init__(self, ctx: Context, table: ReleaseTable) -> None:
        self.ctx = ctx
        self.table = table
        self._slots: dict[str, list[Slot]] | None = None

    def slots(self, function: str) -> list[Slot]:
        if self._slots is None:
            root = self.ctx.tree().root_node
            self._slots = slots_by_function(root, self.table.unique_members())
        return self._slots.get(function, [])

    def paired(self, function: str) -> SlotFact | None:
        return next(
            (f for s in self.slots(function) if (f := self.table.pairing(s.struct_type, s.member))),
            None,
        )

    def unreleased(self, function: str) -> Slot | None:
        """The slot `function` fills whose failure its framework does not release."""
        return next(
            (s for s in self.slots(function) if self.table.unreleased(s.struct_type, s.member)),
            None,
        )

    def callers_all_paired(self, function: str, is_static: bool) -> bool:
        """A static function called in this file only from paired callbacks."""
        calls = self._callers(function) if is_static else []
        return bool(calls) and all(self.paired(c.caller or "") is not None for c in calls)

    def _callers(self, function: str) -> list[CallSite]:
        return [c for c in self.ctx.model.calls_to(function) if c.caller and c.caller != function]

    def failure_unseen_by_callers(self, function: str, is_static: bool) -> bool:
        """A static function whose every caller in the file ignores its result or is a
        paired callback (the paired release runs anyway)."""
        if not is_static:
            return False
        calls = self._callers(function)
        if not calls:
            return False
        for call in calls:
            node = self.ctx.call_node(call)
            ignored = (
                node is not None
                and node.parent is not None
                and (node.parent.type == "expression_statement")
            )
            if not ignored and self.paired(call.caller or "") is None:
                return False
        return True


# --- the rule -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Options:
    """No options: the framework facts live in rules/tables/callback-release.yaml."""


@checker(
    "get-sync-leak",
    Options,
    fields={"function", "why", "advice"},
    keywords=Keywords(words=(_CALLEE,)),
)
def run(rule: Rule, ctx: Context) -> Iterator[Finding]:
    """pm_runtime_get_sync() whose failure path leaves with the usage count raised."""
    calls = ctx.model.calls_to(_CALLEE)
    if not calls:
        return
    table = load_release_table(_rules_dir(rule))
    roles = _Roles(ctx, table)
    puts = _Puts(ctx)
    for call in calls:
        if call.caller is None:
            continue
        node = ctx.call_node(call)
        func = cnav.function_of(node) if node is not None else None
        if node is None or func is None:
            continue
        use = _use_of(node)
        if use is None:
            continue
        verdict = _judge(call, node, func, use, ctx, roles, puts)
        if verdict is None:
            continue
        fixes: tuple[Fix, ...] = ()
        if verdict.fixable and rule.fix is not None and _positive_unused(func, use):
            fixes = (_fix(rule, ctx, call, use),)
        yield ctx.report(
            rule,
            call,
            severity=verdict.severity,
            fixes=fixes,
            why=verdict.why,
            advice=verdict.advice,
        )


def _rules_dir(rule: Rule) -> str | None:
    """The rules directory the rule came from (its table lives beside it)."""
    if not rule.path:
        return None
    return str(Path(rule.path).parent)


@dataclass(frozen=True)
class _Verdict:
    why: str
    fixable: bool  # pm_runtime_resume_and_get() is a correct edit (before the value check)
    severity: Severity | None = None  # None: the rule's
    advice: str = "use pm_runtime_resume_and_get()"


def _judge(
    call: CallSite,
    node: ts.Node,
    func: ts.Node,
    use: _Use,
    ctx: Context,
    roles: _Roles,
    puts: _Puts,
) -> _Verdict | None:
    name = call.caller or ""
    if use.kind == "return":
        slot = roles.unreleased(name)
        if slot is None:
            return None  # the caller decides; nothing known about it here
        why = (
            f"it returns the result as {slot.struct_type}.{slot.member}(), whose failure the "
            "framework does not release"
        )
        return _Verdict(why, True)
    if use.branch is None or use.if_node is None:
        return None
    exit_kind = _leaves_without_put(use.branch, func, puts)
    if exit_kind is None:
        return None
    path = "this error path" if exit_kind == "return" else f"its error path ({exit_kind})"
    why = f"{path} returns without a put"
    if not puts.in_node(func, use.if_node.end_byte, _success_end(use.if_node, func)):
        # The success path keeps the reference: does its release run when this failed?
        if _retakes(call, ctx):
            return None  # the caller's reference, dropped above: the caller's error path puts
        if roles.paired(name) is not None:
            return None  # the framework calls the paired release half anyway
        fn = ctx.model.functions.get(name)
        static = fn.is_static if fn else False
        if _returns_void(func):
            if roles.callers_all_paired(name, static):
                return None
            # Nobody sees the failure: whether the release half still runs is not known here.
            advice = "check that the put done elsewhere also runs when this failed"
            return _Verdict(why, False, Severity.INFO, advice)
        if roles.failure_unseen_by_callers(name, static):
            return None
    return _Verdict(why, use.kind == "pure")


def _retakes(call: CallSite, ctx: Context) -> bool:
    """Did the function drop more references on this device than it took before this get
    (`pm_runtime_put_sync(dev); ...; ret = pm_runtime_get_sync(dev);`)? Then the get takes
    back a reference its caller holds, and the caller's error path drops it."""
    device = call.args[0] if call.args else None
    balance = 0
    for c in ctx.model.calls_in(call.caller):
        if c.start_byte >= call.start_byte:
            break
        if not c.args or c.args[0] != device:
            continue
        if c.callee.startswith(("pm_runtime_put", "__pm_runtime_put")):
            balance -= 1
        elif c.callee.startswith("pm_runtime_get") or c.callee == "pm_runtime_resume_and_get":
            balance += 1
    return balance < 0


_STRAIGHT = frozenset(
    {"compound_statement", "labeled_statement", "preproc_if", "preproc_ifdef", "preproc_else"}
)


def _success_end(if_node: ts.Node, func: ts.Node) -> int:
    """End of the success path after the test: the first return after it that runs whenever
    the code after the test does (not inside another if, loop or switch); else the function's
    end. A put before it is the success path's own put."""
    around = set()
    cur: ts.Node | None = if_node
    while cur is not None:
        around.add(cur.id)
        cur = cur.parent
    for n in _document_order(func):
        if n.type != "return_statement" or n.start_byte < if_node.end_byte:
            continue
        up = n.parent
        while up is not None and up.id not in around and up.type in _STRAIGHT:
            up = up.parent
        if up is not None and up.id in around:
            return n.end_byte
    return func.end_byte


def _positive_unused(func: ts.Node, use: _Use) -> bool:
    """Is the positive return value (1: already active) never read? Only the failure test
    reads a direct call's result. For a variable, every read on the straight path after the
    test, and in the label code of every goto taken on it (but the failure branch's, which
    sees the same negative value after the fix), must come after a plain `var = ...;` that
    dominates it. A returned result goes to a caller of a not-released slot, which tests
    `< 0` or `!= 0` only (see the table)."""
    if use.kind == "return" or use.if_node is None or not use.subject.isidentifier():
        return True
    if use.via_else:
        return False  # the success branch reads the value (`if (ret >= 0) {...}`)
    var, after = use.subject, use.if_node.end_byte
    straight_end = _success_end(use.if_node, func)
    branch = use.branch
    for n in _document_order(func):
        if not after <= n.start_byte < straight_end:
            continue
        if n.type == "identifier" and cnav.text(n) == var:
            if not _written(n) and not _dominated(n, var, after):
                return False
        elif n.type == "goto_statement":
            if branch is not None and branch.start_byte <= n.start_byte < branch.end_byte:
                continue
            if _dominated(n, var, after):
                continue
            region = _label_region(func, cnav.text(n.child_by_field_name("label")))
            if region is None or _reads_in(func, var, *region):
                return False
    return True


def _written(ident: ts.Node) -> bool:
    """Is `ident` the target of a plain `=` assignment?"""
    assign = ident.parent
    return bool(
        assign is not None
        and assign.type == "assignment_expression"
        and assign.child_by_field_name("left") == ident
        and cnav.text(assign.child_by_field_name("operator")) == "="
    )


def _assigns(stmt: ts.Node, var: str) -> bool:
    """Is `stmt` a plain `var = <expression not reading var>;`?"""
    if stmt.type != "expression_statement" or not stmt.named_children:
        return False
    expr = stmt.named_children[0]
    left = expr.child_by_field_name("left") if expr.type == "assignment_expression" else None
    right = expr.child_by_field_name("right") if left is not None else None
    return (
        left is not None
        and right is not None
        and cnav.text(left) == var
        and _written(left)
        and var not in cnav.identifiers_in(right)
    )


def _dominated(node: ts.Node, var: str, after: int) -> bool:
    """Does a plain `var = ...;` after byte `after` run before `node` on every path to it
    (an earlier statement of a block that holds `node`)?"""
    cur = node
    while cur.parent is not None and cur.type != "function_definition":
        parent = cur.parent
        if parent.type == "compound_statement":
            for sib in parent.named_children:
                if sib.start_byte >= cur.start_byte:
                    break
                if sib.start_byte >= after and _assigns(sib, var):
                    return True
        cur = parent
    return False


def _reads_in(func: ts.Node, var: str, start: int, end: int) -> bool:
    return any(
        n.type == "identifier" and cnav.text(n) == var and not _written(n)
        for n in _document_order(func)
        if start <= n.start_byte < end
    )


def _fix(rule: Rule, ctx: Context, call: CallSite, use: _Use) -> Fix:
    """Rename the call; turn `if (ret < 0)` into `if (ret)` (resume_and_get never returns 1)."""
    edits = [TextEdit(ctx.model.path, call.callee_span, "pm_runtime_resume_and_get")]
    cond = use.if_node.child_by_field_name("condition") if use.if_node is not None else None
    if cond is not None and use.subject.isidentifier() and not use.elsewhere:
        inner = cond.named_children[0] if cond.named_children else None
        if inner is not None and re.fullmatch(
            rf"{re.escape(use.subject)}\s*<\s*0", cnav.text(inner)
        ):
            span: Span = node_span(inner)
            edits.append(TextEdit(ctx.model.path, span, use.subject))
    return Fix(str(rule.fix["title"]) if rule.fix else "", tuple(edits))

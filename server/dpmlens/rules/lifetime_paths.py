"""The ways out of a probe function and what runs on each (for the checker `lifetime-balance`).

A probe's error paths are its returns of an error (`return ret;` in a failure branch,
`return -ENOMEM;`, `return dev_err_probe(...)`, a `return` after an error label, the result of
a last call that may fail) and its `goto`s, whose path runs from the label to the first return
after it (a label ladder falls through). Structured, not a full data flow: a statement is on
the path from A to an exit E when it comes between them and is not inside a branch that leaves
the function without containing E (another error path's cleanup).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache

import tree_sitter as ts

from dpmlens.rules import cnav
from dpmlens.syntax.parser import LANGUAGE, captures

_EXIT_TYPES = frozenset({"return_statement", "goto_statement"})
_BRANCHES = frozenset({"if_statement", "else_clause", "case_statement", "compound_statement"})
_ERROR_CALLS = frozenset({"PTR_ERR", "dev_err_probe", "ERR_PTR", "PTR_ERR_OR_ZERO"})


@dataclass(frozen=True)
class Exit:
    node: ts.Node  # the return or goto statement
    kind: str  # "return" | "goto <label>" | "return <call>()"
    region: tuple[int, int] | None  # a goto's label-to-return byte range
    end_line: int  # the line of the return that ends the path (1-based)

    @property
    def line(self) -> int:
        return self.node.start_point[0] + 1


def function_exits(func: ts.Node) -> list[Exit]:
    """Every error exit of `func`, in document order (one walk of the body)."""
    body = func.child_by_field_name("body")
    if body is None:
        return []
    found = captures(_exits_query(), body)
    returns = found.get("return", [])
    gotos = found.get("goto", [])
    labels: dict[str, int] = {}
    for n in found.get("label", []):
        labels.setdefault(cnav.text(n.child_by_field_name("label")), n.start_byte)
    label_starts = sorted(labels.values())
    ladder = _ladder_start(body)
    out: list[Exit] = []
    for node in gotos:
        label = cnav.text(node.child_by_field_name("label"))
        start = labels.get(label)
        if start is None:
            continue
        ret = next((r for r in returns if r.start_byte >= start), None)
        if ret is not None and _is_success(ret):
            continue
        region = (start, ret.end_byte if ret is not None else func.end_byte)
        end = ret.start_point[0] + 1 if ret is not None else func.end_point[0] + 1
        out.append(Exit(node, f"goto {label}", region, end))
    for node in returns:
        if node.start_byte >= ladder:
            continue  # the end of the gotos' paths, reached by no fall-through
        kind = _error_return(node, label_starts)
        if kind is not None:
            out.append(Exit(node, kind, None, node.start_point[0] + 1))
    out.sort(key=lambda x: x.node.start_byte)
    return out


@cache
def _exits_query() -> ts.Query:
    query: ts.Query = ts.Query(
        LANGUAGE, "(return_statement) @return (goto_statement) @goto (labeled_statement) @label"
    )
    return query


def exits_after(exits: list[Exit], after: int) -> Iterator[Exit]:
    """The exits (of function_exits) that start after byte `after` and whose path does not
    begin before it (a retry loop's label)."""
    for x in exits:
        if x.node.start_byte >= after and (x.region is None or x.region[0] >= after):
            yield x


def _ladder_start(body: ts.Node) -> int:
    """Where the error-label ladder starts: the first top-level label that follows a return
    (code from there on runs only through gotos)."""
    prev = None
    for stmt in body.named_children:
        if stmt.type == "comment":
            continue
        if (
            stmt.type == "labeled_statement"
            and prev is not None
            and prev.type in ("return_statement", "goto_statement")
        ):
            return stmt.start_byte
        prev = stmt
    return body.end_byte


def success_end(func: ts.Node) -> int:
    """Where the success path of `func` ends: its first top-level return (code after it, the
    error ladder, runs only through gotos)."""
    body = func.child_by_field_name("body")
    if body is None:
        return func.end_byte
    for stmt in body.named_children:
        if stmt.type == "return_statement":
            return stmt.start_byte
    return body.end_byte


def on_success_path(node: ts.Node, func: ts.Node) -> bool:
    """Does `node` run on the way to the function's normal return (not inside an error
    branch, not in the error ladder)?"""
    return node.start_byte < success_end(func) and not leaves_on_success(node)


def _value(ret: ts.Node) -> ts.Node | None:
    named = [c for c in ret.named_children if c.type != "comment"]
    return named[0] if named else None


def is_success(ret: ts.Node) -> bool:
    """`return 0;` (or another success value)."""
    return _is_success(ret)


def _is_success(ret: ts.Node) -> bool:
    v = _value(ret)
    return v is None or (v.type == "number_literal" and cnav.text(v) == "0")


def _error_return(ret: ts.Node, labels: list[int]) -> str | None:
    """'return' when this return gives up (an error or what a failing call returns)."""
    v = _value(ret)
    if v is None or _is_success(ret):
        return None
    while v.type == "parenthesized_expression" and v.named_children:
        v = v.named_children[0]
    if (
        v.type == "unary_expression"
        or v.type == "call_expression"
        and cnav.text(v.child_by_field_name("function")) in _ERROR_CALLS
    ):
        return "return"
    if v.type == "call_expression":
        # `return devm_foo_register(...);`: its failure is probe's
        return f"return {cnav.text(v.child_by_field_name('function'))}()"
    if v.type == "identifier":
        if _in_branch(ret) or any(lab < ret.start_byte for lab in labels):
            return "return"
        name = cnav.text(v)
        prev = previous_statement(ret)
        if prev is not None and _assigns_call(prev, name):
            return "return"
        return None
    if v.type in ("conditional_expression", "binary_expression"):
        return None
    return None


def _in_branch(node: ts.Node) -> bool:
    """Inside an if/else/switch branch of its function (not the top-level block)."""
    cur = node.parent
    while cur is not None and cur.type != "function_definition":
        if cur.type in ("if_statement", "else_clause", "case_statement"):
            return True
        cur = cur.parent
    return False


def previous_statement(stmt: ts.Node) -> ts.Node | None:
    """The statement before `stmt` in its block, comments skipped."""
    prev = stmt.prev_named_sibling
    while prev is not None and prev.type == "comment":
        prev = prev.prev_named_sibling
    return prev


def next_statement(stmt: ts.Node) -> ts.Node | None:
    """The statement after `stmt` in its block, comments skipped."""
    nxt = stmt.next_named_sibling
    while nxt is not None and nxt.type == "comment":
        nxt = nxt.next_named_sibling
    return nxt


def assigned_call(stmt: ts.Node | None) -> tuple[str, ts.Node] | None:
    """(`name`, the call) of `name = call(...);`; None for any other statement."""
    if stmt is None or stmt.type != "expression_statement" or not stmt.named_children:
        return None
    e = stmt.named_children[0]
    if e.type != "assignment_expression":
        return None
    left, right = e.child_by_field_name("left"), e.child_by_field_name("right")
    if right is None or right.type != "call_expression":
        return None
    return cnav.text(left).strip(), right


def _assigns_call(stmt: ts.Node, name: str) -> bool:
    """`name = call(...);` (the call's result is what the next return gives back)."""
    found = assigned_call(stmt)
    return found is not None and found[0] == name


# --- what runs between an acquire and an exit -----------------------------------------------


def reaches(a: ts.Node, e: ts.Node) -> bool:
    """Can control flow go from `a` (before) to `e`? False when they sit in the two arms of
    one `if` or in two cases of one `switch`, or when a statement between them always leaves
    the function (a return, a goto, an `if` whose arms both leave, a branch ending so)."""
    case = _case_of(a)
    switch = case.parent if case is not None else None
    while switch is not None and switch.type != "switch_statement":
        switch = switch.parent
    if (
        case is not None
        and switch is not None
        and switch.start_byte <= e.start_byte < switch.end_byte
        and not case.start_byte <= e.start_byte < case.end_byte
    ):
        return False  # another case of the same switch (a fall-through is not followed)
    cur: ts.Node | None = a
    while cur is not None and cur.type != "function_definition":
        parent = cur.parent
        if parent is None:
            break
        holds_e = parent.start_byte <= e.start_byte < parent.end_byte
        if holds_e and parent.type == "if_statement" and not _same_arm(parent, cur, e):
            return False
        if parent.type in ("compound_statement", "case_statement"):
            sib = cur.next_named_sibling
            while sib is not None and sib.start_byte <= e.start_byte:
                if sib.start_byte <= e.start_byte < sib.end_byte:
                    break
                if _always_leaves(sib):
                    return False
                sib = sib.next_named_sibling
        if holds_e:
            return True
        if _leaves(cur) or _always_leaves(cur):
            return False
        cur = parent
    return True


def _always_leaves(node: ts.Node) -> bool:
    """Does every way through `node` leave the function (return or goto)?"""
    if node.type in ("return_statement", "goto_statement"):
        return True
    if node.type == "compound_statement":
        named = [c for c in node.named_children if c.type != "comment"]
        return bool(named) and _always_leaves(named[-1])
    if node.type == "else_clause":
        named = [c for c in node.named_children if c.type != "comment"]
        return bool(named) and _always_leaves(named[-1])
    if node.type == "if_statement":
        cons = node.child_by_field_name("consequence")
        alt = node.child_by_field_name("alternative")
        return cons is not None and alt is not None and _always_leaves(cons) and _always_leaves(alt)
    return False


def _case_of(node: ts.Node) -> ts.Node | None:
    cur = node.parent
    while cur is not None and cur.type != "function_definition":
        if cur.type == "case_statement":
            return cur
        cur = cur.parent
    return None


def _same_arm(if_node: ts.Node, a: ts.Node, e: ts.Node) -> bool:
    cond = if_node.child_by_field_name("condition")
    if cond is not None and cond.start_byte <= a.start_byte < cond.end_byte:
        return True  # the acquire is in the condition: both arms follow it
    alt = if_node.child_by_field_name("alternative")
    if alt is None:
        return True
    return (a.start_byte >= alt.start_byte) == (e.start_byte >= alt.start_byte)


def _leaves(node: ts.Node) -> bool:
    """A branch (if arm, else, case, block) whose last statement returns or jumps away."""
    if node.type in ("return_statement", "goto_statement"):
        return True
    if node.type not in _BRANCHES or node.type == "if_statement":
        return False
    named = [c for c in node.named_children if c.type != "comment"]
    return bool(named) and named[-1].type in ("return_statement", "goto_statement")


def on_path(r: ts.Node, a_end: int, e: ts.Node) -> bool:
    """Does `r` (a call) run on the way from an acquire ending at `a_end` to exit `e`?
    It must lie between them and not inside a branch that leaves without containing `e`."""
    if not (a_end <= r.start_byte < e.start_byte):
        return False
    cur: ts.Node | None = r
    while cur is not None and cur.type != "function_definition":
        if cur.start_byte <= e.start_byte < cur.end_byte:
            return True
        if _leaves(cur):
            return False
        cur = cur.parent
    return True


def own_result_test(a: ts.Node) -> ts.Node | None:
    """The `if` that tests the result of the call `a` (`ret = f(); if (ret) ...` or
    `if (f() < 0) ...`): its failure branch is the call's own failure, not a later one."""
    stmt = cnav.statement_of(a)
    if stmt.type == "if_statement":
        return stmt
    var = None
    if stmt.type == "expression_statement" and stmt.named_children:
        e = stmt.named_children[0]
        if e.type == "assignment_expression":
            var = cnav.text(e.child_by_field_name("left"))
    elif stmt.type == "declaration":
        for d in stmt.children_by_field_name("declarator"):
            if d.type == "init_declarator":
                var = cnav.text(d.child_by_field_name("declarator"))
    elif stmt.type == "return_statement":
        return stmt
    if not var:
        return None
    nxt = stmt.next_named_sibling
    while nxt is not None and nxt.type == "comment":
        nxt = nxt.next_named_sibling
    if nxt is not None and nxt.type == "if_statement":
        cond = nxt.child_by_field_name("condition")
        if cond is not None and var in cnav.identifiers_in(cond):
            return nxt
    return None


def success_leaves(test: ts.Node) -> bool:
    """`if (!ret) return 0;` (or `if (ret == 0) goto done;`): the test of a set-up's result
    whose branch leaves on success, so the code after it runs when the set-up failed."""
    if test.type != "if_statement" or test.child_by_field_name("alternative") is not None:
        return False
    cond = cnav.text(test.child_by_field_name("condition")).replace(" ", "")
    if not (cond.startswith("(!") or "==0)" in cond):
        return False
    cons = test.child_by_field_name("consequence")
    if cons is None:
        return False
    named = (
        [c for c in cons.named_children if c.type != "comment"]
        if cons.type == ("compound_statement")
        else [cons]
    )
    return bool(named) and named[-1].type == "return_statement" and _is_success(named[-1])


def leaves_on_success(a: ts.Node) -> bool:
    """Is `a` inside a branch that always leaves with an error (an error path of its own)?"""
    cur = a.parent
    while cur is not None and cur.type != "function_definition":
        if cur.type in _BRANCHES and cur.type != "if_statement" and _leaves(cur):
            if cur.parent is not None and cur.parent.type == "function_definition":
                return False  # the function body: its last return is the success path
            named = [c for c in cur.named_children if c.type != "comment"]
            last = named[-1]
            return last.type == "goto_statement" or not _is_success(last)
        cur = cur.parent
    return False

"""Where the result of a call goes in a C function, and what the function does after it.

For the get-sync rule: `use_of(call)` finds the test of the result (the `if` around it, or
the first statement that reads the variable it is assigned to, a few statements later or after
an `#if`/`#else` block) or its return; `label_region` is the code a goto runs up to its return;
`success_end` ends the straight path after a test; `value_dead_after` says whether a variable's
value is read after the test (through the straight path and the gotos taken on it).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace

import tree_sitter as ts

from dpmlens.rules import cnav

PUT_CALL = re.compile(r"\b(?:__)?pm_runtime_put\w*\s*\(")  # any runtime-PM put

_WRAPPERS = ("unlikely", "WARN_ON", "WARN_ON_ONCE")  # transparent around a condition
_PREPROC_ALT = ("preproc_else", "preproc_elif", "preproc_elifdef")


_EXITS = ("return_statement", "goto_statement", "break_statement", "continue_statement")


@dataclass(frozen=True)
class Use:
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


def use_of(node: ts.Node) -> Use | None:
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
        return Use("return", cnav.text(node))
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
                return Use("return", var)
            return None
        if PUT_CALL.search(cnav.text(s)) or s.type in _EXITS:
            return None  # put (or left) before the result is looked at
    return None


def _wrapper_call(node: ts.Node | None) -> bool:
    if node is None or node.type != "call_expression":
        return False
    return cnav.text(node.child_by_field_name("function")) in _WRAPPERS


def _if_use(if_node: ts.Node, subject: str) -> Use | None:
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
    return Use(kind, subject, if_node, branch, via_else=not failure_when_true)


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


def label_region(func: ts.Node, label: str) -> tuple[int, int] | None:
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
    for n in document_order(func):
        if n.start_byte >= target.start_byte and n.type == "return_statement":
            return target.start_byte, n.end_byte
    return target.start_byte, func.end_byte


def document_order(node: ts.Node) -> Iterator[ts.Node]:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def returns_void(func: ts.Node) -> bool:
    kind = func.child_by_field_name("type")
    decl = func.child_by_field_name("declarator")
    return cnav.text(kind) == "void" and decl is not None and decl.type == "function_declarator"


_STRAIGHT = frozenset(
    {"compound_statement", "labeled_statement", "preproc_if", "preproc_ifdef", "preproc_else"}
)


def success_end(if_node: ts.Node, func: ts.Node) -> int:
    """End of the success path after the test: the first return after it that runs whenever
    the code after the test does (not inside another if, loop or switch); else the function's
    end. A put before it is the success path's own put."""
    around = set()
    cur: ts.Node | None = if_node
    while cur is not None:
        around.add(cur.id)
        cur = cur.parent
    for n in document_order(func):
        if n.type != "return_statement" or n.start_byte < if_node.end_byte:
            continue
        up = n.parent
        while up is not None and up.id not in around and up.type in _STRAIGHT:
            up = up.parent
        if up is not None and up.id in around:
            return n.end_byte
    return func.end_byte


def value_dead_after(func: ts.Node, use: Use) -> bool:
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
    straight_end = success_end(use.if_node, func)
    branch = use.branch
    for n in document_order(func):
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
            region = label_region(func, cnav.text(n.child_by_field_name("label")))
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
        for n in document_order(func)
        if start <= n.start_byte < end
    )

"""Small navigation helpers over the tree-sitter C tree: statements, conditions, comments."""

from __future__ import annotations

import tree_sitter as ts

from dpmlens.model.walker import parameter_names  # noqa: F401  (re-exported)

_STOP = frozenset({"function_definition", "translation_unit"})


def text(node: ts.Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "replace")


def function_of(node: ts.Node) -> ts.Node | None:
    cur: ts.Node | None = node
    while cur is not None and cur.type != "function_definition":
        cur = cur.parent
    return cur


def statement_of(node: ts.Node) -> ts.Node:
    """The innermost statement holding `node` (expression_statement, return, if, ...)."""
    cur = node
    while cur.parent is not None and cur.parent.type not in _STOP:
        if cur.type.endswith("_statement") or cur.type == "declaration":
            return cur
        cur = cur.parent
    return cur


def _condition_text(if_node: ts.Node) -> str:
    cond = if_node.child_by_field_name("condition")
    return text(cond)


def enclosing_conditions(node: ts.Node) -> list[tuple[str, bool]]:
    """Conditions that must hold for `node` to run, innermost first: (text, positive).

    `positive` is False for the else branch. `a && f()` counts `a` as a condition of f().
    """
    out: list[tuple[str, bool]] = []
    cur = node
    while cur.parent is not None and cur.parent.type not in _STOP:
        parent = cur.parent
        if parent.type == "if_statement":
            cond = parent.child_by_field_name("condition")
            if cond is not None and cur.start_byte >= cond.end_byte:
                alt = parent.child_by_field_name("alternative")
                in_else = alt is not None and alt.start_byte <= cur.start_byte
                out.append((text(cond), not in_else))
        elif parent.type == "conditional_expression":
            cond = parent.child_by_field_name("condition")
            if cond is not None and cur.start_byte >= cond.end_byte:
                out.append((text(cond), True))
        elif parent.type == "binary_expression":
            op = parent.child_by_field_name("operator")
            left = parent.child_by_field_name("left")
            if (
                op is not None
                and op.type in ("&&", "||")
                and left is not None
                and cur.start_byte >= left.end_byte
            ):
                out.append((text(left), op.type == "&&"))
        elif parent.type in ("while_statement", "for_statement"):
            cond = parent.child_by_field_name("condition")
            if cond is not None and cur.start_byte >= cond.end_byte:
                out.append((text(cond), True))
        cur = parent
    return out


def _exits(stmt: ts.Node) -> bool:
    """Does this statement (an if's consequence) always leave the function or loop?"""
    if stmt.type in ("return_statement", "goto_statement", "break_statement", "continue_statement"):
        return True
    if stmt.type == "compound_statement":
        named = [c for c in stmt.named_children if c.type != "comment"]
        return bool(named) and _exits(named[-1])
    return False


def guards_before(node: ts.Node) -> list[str]:
    """Conditions of early exits (`if (!x) return 0;`) that precede `node` in its blocks.

    Reaching `node` means each of these conditions was false.
    """
    out: list[str] = []
    cur = node
    while cur.parent is not None and cur.parent.type not in _STOP:
        parent = cur.parent
        if parent.type == "compound_statement":
            for sib in parent.named_children:
                if sib.start_byte >= cur.start_byte:
                    break
                if sib.type == "if_statement" and sib.child_by_field_name("alternative") is None:
                    cons = sib.child_by_field_name("consequence")
                    if cons is not None and _exits(cons):
                        out.append(_condition_text(sib))
        cur = parent
    return out


def comments_near(node: ts.Node, max_gap_lines: int = 1) -> list[str]:
    """Comments just before `node`'s statement (contiguous) and trailing on its last line."""
    stmt = statement_of(node)
    out: list[str] = []
    prev = stmt.prev_sibling
    line = stmt.start_point[0]
    while prev is not None and prev.type == "comment" and line - prev.end_point[0] <= max_gap_lines:
        out.append(text(prev))
        line = prev.start_point[0]
        prev = prev.prev_sibling
    nxt = stmt.next_sibling
    if nxt is not None and nxt.type == "comment" and nxt.start_point[0] == stmt.end_point[0]:
        out.append(text(nxt))
    # a comment at the end of the line inside the statement (multi-line argument lists)
    for child in stmt.children:
        if child.type == "comment":
            out.append(text(child))
    return out


def calls_under(node: ts.Node) -> list[tuple[str, ts.Node]]:
    """(callee name, call node) for every call expression inside `node`."""
    out: list[tuple[str, ts.Node]] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "call_expression":
            fn = n.child_by_field_name("function")
            if fn is not None and fn.type == "identifier":
                out.append((text(fn), n))
        stack.extend(reversed(n.children))
    return out


def identifiers_in(node: ts.Node) -> set[str]:
    out: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "identifier":
            out.add(text(n))
        stack.extend(n.children)
    return out

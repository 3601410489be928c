"""Decide C conditions from what is known on one call path.

`evaluate(node, bindings, defines)` gives the integer value of an expression node when the
path determines it: literals, `true`/`false`, #define'd constants, parameters bound to a
constant by the caller (`foo_set_suspend(info, 1)` binds `suspend` = 1), and the operators of
C with short-circuit logic (`suspend && x->y` is 0 when `suspend` is 0 whatever `x->y` is).
Anything else is None: unknown, so the walker keeps both branches.

`dead(call_node, bindings, defines, memo)` says whether a node cannot run on this path: an enclosing
`if`/`?:`/`&&`/`||`/`switch case` whose condition is decided against it, or an earlier early
exit (`if (!suspend) return 0;`) decided for it. `memo` (node id -> value, one dict per
bindings and file, kept by the caller) spares re-deciding the same conditions: every call of a
block asks again about each early exit before it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import tree_sitter as ts

from dpmlens.model.consteval import eval_int, parse_int_literal

Bindings = Mapping[str, int]
Memo = dict[int, "int | None"]

_STOP = frozenset({"function_definition", "translation_unit"})
_EXITS = frozenset({"return_statement", "goto_statement", "break_statement", "continue_statement"})
_MAX_DEPTH = 64


def evaluate(node: ts.Node | None, bindings: Bindings, defines: Mapping[str, str]) -> int | None:
    try:
        return _eval(node, bindings, defines, 0)
    except (ZeroDivisionError, OverflowError, ValueError, RecursionError):
        return None


def _text(node: ts.Node) -> str:
    return node.text.decode("latin-1") if node.text is not None else ""


def _eval(node: ts.Node | None, b: Bindings, d: Mapping[str, str], depth: int) -> int | None:
    if node is None or depth > _MAX_DEPTH:
        return None
    t = node.type
    if t == "number_literal":
        return parse_int_literal(_text(node))
    if t == "true":
        return 1
    if t in ("false", "null"):
        return 0
    if t == "identifier":
        name = _text(node)
        if name in b:
            return b[name]
        if name in ("true", "false"):
            return int(name == "true")
        return eval_int(name, d) if name in d else None
    if t == "parenthesized_expression":
        inner = [c for c in node.named_children if c.type != "comment"]
        return _eval(inner[0], b, d, depth + 1) if len(inner) == 1 else None
    if t == "cast_expression":
        return _eval(node.child_by_field_name("value"), b, d, depth + 1)
    if t == "call_expression":
        fn = node.child_by_field_name("function")
        args = node.child_by_field_name("arguments")
        if fn is not None and _text(fn) in ("likely", "unlikely") and args is not None:
            inner = [c for c in args.named_children if c.type != "comment"]
            if len(inner) == 1:
                v = _eval(inner[0], b, d, depth + 1)
                return None if v is None else int(bool(v))
        return None
    if t == "unary_expression":
        op = node.child_by_field_name("operator")
        v = _eval(node.child_by_field_name("argument"), b, d, depth + 1)
        if v is None or op is None:
            return None
        return {"!": int(not v), "-": -v, "~": ~v, "+": v}.get(op.type)
    if t == "binary_expression":
        return _binary(node, b, d, depth)
    if t == "conditional_expression":
        c = _eval(node.child_by_field_name("condition"), b, d, depth + 1)
        if c is None:
            return None
        arm = "consequence" if c else "alternative"
        return _eval(node.child_by_field_name(arm), b, d, depth + 1)
    return None


def _binary(node: ts.Node, b: Bindings, d: Mapping[str, str], depth: int) -> int | None:
    op_node = node.child_by_field_name("operator")
    if op_node is None:
        return None
    op = op_node.type
    left = _eval(node.child_by_field_name("left"), b, d, depth + 1)
    if op == "&&" and left == 0:
        return 0
    if op == "||" and left not in (None, 0):
        return 1
    right = _eval(node.child_by_field_name("right"), b, d, depth + 1)
    if op == "&&":
        if right == 0:
            return 0
        return None if left is None or right is None else 1
    if op == "||":
        if right not in (None, 0):
            return 1
        return None if left is None or right is None else 0
    if op == "&" and (left == 0 or right == 0):
        return 0
    if left is None or right is None:
        return None
    ops = {
        "+": lambda: left + right, "-": lambda: left - right, "*": lambda: left * right,
        "/": lambda: int(left / right), "%": lambda: left % right,
        "<<": lambda: left << right if 0 <= right < 128 else None,
        ">>": lambda: left >> right if right >= 0 else None,
        "&": lambda: left & right, "|": lambda: left | right, "^": lambda: left ^ right,
        "==": lambda: int(left == right), "!=": lambda: int(left != right),
        "<": lambda: int(left < right), "<=": lambda: int(left <= right),
        ">": lambda: int(left > right), ">=": lambda: int(left >= right),
    }  # fmt: skip
    f = ops.get(op)
    return f() if f is not None else None


# per block (by node id and start): its `if (...) return/goto/...;` without else, in order
Exits = dict[tuple[int, int], list[tuple[int, "ts.Node | None"]]]


def dead(
    node: ts.Node,
    bindings: Bindings,
    defines: Mapping[str, str],
    memo: Memo | None = None,
    exits: Exits | None = None,
) -> bool:
    """Can `node` not run on this path (see the module doc)? False when unsure. `exits`:
    what the blocks of this tree hold, kept across calls (it does not depend on bindings)."""
    if memo is None:
        memo = {}

    def decide(cond: ts.Node | None) -> int | None:
        if cond is None:
            return None
        key = cond.id
        if key not in memo:
            memo[key] = evaluate(cond, bindings, defines)
        return memo[key]

    cur = node
    while cur.parent is not None and cur.parent.type not in _STOP:
        parent = cur.parent
        t = parent.type
        if t in ("if_statement", "conditional_expression"):
            cond = parent.child_by_field_name("condition")
            if cond is not None and cur.start_byte >= cond.end_byte:
                v = decide(cond)
                alt = parent.child_by_field_name("alternative")
                in_alt = alt is not None and alt.start_byte <= cur.start_byte
                if v is not None and bool(v) == in_alt:
                    return True
        elif t == "binary_expression":
            op = parent.child_by_field_name("operator")
            left = parent.child_by_field_name("left")
            in_right = left is not None and cur.start_byte >= left.end_byte
            if op is not None and op.type in ("&&", "||") and in_right:
                v = decide(left)
                if v is not None and bool(v) == (op.type == "||"):
                    return True
        elif t == "case_statement":
            if _case_dead(parent, decide):
                return True
        elif t == "compound_statement" and _exited_before(parent, cur, decide, exits):
            return True
        cur = parent
    return False


def _exits(stmt: ts.Node) -> bool:
    if stmt.type in _EXITS:
        return True
    if stmt.type == "compound_statement":
        named = [c for c in stmt.named_children if c.type != "comment"]
        return bool(named) and _exits(named[-1])
    return False


def _exited_before(
    block: ts.Node,
    child: ts.Node,
    decide: Callable[[ts.Node | None], int | None],
    exits: Exits | None = None,
) -> bool:
    """An `if (cond) return ...;` before `child` in `block` whose condition holds."""
    for start, cond in _exiting_ifs(block, exits):
        if start >= child.start_byte:
            return False
        if decide(cond):
            return True
    return False


def _exiting_ifs(block: ts.Node, exits: Exits | None) -> list[tuple[int, ts.Node | None]]:
    """(start, condition) of each `if` without else in `block` whose branch leaves it."""
    key = (block.id, block.start_byte)
    hit = exits.get(key) if exits is not None else None
    if hit is None:
        hit = []
        for sib in block.named_children:
            if sib.type == "if_statement" and sib.child_by_field_name("alternative") is None:
                cons = sib.child_by_field_name("consequence")
                if cons is not None and _exits(cons):
                    hit.append((sib.start_byte, sib.child_by_field_name("condition")))
        if exits is not None:
            exits[key] = hit
    return hit


def _case_dead(case: ts.Node, decide: Callable[[ts.Node | None], int | None]) -> bool:
    """Is this `case` (or default) of a switch on a decided value never entered?"""
    body = case.parent
    switch = body.parent if body is not None else None
    if switch is None or switch.type != "switch_statement":
        return False
    value = decide(switch.child_by_field_name("condition"))
    if value is None:
        return False
    cases = [c for c in body.named_children if c.type == "case_statement"]
    matched = any(decide(c.child_by_field_name("value")) == value for c in cases)
    if any(decide(c.child_by_field_name("value")) is None and c.child_by_field_name("value")
           for c in cases):  # fmt: skip
        return False  # a label we cannot evaluate might match
    entered = False  # control reaches this label: it matches, or the previous case falls in
    for c in cases:
        v = decide(c.child_by_field_name("value"))
        is_default = c.child_by_field_name("value") is None
        entered = (v == value) or (is_default and not matched) or entered
        if c.start_byte == case.start_byte:
            return not entered
        entered = entered and not _ends_case(c)
    return False


def _ends_case(case: ts.Node) -> bool:
    stmts = [c for c in case.named_children if c.type not in ("comment",)]
    value = case.child_by_field_name("value")
    stmts = [s for s in stmts if value is None or s.start_byte != value.start_byte]
    return bool(stmts) and _exits(stmts[-1])

"""Checker `get-sync-leak`: pm_runtime_get_sync() whose failure path returns without a put.

Shapes recognised (anything else is left alone):
    ret = pm_runtime_get_sync(dev);     int ret = pm_runtime_get_sync(dev);
    if (ret < 0) return ret; / goto out;        (also `if (ret)`, `if (unlikely(ret < 0))`)
    if (pm_runtime_get_sync(dev) < 0) return -EIO;
A failure branch is a leak when it leaves (return, or goto a label whose code up to the next
return holds no put) without calling any pm_runtime_put*().
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import tree_sitter as ts

from dpmlens.findings import Finding, Fix, Span, TextEdit
from dpmlens.rules import cnav
from dpmlens.rules.context import Context
from dpmlens.rules.loader import Rule
from dpmlens.rules.plugin import Keywords, checker
from dpmlens.syntax.parser import node_span

_PUT = re.compile(r"\b(?:__)?pm_runtime_put\w*\s*\(")
_CALLEE = "pm_runtime_get_sync"


def _strip(cond: str) -> str:
    c = cond.strip()
    while c.startswith("(") and c.endswith(")") and _balanced(c[1:-1]):
        c = c[1:-1].strip()
    m = re.fullmatch(r"unlikely\s*\((.*)\)", c, re.S)
    return m.group(1).strip() if m and _balanced(m.group(1)) else c


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if depth < 0:
            return False
    return depth == 0


def _failure_test(cond: str, subject: str) -> str | None:
    """'pure' when cond tests exactly `subject` for failure, 'extra' when it adds more
    conditions with &&, None when it is not a failure test of subject."""
    c = _strip(cond)
    s = re.escape(subject)
    if re.fullmatch(rf"{s}(\s*<\s*0|\s*!=\s*0)?", c) or re.fullmatch(
        rf"IS_ERR_VALUE\s*\(\s*{s}\s*\)", c
    ):
        return "pure"
    if re.match(rf"{s}\s*<\s*0\s*&&", c):
        return "extra"
    return None


def _next_statement(stmt: ts.Node) -> ts.Node | None:
    nxt = stmt.next_named_sibling
    while nxt is not None and nxt.type == "comment":
        nxt = nxt.next_named_sibling
    return nxt


def _leaks(branch: ts.Node, func: ts.Node) -> bool:
    """Does this failure branch leave without a put?"""
    body = cnav.text(branch)
    if _PUT.search(body):
        return False
    last = branch
    if branch.type == "compound_statement":
        named = [c for c in branch.named_children if c.type != "comment"]
        if not named:
            return False
        last = named[-1]
    if last.type == "return_statement":
        return True
    if last.type == "goto_statement":
        label = last.child_by_field_name("label")
        if label is None:
            return False
        return not _label_puts(func, cnav.text(label))
    return False


def _label_puts(func: ts.Node, label: str) -> bool:
    """Does the code from `label:` up to the next return put? (True when unsure.)"""
    src = cnav.text(func)
    m = re.search(rf"(?m)^\s*{re.escape(label)}\s*:(?!:)", src)
    if m is None:
        return True
    tail = src[m.end() :]
    end = re.search(r"\breturn\b[^;]*;", tail)
    region = tail[: end.end()] if end else tail
    return bool(_PUT.search(region))




@dataclass(frozen=True)
class Options:
    """No options."""

@checker(
    "get-sync-leak", Options, fields={"function"}, keywords=Keywords(words=("pm_runtime_get_sync",))
)
def run(rule: Rule, ctx: Context) -> Iterator[Finding]:
    for call in ctx.model.calls_to(_CALLEE):
        if call.caller is None:
            continue
        node = ctx.call_node(call)
        if node is None:
            continue
        func = cnav.function_of(node)
        if func is None:
            continue
        found = _analyse(node)
        if found is None:
            continue
        if_node, kind, subject = found
        branch = if_node.child_by_field_name("consequence")
        if branch is None or not _leaks(branch, func):
            continue
        message = rule.format_message(function=call.caller)
        fixes = ()
        if kind == "pure" and rule.fix is not None:
            fixes = _fix(rule, ctx, call, if_node, subject, func)
        yield Finding(
            rule=rule.id,
            kernel_type=rule.kernel_type,
            severity=rule.severity,
            path=ctx.model.path,
            span=call.span,
            message=message,
            function=call.caller,
            fixes=fixes,
        )


def _analyse(node: ts.Node) -> tuple[ts.Node, str, str] | None:
    """(the if statement testing the result, 'pure'|'extra', what it tests)."""
    parent = node.parent
    # if (pm_runtime_get_sync(dev) < 0) / if (pm_runtime_get_sync(dev))
    cur = node
    while cur.parent is not None and cur.parent.type in (
        "binary_expression",
        "parenthesized_expression",
    ):
        cur = cur.parent
    if cur.parent is not None and cur.parent.type == "if_statement":
        cond = cur.parent.child_by_field_name("condition")
        if cond is not None and cond.start_byte <= node.start_byte < cond.end_byte:
            kind = _failure_test(cnav.text(cond), cnav.text(node))
            return (cur.parent, kind, cnav.text(node)) if kind else None
    if parent is None:
        return None
    var = None
    stmt = None
    if parent.type == "assignment_expression" and parent.parent is not None:
        op = parent.child_by_field_name("operator")
        left = parent.child_by_field_name("left")
        if op is not None and op.type == "=" and left is not None and left.type == "identifier":
            var, stmt = cnav.text(left), parent.parent
    elif parent.type == "init_declarator" and parent.parent is not None:
        decl = parent.child_by_field_name("declarator")
        if decl is not None and decl.type == "identifier":
            var, stmt = cnav.text(decl), parent.parent
    if var is None or stmt is None or stmt.type not in ("expression_statement", "declaration"):
        return None
    nxt = _next_statement(stmt)
    if nxt is None or nxt.type != "if_statement":
        return None
    cond = nxt.child_by_field_name("condition")
    kind = _failure_test(cnav.text(cond), var) if cond is not None else None
    return (nxt, kind, var) if kind else None


def _fix(
    rule: Rule, ctx: Context, call, if_node: ts.Node, subject: str, func: ts.Node
) -> tuple[Fix, ...]:
    """Rename the call; turn `if (ret < 0)` into `if (ret)` (resume_and_get never returns 1).
    Not offered when the code relies on the positive return value."""
    body = cnav.text(func)
    if subject.isidentifier() and re.search(
        rf"\b{re.escape(subject)}\s*(>\s*0|==\s*1|>=\s*1|>\s*=)", body
    ):
        return ()
    edits = [TextEdit(ctx.model.path, call.callee_span, "pm_runtime_resume_and_get")]
    cond = if_node.child_by_field_name("condition")
    if cond is not None and subject.isidentifier():
        inner = cond.named_children[0] if cond.named_children else None
        if inner is not None and re.fullmatch(rf"{re.escape(subject)}\s*<\s*0", cnav.text(inner)):
            span: Span = node_span(inner)
            edits.append(TextEdit(ctx.model.path, span, subject))
    return (Fix(str(rule.fix["title"]) if rule.fix else "", tuple(edits)),)

"""Evaluate the delay a call waits for: literals, #defines, arithmetic, known kernel constants,
local variables assigned earlier in the function (`t = 10 + 40; if (quirk) t += 100;`) and
struct fields that only the file's static initializers set (`.reset_delay_ms = 100` in a
match-data struct, then `msleep(priv->data->reset_delay_ms)`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import tree_sitter as ts

from dpmlens.model import footprint, words
from dpmlens.model.consteval import eval_int
from dpmlens.rules import cnav

_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
_COMPOUND = {"+=": lambda a, b: a + b, "-=": lambda a, b: a - b, "*=": lambda a, b: a * b}


@dataclass
class Value:
    """A delay argument's value in the argument's own unit."""

    base: int  # what every pass waits
    most: int  # with every conditional increment taken
    conditional: list[str] = field(default_factory=list)  # source of conditional increments
    identifiers: set[str] = field(default_factory=set)  # every identifier that fed the value
    nodes: list[ts.Node] = field(default_factory=list)  # assignments that fed the value
    # a struct field set by several initializers: (initialized variable, value) each; `base`
    # and `most` are then the largest (the device with that data waits it on every pass)
    variants: list[tuple[str, int]] = field(default_factory=list)


def identifiers_of(expr: str, defines: dict[str, str], depth: int = 8) -> set[str]:
    """Identifiers in `expr` and, transitively, in the #defines it uses."""
    out: set[str] = set()
    todo = set(_IDENT.findall(expr))
    while todo and depth > 0:
        depth -= 1
        nxt: set[str] = set()
        for name in todo - out:
            out.add(name)
            if name in defines:
                nxt |= set(_IDENT.findall(defines[name]))
        todo = nxt
    return out


def evaluate(
    expr: str, call_node: ts.Node | None, defines: dict[str, str], source: bytes | None = None,
    root: Any = None,
) -> Value | None:
    """`source`: the text of `call_node`'s tree, when the caller has it (else read from the
    tree: a copy of the whole file); `root`: that tree's root as the model gives it (a model
    spliced from several trees guards it: model/spliced.py), else the root above the node."""
    value = eval_int(expr, defines)
    if value is not None:
        return Value(value, value, identifiers=identifiers_of(expr, defines))
    name = expr.strip()
    if call_node is None:
        return None
    if re.fullmatch(r"[A-Za-z_]\w*", name):
        return _local(name, call_node, defines)
    m = _FIELD_ACCESS.fullmatch(name)
    if m is not None:
        return _field(m.group(1), call_node, defines, source, root)
    return None


# `priv->data->reset_delay_ms`, `cfg.delay`: a chain of member accesses ending in a field
_MEMBER = r"\s*(?:->|\.)\s*"
_FIELD_ACCESS = re.compile(rf"[A-Za-z_]\w*(?:{_MEMBER}[A-Za-z_]\w*)*{_MEMBER}([A-Za-z_]\w*)")


_IDENT_BYTES = re.compile(rb"[A-Za-z_]\w*")
# what may stand between `&` and a field whose address is taken (`&priv->cfg.delay_ms`)
_ADDRESS_PATH = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"
                          b" \t\n\r\x0b\x0c>.-[]")


@lru_cache(maxsize=256)
def _written(field_re: bytes) -> re.Pattern[bytes]:
    """The field, then an assignment, `++` or `--` (matched at the field)."""
    return re.compile(field_re + rb"\s*(?:[-+*/|&]?=(?!=)|\+\+|--)")


@lru_cache(maxsize=256)
def _copy_of(field_re: bytes) -> re.Pattern[bytes]:
    return re.compile(
        rb"(?:->|\.)\s*" + field_re + rb"\s*=\s*[\w>.\-\s]*?(?:->|\.)\s*" + field_re + rb"\s*;"
    )


def _address_taken(source: bytes, p: int) -> bool:
    """`&` then only names, spaces, `->`, `.` and `[]` up to the occurrence at `p`."""
    while p > 0 and source[p - 1] in _ADDRESS_PATH:
        p -= 1
    return p > 0 and source[p - 1] == 0x26  # &


def _field(
    name: str, call_node: ts.Node, defines: dict[str, str], source: bytes | None = None,
    root: Any = None,
) -> Value | None:
    """The values file-scope initializers give the field `name` (`.name = 100,`), when nothing
    else in the file writes it (no assignment, increment, or address taken for a reader such
    as of_property_read_u32()); None when any of that is unknown.

    Each test is made at the field's own occurrences (words.positions), not by a search of
    the whole text per field: a file's delays through fields grow with its length."""
    if root is None or source is None:
        root = call_node
        while root.parent is not None:
            root = root.parent
        if source is None or root.end_byte > len(source):  # not this tree's text after all
            source = root.text or b""
    footprint.searched_any_file(name)
    field_re = re.escape(name.encode())
    written = _written(field_re)
    # `priv->reset_ms = data->reset_ms;` copies match data: no other value
    copy = _copy_of(field_re)
    if _IDENT_BYTES.fullmatch(name.encode()) is None:
        return None  # not a C field name (kernel sources have none)
    at = words.positions(source, name)
    for p in at:
        start = words.spaces_before(source, p)
        if source[start - 2 : start] == b"->" and written.match(source, p) and not copy.match(
            source, start - 2
        ):
            return None
    if any(_address_taken(source, p) for p in at):
        return None
    out = Value(0, 0, identifiers={name})
    for p in at:
        start = words.spaces_before(source, p) - 1
        if start < 0 or source[start : start + 1] != b"." or not written.match(source, p):
            continue
        end = written.match(source, p).end()  # type: ignore[union-attr]
        if copy.match(source, start):
            continue
        node = root.descendant_for_byte_range(start, end)
        while node is not None and node.type not in ("initializer_pair", "function_definition"):
            node = node.parent
        if node is None or node.type != "initializer_pair" or cnav.function_of(node) is not None:
            return None  # `cfg.delay = x;` in code, or an initializer of a local variable
        value_node = node.child_by_field_name("value")
        v = eval_int(cnav.text(value_node), defines) if value_node is not None else None
        if v is None:
            return None
        out.identifiers |= identifiers_of(cnav.text(value_node), defines)
        out.nodes.append(node)
        out.variants.append((_initialized(node), v))
    if not out.variants:
        return None
    out.base = out.most = max(v for _n, v in out.variants)
    return out


def _initialized(pair: ts.Node) -> str:
    """The variable whose initializer holds `pair` (`foo_data` of `static const struct x
    foo_data = {...}`), or "" when it is not a plain declaration."""
    cur: ts.Node | None = pair
    while cur is not None and cur.type != "init_declarator":
        cur = cur.parent
    decl = cur.child_by_field_name("declarator") if cur is not None else None
    while decl is not None and decl.type != "identifier":
        decl = decl.child_by_field_name("declarator")
    return cnav.text(decl)


def _local(name: str, call_node: ts.Node, defines: dict[str, str]) -> Value | None:
    """Follow a local variable through its assignments before the call, in order."""
    func = cnav.function_of(call_node)
    if func is None:
        return None
    body = func.child_by_field_name("body")
    if body is None:
        return None
    assigns: list[tuple[ts.Node, str, ts.Node]] = []  # (node, operator, value node)
    declared = False
    # Every place that can declare, set or count `name` holds an identifier `name`: start
    # from each occurrence of the word before the call, not from every node of the body.
    text = body.text or b""
    stop = call_node.start_byte - body.start_byte
    for m in re.finditer(rb"\b" + re.escape(name.encode()) + rb"\b", text, 0):
        if m.start() >= stop:
            break
        at = body.start_byte + m.start()
        n = body.descendant_for_byte_range(at, at + len(m.group()))
        if n is None or n.type != "identifier":
            continue
        parent = n.parent
        if parent is not None and parent.type == "init_declarator" and (
            parent.child_by_field_name("declarator") == n
        ):
            declared = True
            val = parent.child_by_field_name("value")
            if val is not None:
                assigns.append((parent, "=", val))
        elif parent is not None and parent.type == "declaration":
            declared = True
        elif parent is not None and parent.type == "assignment_expression" and (
            parent.child_by_field_name("left") == n
        ):
            operator = parent.child_by_field_name("operator")
            val = parent.child_by_field_name("right")
            if operator is None or val is None:
                return None
            assigns.append((parent, operator.type, val))
        up: ts.Node | None = n
        while up is not None and up != body:
            if up.type == "update_expression":
                return None  # t++ / t-- : a loop counter, not a fixed delay
            up = up.parent
    if not declared or not assigns:
        return None  # a parameter, a global or a struct member: unknown here
    assigns.sort(key=lambda a: a[0].start_byte)
    call_conds = {c for c, _pos in cnav.enclosing_conditions(call_node)}
    base: int | None = None
    most = 0
    out = Value(0, 0)
    for node, op, val_node in assigns:
        v = eval_int(cnav.text(val_node), defines)
        if v is None:
            return None
        conds = [c for c, _pos in cnav.enclosing_conditions(node) if c not in call_conds]
        out.identifiers |= identifiers_of(cnav.text(val_node), defines)
        out.nodes.append(node)
        if op == "=":
            if conds and base is not None:
                # `if (x) t = 10; else t = 50;` : keep the smallest and largest
                base, most = min(base, v), max(most, v)
            else:
                base, most = v, v
                out.conditional.clear()
        elif op in _COMPOUND and base is not None:
            if conds:
                most = _COMPOUND[op](most, v)
                out.conditional.append(cnav.text(node))
            else:
                base, most = _COMPOUND[op](base, v), _COMPOUND[op](most, v)
        else:
            return None
    if base is None:
        return None
    out.base, out.most = base, max(base, most)
    return out

"""Which ops-struct member ("slot") a function is installed in, within one file.

A function is the callback of `<struct type>.<member>` when the file names it in an
initializer of that struct type:

    static const struct pwm_ops foo_pwm_ops = { .request = foo_request, ... };
    static struct foo_ops foo_table[] = { { .enable = a_enable }, { .enable = b_enable } };

or assigns it to that member: `dd->device_alloc_chan_resources = foo_alloc;`. The struct type
of an assignment is the declared type of its base variable (`struct input_dev *input` in the
same function, or at file scope) or, when unknown, the one type of `known_members` that has
that member. Nested initializers of other struct types (`.driver = {...}`) are not followed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import tree_sitter as ts

from dpmlens.rules import cnav
from dpmlens.syntax.parser import captures, load_query


@dataclass(frozen=True)
class Slot:
    struct_type: str  # "pwm_ops"
    member: str  # "request"
    instance: str  # the variable (and array index) or assignment base it belongs to


def slots_by_function(
    root: ts.Node, known_members: Mapping[str, str] | None = None
) -> dict[str, list[Slot]]:
    """function name -> the slots it is installed in. `known_members` maps a member name
    that belongs to one struct type only to that type (for assignments with unknown bases)."""
    out: dict[str, list[Slot]] = {}
    for function, slot in _slots(root, known_members or {}):
        found = out.setdefault(function, [])
        if slot not in found:
            found.append(slot)
    return out


def _slots(root: ts.Node, known: Mapping[str, str]) -> Iterator[tuple[str, Slot]]:
    # the query finds the candidates in C (a walk in Python visited every node of the tree);
    # outer before inner, as a walk from the root meets them
    found = captures(load_query("slots"), root)
    nodes = sorted(
        (n for kind in ("decl", "assign") for n in found.get(kind, ())),
        key=lambda n: (n.start_byte, -n.end_byte),
    )
    scopes: dict[int, dict[str, str]] = {}  # function node id -> its struct-typed names
    for node in nodes:
        if node.type == "declaration":
            yield from _from_declaration(node)
        else:
            slot = _from_assignment(node, known, scopes)
            if slot is not None:
                yield slot


def _struct_name(type_node: ts.Node | None) -> str | None:
    if type_node is None or type_node.type != "struct_specifier":
        return None
    name = type_node.child_by_field_name("name")
    return cnav.text(name) if name is not None else None


def _from_declaration(decl: ts.Node) -> Iterator[tuple[str, Slot]]:
    struct = _struct_name(decl.child_by_field_name("type"))
    if struct is None:
        return
    for init in decl.children_by_field_name("declarator"):
        if init.type != "init_declarator":
            continue
        value = init.child_by_field_name("value")
        target = init.child_by_field_name("declarator")
        if value is None or value.type != "initializer_list" or target is None:
            continue
        name = _declared_name(target)
        if target.type == "array_declarator":
            inner = [c for c in value.named_children if c.type == "initializer_list"]
            for index, element in enumerate(inner):
                yield from _members(element, struct, f"{name}[{index}]")
        else:
            yield from _members(value, struct, name)


def _declared_name(node: ts.Node) -> str:
    while node.type != "identifier":
        inner = node.child_by_field_name("declarator")
        if inner is None:
            return cnav.text(node)
        node = inner
    return cnav.text(node)


def _members(init_list: ts.Node, struct: str, instance: str) -> Iterator[tuple[str, Slot]]:
    for pair in init_list.named_children:
        if pair.type != "initializer_pair":
            continue
        designators = pair.children_by_field_name("designator")
        value = pair.child_by_field_name("value")
        if len(designators) != 1 or designators[0].type != "field_designator" or value is None:
            continue
        if value.type == "identifier":
            member = cnav.text(designators[0]).lstrip(".").strip()
            yield cnav.text(value), Slot(struct, member, instance)


def _from_assignment(
    node: ts.Node, known: Mapping[str, str], scopes: dict[int, dict[str, str]]
) -> tuple[str, Slot] | None:
    left = node.child_by_field_name("left")
    right = node.child_by_field_name("right")
    op = node.child_by_field_name("operator")
    if (
        left is None
        or right is None
        or left.type != "field_expression"
        or right.type != "identifier"
    ):
        return None
    if op is not None and op.type != "=":
        return None
    field_node = left.child_by_field_name("field")
    base = left.child_by_field_name("argument")
    if field_node is None or base is None:
        return None
    member = cnav.text(field_node)
    struct = _type_of(base, node, scopes) or known.get(member)
    if struct is None:
        return None
    return cnav.text(right), Slot(struct, member, cnav.text(base))


def _type_of(base: ts.Node, at: ts.Node, scopes: dict[int, dict[str, str]]) -> str | None:
    """The struct type of `base` when it is a variable declared in the enclosing function
    (parameter or local) as `struct X *base` / `struct X base`."""
    if base.type == "pointer_expression":  # (&x)->member is unusual; x.member is the common one
        base = base.child_by_field_name("argument") or base
    if base.type != "identifier":
        return None
    func = cnav.function_of(at)
    if func is None:
        return None
    names = scopes.get(func.id)
    if names is None:
        names = scopes[func.id] = _struct_names(func)
    return names.get(cnav.text(base))


def _struct_names(func: ts.Node) -> dict[str, str]:
    """name -> struct type of the function's struct-typed parameters and locals, each name
    taken from the first declaration of it that this walk order meets (read once per function,
    not once per assignment)."""
    names: dict[str, str] = {}
    stack = [func]
    while stack:
        n = stack.pop()
        if n.type in ("declaration", "parameter_declaration"):
            struct = _struct_name(n.child_by_field_name("type"))
            if struct is not None:
                for d in n.children_by_field_name("declarator"):
                    names.setdefault(_declared_name(d), struct)
        stack.extend(n.children)
    return names

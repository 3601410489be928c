"""Fixed-delay totals per function as the worst single path through its body.

A sequence adds up; `if/else`, `switch` and `?:` take the most expensive branch; the body of
an `if` without `else` is conditional and kept apart, named by its condition ("+ 100 ms only
with `priv->quirks & QUIRK_X`"); a delay inside a loop is no fixed total (the loop may run
any number of times) and only marks the cost as `looped`, except in a counted loop that runs
its whole body on every iteration (`for (i = 0; i < s->devtype->nr; i++) max310x_power(port,
1);`): its cost is kept per iteration (`repeated`), named by the loop. What a call costs (a
delay, or a helper's own path cost) is the caller's business: `path_cost(body, leaf)`; what
the path knows about conditions (the constants a caller passed), `decide`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import tree_sitter as ts

from dpmlens.rules import cnav

_LOOPS = frozenset({"for_statement", "while_statement", "do_statement"})
_SKIP = frozenset({"comment", "string_literal", "number_literal", "identifier", "preproc_arg"})


@dataclass(frozen=True)
class PathCost:
    fixed: float = 0.0  # ms on the worst path, without conditional blocks
    conditional: tuple[tuple[str, float], ...] = ()  # (condition, ms) of `if`s without else
    looped: bool = False  # some delay sits in a loop (not counted)
    # (loop head, ms per iteration) of counted loops that run their whole body each time
    repeated: tuple[tuple[str, float], ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.fixed or self.conditional or self.looped or self.repeated)


ZERO = PathCost()
Leaf = Callable[[ts.Node], PathCost | None]  # a call expression's own cost, if any
# a condition's value where the path decides it (a parameter bound to a caller's constant)
Decide = Callable[[ts.Node], "int | None"]


def seq(a: PathCost, b: PathCost) -> PathCost:
    if a.empty:
        return b
    if b.empty:
        return a
    # two blocks under the same condition both run when it holds: their costs add up
    both = _merge(a.conditional, b.conditional, lambda x, y: x + y)
    loops = _merge(a.repeated, b.repeated, lambda x, y: x + y)
    return PathCost(a.fixed + b.fixed, both, a.looped or b.looped, loops)


def alt(a: PathCost, b: PathCost) -> PathCost:
    """One of two branches runs: the worst one counts."""
    either = _merge(a.conditional, b.conditional, max)
    loops = _merge(a.repeated, b.repeated, max)
    return PathCost(max(a.fixed, b.fixed), either, a.looped or b.looped, loops)


def only_if(cond: str, body: PathCost) -> PathCost:
    """`if (cond) body` without else: the body's fixed cost is paid only when `cond` holds."""
    if body.empty:
        return ZERO
    own = ((cond, body.fixed),) if body.fixed else ()
    # a loop's repeated cost under a condition: no fixed count per cycle any more
    looped = body.looped or bool(body.repeated)
    return PathCost(0.0, _merge(own, body.conditional, lambda x, y: x + y), looped)


def _merge(
    a: tuple[tuple[str, float], ...],
    b: tuple[tuple[str, float], ...],
    same: Callable[[float, float], float],
) -> tuple[tuple[str, float], ...]:
    """Conditional costs of both, those under the same condition combined with `same`."""
    if not a:
        return b
    if not b:
        return a
    out = dict(a)
    for cond, ms in b:
        out[cond] = same(out[cond], ms) if cond in out else ms
    return tuple(out.items())


def condition_text(if_node: ts.Node) -> str:
    cond = cnav.text(if_node.child_by_field_name("condition")).strip()
    while cond.startswith("(") and cond.endswith(")") and _balanced(cond[1:-1]):
        cond = cond[1:-1].strip()
    return " ".join(cond.split())


def _balanced(s: str) -> bool:
    depth = 0
    for ch in s:
        depth += (ch == "(") - (ch == ")")
        if depth < 0:
            return False
    return depth == 0


def path_cost(node: ts.Node, leaf: Leaf, decide: Decide | None = None) -> PathCost:
    """The worst-path fixed-delay cost of running `node` (a function body or any statement);
    `decide` gives the value of a condition the path determines (None: unknown)."""
    t = node.type
    if t in _SKIP:
        return ZERO
    if t == "call_expression":
        args = node.child_by_field_name("arguments")
        before = path_cost(args, leaf, decide) if args is not None else ZERO
        return seq(before, leaf(node) or ZERO)
    if t in ("if_statement", "conditional_expression"):
        cond = node.child_by_field_name("condition")
        first = path_cost(cond, leaf, decide) if cond is not None else ZERO
        cons = node.child_by_field_name("consequence")
        then = path_cost(cons, leaf, decide) if cons is not None else ZERO
        other = node.child_by_field_name("alternative")
        known = decide(cond) if decide is not None and cond is not None else None
        if known is not None:  # only the branch the path takes runs
            taken = then if known else (path_cost(other, leaf, decide) if other else ZERO)
            return seq(first, taken)
        if other is None:
            return seq(first, only_if(condition_text(node), then))
        return seq(first, alt(then, path_cost(other, leaf, decide)))
    if t == "switch_statement":
        cond = node.child_by_field_name("condition")
        first = path_cost(cond, leaf, decide) if cond is not None else ZERO
        body = node.child_by_field_name("body")
        worst = ZERO
        for case in body.named_children if body is not None else ():
            worst = alt(worst, path_cost(case, leaf, decide))
        return seq(first, worst)
    if t in _LOOPS:
        inner = ZERO
        for child in node.named_children:
            inner = seq(inner, path_cost(child, leaf, decide))
        if inner.empty:
            return ZERO
        head = counted_loop(node)
        if head is not None and inner.fixed and not inner.looped and not inner.repeated:
            # every iteration pays the body's fixed cost; its conditional ones are no count
            return PathCost(looped=bool(inner.conditional), repeated=((head, inner.fixed),))
        return PathCost(looped=True)
    total = ZERO
    children = node.named_children
    for i, child in enumerate(children):
        total = seq(total, path_cost(child, leaf, decide))
        skip = _early_return(child, decide) if node.type == "compound_statement" else None
        if skip is not None:
            # `if (!(s_state & OCCUPIED)) return 0;` (tifm): what follows runs only past it,
            # for some devices or states, not on every cycle
            rest = ZERO
            for later in children[i + 1 :]:
                rest = seq(rest, path_cost(later, leaf, decide))
            return seq(total, only_if(negated(skip), rest))
    return total


def _early_return(stmt: ts.Node, decide: Decide | None) -> str | None:
    """The condition of `if (cond) return ...;` (no else, not an error exit, not decided by
    the path's constants): the rest of its block runs only with `!(cond)`."""
    if (
        stmt.type != "if_statement"
        or stmt.child_by_field_name("alternative") is not None
        or (decide is not None and _decided(stmt, decide))
    ):
        return None
    last = _last_statement(stmt)
    if last is None or last.type != "return_statement" or error_exit(stmt):
        return None
    cond = condition_text(stmt)
    return cond if cond and not _NULL_GUARD.fullmatch(cond) else None


def negated(cond: str) -> str:
    """`!(cond)`, without a double negation: `!(!(x & y))` is `x & y`, `!(!p)` is `p`."""
    c = cond.strip()
    if c.startswith("!(") and c.endswith(")") and _balanced(c[2:-1]):
        return c[2:-1].strip()
    rest = c[1:].strip() if c.startswith("!") and not c.startswith("!=") else ""
    if _OPERAND.fullmatch(rest) and _balanced(rest):
        return rest  # `!p`, `! chip->do_pm`, `!machine_is(powermac)`
    return f"!({c})"


# one operand: a name, a member path or a call (`machine_is(powermac)`), no operator around
_OPERAND = re.compile(r"[A-Za-z_][\w.\[\]]*(?:->[\w.\[\]]+)*(?:\(.*\))?")
# a null guard on a local pointer (`if (!priv) return 0;`): no state a device can be in
_NULL_GUARD = re.compile(r"!\s*\w+|\w+\s*==\s*NULL|IS_ERR(?:_OR_NULL)?\(\s*\w+\s*\)")


def counted_loop(loop: ts.Node) -> str | None:
    """The head of a `for` loop that counts (`for (i = 0; i < n; i++)`: a counter compared
    with a bound and stepped by the update) and runs its whole body on every iteration (no
    break, continue, return or goto in it): what it repeats is paid once per iteration, not
    per poll. None for any other loop."""
    if loop.type != "for_statement":
        return None
    cond = loop.child_by_field_name("condition")
    update = loop.child_by_field_name("update")
    body = loop.child_by_field_name("body")
    if cond is None or update is None or body is None or _has_exit(body):
        return None
    while cond.type == "parenthesized_expression" and cond.named_children:
        cond = cond.named_children[0]
    op = cond.child_by_field_name("operator") if cond.type == "binary_expression" else None
    if op is None or op.type not in ("<", "<=", ">", ">=", "!="):
        return None
    left, right = cond.child_by_field_name("left"), cond.child_by_field_name("right")
    names = {cnav.text(n) for n in (left, right) if n is not None and n.type == "identifier"}
    stepped = re.fullmatch(r"\s*(?:(\w+)\s*(?:\+\+|--|[-+]=\s*1)|(?:\+\+|--)\s*(\w+))\s*",
                           cnav.text(update))  # fmt: skip
    counter = next((g for g in stepped.groups() if g), None) if stepped else None
    if counter is None or counter not in names or "(" in cnav.text(cond):
        return None  # a loop that calls something to decide goes on: a poll
    init = loop.child_by_field_name("initializer")
    head = f"for ({cnav.text(init).rstrip(';').strip() if init is not None else ''};"
    head += f" {cnav.text(cond).strip()}; {cnav.text(update).strip()})"
    return " ".join(head.split())


def only_when(node: ts.Node, decide: Decide | None = None) -> str | None:
    """The condition of the innermost `if` without `else` whose body holds `node`, if any
    (within its function; `decide`: see conditional_if)."""
    branch = conditional_if(node, decide)
    return condition_text(branch) if branch is not None else None


def branch_when(node: ts.Node, decide: Decide | None = None) -> str | None:
    """The condition of the innermost `if` one of whose branches holds `node`: its
    condition in the body, `!(cond)` in the `else` (airo: `if (prev_state != PCI_D1) {...}
    else { ...; msleep(100); }` waits only when the device was in D1), none when the path's
    constants decide it."""
    cur = node
    while cur.parent is not None and cur.parent.type != "function_definition":
        parent = cur.parent
        if parent.type == "if_statement" and not (
            decide is not None and _decided(parent, decide)
        ):
            cons = parent.child_by_field_name("consequence")
            alt = parent.child_by_field_name("alternative")
            cond = condition_text(parent)
            if cond and cons is not None and cons.start_byte <= node.start_byte < cons.end_byte:
                return cond
            if cond and alt is not None and alt.start_byte <= node.start_byte < alt.end_byte:
                return f"!({cond})"
        cur = parent
    return None


_STOP = frozenset({"function_definition", "translation_unit"})


def _condition_end(if_node: ts.Node) -> int:
    cond = if_node.child_by_field_name("condition")
    return cond.end_byte if cond is not None else if_node.start_byte


def path_conditions(node: ts.Node, decide: Decide | None = None) -> list[str]:
    """Every condition `node` runs under in its function, outermost first: `if` conditions
    (negated in the `else`), `case` labels and enclosing `#if`/`#ifdef` lines. Not named:
    conditions the path decides (`decide`: a caller's constant), and the error exits before
    it (`if (err) goto err_phy;`): getting past them is the success path, not a condition."""
    out: list[str] = []
    cur = node
    while cur.parent is not None and cur.parent.type not in (
        "function_definition",
        "translation_unit",
    ):
        parent = cur.parent
        t = parent.type
        if t == "if_statement" and decide is not None and _decided(parent, decide):
            pass  # the path's constants decide it
        elif t == "if_statement":
            cond = condition_text(parent)
            alt = parent.child_by_field_name("alternative")
            if cond and alt is not None and alt.start_byte <= cur.start_byte < alt.end_byte:
                out.append(negated(cond))
            elif (
                cond and cur.start_byte >= (parent.child_by_field_name("condition") or cur).end_byte
            ):
                out.append(cond)
        elif t == "case_statement":
            value = parent.child_by_field_name("value")
            if value is not None and value.text is not None:
                out.append(f"case {value.text.decode('latin-1')}")
        elif t in ("preproc_ifdef", "preproc_if", "preproc_elif"):
            head = (parent.text or b"").split(b"\n", 1)[0].decode("latin-1").strip()
            if head:
                out.append(head)
        elif t == "compound_statement":
            # an earlier `if (x) return ...;` in the block: reaching here means !x
            for sib in reversed(parent.named_children):
                if sib.start_byte >= cur.start_byte:
                    continue
                if sib.type == "preproc_ifdef":
                    # `#ifndef CONFIG_PPC_PMAC return 0; #endif` (aty128fb): past it only
                    # with the symbol set the other way
                    past = _returning_ifdef(sib)
                    if past:
                        out.append(past)
                    continue
                if sib.type != "if_statement":
                    continue
                if (
                    sib.child_by_field_name("alternative") is None
                    and _exits(sib)
                    and not error_exit(sib)  # past an error exit is the success path
                    and not (decide is not None and _decided(sib, decide))
                ):
                    cond = condition_text(sib)
                    if cond:
                        out.append(negated(cond))
        cur = parent
    return out[::-1]


def _returning_ifdef(node: ts.Node) -> str | None:
    """`#ifdef X` for an `#ifndef X ... return ...; #endif` without `#else` (and the other
    way round): the way past it in the block."""
    if any(c.type in ("preproc_else", "preproc_elif") for c in node.children):
        return None
    body = [c for c in node.named_children if c.type not in ("identifier", "comment")]
    if not body or body[-1].type != "return_statement":
        return None
    head = (node.text or b"").split(b"\n", 1)[0].decode("latin-1").strip()
    words = head.split()
    if len(words) < 2 or words[0] not in ("#ifdef", "#ifndef"):
        return None
    return f"{'#ifdef' if words[0] == '#ifndef' else '#ifndef'} {words[1]}"


def _decided(if_node: ts.Node, decide: Decide) -> bool:
    cond = if_node.child_by_field_name("condition")
    return cond is not None and decide(cond) is not None


def _exits(if_node: ts.Node) -> bool:
    body = if_node.child_by_field_name("consequence")
    if body is not None and body.type == "compound_statement":
        named = [c for c in body.named_children if c.type != "comment"]
        body = named[-1] if named else None
    return body is not None and body.type in ("return_statement", "goto_statement")


def conditional_if(node: ts.Node, decide: Decide | None = None) -> ts.Node | None:
    """The innermost `if` without `else` whose body holds `node` (within its function), not
    counting those the path decides true (`if (on)` with `on` bound to 1 by the caller)."""
    cur = node
    while cur.parent is not None and cur.parent.type != "function_definition":
        parent = cur.parent
        if parent.type == "if_statement" and parent.child_by_field_name("alternative") is None:
            cons = parent.child_by_field_name("consequence")
            if (
                cons is not None
                and cons.start_byte <= node.start_byte < cons.end_byte
                and not (decide is not None and _decided(parent, decide))
            ):
                return parent
        cur = parent
    return None


def _last_statement(if_node: ts.Node) -> ts.Node | None:
    """The statement the `if`'s body ends on (through nested blocks, comments skipped)."""
    body = if_node.child_by_field_name("consequence")
    while body is not None and body.type == "compound_statement":
        named = [c for c in body.named_children if c.type != "comment"]
        body = named[-1] if named else None
    return body


_NORMAL_EXIT = re.compile(r"(?:out|done|exit|end|finish|unlock)\w*", re.IGNORECASE)


def leaves_function(if_node: ts.Node) -> bool:
    """Does the `if`'s body end on an error or retry exit: `return` of something other than
    0, or a `goto` to a label other than the normal way out (`out`, `done`, `exit`, ...)?
    `if (p->no_hpd) { msleep(200); return 0; }` is a normal path of some devices."""
    body = _last_statement(if_node)
    if body is None:
        return False
    if body.type == "return_statement":
        value = cnav.text(body).removeprefix("return").strip(" ;()")
        return value not in ("", "0")
    if body.type == "goto_statement":
        label = cnav.text(body.child_by_field_name("label"))
        return not _NORMAL_EXIT.fullmatch(label)
    return False


# what an error exit returns: an errno, an error variable, an error pointer's code
_ERROR_VALUE = re.compile(
    r"-\s*E[A-Z0-9]+|\w*(?:err|ret|rc|status|result)\w*|PTR_ERR\s*\(.*\)|dev_err_probe\s*\(.*\)",
    re.IGNORECASE | re.DOTALL,
)


def error_exit(if_node: ts.Node) -> bool:
    """Does the `if`'s body end by giving up: `return -EIO`, `return err` (a variable named
    for an error code), `return PTR_ERR(x)`, or a `goto` to an error label (not `out`,
    `done`, ...)? A poll's `return i` or an early `return 0` is no error exit."""
    body = _last_statement(if_node)
    if body is None:
        return False
    if body.type == "goto_statement":
        returned = _label_return(if_node, cnav.text(body.child_by_field_name("label")))
        if returned is not None:  # `fail: unlock(); return 0;` is a normal way out
            return _is_error_value(returned)
        return leaves_function(if_node)
    if body.type == "return_statement":
        return _is_error_value(body)
    return False


def _is_error_value(ret: ts.Node) -> bool:
    value = cnav.text(ret).removeprefix("return").strip(" ;\t\n")
    while value.startswith("(") and value.endswith(")") and _balanced(value[1:-1]):
        value = value[1:-1].strip()
    return _ERROR_VALUE.fullmatch(value) is not None


def _label_return(node: ts.Node, label: str) -> ts.Node | None:
    """The first `return` after `label:` in `node`'s function (the statements that follow
    the label in its block), or None."""
    fn = cnav.function_of(node)
    stack = [fn] if fn is not None else []
    while stack:
        n = stack.pop()
        if n.type == "labeled_statement" and cnav.text(n.child_by_field_name("label")) == label:
            cur: ts.Node | None = n
            while cur is not None:
                inner = cur.named_children[-1] if cur.type == "labeled_statement" else cur
                while inner.type == "labeled_statement" and inner.named_children:
                    inner = inner.named_children[-1]
                if inner.type == "return_statement":
                    return inner
                cur = cur.next_named_sibling
            return None
        stack.extend(n.named_children)
    return None


# --- loop shape ------------------------------------------------------------------------------

_EXITS = frozenset({"break_statement", "return_statement", "goto_statement",
                    "continue_statement"})  # fmt: skip
# a loop condition that reads something (a call, a field, an array element, a dereference),
# not only a counter (`i < 10`, `tries--`) or a constant (`1`, `true`)
_READS = re.compile(r"\(|->|\.|\[|\*\s*\w")


def checks_first(loop: ts.Node, inner: ts.Node) -> bool:
    """Does the loop test what it waits for before `inner` (a delay in its body) first runs?

    `while (busy(dev)) mdelay(10);` and `do { if (ready(dev)) break; mdelay(10); } while
    (...)` do: a first poll that succeeds waits not at all. `do { mdelay(10); } while
    (busy(dev));` and `for (i = 0; i < 10; i++) { mdelay(10); if (ready(dev)) break; }`
    wait before their first look at the device."""
    if loop.type != "do_statement":
        cond = loop.child_by_field_name("condition")
        if cond is not None and _READS.search(cnav.text(cond)):
            return True
    body = loop.child_by_field_name("body")
    if body is None:
        return False
    stmt = inner
    while stmt.parent is not None and stmt.parent.id != body.id:
        if stmt.parent.id == loop.id:
            return False  # in the condition or the update, not in the body
        stmt = stmt.parent
    if stmt.parent is None:
        return False
    for child in body.named_children:
        if child.start_byte >= stmt.start_byte:
            break
        if _has_exit(child):
            return True
    return False


def _has_exit(node: ts.Node, nested: bool = False) -> bool:
    """A break/return/goto/continue under `node` that leaves the loop node belongs to (in a
    nested loop or switch, only a return or goto does)."""
    if node.type in _EXITS:
        return not nested or node.type in ("return_statement", "goto_statement")
    nested = nested or node.type in _LOOPS or node.type == "switch_statement"
    return any(_has_exit(c, nested) for c in node.named_children if c.type not in _SKIP)


# --- state cached on first use -----------------------------------------------------------

# `nvm->buf`, `priv->fw.loaded`: state that outlives the call (a field). A local or a
# parameter (`if (ret) return ret; ... ret = f();`) is an error exit, no cache.
_STATE = re.compile(r"^[A-Za-z_]\w*(?:\s*(?:->|\.)\s*\w+)+$")


def runs_once(node: ts.Node) -> str | None:
    """The state that makes `node` run only the first time its function runs, or None:

    - `if (nvm->buf) return 0; ... nvm->buf = kzalloc(...); ... msleep(20);`: an early return
      on state the function itself sets afterwards;
    - `if (!priv->calibrated) { msleep(20); ...; priv->calibrated = true; }`.
    """
    fn = cnav.function_of(node)
    if fn is None:
        return None
    body = fn.child_by_field_name("body")
    if body is None:
        return None
    cur = node
    while cur.parent is not None and cur.parent.type not in ("function_definition",
                                                              "translation_unit"):  # fmt: skip
        parent = cur.parent
        if parent.type == "compound_statement":
            for sib in parent.named_children:
                if sib.start_byte >= cur.start_byte:
                    break
                state = _early_return_on(sib)
                after = body.text[sib.end_byte - body.start_byte :] if body.text else b""
                if state and _sets(after.decode("utf-8", "replace"), state):
                    return state
        elif parent.type == "if_statement" and cur.type != "parenthesized_expression":
            cond = parent.child_by_field_name("condition")
            alt = parent.child_by_field_name("alternative")
            in_else = alt is not None and alt.start_byte <= cur.start_byte
            state = _negated_state(cond) if cond is not None and not in_else else None
            if state and _sets(cnav.text(parent.child_by_field_name("consequence")), state):
                return state
        cur = parent
    return None


def _early_return_on(stmt: ts.Node) -> str | None:
    """`if (STATE) return ...;` (no else): STATE's text."""
    if stmt.type != "if_statement" or stmt.child_by_field_name("alternative") is not None:
        return None
    cons = stmt.child_by_field_name("consequence")
    if cons is not None and cons.type == "compound_statement":
        named = [c for c in cons.named_children if c.type != "comment"]
        cons = named[0] if len(named) == 1 else None
    if cons is None or cons.type != "return_statement":
        return None
    return _state(stmt.child_by_field_name("condition"))


def _state(cond: ts.Node | None) -> str | None:
    while cond is not None and cond.type == "parenthesized_expression" and cond.named_children:
        cond = cond.named_children[0]
    s = " ".join(cnav.text(cond).split())
    return s if s and _STATE.match(s) and not s.isupper() else None


def _negated_state(cond: ts.Node) -> str | None:
    while cond.type == "parenthesized_expression" and cond.named_children:
        cond = cond.named_children[0]
    if cond.type == "unary_expression" and cnav.text(cond).lstrip().startswith("!"):
        return _state(cond.child_by_field_name("argument"))
    return None


def _sets(text: str, state: str) -> bool:
    """Does `text` assign `state` (`state = ...`, not `==`)?"""
    pattern = r"\s*".join(re.escape(p) for p in re.split(r"\s*(->|\.)\s*", state) if p)
    return re.search(rf"(?<![\w.>]){pattern}\s*=(?!=)", text) is not None

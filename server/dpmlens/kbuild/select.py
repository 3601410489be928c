"""Keep only the preprocessor branches a configuration compiles, byte for byte in place.

Lines of a branch the configuration rules out become spaces (newlines kept), so every line and
column of the rest is where it was and findings point at the real file. Directive lines stay,
so the model still sees `#ifdef CONFIG_PM` guards. A condition that depends on anything
unknown keeps all its branches, as dpmlens does without a configuration. In code,
`IS_ENABLED(CONFIG_X)` and its kin become `1`/`0` padded to the same length, so the walker's
condition evaluation (`model.condeval`) decides `if (!IS_ENABLED(CONFIG_PM)) return 0;`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from dpmlens.kbuild.cppexpr import evaluate, kconfig_call
from dpmlens.kbuild.kconfig import Kconfig

_DIRECTIVE = re.compile(rb"[ \t]*#[ \t]*(ifdef|ifndef|if|elifdef|elifndef|elif|else|endif)\b(.*)",
                        re.S)  # fmt: skip
_KCONFIG_CALL = re.compile(rb"\b(IS_ENABLED|IS_BUILTIN|IS_MODULE|IS_REACHABLE)\s*\(\s*(\w+)\s*\)")
_COMMENT = re.compile(rb"/\*.*?\*/|//[^\n]*", re.S)

ACTIVE, INACTIVE, UNKNOWN = 1, 0, None


@dataclass
class _Frame:
    outer_live: bool  # is the code around this #if compiled (or possibly compiled)?
    taken: bool | None  # has an earlier branch certainly (True) / possibly (None) been taken?
    state: int | None  # this branch: ACTIVE, INACTIVE or UNKNOWN


def _condition(kind: str, rest: str, config: Kconfig) -> int | None:
    if kind in ("ifdef", "ifndef", "elifdef", "elifndef"):
        words = rest.split()
        known = config.is_set(words[0]) if words else None
        if known is None:
            return None
        return int(known) if kind in ("ifdef", "elifdef") else int(not known)
    return evaluate(rest, config)


def _logical_lines(source: bytes) -> list[tuple[int, int]]:
    """(start, end) byte ranges of logical lines: a backslash-newline continues a line."""
    out, start, pos = [], 0, 0
    while pos < len(source):
        nl = source.find(b"\n", pos)
        if nl < 0:
            out.append((start, len(source)))
            return out
        if nl > 0 and source[nl - 1 : nl] == b"\\" or source[nl - 2 : nl] == b"\\\r":
            pos = nl + 1
            continue
        out.append((start, nl + 1))
        start = pos = nl + 1
    if start < len(source):
        out.append((start, len(source)))
    return out


def select(source: bytes, config: Kconfig) -> bytes:
    out = bytearray(source)
    stack: list[_Frame] = []
    comments = [(m.start(), m.end()) for m in _COMMENT.finditer(source) if m.group(0)[:2] == b"/*"]
    ci = 0
    for start, end in _logical_lines(source):
        while ci < len(comments) and comments[ci][1] <= start:
            ci += 1
        in_comment = ci < len(comments) and comments[ci][0] < start < comments[ci][1]
        live = all(f.state != INACTIVE for f in stack)
        m = None if in_comment else _DIRECTIVE.match(source, start, end)
        if m is None:
            if not live:
                _blank(out, start, end)
            continue
        kind = m.group(1).decode()
        rest = _COMMENT.sub(b" ", m.group(2)).decode("latin-1").replace("\\\n", " ")
        keep = live  # a directive stays when the code around its #if group is compiled
        if kind in ("if", "ifdef", "ifndef"):
            value = _condition(kind, rest, config) if live else 0
            state = UNKNOWN if value is None else (ACTIVE if value else INACTIVE)
            stack.append(_Frame(live, None if value is None else bool(value), state))
        elif kind in ("elif", "elifdef", "elifndef", "else") and stack:
            frame = stack[-1]
            keep = frame.outer_live
            if not frame.outer_live or frame.taken is True:
                frame.state = INACTIVE
            else:
                value = 1 if kind == "else" else _condition(kind, rest, config)
                if value == 0:
                    frame.state = INACTIVE
                elif frame.taken is None or value is None:  # an earlier branch may be taken
                    frame.state, frame.taken = UNKNOWN, None
                else:
                    frame.state, frame.taken = ACTIVE, True
        elif kind == "endif" and stack:
            keep = stack.pop().outer_live
        if not keep:
            _blank(out, start, end)
    return _replace_calls(bytes(out), config)


def _blank(out: bytearray, start: int, end: int) -> None:
    for i in range(start, end):
        if out[i] not in (0x0A, 0x0D):
            out[i] = 0x20


def _replace_calls(source: bytes, config: Kconfig) -> bytes:
    replaced: list[int] = []

    def repl(m: re.Match[bytes]) -> bytes:
        value = kconfig_call(m.group(1).decode(), m.group(2).decode("latin-1"), config)
        text = m.group(0)
        if value is None or b"\n" in text:
            return text
        replaced.append(m.start())
        return str(value).encode() + b" " * (len(text) - 1)

    out = _KCONFIG_CALL.sub(repl, source)
    return _drop_dead_arms(out, replaced) if replaced else out


def _drop_dead_arms(source: bytes, at: list[int]) -> bytes:
    """Blank the arm of each `if` that a replaced IS_ENABLED() decides against, and the rest of
    the block after `if (!IS_ENABLED(X)) return ...;` when X is off: the compiler drops that
    code as dead, so no rule should look at it."""
    from dpmlens.model.condeval import evaluate as c_evaluate
    from dpmlens.syntax.parser import parse

    out = bytearray(source)
    root = parse(source).root_node
    seen: set[int] = set()
    for offset in at:
        node = root.descendant_for_byte_range(offset, offset + 1)
        while node is not None and node.type != "if_statement":
            node = node.parent
        if node is None or node.start_byte in seen:
            continue
        seen.add(node.start_byte)
        cond = node.child_by_field_name("condition")
        if cond is None or not cond.start_byte <= offset < cond.end_byte:
            continue
        value = c_evaluate(cond, {}, {})
        if value is None:
            continue
        cons, alt = node.child_by_field_name("consequence"), node.child_by_field_name("alternative")
        dead = alt if value else cons
        if dead is not None:
            _blank_node(out, dead.start_byte, dead.end_byte, keep=b";" if dead is cons else b"")
        if value and alt is None and cons is not None and _exits(cons):
            block = node.parent
            if block is not None and block.type == "compound_statement":
                _blank_node(out, node.end_byte, block.end_byte - 1)
    return bytes(out)


def _exits(stmt: Any) -> bool:
    """A `return`/`goto` statement, or a block ending in one."""
    if stmt.type in ("return_statement", "goto_statement"):
        return True
    if stmt.type == "compound_statement":
        named = [c for c in stmt.named_children if c.type != "comment"]
        return bool(named) and _exits(named[-1])
    return False


def _blank_node(out: bytearray, start: int, end: int, keep: bytes = b"") -> None:
    """Spaces over [start, end), newlines kept; `keep` (a `;`) goes first so the `if` stays
    a valid statement with an empty body."""
    _blank(out, start, end)
    if keep and end > start:
        out[start : start + len(keep)] = keep

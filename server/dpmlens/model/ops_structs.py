"""Function pointers set in file-scope struct initializers, and the calls made through them.

Two uses:
- subsystem ops (`rules/tables/subsystem-ops.yaml`): a function named in an initializer of
  `struct tb_cm_ops`, `struct sdhci_pci_fixes`, ... runs in the PM phase the table gives for
  that member, because the subsystem's own PM callback calls it (`ops_roles`);
- indirect calls: `pcie->soc->power_up(pcie)` where every `static const` struct of the file
  that sets `.power_up` (and every struct it hands out by address, `.data = &soc_a` of a
  match table, const or not) names a function of the file: the call reaches those functions
  (`pointer_calls`), so the call walker can follow it like a direct call.

Initializers are read from the text, as the dev_pm_ops tables are (tree-sitter misparses many
kernel initializers): a file-scope declaration starts a line (`static const struct x y = {`),
and a `.member = function` after it and before the next declaration, outside function bodies,
belongs to it. One regex pass per file, no tokenizing: generated register tables of 10,000
entries cost nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

from dpmlens.core.findings import Span
from dpmlens.core.paths import rules_dir
from dpmlens.model import ctext, footprint, rescan
from dpmlens.model.types import CallSite, FileModel
from dpmlens.syntax.parser import LineIndex
from dpmlens.syntax.prefilter import WordFilter

# `static const struct foo_ops bar_ops[] __initconst = {`: the pattern starts with the literal
# `struct` (a fast scan); what precedes it on its line is checked by _LINE_HEAD
_DECL = re.compile(
    rb"struct[ \t]+(\w+)[ \t]+(const[ \t]+)?(\w+)[ \t]*(?:\[[^\]\n]*\])?[^=;(\n]*=[ \t]*\{"
)
_LINE_HEAD = re.compile(rb"(?:static[ \t]+)?(const[ \t]+)?(?:static[ \t]+)?")
# what counts of _DECL for the footprint: a match at the start of its line (an indented, local
# declaration typed in a function does not)
_DECL_AT_LINE = re.compile(rb"(?m)^" + _LINE_HEAD.pattern + _DECL.pattern)
_MAX_ITEMS = 20_000  # entries per file: a generated register table must not cost seconds


@dataclass(frozen=True)
class OpsEntry:
    struct_type: str
    var: str
    member: str  # the field set (last element of the designator path)
    function: str
    span: Span  # where the function is named
    const: bool


@dataclass(frozen=True)
class SubsystemOps:
    members: dict[str, tuple[str, ...]]  # member -> dev_pm_ops phases it runs in
    source: str


def subsystem_ops() -> dict[str, SubsystemOps]:
    """struct type -> its PM members, from `rules/tables/subsystem-ops.yaml` (data)."""
    return _subsystem_ops(str(rules_dir() / "tables" / "subsystem-ops.yaml"))


@lru_cache(maxsize=4)
def _subsystem_ops(file: str) -> dict[str, SubsystemOps]:
    path = Path(file)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return {}
    out: dict[str, SubsystemOps] = {}
    for stype, spec in (data.get("structs") or {}).items():
        members = {
            str(m): tuple(str(p) for p in ps) for m, ps in (spec.get("members") or {}).items()
        }
        out[str(stype)] = SubsystemOps(members, str(spec.get("source", "")))
    return out


def entries(model: FileModel) -> list[OpsEntry]:
    """Every `.member = function` of the file's file-scope struct initializers (cached)."""
    cached = model.__dict__.get("_ops_entries")
    if cached is None:
        cached = model.__dict__["_ops_entries"] = _scan(model)
    return cached


# `.member = fn,` / `.member = &fn }` (the last element of a designator path)
_PAIR = re.compile(rb"\.\s*(\w+)\s*=\s*&?\s*([A-Za-z_]\w*)\s*(?=[,}\n])")


def _scan(model: FileModel) -> list[OpsEntry]:
    """The designated pairs naming a function of the file, searched only inside file-scope
    initializers (from the declaration to the first `}` at column 0)."""
    src = model.source
    footprint.searched(model, _DECL_AT_LINE)
    if not model.functions:
        return []
    if b"= {" not in src and b"={" not in src:
        # (only here does `= {` decide: elsewhere the declarations and ranges below do, and
        # a local `u8 buf[] = {...}` typed in a function must not count as a change)
        footprint.searched(model, b"= {", b"={")
        return []
    # (a match lies in one line: scanned piece by piece in the editor, model/rescan.py)
    decls = rescan.by_pieces(model, _DECL, _declarations_at_line, _moved_decls)
    if not decls:
        return []
    lines = _lines(model)
    out: list[OpsEntry] = []
    for n, (_start, end, stype, var, const) in enumerate(decls):
        # the initializer runs to the first `}` at column 0, or to the next declaration
        close = src.find(b"\n}", end)
        stop = len(src) if close < 0 else close
        if n + 1 < len(decls):
            stop = min(stop, decls[n + 1][0])
        footprint.read_range(model, end, stop)
        for m in _PAIR.finditer(src, end, stop):
            name = m.group(2).decode("latin-1")
            if name not in model.functions:
                continue
            out.append(
                OpsEntry(
                    struct_type=stype,
                    var=var,
                    member=m.group(1).decode("latin-1"),
                    function=name,
                    span=lines.span(m.start(2), m.end(2)),
                    const=const,
                )
            )
            if len(out) >= _MAX_ITEMS:
                return out
    return out


_Decl = tuple[int, int, str, str, bool]  # (line start, end, type, var, const)


def _declarations_at_line(src: bytes) -> list[_Decl]:
    """The file-scope declarations with an initializer starting a line of `src`."""
    decls: list[_Decl] = []
    for m in _DECL.finditer(src):
        line = src.rfind(b"\n", 0, m.start()) + 1
        head = _LINE_HEAD.fullmatch(src, line, m.start())
        if head is None or m.group(1) == b"dev_pm_ops":
            continue  # not a file-scope declaration starting its line
        const = bool(head.group(1) or m.group(2))
        decls.append(
            (line, m.end(), m.group(1).decode("latin-1"), m.group(3).decode("latin-1"), const)
        )
    return decls


def _moved_decls(parts: list[tuple[int, list[_Decl]]]) -> list[_Decl]:
    if len(parts) == 1 and parts[0][0] == 0:
        return parts[0][1]
    return [(a + at, b + at, t, v, c) for at, decls in parts for a, b, t, v, c in decls]


def ops_roles(model: FileModel) -> list[tuple[OpsEntry, tuple[str, ...]]]:
    """Entries of subsystem ops structs that run in a PM phase: (entry, phases)."""
    table = subsystem_ops()
    footprint.searched(model, *table)
    if not table or not _names_filter(tuple(table)).matches(model.source):
        return []
    out = []
    for e in entries(model):
        spec = table.get(e.struct_type)
        if spec is not None and e.member in spec.members:
            out.append((e, spec.members[e.member]))
    return out


@lru_cache(maxsize=4)
def _names_filter(names: tuple[str, ...]) -> WordFilter:
    return WordFilter(words=tuple(n.encode() for n in names))


# `.data = &soc_a`, `.driver_data = (kernel_ulong_t)&soc_a`, `{ "name", (kernel_ulong_t)&soc_a }`,
# `.vnd = &rtl_vnd` in another struct's initializer: a struct handed out by address as match
# data (of_device_get_match_data(), device_get_match_data(), id->driver_data) or as another
# struct's ops, which drivers read and do not write, even where it is not `const`
_MATCH_DATA = re.compile(
    rb"(?:\.\s*\w+\s*=\s*|\(\s*kernel_ulong_t\s*\)\s*)"
    rb"(?:\(\s*(?:const\s+)?(?:void|struct\s+\w+)\s*\*\s*\)\s*)?&\s*(\w+)\b"
)


def match_data_vars(model: FileModel) -> frozenset[str]:
    """Names of the file's structs handed out by address (match data, another struct's member)."""
    cached = model.__dict__.get("_match_data_vars")
    if cached is None:
        footprint.searched(model, _MATCH_DATA)
        # (no match holds a brace: scanned piece by piece in the editor, model/rescan.py)
        cached = rescan.by_pieces(model, _MATCH_DATA, _match_data_in, _union_names)
        model.__dict__["_match_data_vars"] = cached
    return cached


def _match_data_in(text: bytes) -> frozenset[str]:
    return frozenset(m.group(1).decode("latin-1") for m in _MATCH_DATA.finditer(text))


def _union_names(parts: list[tuple[int, frozenset[str]]]) -> frozenset[str]:
    return frozenset().union(*(names for _at, names in parts))


def pointer_targets(model: FileModel) -> dict[str, tuple[str, ...]]:
    """member -> the functions the file's `static const` initializers, and its structs given
    as match data (`.data = &soc_a`, const or not), set it to."""
    cached = model.__dict__.get("_pointer_targets")
    if cached is None:
        found: dict[str, list[str]] = {}
        ents = entries(model)
        data = match_data_vars(model) if any(not e.const for e in ents) else frozenset()
        for e in ents:
            if e.const or e.var in data:
                names = found.setdefault(e.member, [])
                if e.function not in names:
                    names.append(e.function)
        cached = model.__dict__["_pointer_targets"] = {k: tuple(v) for k, v in found.items()}
    return cached


_FIELD_CALL = re.compile(rb"(?:->|\.)\s*(\w+)\s*\(")
# the field a pointer call goes through: `isp1362_hcd->board->reset(...)`: `board`
_OWNER = re.compile(rb"(\w+)\s*(?:->|\.)\s*$")


def _struct_types(model: FileModel) -> dict[str, frozenset[str]]:
    """member -> the struct types whose initializers in the file set it (see pointer_targets)."""
    cached = model.__dict__.get("_pointer_struct_types")
    if cached is None:
        found: dict[str, set[str]] = {}
        for e in entries(model):
            found.setdefault(e.member, set()).add(e.struct_type)
        cached = model.__dict__["_pointer_struct_types"] = {
            k: frozenset(v) for k, v in found.items()
        }
    return cached


@lru_cache(maxsize=256)
def _declaration_of(field: str) -> re.Pattern[bytes]:
    return re.compile(
        rb"struct\s+(\w+)\s*(?:const\s*)?\*\s*(?:const\s+)?" + re.escape(field.encode())
        + rb"\s*[;=,)\[]"
    )


# any `struct X *name` declaration: one pass for all names (a pass per name is quadratic
# in a file whose pointer calls grow with its length)
_DECLARATION = re.compile(rb"struct\s+(\w+)\s*(?:const\s*)?\*\s*(?:const\s+)?(\w+)\s*[;=,)\[]")


def _declared_types(model: FileModel, field: str) -> frozenset[str]:
    """The struct types the file declares `field` with (`struct isp1362_platform_data *board`,
    a member or a local): empty when it declares none."""
    footprint.searched(model, _declaration_of(field))
    index: dict[str, frozenset[str]] | None = model.__dict__.get("_declared_types")
    if index is None:
        # (no match holds a brace: scanned piece by piece in the editor, model/rescan.py)
        index = rescan.by_pieces(model, _DECLARATION, _declarations_in, _union_types)
        model.__dict__["_declared_types"] = index
    return index.get(field, frozenset())


def _declarations_in(text: bytes) -> dict[str, frozenset[str]]:
    found: dict[str, set[str]] = {}
    for m in _DECLARATION.finditer(text):
        found.setdefault(m.group(2).decode("latin-1"), set()).add(m.group(1).decode("latin-1"))
    return {k: frozenset(v) for k, v in found.items()}


def _union_types(parts: list[tuple[int, dict[str, frozenset[str]]]]) -> dict[str, frozenset[str]]:
    out: dict[str, frozenset[str]] = {}
    for _at, part in parts:
        for name, types in part.items():
            was = out.get(name)
            out[name] = types if was is None else was | types
    return out


def pointer_calls(model: FileModel, function: str) -> list[CallSite]:
    """Calls through a function pointer in `function` whose member is set by the file's
    `static const` initializers: one CallSite per possible target (callee = the target)."""
    fn = model.functions.get(function)
    if fn is None:
        return []
    # the function's field calls first: most functions a walk reads make none, and then the
    # file's initializers (`pointer_targets`, a scan of the whole file) need not be read
    calls = list(_FIELD_CALL.finditer(model.source, fn.start_byte, fn.end_byte))
    if not calls:
        footprint.read_function(model, function)
        return []
    targets = pointer_targets(model)
    if not targets:
        return []
    footprint.read_function(model, function)
    hits = [m for m in calls if m.group(1).decode("latin-1") in targets]
    if not hits:
        return []
    # the function's text only (offsets stay absolute through `base`), not the whole file
    base = fn.start_byte
    text = model.source[base : fn.end_byte].decode("latin-1")
    lines = _lines(model)
    out: list[CallSite] = []
    for m in hits:
        member = m.group(1).decode("latin-1")
        start = m.start(1)
        paren = m.end() - 1
        it = ctext.tokens(text, paren - base, base)
        first = next(it, None)
        if first is None or first.text != "(":
            continue
        toks = ctext.balanced(it, first)
        args = tuple(a.text for a in ctext.split_args(toks, text, base))
        expr_start = _expression_start(model.source, fn.start_byte, start)
        span = lines.span(expr_start, toks[-1].end)
        name_span = lines.span(start, start + len(member))
        # `isp1362_hcd->board->reset()` is the board's hook (struct isp1362_platform_data),
        # not the `.reset` of the file's struct hc_driver: a field the file declares with
        # other struct types than those whose initializers set the member reaches none of them
        owner = _OWNER.search(model.source, max(fn.start_byte, expr_start), start)
        if owner is not None:
            declared = _declared_types(model, owner.group(1).decode("latin-1"))
            if declared and not declared & _struct_types(model).get(member, frozenset()):
                continue
        for target in targets[member]:
            if target == function:
                continue
            out.append(
                CallSite(
                    callee=target,
                    caller=function,
                    span=span,
                    callee_span=name_span,
                    args=args,
                    start_byte=expr_start,
                    end_byte=toks[-1].end,
                    via_pointer=member,
                )
            )
    return out


def _lines(model: FileModel) -> LineIndex:
    """One line index per model: its checkpoints serve every span asked of the file."""
    lines = model.__dict__.get("_ops_lines")
    if lines is None:
        lines = model.__dict__["_ops_lines"] = LineIndex(model.source)
    return lines


def _expression_start(src: bytes, lower: int, pos: int) -> int:
    """Start of `a->b.c` before the member at `pos` (identifiers, `->`, `.`, `[i]`)."""
    i = pos
    while i > lower:
        c = src[i - 1]
        if chr(c).isalnum() or c in b"_.>-[]":
            if c == 0x3E and src[i - 2 : i] != b"->":  # a lone '>' ends the expression
                break
            if c == 0x2D and src[i - 1 : i + 1] != b"->":
                break
            i -= 1
        else:
            break
    return i

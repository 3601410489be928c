"""The delay changes a unified diff makes (`dpmlens trace whatif --patch FILE`).

With the kernel tree (--source), each patched .c file is patched in memory and the static
delay analysis (rules/delays.py: #defines, local variables, `10 + 40`) evaluates every delay
call before and after: a call whose function or value changed is a change, paired with its
counterpart by calling function and order. Without the tree, only delay calls written in the
diff's own lines with a constant argument are read, their caller taken from the hunk header
(`@@ ... @@ static int hub_port_reset(...)`, as `git diff` writes it).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

# delay function -> its argument's unit in ms (the first argument: usleep_range's min)
UNIT_MS = {"msleep": 1.0, "msleep_interruptible": 1.0, "ssleep": 1000.0, "mdelay": 1.0,
           "udelay": 1e-3, "ndelay": 1e-6, "usleep_range": 1e-3, "usleep_range_state": 1e-3,
           "fsleep": 1e-3, "usleep_idle_range": 1e-3}
_CALL = re.compile(r"\b(" + "|".join(sorted(UNIT_MS, key=len, reverse=True))
                   + r")\s*\(([^;]*?)\)\s*;")
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@ ?(.*)$")
_FUNC_HEAD = re.compile(r"\b([A-Za-z_]\w*)\s*\(")


class PatchError(Exception):
    """A patch that cannot be read or applied; the message names the file and hunk."""


@dataclass
class Hunk:
    old_start: int
    new_start: int
    header: str  # the text after the second @@ (git's function context)
    lines: list[str] = field(default_factory=list)  # with their ' ', '-', '+' prefix


@dataclass
class FilePatch:
    path: str  # the new name, without git's a/ b/
    hunks: list[Hunk] = field(default_factory=list)


@dataclass(frozen=True)
class DelayChange:
    caller: str
    old_func: str
    old_ms: float | None  # None: not a constant the analysis evaluates
    new_func: str
    new_ms: float | None
    where: str  # path:line (the new file's line)

    def describe(self) -> str:
        def call(func: str, ms: float | None) -> str:
            if ms is None:
                return f"{func}(?)"
            return f"{func}({ms / UNIT_MS.get(func, 1.0):g})"

        return (f"{self.where}: {self.caller}: {call(self.old_func, self.old_ms)} -> "
                f"{call(self.new_func, self.new_ms)}")


def parse(text: str, name: str = "<patch>") -> list[FilePatch]:
    files: list[FilePatch] = []
    cur: FilePatch | None = None
    hunk: Hunk | None = None
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("+++ "):
            path = line[4:].split("\t")[0].strip()
            if path == "/dev/null":
                cur = None
                continue
            path = path[2:] if path.startswith(("a/", "b/")) else path
            cur = FilePatch(path)
            files.append(cur)
            hunk = None
        elif line.startswith("--- ") and hunk is None:
            continue
        elif line.startswith("@@"):
            m = _HUNK.match(line)
            if m is None or cur is None:
                raise PatchError(f"{name}:{n}: a hunk header outside a file or malformed: "
                                 f"{line[:60]!r}")
            hunk = Hunk(int(m.group(1)), int(m.group(3)), m.group(5))
            cur.hunks.append(hunk)
        elif hunk is not None and line[:1] in (" ", "-", "+", ""):
            if line.startswith("--- "):  # the next file's header inside a diff without index
                hunk = None
                continue
            hunk.lines.append(line if line else " ")
        elif line.startswith("\\"):  # "\ No newline at end of file"
            continue
        else:
            hunk = None  # diff --git / index / commit message lines
    if not any(f.hunks for f in files):
        raise PatchError(f"{name}: no unified diff hunks (expected `diff -u` or `git diff` "
                         "output)")
    return files


def apply(text: str, fp: FilePatch, name: str = "<patch>") -> str:
    """The file's text with the patch applied (context checked; offsets as `patch` allows)."""
    lines = text.split("\n")
    shift = 0
    for k, h in enumerate(fp.hunks, 1):
        old = [x[1:] for x in h.lines if x[0] in " -"]
        new = [x[1:] for x in h.lines if x[0] in " +"]
        at = h.old_start - 1 + shift if h.old_start else 0
        pos = _find(lines, old, at)
        if pos is None:
            raise PatchError(f"{name}: {fp.path}: hunk {k} (@@ -{h.old_start}) does not apply "
                             "to the source tree's file")
        lines[pos:pos + len(old)] = new
        shift += len(new) - len(old) + (pos - at)
    return "\n".join(lines)


def _find(lines: list[str], block: list[str], at: int) -> int | None:
    for off in range(0, 200):
        for pos in (at - off, at + off) if off else (at,):
            if 0 <= pos <= len(lines) - len(block) and lines[pos:pos + len(block)] == block:
                return pos
    return None


def _delays(path: str, text: str) -> list[tuple[str, str, float | None, int]]:
    """(caller, delay function, evaluated ms or None, line) of every delay call, in order."""
    from dpmlens.config.settings import Config
    from dpmlens.model.build import build_model
    from dpmlens.rules.context import Context
    from dpmlens.rules.delays import analysis

    model = build_model(path, text.encode())
    a = analysis(Context(model, Config()))
    evaluated = {d.call.start_byte: d for d in a.local.delays.values()}
    out = []
    for c in sorted(model.calls_to(*UNIT_MS), key=lambda c: c.start_byte):
        if c.caller is None:
            continue
        d = evaluated.get(c.start_byte)
        out.append((c.caller, c.callee, round(d.ms, 6) if d is not None else None, c.span.line))
    return out


def changes_with_source(files: list[FilePatch], root: Path, name: str = "<patch>"
                        ) -> tuple[list[DelayChange], list[str]]:
    """(changes, notes): every delay call whose function or value the patch changes."""
    changes: list[DelayChange] = []
    notes: list[str] = []
    for fp in files:
        if not fp.path.endswith(".c"):
            notes.append(f"{fp.path}: not a .c file: its delay changes are not read "
                         "(a header's #define reaches the replay only through a .c file)")
            continue
        src = root / fp.path
        if not src.is_file():
            raise PatchError(f"{name}: {fp.path} is not in --source {root}")
        before = src.read_text(encoding="utf-8", errors="replace")
        after = apply(before, fp, name)
        old, new = _delays(str(src), before), _delays(str(src), after)
        for caller in sorted({c for c, *_ in old} | {c for c, *_ in new}):
            o = [x for x in old if x[0] == caller]
            n = [x for x in new if x[0] == caller]
            if len(o) != len(n):
                notes.append(f"{fp.path}: {caller}: the patch adds or removes delay calls "
                             f"({len(o)} -> {len(n)}): only changed ones are replayed")
                continue
            for (_, f0, ms0, _), (_, f1, ms1, line1) in zip(o, n, strict=True):
                if (f0, ms0) != (f1, ms1):
                    changes.append(DelayChange(caller, f0, ms0, f1, ms1, f"{fp.path}:{line1}"))
    return changes, notes


def changes_from_diff(files: list[FilePatch]) -> tuple[list[DelayChange], list[str]]:
    """Without the tree: delay calls with a constant argument on the diff's own lines, paired
    in order within a hunk; the caller from the hunk header or a definition in the hunk."""
    changes: list[DelayChange] = []
    notes: list[str] = []
    for fp in files:
        for h in fp.hunks:
            caller = _caller(h.header)
            removed: list[tuple[str, float | None, str | None]] = []
            added: list[tuple[str, float | None, str | None, int]] = []
            line = h.new_start
            for raw in h.lines:
                tag, body = raw[0], raw[1:]
                if tag == " " and re.match(r"^[A-Za-z_][^;=]*\b[A-Za-z_]\w*\s*\(", body) \
                        and not body.rstrip().endswith(";"):
                    caller = _caller(body) or caller  # a function definition's first line
                for m in _CALL.finditer(body):
                    ms = _value(m.group(1), m.group(2))
                    if tag == "-":
                        removed.append((m.group(1), ms, caller))
                    elif tag == "+":
                        added.append((m.group(1), ms, caller, line))
                if tag in " +":
                    line += 1
            for (f0, ms0, c0), (f1, ms1, c1, ln) in zip(removed, added, strict=False):
                if c0 is None or c0 != c1:
                    notes.append(f"{fp.path}:{ln}: {f1}: no calling function in the hunk "
                                 "header (pass --source TREE)")
                elif (f0, ms0) != (f1, ms1):
                    changes.append(DelayChange(c0, f0, ms0, f1, ms1, f"{fp.path}:{ln}"))
            if len(removed) != len(added):
                notes.append(f"{fp.path}: hunk @@ -{h.old_start}: delay calls added or "
                             "removed: not replayed")
    return changes, notes


def _caller(text: str) -> str | None:
    m = _FUNC_HEAD.search(text)
    return m.group(1) if m else None


def _value(func: str, args: str) -> float | None:
    """The first argument as ms when it is a constant expression (`10 + 40`, `2 * 1000`)."""
    first = args.split(",")[0].strip()
    try:
        tree = ast.parse(first, mode="eval")
    except SyntaxError:
        return None
    allowed = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.Add, ast.Sub,
               ast.Mult, ast.FloorDiv, ast.Div, ast.USub)
    if not all(isinstance(n, allowed) and (not isinstance(n, ast.Constant)
               or type(n.value) in (int, float)) for n in ast.walk(tree)):
        return None
    try:
        value = eval(compile(tree, "<delay>", "eval"), {"__builtins__": {}})  # noqa: S307
    except (ArithmeticError, ValueError):
        return None
    if not isinstance(value, (int, float)) or value < 0:
        return None
    return round(float(value) * UNIT_MS[func], 6)


# the delay kprobes' names for each delay function (sleepgraph's probes: udelay is
# __const_udelay, which mdelay and ndelay reach too; usleep_range is usleep_range_state's
# inline wrapper since 5.17)
PROBED = {"msleep": ("msleep",), "ssleep": ("msleep",),
          "msleep_interruptible": ("msleep_interruptible",),
          "usleep_range": ("usleep_range", "usleep_range_state"),
          "usleep_range_state": ("usleep_range_state", "usleep_range"),
          "usleep_idle_range": ("usleep_range_state", "usleep_range"),
          "fsleep": ("usleep_range", "usleep_range_state", "msleep", "udelay"),
          "udelay": ("udelay",), "mdelay": ("udelay",), "ndelay": ("udelay",)}


def whatif_targets(changes: list[DelayChange], measured: list[tuple[str, str, float]]
                   ) -> tuple[dict[str, float], dict[str, tuple[str, float]], list[str]]:
    """`trace whatif --delay` targets for the changes: (delays, replacements, notes).
    `measured`: (caller, probe name, requested ms or nan) of the capture's delays."""
    delays: dict[str, float] = {}
    replace: dict[str, tuple[str, float]] = {}
    notes: list[str] = []
    names = {f for _, f, _ in measured}
    for c in changes:
        if c.new_ms is None:
            notes.append(f"{c.describe()}: the new value is not a constant: not replayed")
            continue
        hit = [(f, req) for caller, f, req in measured
               if caller == c.caller and f in PROBED.get(c.old_func, (c.old_func,))]
        if c.old_ms is not None:
            same = [(f, req) for f, req in hit if req == req and abs(req - c.old_ms) < 1e-6]
            hit = same or [(f, req) for f, req in hit if req != req]
        if not hit:
            notes.append(f"{c.describe()}: no such delay measured in the capture "
                         f"({c.old_func} from {c.caller})")
            continue
        for func in sorted({f for f, _ in hit}):
            reqs = {req for f, req in hit if f == func}
            unit = 1e-3 if func.startswith(("usleep", "udelay")) else 1.0
            target = f"{c.caller}:{func}"
            if c.old_ms is not None and all(r == r for r in reqs):
                target += f"({c.old_ms / unit:g})"
            same_family = func in PROBED.get(c.new_func, (c.new_func,))
            delays[target] = c.new_ms
            if not same_family:
                new_names = PROBED.get(c.new_func, (c.new_func,))
                probe = next((n for n in new_names if n in names), new_names[0])
                replace[target] = (probe, c.new_ms)
    return delays, replace, notes

"""Apply one file's hunks to its text, in memory: exact context, any offset (like `git apply`
without fuzz). Nothing is written anywhere; a hunk that does not match raises ApplyError
naming it, and the file keeps no partial result."""

from __future__ import annotations

from dataclasses import dataclass, field

from dpmlens.patches.parse import FileDiff, Hunk


class ApplyError(Exception):
    """A hunk whose old lines are not in the file (or a file that is missing or present)."""


@dataclass
class Applied:
    """The new text of a file and, per new-side line the patch touched, its patch line."""

    text: bytes | None  # None: the patch deletes the file
    added: dict[int, int] = field(default_factory=dict)  # new line -> patch line of its `+`
    # New lines right after a deletion: a removed call can make the code that follows wrong.
    touched: set[int] = field(default_factory=set)
    # a touched line -> the patch line of the `-` line before it (checkpatch's `#NN`)
    removed_at: dict[int, int] = field(default_factory=dict)


def apply_file(before: bytes | None, diff: FileDiff) -> Applied:
    if diff.old_path is None and before is not None:
        raise ApplyError(f"{diff.path}: the patch creates it, but it already exists")
    if diff.old_path is not None and before is None:
        raise ApplyError(f"{diff.old_path}: no such file in the tree")
    if diff.new_path is None:
        return Applied(None)
    lines = (before or b"").splitlines(keepends=True)
    out: list[bytes] = []
    applied = Applied(b"")
    cursor = 0  # next unconsumed line of `lines`
    for number, hunk in enumerate(diff.hunks, start=1):
        old = [text for op, text, _ in hunk.lines if op != b"+"]
        at = _locate(lines, old, max(hunk.old_start - 1, 0) if hunk.old_count else hunk.old_start,
                     cursor)  # fmt: skip
        if at is None:
            where = f"hunk #{number} ({hunk.header}) of {diff.path}"
            raise ApplyError(f"{where} does not apply: {_why(lines, old, hunk)}")
        out.extend(lines[cursor:at])
        cursor = at
        for op, text, patch_line in hunk.lines:
            if op == b"-":
                cursor += 1
                applied.touched.add(len(out) + 1)
                applied.removed_at.setdefault(len(out) + 1, patch_line)
                continue
            if op == b"+":
                out.append(text)
                applied.added[len(out)] = patch_line
            else:
                out.append(lines[cursor])
                cursor += 1
    out.extend(lines[cursor:])
    applied.text = b"".join(out)
    applied.touched = {n for n in applied.touched if n not in applied.added}
    applied.removed_at = {n: p for n, p in applied.removed_at.items() if n in applied.touched}
    return applied


def _locate(lines: list[bytes], old: list[bytes], expected: int, cursor: int) -> int | None:
    """Where `old` occurs at or after `cursor`, nearest to `expected` first."""
    if not old:  # a pure insertion (`@@ -N,0 ...`): after line N
        return min(max(expected, cursor), len(lines))
    last = len(lines) - len(old)
    for distance in range(max(last + 1, 1)):
        for at in (expected - distance, expected + distance) if distance else (expected,):
            if cursor <= at <= last and _matches(lines, old, at):
                return at
        if expected - distance < cursor and expected + distance > last:
            break
    return None


def _matches(lines: list[bytes], old: list[bytes], at: int) -> bool:
    for i, want in enumerate(old):
        have = lines[at + i]
        if have != want and have.rstrip(b"\r\n") != want.rstrip(b"\r\n"):
            return False
    return True


def _why(lines: list[bytes], old: list[bytes], hunk: Hunk) -> str:
    """The first line that differs at the expected place, for the error message."""
    at = max(hunk.old_start - 1, 0)
    for i, want in enumerate(old):
        if at + i >= len(lines):
            return f"the file has only {len(lines)} lines"
        have = lines[at + i]
        if have.rstrip(b"\r\n") != want.rstrip(b"\r\n"):
            shown = want.rstrip(b"\r\n").decode("utf-8", errors="replace").strip()
            return f"line {at + i + 1} differs (expected {shown[:60]!r}), nowhere else in the file"
    return "its context matches nowhere after the previous hunk"

"""`--diff REV`: which lines changed since a git revision (`git diff -U0 REV`).

The working tree (committed or not) is compared with REV, so a developer can check their
uncommitted patch and CI can check a branch against its merge base. A finding is kept when its
own lines or any step of its call chain touch an added or changed line — a patch that wires a
helper into a noirq callback is responsible for the call in the unchanged helper — and it was
not already there at REV (patches/since.py). `HEAD` in a repository without commits yet (a
pre-commit hook's first commit) is the empty tree: every file is new.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass

from dpmlens.core.errors import UsageError
from dpmlens.core.findings import Finding, Span

_EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git's id of the empty tree
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


def _git(args: list[str], cwd: str) -> str:
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            check=False,
            text=True,
            encoding="utf-8",
            errors="replace",
        )
    except FileNotFoundError:
        raise UsageError("--diff needs git, which is not installed") from None
    if done.returncode != 0:
        detail = (done.stderr.strip().splitlines() or ["failed"])[-1]
        raise UsageError(f"git {args[0]}: {detail}")
    return done.stdout


def parse_diff(text: str) -> dict[str, set[int]]:
    """Repository-relative path -> new-side line numbers added or changed (from -U0 output)."""
    changed: dict[str, set[int]] = {}
    current: set[int] | None = None
    for line in text.splitlines():
        if line.startswith("+++ "):
            target = line[4:]
            if target == "/dev/null":
                current = None
                continue
            if target.startswith('"'):  # git quotes unusual names; keep them usable
                target = target.strip('"').encode().decode("unicode_escape")
            target = target[2:] if target.startswith("b/") else target
            current = changed.setdefault(target, set())
        elif line.startswith("@@") and current is not None:
            match = _HUNK.match(line)
            if match:
                start, count = int(match.group(1)), int(match.group(2) or "1")
                current.update(range(start, start + count))
    return changed


def _all_lines(path: str) -> set[int]:
    try:
        with open(path, "rb") as handle:
            count = handle.read().count(b"\n") + 1
    except OSError:
        return set()
    return set(range(1, count + 1))


def _unborn(top: str) -> bool:
    """A repository whose current branch has no commit yet."""
    try:
        _git(["symbolic-ref", "-q", "HEAD"], top)
        _git(["log", "-1", "--format=%H"], top)
    except UsageError:
        return True
    return False


@dataclass
class ChangedLines:
    """Changed lines of a revision range, looked up by any path spelling."""

    top: str  # repository top, absolute
    lines: dict[str, set[int]]  # absolute path -> changed lines
    rev: str = "HEAD"  # what the working tree is compared with (a commit, or the empty tree)

    @classmethod
    def since(cls, rev: str, near: str) -> ChangedLines:
        """Lines changed in the working tree since `rev`, for the repository holding `near`."""
        where = near if os.path.isdir(near) else os.path.dirname(os.path.abspath(near)) or "."
        try:
            top = _git(["rev-parse", "--show-toplevel"], where).strip()
        except UsageError:
            raise UsageError(f"--diff {rev}: {near} is not inside a git repository") from None
        base = rev
        try:
            _git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], top)
        except UsageError:
            if rev != "HEAD" or not _unborn(top):
                raise UsageError(f"--diff {rev}: unknown git revision") from None
            base = _EMPTY_TREE
        text = _git(["diff", "-U0", "--no-color", "--no-ext-diff", "--no-renames", base, "--"],
                    top)  # fmt: skip
        relative = parse_diff(text)
        # Files git does not track yet are all new: every line counts as changed.
        untracked = _git(["ls-files", "--others", "--exclude-standard", "-z"], top)
        for name in filter(None, untracked.split("\0")):
            relative[name] = _all_lines(os.path.join(top, name))
        return cls(top, {os.path.join(top, p): lines for p, lines in relative.items()}, base)

    def _lines_for(self, path: str) -> set[int] | None:
        return self.lines.get(os.path.realpath(path)) or self.lines.get(os.path.abspath(path))

    def touches_file(self, path: str) -> bool:
        return bool(self._lines_for(path))

    def _touches(self, path: str, span: Span) -> bool:
        lines = self._lines_for(path)
        return bool(lines) and any(n in lines for n in range(span.line, span.end_line + 1))

    def keep(self, finding: Finding) -> bool:
        if self._touches(finding.path, finding.span):
            return True
        return any(self._touches(step.path, step.span) for step in finding.chain)

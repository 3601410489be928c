"""Check a series of patches against a tree, in memory, one patch at a time.

Each patch applies on the tree as the earlier patches of the series left it; a patch that does
not apply is reported (naming the patch and hunk) and skipped, and the next ones still apply
on what came before it. A patch already in the tree (`b4 prep --check` runs on the branch that
holds the series; `git format-patch -1 | dpmlens check --patch -` after a commit) is checked in
place: its "before" side is the blob its `index` line names, when the repository has it (as
`git am -3` finds it), else the tree with the patch reverse-applied. For every touched
`.c`/`.h` file the engine runs on the text before and after the patch, and only what the patch
introduces is kept (`introduced`).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from dpmlens.config.settings import Config
from dpmlens.core.budget import Skipped, within_limits
from dpmlens.core.errors import UsageError
from dpmlens.core.findings import Finding
from dpmlens.engine.check import CheckRun, _configured
from dpmlens.engine.walk import SOURCE_SUFFIXES, InputError
from dpmlens.patches.apply import Applied, ApplyError, apply_file
from dpmlens.patches.introduced import introduced
from dpmlens.patches.parse import FileDiff, Patch, reverse

Reader = Callable[[str], "bytes | None"]  # repository-relative path -> text, None if absent


@dataclass
class PatchResult:
    patch: Patch
    findings: list[Finding] = field(default_factory=list)
    error: str | None = None  # why it did not apply
    # (path, line) -> (patch line of the `+` line or 0, the new source line)
    quoted: dict[tuple[str, int], tuple[int, str]] = field(default_factory=dict)
    in_place: bool = False  # the tree already held the patch: checked against its before side


def worktree_reader(root: str) -> Reader:
    def read(path: str) -> bytes | None:
        try:
            with open(os.path.join(root, path), "rb") as fh:
                return fh.read()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None

    return read


def git_reader(root: str, rev: str) -> Reader:
    """Files as they are at `rev` (`git show REV:path`), for `--commits`."""

    def read(path: str) -> bytes | None:
        done = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=root, capture_output=True,
                              check=False)  # fmt: skip
        return done.stdout if done.returncode == 0 else None

    return read


class Series:
    """The in-memory tree: the base reader plus what the patches so far wrote."""

    def __init__(self, root: str, base: Reader, config: Config, rules: list[Any] | None) -> None:
        from dpmlens.engine.analyze import prefilter

        self.root, self.base, self.config, self.rules = root, base, config, rules
        self.overlay: dict[str, bytes | None] = {}
        self.prefilter = prefilter(config, rules)
        self.skipped: list[InputError] = []  # files over a limit (budget.py)
        self._top: str | None | bool = False  # the git top of root, looked up once

    def read(self, path: str) -> bytes | None:
        return self.overlay[path] if path in self.overlay else self.base(path)

    def check(self, patch: Patch) -> PatchResult:
        result = PatchResult(patch)
        new: dict[str, tuple[bytes | None, Applied]] = {}
        try:
            for diff in patch.files:
                if diff.binary or not diff.hunks and diff.old_path == diff.new_path:
                    continue  # a binary or mode-only change: nothing to analyze
                before = self.read(diff.old_path) if diff.old_path else None
                try:
                    applied = apply_file(before, diff)
                except ApplyError:
                    rebuilt = self._before_of_applied(diff, before)
                    if rebuilt is None:
                        raise
                    before, applied = rebuilt
                    result.in_place = True
                new[diff.path] = (before, applied)
                if diff.old_path and diff.old_path != diff.new_path:
                    new[diff.old_path] = (before, Applied(None))
        except ApplyError as exc:
            result.error = str(exc)
            return result
        for path, (before, applied) in new.items():
            self.overlay[path] = applied.text
            if applied.text is None or not path.endswith(SOURCE_SUFFIXES):
                continue
            lines = set(applied.added) | applied.touched
            found = introduced(self._analyze(path, before), self._analyze(path, applied.text),
                               path, lines)  # fmt: skip
            source = applied.text.split(b"\n")
            for f in found:
                for line in {f.span.line, *(s.span.line for s in f.chain if s.path == path)}:
                    text = source[line - 1] if 0 < line <= len(source) else b""
                    quoted = text.rstrip(b"\r").decode("utf-8", errors="replace")
                    at = applied.added.get(line) or applied.removed_at.get(line, 0)
                    result.quoted[(path, line)] = (at, quoted)
            result.findings.extend(found)
        return result

    def _before_of_applied(
        self, diff: FileDiff, current: bytes | None
    ) -> tuple[bytes | None, Applied] | None:
        """(before, applied) for a patch the tree already holds, or None when it does not."""
        if diff.old_blob is not None:
            blob = self._blob(diff.old_blob)
            if blob is not None:
                try:
                    return blob, apply_file(blob, diff)
                except ApplyError:
                    pass
        try:
            undone = apply_file(current, reverse(diff))
            before = undone.text
            applied = apply_file(before, diff)
        except ApplyError:
            return None
        # a reversed creation is a deletion, which apply_file takes on trust: compare
        if applied.text != current:
            return None
        return before, applied

    def _blob(self, blob_id: str) -> bytes | None:
        if self._top is False:
            self._top = git_top(self.root) if os.path.isdir(self.root) else None
        if not isinstance(self._top, str):
            return None
        done = subprocess.run(["git", "cat-file", "blob", blob_id], cwd=self._top,
                              capture_output=True, check=False)  # fmt: skip
        return done.stdout if done.returncode == 0 else None

    def _analyze(self, path: str, source: bytes | None) -> list[Finding]:
        """Findings of `source` as `path`, spelled repository-relative."""
        on_disk = os.path.join(self.root, path)  # local headers and the tree's Makefile
        found = analyze_text(on_disk, source, self.config, self.rules, self.prefilter,
                             self.skipped, name=path)  # fmt: skip
        return [_repath(f, on_disk, path) for f in found]


def analyze_text(
    path: str,
    source: bytes | None,
    config: Config,
    rules: list[Any] | None,
    prefilter: Any,
    skipped: list[InputError],
    name: str | None = None,
) -> list[Finding]:
    """The findings of `source` analyzed as the file `path` (its directory gives the local
    headers), in this process; a file over a limit is added to `skipped` under `name`."""
    from dpmlens.engine.analyze import analyze_model
    from dpmlens.model.build import build_model

    if not source or b"\0" in source[:8192] or not prefilter.matches(source):
        return []
    try:
        found = within_limits(source, lambda: analyze_model(
            build_model(path, source), config, None, rules))
    except RecursionError:
        return []
    except Skipped as exc:  # over a limit: named in the run's errors, the run goes on
        skipped.append(InputError(name or path, f"not analyzed: {exc}"))
        return []
    return _configured(found, config)


def _repath(f: Finding, old: str, new: str) -> Finding:
    chain = tuple(replace(s, path=new) if s.path == old else s for s in f.chain)
    return replace(f, path=new if f.path == old else f.path, chain=chain)


def check_series(patches: Sequence[Patch], series: Series) -> tuple[list[PatchResult], CheckRun]:
    """Every patch's result, and one CheckRun of all of them for the ordinary printers."""
    started = time.monotonic()
    results = [series.check(p) for p in patches]
    run = CheckRun(findings=[], errors=[])
    for r in results:
        run.files_checked += len(r.patch.files)
        run.files_analyzed += sum(1 for d in r.patch.files if d.path.endswith(SOURCE_SUFFIXES))
        run.lines_checked += r.patch.lines
        run.findings.extend(r.findings)
        for key, (_, text) in r.quoted.items():
            run.source_lines[key] = text
        if r.error is not None:
            run.errors.append(InputError(r.patch.name, r.error, usage=True))
    run.errors.extend(series.skipped)
    run.findings.sort(key=Finding.sort_key)
    run.elapsed = time.monotonic() - started
    return results, run


def git_top(near: str) -> str | None:
    done = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=near, capture_output=True,
                          text=True, check=False)  # fmt: skip
    return done.stdout.strip() if done.returncode == 0 else None


def commits_mbox(root: str, spec: str) -> tuple[str, bytes]:
    """(base revision, the series as one mbox) for `--commits A..B`."""
    if ".." not in spec or "..." in spec:
        raise UsageError(f"--commits {spec}: expected a range A..B")
    base = spec.split("..", 1)[0] or "HEAD"
    done = subprocess.run(
        ["git", "format-patch", "--stdout", "--no-renames", "--no-signature", spec],
        cwd=root, capture_output=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        detail = done.stderr.decode(errors="replace").strip().splitlines() or ["failed"]
        raise UsageError(f"--commits {spec}: git format-patch: {detail[-1]}")
    return base, done.stdout

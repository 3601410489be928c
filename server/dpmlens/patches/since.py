"""`dpmlens check --diff REV`: only what the working tree introduces since REV, with the same
meaning as `--patch`/`--commits` (introduced.py): a finding counts when it was absent from the
file as it is at REV (matched by rule + function + message, not line) and its lines or call
chain touch a line changed since REV. An old finding on an edited line, or one that moved, is
not reported; a file new since REV has no "before".
"""

from __future__ import annotations

import os
import subprocess
from collections import Counter, defaultdict
from typing import Any

from dpmlens.config.settings import Config
from dpmlens.core.findings import Finding
from dpmlens.engine.vcs import ChangedLines
from dpmlens.engine.walk import InputError
from dpmlens.patches.introduced import match_key
from dpmlens.patches.series import analyze_text


def text_at(top: str, rev: str, path: str) -> bytes | None:
    """`path` as it is at `rev` (None when it did not exist there)."""
    rel = os.path.relpath(os.path.realpath(path), top)
    if rel.startswith(".."):
        return None
    done = subprocess.run(["git", "show", f"{rev}:{rel}"], cwd=top, capture_output=True,
                          check=False)  # fmt: skip
    return done.stdout if done.returncode == 0 else None


def introduced_since(
    changed: ChangedLines,
    findings: list[Finding],
    config: Config,
    rules: list[Any] | None,
) -> tuple[list[Finding], list[InputError]]:
    """The findings of the working tree that the change since `changed.rev` introduced, and
    the files whose old side could not be analyzed (over a limit)."""
    from dpmlens.engine.analyze import prefilter

    touched = [f for f in findings if changed.keep(f)]
    by_file: dict[str, list[Finding]] = defaultdict(list)
    for f in touched:
        by_file[f.path].append(f)
    skipped: list[InputError] = []
    keep: list[Finding] = []
    words = prefilter(config, rules)
    for path, found in by_file.items():
        before = text_at(changed.top, changed.rev, path)
        old = Counter(match_key(f) for f in analyze_text(path, before, config, rules, words,
                                                         skipped))  # fmt: skip
        for f in sorted(found, key=Finding.sort_key):
            key = match_key(f)
            if old[key] > 0:
                old[key] -= 1
            else:
                keep.append(f)
    keep.sort(key=Finding.sort_key)
    return keep, skipped

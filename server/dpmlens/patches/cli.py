"""`dpmlens check --patch FILE...` / `--commits A..B`: the command-line side of a series."""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import Any

from dpmlens.core.errors import UsageError
from dpmlens.patches.parse import Patch, parse_patches
from dpmlens.patches.series import (
    PatchResult,
    Series,
    check_series,
    commits_mbox,
    git_reader,
    git_top,
    worktree_reader,
)


def read_patches(names: list[str]) -> list[Patch]:
    patches: list[Patch] = []
    for name in names:
        try:
            data = sys.stdin.buffer.read() if name == "-" else _read(name)
        except OSError as exc:
            raise UsageError(f"--patch {name}: cannot read: {exc.strerror or exc}") from None
        found = parse_patches(data, "stdin" if name == "-" else os.path.basename(name))
        if not found:
            raise UsageError(f"--patch {name}: no unified diff in it")
        patches.extend(found)
    return patches


def _read(name: str) -> bytes:
    with open(name, "rb") as fh:
        return fh.read()


def run_series(
    args: argparse.Namespace, config: Any, rules: list[Any]
) -> tuple[list[PatchResult], Any]:
    """Parse, apply and check; the tree is --tree, else the git top of `.`, else `.`."""
    root = args.tree or git_top(".") or "."
    if not os.path.isdir(root):
        raise UsageError(f"--tree {root}: no such directory")
    if args.commits:
        top = git_top(root)
        if top is None:
            raise UsageError(f"--commits {args.commits}: {root} is not inside a git repository")
        base, mbox = commits_mbox(top, args.commits)
        patches = parse_patches(mbox, "commit")
        for p in patches:  # name a commit by its subject, as `git log --oneline` would
            p.name = re.sub(r"^\[PATCH[^\]]*\]\s*", "", p.subject) or p.name
        series = Series(top, git_reader(top, base), config, rules)
    else:
        patches = read_patches(args.patch)
        series = Series(root, worktree_reader(root), config, rules)
    return check_series(patches, series)

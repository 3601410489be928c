"""Baselines: accept today's findings, report only new ones.

A finding is keyed on rule + path + function + normalized message — not on its line, so edits
above it do not revive it. Keys are counted: two identical findings in a function with one in
the baseline leave one reported. Paths are stored relative to the baseline file, so the same
baseline works from any working directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from pathlib import Path

from dpmlens.core.atomic import write_text_atomic
from dpmlens.core.errors import UsageError
from dpmlens.core.findings import Finding

FORMAT_VERSION = 1
# Line references inside messages ("at line 12", "foo.c:12:3") move with unrelated edits.
_LINE_REFS = re.compile(r"(\bline\s+\d+\b)|(:\d+(:\d+)?\b)")
_SPACE = re.compile(r"\s+")

Key = tuple[str, str, str, str]


def normalize_message(message: str) -> str:
    return _SPACE.sub(" ", _LINE_REFS.sub("", message)).strip()


def _path_key(path: str, base: Path | None) -> str:
    if base is None:
        return Path(path).as_posix()
    return Path(os.path.relpath(os.path.abspath(path), base)).as_posix()


def key(finding: Finding, base: Path | None = None) -> Key:
    return (
        finding.rule,
        _path_key(finding.path, base),
        finding.function or "",
        normalize_message(finding.message),
    )


def fingerprint(finding: Finding) -> str:
    """A stable hash of the key (path as given), for SARIF partialFingerprints."""
    return hashlib.sha256("\0".join(key(finding)).encode()).hexdigest()[:32]


def write_baseline(path: str, findings: list[Finding]) -> int:
    base = Path(os.path.abspath(path)).parent
    counts = Counter(key(f, base) for f in findings)
    entries = [
        {"rule": k[0], "path": k[1], "function": k[2], "message": k[3], "count": n}
        for k, n in sorted(counts.items())
    ]
    document = {"version": FORMAT_VERSION, "tool": "dpmlens", "findings": entries}
    try:
        write_text_atomic(path, json.dumps(document, indent=2) + "\n")
    except OSError as exc:
        raise UsageError(f"{path}: cannot write baseline: {exc.strerror or exc}") from None
    return len(findings)


def read_baseline(path: str) -> Counter[Key]:
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"{path}: cannot read baseline: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: baseline is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"{path}:{exc.lineno}:{exc.colno}: invalid baseline JSON: {exc.msg}"
        ) from None
    if not isinstance(document, dict) or document.get("version") != FORMAT_VERSION:
        raise UsageError(f"{path}: not a dpmlens baseline (version {FORMAT_VERSION} expected)")
    counts: Counter[Key] = Counter()
    try:
        for entry in document["findings"]:
            k = (entry["rule"], entry["path"], entry["function"], entry["message"])
            counts[k] += int(entry.get("count", 1))
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"{path}: malformed baseline entry ({exc})") from None
    return counts


def subtract_baseline(path: str, findings: list[Finding]) -> tuple[list[Finding], int]:
    """Findings not covered by the baseline at `path`, and how many it suppressed."""
    remaining = read_baseline(path)
    base = Path(os.path.abspath(path)).parent
    kept: list[Finding] = []
    for f in findings:
        k = key(f, base)
        if remaining[k] > 0:
            remaining[k] -= 1
        else:
            kept.append(f)
    return kept, len(findings) - len(kept)


def stray_baseline_warning(path: str, checked: list[str]) -> str | None:
    """A warning when the baseline has entries but none for a file under the checked paths:
    a baseline read from the wrong directory (its paths are relative to its own directory)
    would otherwise suppress nothing, silently."""
    entries = read_baseline(path)
    if not entries:
        return None
    base = Path(os.path.abspath(path)).parent
    roots = [os.path.abspath(p) for p in checked]
    for rule_path in {k[1] for k in entries}:
        target = os.path.normpath(os.path.join(base, rule_path))
        if any(target == r or target.startswith(r.rstrip(os.sep) + os.sep) for r in roots):
            return None
    example = next(iter(entries))[1]
    return (f"baseline {path} matches no file under the checked paths (its paths are relative "
            f"to {base}, e.g. {example}): it suppresses nothing")  # fmt: skip

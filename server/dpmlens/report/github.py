"""GitHub Actions workflow commands: one annotation per finding on the pull request's diff.

::warning file=path,line=L,col=C,endLine=L2,endColumn=C2,title=rule-id::message
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dpmlens.core.findings import Severity
from dpmlens.engine.check import CheckRun

_COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning"}  # the rest are notices


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def render(run: CheckRun, rules: Sequence[Any] = ()) -> str:
    out: list[str] = []
    for f in run.findings:
        command = _COMMAND.get(f.severity, "notice")
        s = f.span
        props = (
            f"file={_property(f.path)},line={s.line},col={s.column},"
            f"endLine={s.end_line},endColumn={s.end_column},"
            f"title={_property(f'{f.rule} ({f.kernel_type})')}"
        )
        message = f.message
        if f.chain:
            # Steps name the function they are in; a callback and its first call share one.
            names = [step.function for step in f.chain]
            unique = [n for i, n in enumerate(names) if i == 0 or n != names[i - 1]]
            steps = " -> ".join(f"{name}()" for name in unique)
            message += f"\ncall chain: {steps}"
        out.append(f"::{command} {props}::{_data(message)}")
    for e in run.errors:
        out.append(f"::error file={_property(e.path)},title=dpmlens::{_data(e.message)}")
    return "".join(line + "\n" for line in out)

"""GNU style, as compilers print it and editors/grep understand:

path:line:col: warning: message [rule-id]
path:line:col: note: <one line per step of the call chain>
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dpmlens.engine.check import CheckRun


def render(run: CheckRun, rules: Sequence[Any] = ()) -> str:
    out: list[str] = []
    for f in run.findings:
        out.append(f"{f.path}:{f.span.line}:{f.span.column}: {f.severity}: {f.message} [{f.rule}]")
        for step in f.chain:
            if (step.path, step.span.line, step.span.column) == (f.path, f.line, f.column):
                continue  # the finding's own line already says it
            what = step.note or f"in {step.function}()"
            out.append(f"{step.path}:{step.span.line}:{step.span.column}: note: {what}")
    return "".join(line + "\n" for line in out)

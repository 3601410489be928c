"""checkpatch.pl's layout, so kernel maintainers read it without learning a new format:

WARNING:KERNEL_TYPE: message
#line: FILE: path:line:
+<the source line>

total: 0 errors, 1 warnings, 0 checks, 1234 lines checked
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dpmlens.core.findings import Severity
from dpmlens.engine.check import CheckRun

_LEVEL = {Severity.ERROR: "ERROR", Severity.WARNING: "WARNING"}  # the rest are CHECKs


def render(run: CheckRun, rules: Sequence[Any] = ()) -> str:
    out: list[str] = []
    counts = {"ERROR": 0, "WARNING": 0, "CHECK": 0}
    for f in run.findings:
        level = _LEVEL.get(f.severity, "CHECK")
        counts[level] += 1
        out.append(f"{level}:{f.kernel_type}: {f.message}")
        out.append(f"#{f.span.line}: FILE: {f.path}:{f.span.line}:")
        quoted = run.source_lines.get((f.path, f.span.line))
        if quoted is not None:
            out.append(f"+{quoted}")
        out.append("")
    out.append(
        f"total: {counts['ERROR']} errors, {counts['WARNING']} warnings, "
        f"{counts['CHECK']} checks, {run.lines_checked} lines checked"
    )
    return "".join(line + "\n" for line in out)

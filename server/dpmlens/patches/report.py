"""checkpatch.pl's layout, one block per patch (what `scripts/checkpatch.pl 000*.patch` prints):

-------------------
0001-foo.patch
-------------------
WARNING:PM_WAKE_SETUP_IN_NOIRQ: message
#42: FILE: drivers/foo/bar.c:120:
+	enable_irq_wake(irq);

total: 0 errors, 1 warnings, 0 checks, 57 lines checked

`#NN` is the line of the patch that added the code (0 when the finding sits on an unchanged line
that the patch's call chain reaches).
"""

from __future__ import annotations

from collections.abc import Sequence

from dpmlens.findings import Severity
from dpmlens.patches.series import PatchResult

_LEVEL = {Severity.ERROR: "ERROR", Severity.WARNING: "WARNING"}


def render(results: Sequence[PatchResult]) -> str:
    out: list[str] = []
    several = len(results) > 1
    for r in results:
        if several:
            rule = "-" * max(len(r.patch.name), 20)
            out += [rule, r.patch.name, rule]
        counts = {"ERROR": 0, "WARNING": 0, "CHECK": 0}
        if r.error is not None:
            out += [f"ERROR:PM_PATCH_DOES_NOT_APPLY: {r.error}", ""]
            counts["ERROR"] += 1
        for f in r.findings:
            level = _LEVEL.get(f.severity, "CHECK")
            counts[level] += 1
            patch_line, text = r.quoted.get((f.path, f.span.line), (0, ""))
            out.append(f"{level}:{f.kernel_type}: {f.message}")
            out.append(f"#{patch_line}: FILE: {f.path}:{f.span.line}:")
            out.append(f"{'+' if patch_line else ' '}{text}")
            out.append("")
        out.append(
            f"total: {counts['ERROR']} errors, {counts['WARNING']} warnings, "
            f"{counts['CHECK']} checks, {r.patch.lines} lines checked"
        )
        out.append("")
        if r.error is None and not r.findings:
            out.append(f"{r.patch.name} has no obvious PM problems and is ready for submission.")
        else:
            out.append(f"{r.patch.name} has PM problems, please review.")
        if several:
            out.append("")
    return "".join(line + "\n" for line in out)

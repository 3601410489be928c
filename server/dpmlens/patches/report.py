"""checkpatch.pl's layout, one block per patch (what `scripts/checkpatch.pl 000*.patch` prints):

-------------------
0001-foo.patch
-------------------
WARNING:PM_WAKE_SETUP_IN_NOIRQ: message
#42: FILE: drivers/foo/bar.c:120:
+	enable_irq_wake(irq);

total: 0 errors, 1 warnings, 0 checks, 57 lines checked

`#NN` is always a line of the patch: the `+` line of the flagged code, or, when the flagged
line is unchanged and the patch is responsible through the call chain (it wired a helper into a
callback), the patch line of the first chain step it touched; then the flagged line itself and
the call chain follow, one indented line each (`  drivers/foo/bar.c:95: calls helper()`).
"""

from __future__ import annotations

from collections.abc import Sequence

from dpmlens.core.findings import Finding, Severity
from dpmlens.patches.series import PatchResult

_LEVEL = {Severity.ERROR: "ERROR", Severity.WARNING: "WARNING"}


def _located(f: Finding, r: PatchResult) -> list[str]:
    """The `#NN: FILE:` line, its quoted source, then the flagged line and the chain."""
    places = [(f.path, f.span.line)] + [(s.path, s.span.line) for s in f.chain]
    hit = next((p for p in places if r.quoted.get(p, (0, ""))[0]), places[0])
    patch_line, text = r.quoted.get(hit, (0, ""))
    out = [f"#{patch_line}: FILE: {hit[0]}:{hit[1]}:", f"{'+' if patch_line else ' '}{text}"]
    if hit != places[0]:
        out.append(f"  {f.path}:{f.span.line}: {r.quoted.get(places[0], (0, ''))[1].strip()}")
    for step in f.chain:
        if (step.path, step.span.line) != places[0]:
            out.append(f"  {step.path}:{step.span.line}: {step.note or f'in {step.function}()'}")
    return out


def render(results: Sequence[PatchResult], quiet: bool = False) -> str:
    """`quiet` (`-q`, as checkpatch's `-q --mailback`): only the problems, nothing for a clean
    patch, no totals; `b4 prep --check` then shows a clean patch as "passed all checks"."""
    out: list[str] = []
    if quiet:
        results = [r for r in results if r.error is not None or r.findings]
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
            out.append(f"{level}:{f.kernel_type}: {f.message}")
            out += _located(f, r)
            out.append("")
        if quiet:
            continue
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

"""Check one compile command's source as the build configures it, print gcc-style lines."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from dpmlens.core.budget import within_limits
from dpmlens.core.findings import Finding
from dpmlens.kbuild.argv_options import OWN_OPTIONS
from dpmlens.kbuild.flags import parse_flags
from dpmlens.kbuild.kconfig import Kconfig, from_flags
from dpmlens.kbuild.pm_config import keep
from dpmlens.kbuild.select import select


@dataclass
class Options:
    """dpmlens's own options, taken out of the compiler's command line."""

    fail_level: str = "none"
    rules: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    config: str | None = None
    no_config: bool = False
    compiler: list[str] = field(default_factory=list)


_OWN = OWN_OPTIONS


def split_options(argv: list[str]) -> Options:
    """`--opt VALUE` / `--opt=VALUE` for dpmlens's options; everything else is the compiler's
    (gcc has no option spelled like these)."""
    out = Options()
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        name, eq, value = arg.partition("=")
        if arg == "--no-config":
            out.no_config = True
            continue
        if name not in _OWN:
            out.compiler.append(arg)
            continue
        if not eq:
            if i >= len(argv):
                raise ValueError(f"{name} needs a value")
            value, i = argv[i], i + 1
        attr = _OWN[name]
        if isinstance(getattr(out, attr), list):
            getattr(out, attr).extend(w for w in value.split(",") if w)
        else:
            setattr(out, attr, value)
    return out


def analyze(path: str, source: bytes, kconfig: Kconfig | None, config: Any,
            rules: list[Any]) -> list[Finding]:  # fmt: skip
    """The findings of `source` with only the branches `kconfig` compiles (all without one)."""
    from dpmlens.engine.analyze import prefilter
    from dpmlens.engine.check import _configured
    from dpmlens.engine.parted import analyze_sized

    if kconfig is not None:
        source = select(source, kconfig)
    words = prefilter(config, rules)
    if not words.matches(source):
        return []
    found = within_limits(  # raises budget.Skipped over a limit
        source, lambda: analyze_sized(path, source, config, rules, words)
    )
    found = _configured(found, config)
    if kconfig is not None:  # what CONFIG_PM / CONFIG_PM_SLEEP compile out (pm_config.py)
        found = [f for f in found if keep(f, kconfig)]
    return found


def gcc_lines(findings: list[Finding]) -> str:
    """`file:line:col: SEVERITY: message [dpmlens-rule]` (error, warning, info or hint, as
    `dpmlens check` prints them), and a `note:` per call-chain step: `note:` is kept for the
    chain, so an info finding is never read as part of the warning above it."""
    out = []
    for f in findings:
        level = str(f.severity)
        out.append(f"{f.path}:{f.line}:{f.column}: {level}: {f.message} [dpmlens-{f.rule}]")
        for step in f.chain:
            if (step.path, step.span.line) == (f.path, f.line):
                continue
            what = step.note or f"in {step.function}()"
            out.append(f"{step.path}:{step.span.line}:{step.span.column}: note: {what}")
    return "".join(line + "\n" for line in out)


def sources_and_config(compiler: list[str]) -> tuple[list[str], Kconfig | None]:
    flags = parse_flags(compiler)
    given = flags.macros or flags.includes
    return flags.sources, (from_flags(flags) if given else None)


def readable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.R_OK)

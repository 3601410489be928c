"""`dpmlens cc [OPTIONS] [COMPILER FLAGS] FILE.c`: the checker for `make C=1 CHECK=...`.

kbuild runs `$(CHECK) $(CHECKFLAGS) $(c_flags) FILE.c` for every file it compiles
(scripts/Makefile.build, cmd_checksrc). dpmlens reads the -D/-U/-I/-include flags among them,
so `#ifdef CONFIG_PM_SLEEP` blocks and IS_ENABLED(CONFIG_...) follow the build's .config;
every other flag is ignored. Findings go to stderr as gcc prints warnings
(`file:line:col: warning: ... [dpmlens-RULE]`). The exit code is 0 (the build goes on) unless
`--fail-level` asks for 1 on findings at or above a severity.

    make C=1 CHECK="dpmlens cc" drivers/rtc/
    make C=2 CHECK="dpmlens cc --fail-level warning" drivers/rtc/rtc-foo.o

dpmlens's own options: --fail-level LEVEL, --rule ID, --ignore ID|TYPE, --config FILE,
--no-config (also as --opt=VALUE).
"""

from __future__ import annotations

import argparse
import os
import sys
from types import SimpleNamespace
from typing import Any

from dpmlens.core import exit_codes
from dpmlens.core.errors import UsageError

_LEVELS = ("error", "warning", "info", "hint", "none")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "cc",
        help="check one file as the kernel build compiles it (make C=1 CHECK='dpmlens cc')",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        add_help=False,  # -h is nobody's compiler flag, but --help stays ours
        prefix_chars="+",  # every -flag belongs to the compiler line
    )
    p.add_argument("argv", nargs=argparse.REMAINDER)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from dpmlens.commands.check_cmd import _load_config, _select_rules, exit_code
    from dpmlens.core.budget import Skipped
    from dpmlens.engine.rule_set import load_rule_set
    from dpmlens.kbuild.cc import analyze, gcc_lines, readable, sources_and_config, split_options
    from dpmlens.kbuild.pm_config import with_configured_hz

    if args.argv in (["--help"], ["-h"]):
        print(__doc__)
        return exit_codes.OK
    try:
        options = split_options(list(args.argv))
    except ValueError as exc:
        raise UsageError(f"cc: {exc}") from None
    if options.fail_level not in _LEVELS:
        raise UsageError(f"cc: --fail-level {options.fail_level}: expected one of {_LEVELS}")
    sources, kconfig = sources_and_config(options.compiler)
    if not sources:
        raise UsageError("cc: no source file on the command line")
    rules, rule_errors = load_rule_set()
    rules = with_configured_hz(rules, kconfig)  # CONFIG_HZ of the build, not the rule's default
    for error in rule_errors:
        print(f"dpmlens: error: {error}", file=sys.stderr)
    ns = SimpleNamespace(config=options.config, no_config=options.no_config,
                         rule=options.rules, ignore=options.ignore)  # fmt: skip
    config = _load_config(ns, sources, [r.id for r in rules])  # type: ignore[arg-type]
    _select_rules(ns, rules, config)  # type: ignore[arg-type]
    findings = []
    for path in sources:
        if not readable(path):
            print(f"dpmlens: skipped: {path}: cannot read", file=sys.stderr)
            continue
        try:
            with open(path, "rb") as fh:
                findings += analyze(path, fh.read(), kconfig, config, rules)
        except Skipped as exc:  # over a limit: said, and the build goes on
            print(f"dpmlens: skipped: {path}: {exc}", file=sys.stderr)
        except Exception as exc:  # a checker must not break the build it runs in
            if os.environ.get("DPMLENS_DEBUG"):
                raise
            print(f"dpmlens: skipped: {path}: internal error: {type(exc).__name__}: {exc}",
                  file=sys.stderr)  # fmt: skip
    if not os.environ.get("DPMLENS_ALL_COSTS"):  # kbuild passes no options of ours
        from dpmlens.rules.severity_policy import is_quiet

        findings = [f for f in findings if not is_quiet(f)]  # costs too small to act on
    sys.stderr.write(gcc_lines(findings))
    return exit_code(SimpleNamespace(usage_errors=[], findings=findings), options.fail_level)

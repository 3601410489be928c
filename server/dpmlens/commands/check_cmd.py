"""`dpmlens check [PATH ...]`: review C files and directories, print findings, set the exit code.

Exit codes: 0 nothing at or above --fail-level, 1 findings at or above it, 2 usage,
configuration or rule-file errors (a path that does not exist, a broken .dpmlens.toml, ...).
Files that cannot be checked (binary, unreadable, symlink loops) are named on stderr, one line
each; the others are still checked and they do not change the exit code.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from dpmlens.core import exit_codes
from dpmlens.core.atomic import write_text_atomic
from dpmlens.core.durations import format_us
from dpmlens.core.errors import UsageError
from dpmlens.core.findings import Severity
from dpmlens.report import FORMATS, renderer

FAIL_LEVELS = ("error", "warning", "info", "hint", "none")


def _jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, not {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError("must be >= 0 (0 = all cores)")
    return value


def _words(values: list[str] | None) -> list[str]:
    """Repeatable, comma-separated options: `--rule a,b --rule c` -> [a, b, c]."""
    return [w.strip() for v in values or () for w in v.split(",") if w.strip()]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "check",
        help="review C files/directories for PM bugs",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "paths", nargs="*", metavar="PATH", help=".c/.h files or directories (default: .)"
    )
    p.add_argument(
        "-f", "--format", choices=FORMATS, default="gnu", help="output format (default: gnu)"
    )
    p.add_argument(
        "-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout"
    )
    p.add_argument(
        "-j",
        "--jobs",
        type=_jobs,
        default=0,
        metavar="N",
        help="worker processes (default: all cores)",
    )
    p.add_argument(
        "--rule",
        action="append",
        metavar="ID",
        help="run only these rules (repeatable, comma-separated)",
    )
    p.add_argument(
        "--ignore",
        action="append",
        metavar="ID|TYPE",
        help="skip these rules, by id or KERNEL_TYPE (repeatable, comma-separated)",
    )
    p.add_argument(
        "--fail-level",
        choices=FAIL_LEVELS,
        default="warning",
        help="lowest severity that makes the exit code 1 (default: warning)",
    )
    p.add_argument(
        "--diff",
        metavar="REV",
        help="only what the working tree introduces since git revision REV: findings absent"
        " at REV whose lines or call chain the change touches (as --commits)",
    )
    p.add_argument(
        "--patch",
        nargs="+",
        action="extend",
        metavar="FILE",
        help="check git format-patch files or mboxes ('-': stdin) applied in memory to the"
        " tree; report only what each patch introduces",
    )
    p.add_argument(
        "--commits", metavar="A..B", help="check each commit of a git range as a patch"
    )
    p.add_argument(
        "--tree", metavar="DIR", help="the tree --patch applies to (default: git top of .)"
    )
    p.add_argument("--baseline", metavar="FILE", help="hide findings recorded in FILE")
    p.add_argument(
        "--write-baseline", metavar="FILE", help="record the current findings in FILE and exit 0"
    )
    p.add_argument(
        "--config",
        metavar="FILE",
        help="use this .dpmlens.toml instead of searching upward from the paths",
    )
    p.add_argument("--no-config", action="store_true", help="ignore .dpmlens.toml files")
    p.add_argument(
        "--cache-dir",
        metavar="DIR",
        help="result cache directory (default: $XDG_CACHE_HOME/dpmlens, ~/.cache/dpmlens)",
    )
    p.add_argument(
        "--no-cache", action="store_true", help="analyze every file; do not read or write the cache"
    )
    p.add_argument(
        "--traces",
        action="append",
        metavar="CAPTURE",
        help="a suspend/resume capture, file or directory (sleepgraph, ftrace, dmesg,"
        " Perfetto; repeatable): a delay measured on a phase's critical path is a warning,"
        " one measured cheap stays low",
    )
    p.add_argument(
        "--fleet",
        metavar="STORE",
        help="a `dpmlens fleet` store: a delay site or callback whose fleet p50 per cycle on"
        " the critical path (newest kernel) reaches the policy's critical cost is a warning,"
        " with the fleet's figures",
    )
    p.add_argument(
        "--include-dead",
        action="store_true",
        help="keep the severity of findings in drivers Kconfig never enables (BROKEN,"
        " COMPILE_TEST only, UNUSED_BOARD_FILES, staging/**/deprecated)",
    )
    p.add_argument(
        "--all-costs",
        action="store_true",
        help="also list the latency costs the severity policy deems too small to act on (once"
        " per system sleep, error paths, dead or legacy drivers; as hints)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no summary line on stderr")
    p.set_defaults(handler=run)


def _select_rules(args: argparse.Namespace, rules: list[Any], config: Any) -> None:
    from dpmlens.rules.loader import find_rule

    def resolve(word: str, option: str) -> str:
        rule = find_rule(rules, word)
        if rule is None:
            raise UsageError(f"{option} {word}: unknown rule (see `dpmlens rules list`)")
        return rule.id

    only = _words(args.rule)
    if only:
        config.only_rules = {resolve(w, "--rule") for w in only}
    from dpmlens.config.settings import RuleSetting

    for word in _words(args.ignore):
        rule_id = resolve(word, "--ignore")
        config.rules[rule_id] = replace(config.rules.get(rule_id, RuleSetting()), enabled=False)


def _load_config(args: argparse.Namespace, paths: list[str], rule_ids: list[str]) -> Any:
    from dpmlens.config.file import find_config_for_paths, read_config
    from dpmlens.config.settings import Config
    from dpmlens.engine.rule_set import spec_quantities

    if args.no_config:
        return Config()
    path = Path(args.config) if args.config else find_config_for_paths(paths)
    if args.config and (path is None or not path.is_file()):
        raise UsageError(f"--config {args.config}: no such file")
    if path is None:
        return Config()
    return read_config(path, known_rules=rule_ids, known_spec=spec_quantities())


def _fail_fast(args: argparse.Namespace) -> None:
    """Usage errors that would otherwise surface only once every file has been checked."""
    if args.baseline:
        from dpmlens.engine.baseline import read_baseline

        read_baseline(args.baseline)
    if getattr(args, "fleet", None):
        _check_store(args.fleet)
    for option, target in (("--output", args.output), ("--write-baseline", args.write_baseline)):
        if target in (None, "-"):
            continue
        parent = os.path.dirname(os.path.abspath(target))
        if os.path.isdir(target):
            raise UsageError(f"{option} {target}: cannot write: Is a directory")
        if not os.path.isdir(parent):
            raise UsageError(f"{option} {target}: cannot write: no directory {parent}")


def _check_store(store: str) -> None:
    """--fleet STORE must be a store this dpmlens reads (before a long run)."""
    if not os.path.isdir(store):
        raise UsageError(f"--fleet {store}: no such folder")
    try:
        from dpmlens.fleet.store import Store
    except ImportError as exc:
        raise UsageError(f"--fleet needs DuckDB ({exc}): pip install 'dpmlens[traces]'") from None
    try:
        Store(store).check()
    except UsageError as exc:
        raise UsageError(f"--fleet: {exc}") from None


def run(args: argparse.Namespace) -> int:
    from dpmlens.engine.check import check_paths
    from dpmlens.engine.rule_set import load_rule_set

    paths = args.paths or ["."]
    if args.baseline and args.write_baseline:
        raise UsageError("--baseline and --write-baseline cannot be used together")
    _fail_fast(args)  # before a long run, not after it
    rules, rule_errors = load_rule_set()
    for error in rule_errors:  # the other rules still run; the exit code says 2
        print(f"dpmlens: error: {error}", file=sys.stderr)
    config = _load_config(args, paths, [r.id for r in rules])
    _select_rules(args, rules, config)

    if args.patch or args.commits:
        return _run_patches(args, config, rules, rule_errors)

    changed = None
    if args.diff:
        from dpmlens.engine.vcs import ChangedLines

        changed = ChangedLines.since(args.diff, paths[0])
    count_lines = args.format == "checkpatch"  # only its `total:` line reports them
    cache = None
    if not args.no_cache and not os.environ.get("DPMLENS_NO_CACHE"):
        from dpmlens.engine.result_cache import open_cache

        cache = open_cache(args.cache_dir, config, rules, count_lines)
    run_ = check_paths(
        paths,
        config,
        args.jobs or None,
        keep_file=changed.touches_file if changed else None,
        rules=rules,
        count_lines=count_lines,
        cache=cache,
    )
    if cache is not None:
        cache.save()
    if changed is not None:  # what the change introduces, as --commits means it
        from dpmlens.patches.since import introduced_since

        run_.findings, old_side_skipped = introduced_since(changed, run_.findings, config, rules)
        run_.errors.extend(old_side_skipped)
    fleet_failed = _evidence(args, run_)

    if args.write_baseline:
        from dpmlens.engine.baseline import write_baseline

        count = write_baseline(args.write_baseline, run_.findings)
        _print_errors(run_)
        print(f"dpmlens: wrote {count} findings to {args.write_baseline}", file=sys.stderr)
        return exit_codes.USAGE if run_.usage_errors or rule_errors else exit_codes.OK
    if args.baseline:
        from dpmlens.engine.baseline import stray_baseline_warning, subtract_baseline

        run_.findings, run_.baseline_suppressed = subtract_baseline(args.baseline, run_.findings)
        stray = stray_baseline_warning(args.baseline, paths)
        if stray:
            print(f"dpmlens: warning: {stray}", file=sys.stderr)

    report = renderer(args.format)(run_, rules)
    _write(report, args.output)
    _print_errors(run_)
    if not args.quiet:
        print(_summary_line(run_), file=sys.stderr)
    if rule_errors or fleet_failed:
        return exit_codes.USAGE
    return exit_code(run_, args.fail_level)


def _evidence(args: argparse.Namespace, run_: Any) -> bool:
    """Facts from outside the files: dead drivers (Kconfig), measured delays (--traces), the
    fleet's costs (--fleet). True when the fleet store could not be read (exit 2; the report
    is written without its figures)."""
    from dpmlens.engine import evidence

    if not args.include_dead:
        cache_dir = None
        if not args.no_cache and not os.environ.get("DPMLENS_NO_CACHE"):
            from dpmlens.engine.result_cache import default_dir

            cache_dir = Path(args.cache_dir or default_dir())
        run_.findings, _marked = evidence.mark_dead(run_.findings, cache_dir)
        from dpmlens.kbuild.dead import notes_for

        run_.notes = notes_for(getattr(args, "paths", None) or ["."])
        for note in run_.notes:  # what was not read changes the answers: said, once a tree
            print(f"dpmlens: note: {note}", file=sys.stderr)
    if args.traces:
        joined = evidence.join_traces(run_.findings, args.traces)
        run_.findings = joined.findings
        for error in joined.errors:
            print(f"dpmlens: --traces: {error}", file=sys.stderr)
        if not args.quiet:
            print(
                f"dpmlens: --traces: {joined.sites} measured delay sites,"
                f" {joined.joined} findings joined",
                file=sys.stderr,
            )
    failed = False
    if args.fleet:
        try:
            fleet = evidence.join_fleet(run_.findings, args.fleet)
        except Exception as exc:  # noqa: BLE001 - a corrupt store: said, the rest reported
            text = (str(exc).strip().splitlines() or [""])[0][:300]
            print(f"dpmlens: error: --fleet {args.fleet}: cannot be read"
                  f" ({type(exc).__name__}: {text}); findings without fleet figures",
                  file=sys.stderr)
            failed = True
        else:
            run_.findings = fleet.findings
            if not args.quiet:
                print(f"dpmlens: --fleet: {fleet.sites} delay sites, {fleet.callbacks}"
                      f" callbacks mapped to the checked files, {fleet.joined} findings joined",
                      file=sys.stderr)
    if not args.all_costs:
        from dpmlens.rules.severity_policy import is_quiet

        kept = [f for f in run_.findings if not is_quiet(f)]
        run_.quiet_hidden = len(run_.findings) - len(kept)
        run_.findings = kept
    return failed


def _run_patches(args: argparse.Namespace, config: Any, rules: list[Any], rule_errors: Any) -> int:
    from dpmlens.patches.cli import run_series

    if args.paths:
        raise UsageError("--patch/--commits take no PATH (the tree is --tree DIR)")
    if args.patch and args.commits:
        raise UsageError("--patch and --commits cannot be used together")
    if args.diff or args.write_baseline:
        raise UsageError("--diff and --write-baseline do not apply to --patch/--commits")
    results, run_ = run_series(args, config, rules)
    if args.baseline:
        from dpmlens.engine.baseline import subtract_baseline

        run_.findings, run_.baseline_suppressed = subtract_baseline(args.baseline, run_.findings)
    if args.format == "checkpatch":
        from dpmlens.patches.report import render

        report = render(results, quiet=args.quiet)
    else:
        report = renderer(args.format)(run_, rules)
    _write(report, args.output)
    _print_errors(run_)
    if not args.quiet:
        print(_summary_line(run_).replace(" file", " patched file", 1), file=sys.stderr)
    return exit_codes.USAGE if rule_errors else exit_code(run_, args.fail_level)


def exit_code(run_: Any, fail_level: str) -> int:
    if run_.usage_errors:
        return exit_codes.USAGE
    if fail_level == "none":
        return exit_codes.OK
    threshold = Severity.parse(fail_level)
    found = any(f.severity >= threshold for f in run_.findings)
    return exit_codes.FINDINGS if found else exit_codes.OK


def _write(report: str, output: str | None) -> None:
    if output is None or output == "-":
        sys.stdout.write(report)
        sys.stdout.flush()
        return
    try:
        write_text_atomic(output, report)
    except OSError as exc:
        raise UsageError(f"--output {output}: cannot write: {exc.strerror or exc}") from None


def _print_errors(run_: Any) -> None:
    for error in run_.errors:
        print(f"dpmlens: {'error' if error.usage else 'skipped'}: {error}", file=sys.stderr)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _summary_line(run_: Any) -> str:
    counts = Counter(f.severity for f in run_.findings)
    parts = [
        _plural(counts[s], str(s)) if s != Severity.INFO else f"{counts[s]} info"
        for s in sorted(Severity, reverse=True)
        if counts[s]
    ]
    found = _plural(len(run_.findings), "finding") + (f" ({', '.join(parts)})" if parts else "")
    extra = ""
    if run_.baseline_suppressed:
        extra += f", {run_.baseline_suppressed} in baseline"
    hidden = getattr(run_, "quiet_hidden", 0)  # (runs of --patch have none)
    if hidden:
        extra += f", {hidden} small costs hidden (--all-costs)"
    if run_.errors:
        extra += f", {_plural(len(run_.errors), 'file')} skipped"
    return (
        f"dpmlens: {_plural(run_.files_checked, 'file')} checked "
        f"({run_.files_analyzed} with PM code), {found}{extra} in "
        f"{format_us(run_.elapsed * 1e6)}"
    )

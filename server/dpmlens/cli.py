"""`dpmlens` command line: one subcommand per module in `dpmlens.commands`.

Each command module has `register(subparsers)`, which adds its parser and sets
`handler=run` where `run(args) -> int` is the exit code. To add a command, add its module
to `COMMANDS` (one line).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from dpmlens import __version__
from dpmlens.core import exit_codes
from dpmlens.core.errors import UsageError

if TYPE_CHECKING:
    import argparse

COMMANDS = (
    "dpmlens.commands.capture_cmd",
    "dpmlens.commands.check_cmd",
    "dpmlens.commands.cc_cmd",
    "dpmlens.commands.fleet_cmd",
    "dpmlens.commands.rules_cmd",
    "dpmlens.commands.serve_cmd",
    "dpmlens.commands.trace_cmd",
)

NAMES = ("capture", "check", "cc", "rules", "serve", "trace")  # the commands' names, for the hints

# Flags kbuild passes its checker (CHECKFLAGS, c_flags) and gcc's own spellings.
_COMPILER_FLAG = ("-D", "-U", "-I", "-W", "-f", "-m", "-O", "-g", "-std=", "-include", "-isystem",
                  "-nostdinc", "-iquote")  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    import argparse
    import importlib

    parser = argparse.ArgumentParser(
        prog="dpmlens",
        description="Review Linux driver power management: static PM rules over kernel C.",
    )
    parser.add_argument("--version", action="version", version=f"dpmlens {__version__}")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(name).register(subparsers)
    return parser


_built: list[argparse.ArgumentParser] = []


def _parser() -> argparse.ArgumentParser:
    """The parser, built once per process: the `dpmlens cc` worker (kbuild/worker.py) builds
    it before it forks, and each file's child would otherwise spend more on argparse's help
    strings (gettext looks for catalogs with a stat each) than on its rules."""
    if not _built:
        _built.append(build_parser())
    return _built[0]


def main(argv: Sequence[str] | None = None) -> int:
    raw = list(sys.argv[1:] if argv is None else argv)
    if raw[:1] == ["cc"]:
        # kbuild calls `dpmlens cc` for every file it compiles: a file without PM code is
        # answered before the parser, the rules or tree-sitter are loaded (kbuild/quick.py).
        from dpmlens.kbuild.quick import nothing_to_check

        if nothing_to_check(raw[1:]):
            return exit_codes.OK
        # PM code: the build's warm worker checks it when one runs (kbuild/worker_client.py)
        from dpmlens.kbuild.worker_client import run as run_in_worker

        rc = run_in_worker(raw[1:])
        if rc is not None:
            return rc
    elif compiler_line(raw):
        print("dpmlens: error: this is a compiler command line (kbuild's CHECK?): the kernel "
              "build's checker is `dpmlens cc`, e.g. make C=1 CHECK=\"dpmlens cc\"",
              file=sys.stderr)  # fmt: skip
        return exit_codes.USAGE
    parser = _parser()
    args = parser.parse_args(argv)  # usage mistakes: argparse prints one line and exits 2
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return exit_codes.USAGE
    try:
        return int(handler(args))
    except UsageError as exc:
        print(f"dpmlens: error: {exc}", file=sys.stderr)
        return exit_codes.USAGE
    except _rule_error() as exc:  # a broken rules/*.yaml: configuration, not a crash
        print(f"dpmlens: error: {exc}", file=sys.stderr)
        return exit_codes.USAGE
    except KeyboardInterrupt:
        return exit_codes.INTERRUPTED
    except BrokenPipeError:  # `dpmlens check ... | head`
        # Silence the second error Python would print when flushing stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return exit_codes.FINDINGS


def compiler_line(argv: list[str]) -> bool:
    """`dpmlens -D__linux__ ... ./include/linux/compiler-version.h ... foo.c`: kbuild's flags
    given to `dpmlens` itself (CHECK="dpmlens" without `cc`)."""
    if not argv or argv[0] in NAMES or argv[0] in ("-h", "--help", "--version"):
        return False
    return any(a.startswith(_COMPILER_FLAG) for a in argv) or argv[0].endswith((".c", ".h"))


def _rule_error() -> type[Exception]:
    from dpmlens.rules.loader import RuleError

    return RuleError


if __name__ == "__main__":
    sys.exit(main())

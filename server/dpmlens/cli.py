"""`dpmlens` command line: one subcommand per module in `dpmlens.commands`.

Each command module has `register(subparsers)`, which adds its parser and sets
`handler=run` where `run(args) -> int` is the exit code. To add a command, add its module
to `COMMANDS` (one line).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from dpmlens import __version__, exit_codes
from dpmlens.errors import UsageError

COMMANDS = (
    "dpmlens.commands.check_cmd",
    "dpmlens.commands.cc_cmd",
    "dpmlens.commands.fleet_cmd",
    "dpmlens.commands.rules_cmd",
    "dpmlens.commands.serve_cmd",
    "dpmlens.commands.trace_cmd",
)

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dpmlens",
        description="Review Linux driver power management: static PM rules over kernel C.",
    )
    parser.add_argument("--version", action="version", version=f"dpmlens {__version__}")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
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


def _rule_error() -> type[Exception]:
    from dpmlens.rules.loader import RuleError

    return RuleError


if __name__ == "__main__":
    sys.exit(main())

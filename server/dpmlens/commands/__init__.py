"""CLI subcommands: each module has `register(subparsers)` and a `run(args) -> int`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from dpmlens.core import exit_codes


def help_handler(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    """The handler of a command given without its action: its help on stderr, exit code 2."""

    def show_help(_args: argparse.Namespace) -> int:
        parser.print_help(sys.stderr)
        return exit_codes.USAGE

    return show_help

"""`dpmlens rules list` and `dpmlens rules explain ID`."""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from typing import Any

from dpmlens.commands import help_handler
from dpmlens.core import exit_codes
from dpmlens.core.errors import UsageError


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("rules", help="list the rules or explain one")
    sub = p.add_subparsers(title="rules commands", metavar="ACTION")
    lst = sub.add_parser("list", help="one line per rule: id, severity, KERNEL_TYPE, message")
    lst.add_argument("--format", choices=("text", "json"), default="text")
    lst.set_defaults(handler=run_list)
    exp = sub.add_parser("explain", help="what a rule looks for, why, and how to fix it")
    exp.add_argument("rule", metavar="ID", help="rule id or KERNEL_TYPE")
    exp.set_defaults(handler=run_explain)
    p.set_defaults(handler=help_handler(p))


def _rules() -> tuple[list[Any], int]:
    """The rules that load, and how many rule files are broken (each reported on stderr)."""
    from dpmlens.engine.rule_set import load_rule_set

    rules, errors = load_rule_set()
    for error in errors:
        print(f"dpmlens: error: {error}", file=sys.stderr)
    return rules, len(errors)


def run_list(args: argparse.Namespace) -> int:
    rules, broken = _rules()
    if args.format == "json":
        payload = [
            {
                "id": r.id,
                "kernel_type": r.kernel_type,
                "severity": str(r.severity),
                "title": r.title,
                "message": r.message,
                "url": r.url,
            }
            for r in rules
        ]
        print(json.dumps(payload, indent=2))
        return exit_codes.USAGE if broken else exit_codes.OK
    width = max((len(r.id) for r in rules), default=0)
    kwidth = max((len(r.kernel_type) for r in rules), default=0)
    for r in rules:
        severity = str(r.severity)
        print(f"{r.id:<{width}}  {severity:<7}  {r.kernel_type:<{kwidth}}  {r.title}")
    return exit_codes.USAGE if broken else exit_codes.OK


def run_explain(args: argparse.Namespace) -> int:
    from dpmlens.report.rule_text import readable_message
    from dpmlens.rules.loader import find_rule

    rules, _broken = _rules()
    wanted = args.rule.strip()
    rule = find_rule(rules, wanted)
    if rule is None:
        close = difflib.get_close_matches(wanted, [r.id for r in rules], n=1)
        hint = f"; did you mean {close[0]}?" if close else " (see `dpmlens rules list`)"
        raise UsageError(f"unknown rule {wanted!r}{hint}")
    out = [f"{rule.id}  ({rule.kernel_type}, {rule.severity})", rule.title, ""]
    message = readable_message(rule.message)
    if message:
        out += [f"Message: {message}",
                "  (<...>: filled in per finding; [...]: a clause only some findings have)", ""]
    out += [rule.note.strip(), ""]
    if rule.fix:
        out += [f"Fix: {rule.fix.get('title', '')}", ""]
    out += [f"Documentation: {rule.url}", f"Rule file: {rule.path}" if rule.path else ""]
    print("\n".join(out).rstrip())
    return exit_codes.OK

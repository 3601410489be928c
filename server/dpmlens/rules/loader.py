"""Load and validate the rule files (`rules/*.yaml`) and the data tables (`rules/tables/`).

A rule is data: id, kernel_type, severity, message template, note, url, an optional fix
description and a `match`: the registered checker that runs it (`checker:` or, for the generic
matchers, `kind:`) and that checker's typed options (`rules/plugin.py`). Every mistake in a
rule file, including an unknown or mistyped option and a message placeholder the checker does
not fill, is reported as one `RuleError` line naming the file.
"""

from __future__ import annotations

import os
import re
import string
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from dpmlens.core.findings import Severity
from dpmlens.core.paths import rules_dir as default_rules_dir
from dpmlens.rules.plugin import Checker, checkers, parse_options

_ID_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
_TYPE_RE = re.compile(r"^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$")
_REQUIRED = ("id", "kernel_type", "severity", "title", "message", "note", "url", "match")


class RuleError(ValueError):
    """A broken rule or table file; str() is one line naming the file."""


@dataclass(frozen=True)
class Rule:
    id: str
    kernel_type: str
    severity: Severity
    title: str  # one line, for rule lists and SARIF shortDescription
    message: str
    note: str
    url: str
    match: dict[str, Any]
    fix: dict[str, Any] | None = None
    path: str = ""
    fields: frozenset[str] = field(default=frozenset())  # placeholders used in `message`
    checker_name: str = ""
    options: Any = field(default=None, compare=False)  # the checker's typed options

    __hash__ = object.__hash__  # rules are loaded once and compared by identity in caches

    @property
    def kind(self) -> str:
        """The generic matcher kind, or "checker:<name>"."""
        if "checker" in self.match:
            return f"checker:{self.match['checker']}"
        return str(self.match["kind"])

    @property
    def checker(self) -> Checker:
        return checkers()[self.checker_name]

    def format_message(self, **values: object) -> str:
        return self.message.format_map(_Defaults(values))


class _Defaults(dict):
    def __missing__(self, key: str) -> str:
        if os.environ.get("DPMLENS_STRICT_MESSAGES"):  # tests: a checker forgot a field
            raise KeyError(f"message placeholder {{{key}}} not filled")
        return "?"


def find_rule(rules: Iterable[Rule], word: str) -> Rule | None:
    """The rule `word` names: its id, or its KERNEL_TYPE in any case (ids are lower-case)."""
    upper = word.upper()
    return next((r for r in rules if r.id == word or r.kernel_type == upper), None)


_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_yaml(path: Path) -> Any:
    """The YAML data of `path`; a read or syntax error is a one-line RuleError naming it."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RuleError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        # libyaml's parser where PyYAML has it (its wheels do): ~10x the pure-Python one, which
        # took ~0.3 s of each `dpmlens cc` call on a file with PM code (issue 23)
        return yaml.load(text, Loader=_SAFE_LOADER)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise RuleError(f"{path}{where}: invalid YAML: {problem}") from None


def _placeholders(path: Path, template: str) -> frozenset[str]:
    try:
        names = {name for _t, name, _f, _c in string.Formatter().parse(template) if name}
    except ValueError as exc:
        raise RuleError(f"{path}: message template is malformed: {exc}") from None
    return frozenset(names)


def parse_rule(path: Path, data: Any) -> Rule:
    """Validate one rule file's content; raise RuleError naming the file on any problem."""
    if not isinstance(data, dict):
        raise RuleError(f"{path}: a rule file must be a YAML mapping")
    missing = [k for k in _REQUIRED if k not in data]
    if missing:
        raise RuleError(f"{path}: missing field(s): {', '.join(missing)}")
    rule_id = str(data["id"])
    if not _ID_RE.match(rule_id):
        raise RuleError(f"{path}: id {rule_id!r} is not kebab-case")
    if rule_id != path.stem:
        raise RuleError(f"{path}: id {rule_id!r} must equal the file name {path.stem!r}")
    kernel_type = str(data["kernel_type"])
    if not _TYPE_RE.match(kernel_type):
        raise RuleError(f"{path}: kernel_type {kernel_type!r} is not UPPER_SNAKE")
    try:
        severity = Severity.parse(str(data["severity"]))
    except ValueError as exc:
        raise RuleError(f"{path}: {exc}") from None
    for key in ("title", "message", "note", "url"):
        if not isinstance(data[key], str) or not data[key].strip():
            raise RuleError(f"{path}: {key} must be a non-empty string")
    match = data["match"]
    if not isinstance(match, dict):
        raise RuleError(f"{path}: match must be a mapping")
    if ("checker" in match) == ("kind" in match):
        raise RuleError(f"{path}: match needs exactly one of 'kind' or 'checker'")
    name = str(match.get("checker", match.get("kind")))
    registered = checkers()
    checker = registered.get(name)
    if checker is None:
        what = "checker" if "checker" in match else "match kind"
        known = ", ".join(sorted(registered))
        raise RuleError(f"{path}: unknown {what} {name!r} (known: {known})")
    options, problem = parse_options(checker.options, match)
    if problem:
        raise RuleError(f"{path}: match: {problem}")
    fields = _placeholders(path, data["message"])
    unknown = sorted(fields - checker.fields)
    if unknown:
        raise RuleError(
            f"{path}: message placeholder(s) {', '.join('{' + u + '}' for u in unknown)} are"
            f" not filled by checker {name!r} (it fills: {', '.join(sorted(checker.fields))})"
        )
    fix = data.get("fix")
    if fix is not None and not (isinstance(fix, dict) and "kind" in fix and "title" in fix):
        raise RuleError(f"{path}: fix must be a mapping with 'kind' and 'title'")
    return Rule(
        id=rule_id,
        kernel_type=kernel_type,
        severity=severity,
        title=data["title"].strip(),
        message=data["message"],
        note=data["note"].strip(),
        url=data["url"],
        match=match,
        fix=fix,
        path=str(path),
        fields=fields,
        checker_name=name,
        options=options,
    )


@lru_cache(maxsize=4)
def _default_dir(_override: str | None) -> str:
    return str(default_rules_dir())


def _rules_dir(rules_dir: Path | str | None) -> str:
    """The rules directory; the default is resolved once per DPMLENS_DATA_DIR value (it stats)."""
    if rules_dir:
        return str(rules_dir)
    return _default_dir(os.environ.get("DPMLENS_DATA_DIR"))


def load_rules(rules_dir: Path | str | None = None) -> list[Rule]:
    """All rules of `rules_dir` (default: the data directory's `rules/`), sorted by id."""
    return list(_load_rules_cached(_rules_dir(rules_dir)))


@lru_cache(maxsize=8)
def _load_rules_cached(directory: str) -> tuple[Rule, ...]:
    base = Path(directory)
    if not base.is_dir():
        raise RuleError(f"{base}: rules directory not found")
    rules = [parse_rule(p, read_yaml(p)) for p in sorted(base.glob("*.yaml"))]
    return tuple(sorted(rules, key=lambda r: r.id))


def load_table(name: str, rules_dir: Path | str | None = None) -> dict[str, Any]:
    """A data table `rules/tables/<name>.yaml` as a mapping."""
    return _load_table_cached(name, _rules_dir(rules_dir))


@lru_cache(maxsize=16)
def _load_table_cached(name: str, directory: str) -> dict[str, Any]:
    path = Path(directory) / "tables" / f"{name}.yaml"
    data = read_yaml(path)
    if not isinstance(data, dict):
        raise RuleError(f"{path}: a table file must be a YAML mapping")
    return data

"""The CLI's rule set: every rule file that loads, and one error line per broken one.

`rules.loader.load_rules()` stops at the first broken file, which is right for the editor but
not for CI: one broken rule must not silence the other rules. The CLI runs the rules that load,
prints one line per broken file and exits 2 (a configuration error). A broken data table
(`rules/tables/*.yaml`) is fatal: the rules that read it cannot run without it.
"""

from __future__ import annotations

from pathlib import Path

from dpmlens.core.errors import UsageError
from dpmlens.core.paths import rules_dir as default_rules_dir
from dpmlens.rules.loader import Rule, RuleError, load_rules, load_table, parse_rule, read_yaml

# rules directory -> what load_rule_set() gave, once keep_loaded() is called
_kept: dict[str, tuple[list[Rule], list[str]]] | None = None


def keep_loaded() -> None:
    """From now on load_rule_set() answers each directory from memory. For the `dpmlens cc`
    worker (kbuild/worker.py), which forks a child per file: what a child does to its rules
    (a configuration switching some off) stays in that child."""
    global _kept
    if _kept is None:
        _kept = {}


def load_rule_set(rules_dir: Path | str | None = None) -> tuple[list[Rule], list[str]]:
    """(rules that load, sorted by id; one error line per rule file that does not)."""
    directory = Path(rules_dir or default_rules_dir())
    if _kept is None:
        return _load_rule_set(directory)
    hit = _kept.get(str(directory))
    if hit is None:
        hit = _kept[str(directory)] = _load_rule_set(directory)
    return list(hit[0]), list(hit[1])


def _load_rule_set(directory: Path) -> tuple[list[Rule], list[str]]:
    if not directory.is_dir():
        raise UsageError(f"{directory}: rules directory not found (set DPMLENS_DATA_DIR?)")
    for table in sorted((directory / "tables").glob("*.yaml")):
        try:
            load_table(table.stem, directory)
        except RuleError as exc:
            raise UsageError(str(exc)) from None
    try:
        return load_rules(directory), []
    except RuleError:
        pass  # find every broken file, keep the rest
    rules: list[Rule] = []
    errors: list[str] = []
    for path in sorted(directory.glob("*.yaml")):
        try:
            rules.append(parse_rule(path, read_yaml(path)))
        except RuleError as exc:
            errors.append(str(exc))
    return sorted(rules, key=lambda r: r.id), errors


def spec_quantities(rules_dir: Path | str | None = None) -> list[str]:
    """The spec quantities (`TRSTRCY`, `PCI_D3HOT_D0`, ...) `.dpmlens.toml` [spec] may override."""
    table = load_table("spec-delays", Path(rules_dir or default_rules_dir()))
    return [str(q["id"]) for q in table.get("quantities", []) if isinstance(q, dict) and "id" in q]

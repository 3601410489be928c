"""Run every rule over the C fixtures in test-fixtures/rules and check the markers.

`/* expect: rule-id */` (optionally `rule-id(severity)`, several separated by commas) says the
next code line must have a finding of that rule (`rule-id(quiet)`: a hint the severity policy
leaves out of CI output unless --all-costs); `/* ok: rule-id */` says it must not. Any
finding on a line without an expect marker for its rule fails the test, and every rule needs
at least one expect and one ok case.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dpmlens.config.settings import Config
from dpmlens.core.findings import Severity
from dpmlens.engine.analyze import analyze_source
from dpmlens.rules.fixes import apply_edits
from dpmlens.rules.loader import load_rules
from dpmlens.rules.severity_policy import is_quiet
from dpmlens.syntax.parser import parse

FIXTURES = Path(__file__).resolve().parents[2] / "test-fixtures" / "rules"
_MARKER = re.compile(r"/\*\s*(expect|ok):\s*(.*?)\s*\*/")
_ITEM = re.compile(r"^([a-z0-9-]+)(?:\((\w+)\))?$")


def _markers(path: Path) -> list[tuple[str, str, str | None, int]]:
    """(kind, rule, severity, target line) for every marker in the file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out = []
    pending: list[tuple[str, str, str | None]] = []
    for number, line in enumerate(lines, start=1):
        found = _MARKER.findall(line)
        if found and not _MARKER.sub("", line).strip():
            for kind, items in found:
                for item in items.split(","):
                    m = _ITEM.match(item.strip())
                    assert m, f"{path.name}:{number}: bad marker item {item!r}"
                    pending.append((kind, m.group(1), m.group(2)))
            continue
        for kind, rule, sev in pending:
            out.append((kind, rule, sev, number))
        pending = []
    assert not pending, f"{path.name}: marker at end of file"
    return out


def _fixture_files() -> list[Path]:
    return sorted(FIXTURES.glob("**/*.c"))


@pytest.mark.parametrize("path", _fixture_files(), ids=lambda p: p.name)
def test_fixture(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DPMLENS_STRICT_MESSAGES", "1")  # every placeholder must be filled
    rule_ids = {r.id for r in load_rules()}
    findings = analyze_source(str(path), path.read_bytes(), Config())
    markers = _markers(path)
    problems = []
    for kind, rule, sev, line in markers:
        assert rule in rule_ids, f"{path.name}:{line}: marker names unknown rule {rule}"
        hits = [f for f in findings if f.rule == rule and f.line == line]
        if kind == "expect" and not hits:
            problems.append(f"{path.name}:{line}: expected {rule}, got nothing")
        if kind == "expect" and hits and sev:
            got = "quiet" if is_quiet(hits[0]) else str(hits[0].severity)
            if got != (sev if sev == "quiet" else str(Severity.parse(sev))):
                problems.append(f"{path.name}:{line}: {rule} is {got}, expected {sev}")
        if kind == "ok" and hits:
            problems.append(f"{path.name}:{line}: unexpected {rule}: {hits[0].message}")
    expected = {(rule, line) for kind, rule, _s, line in markers if kind == "expect"}
    for f in findings:
        if (f.rule, f.line) not in expected:
            problems.append(f"{path.name}:{f.line}: unexpected {f.rule}: {f.message}")
    assert not problems, "\n".join(problems)


def test_every_rule_has_expect_and_ok_cases() -> None:
    kinds: dict[str, set[str]] = {}
    for path in _fixture_files():
        for kind, rule, _sev, _line in _markers(path):
            kinds.setdefault(rule, set()).add(kind)
    for rule in load_rules():
        assert "expect" in kinds.get(rule.id, set()), f"rule {rule.id} has no expect case"
        assert "ok" in kinds.get(rule.id, set()), f"rule {rule.id} has no ok case"


@pytest.mark.parametrize("path", _fixture_files(), ids=lambda p: p.name)
def test_fixes_remove_their_finding_and_keep_the_code_parsing(path: Path) -> None:
    source = path.read_bytes()
    findings = analyze_source(str(path), source, Config())
    errors_before = _error_count(source)
    for f in findings:
        for fix in f.fixes:
            fixed = apply_edits(source, fix.edits)
            assert fixed != source, f"{path.name}:{f.line}: fix {fix.title!r} changes nothing"
            assert _error_count(fixed) <= errors_before, (
                f"{path.name}:{f.line}: {fix.title} breaks parse"
            )
            again = analyze_source(str(path), fixed, Config())
            still = [g for g in again if g.rule == f.rule and g.message == f.message]
            assert not still, f"{path.name}:{f.line}: fix {fix.title!r} leaves the finding"


def _error_count(source: bytes) -> int:
    tree = parse(source)
    count = 0
    stack = [tree.root_node]
    while stack:
        n = stack.pop()
        if n.type == "ERROR" or n.is_missing:
            count += 1
        stack.extend(n.children)
    return count

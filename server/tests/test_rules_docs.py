"""docs/rules.md is generated from the rule files; keep it current."""

from __future__ import annotations

from pathlib import Path

from dpmlens.rules.docgen import render

DOC = Path(__file__).resolve().parents[2] / "docs" / "rules.md"


def test_rules_doc_is_current() -> None:
    assert DOC.read_text(encoding="utf-8") == render(), (
        "docs/rules.md is stale: cd server && python -m dpmlens.rules.docgen > ../docs/rules.md"
    )


def test_every_rule_has_a_section() -> None:
    text = render()
    for rule_file in sorted((DOC.parents[1] / "rules").glob("*.yaml")):
        assert f"\n## {rule_file.stem}\n" in text

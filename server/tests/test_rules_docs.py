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


def test_the_documented_example_rule_is_valid() -> None:
    import yaml

    from dpmlens.rules.loader import parse_rule

    text = render()
    block = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    rule = parse_rule(Path("firmware-load-in-noirq.yaml"), yaml.safe_load(block))
    assert rule.kind == "call-in-phase"

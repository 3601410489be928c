"""rules/schema.json: generated from the checkers' typed options, kept current, and every
shipped rule file validates against it (and a broken one does not)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from dpmlens.rules.schema import rule_schema

RULES = Path(__file__).resolve().parents[2] / "rules"


def test_published_schema_is_current() -> None:
    published = json.loads((RULES / "schema.json").read_text(encoding="utf-8"))
    regen = "cd server && python -m dpmlens.rules.schema > ../rules/schema.json"
    assert published == rule_schema(), f"rules/schema.json is stale: {regen}"


@pytest.mark.parametrize("path", sorted(RULES.glob("*.yaml")), ids=lambda p: p.stem)
def test_shipped_rules_validate(path: Path) -> None:
    jsonschema.validate(yaml.safe_load(path.read_text(encoding="utf-8")), rule_schema())


def test_schema_rejects_what_the_loader_rejects() -> None:
    rule = yaml.safe_load((RULES / "msleep-under-20ms.yaml").read_text(encoding="utf-8"))
    rule["match"]["report"] = "busywait"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(rule, rule_schema())
    rule = yaml.safe_load((RULES / "wake-setup-in-noirq.yaml").read_text(encoding="utf-8"))
    rule["match"]["calss"] = ["x"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(rule, rule_schema())

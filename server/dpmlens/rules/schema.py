"""The JSON schema of `rules/*.yaml`, generated from the registered checkers' typed options.

    cd server && python -m dpmlens.rules.schema > ../rules/schema.json

Editors that understand YAML schemas (VS Code's YAML extension: `# yaml-language-server:
$schema=schema.json`) then complete and check rule files; `tests/test_rules_schema.py` keeps
the published file current and validates every shipped rule against it.
"""

from __future__ import annotations

import json
from typing import Any

from dpmlens.rules.plugin import checkers, options_schema

_SEVERITIES = ["error", "warning", "info", "hint"]


def rule_schema() -> dict[str, Any]:
    matches = []
    for name, chk in sorted(checkers().items()):
        spec = options_schema(chk.options)
        for key in ("checker", "kind"):
            props = {key: {"const": name}, **spec["properties"]}
            one: dict[str, Any] = {
                "type": "object",
                "properties": props,
                "required": [key, *spec.get("required", [])],
                "additionalProperties": False,
            }
            if chk.doc:
                one["description"] = chk.doc.strip().splitlines()[0]
            matches.append(one)
    string = {"type": "string", "minLength": 1}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://dpmlens.dev/schemas/rule.json",
        "title": "dpmlens rule file (rules/<id>.yaml)",
        "type": "object",
        "required": ["id", "kernel_type", "severity", "title", "message", "note", "url", "match"],
        "additionalProperties": False,
        "properties": {
            "id": {"type": "string", "pattern": "^[a-z0-9]+(-[a-z0-9]+)*$"},
            "kernel_type": {"type": "string", "pattern": "^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$"},
            "severity": {"enum": _SEVERITIES},
            "title": string,
            "message": string,
            "note": string,
            "url": string,
            "fix": {
                "type": "object",
                "required": ["kind", "title"],
                "properties": {"kind": string, "title": string},
            },
            "match": {"oneOf": matches},
        },
    }


def main() -> None:
    print(json.dumps(rule_schema(), indent=2, sort_keys=False))


if __name__ == "__main__":
    main()

"""SARIF 2.1.0, for GitHub code scanning and other SARIF viewers.

The rules go in `tool.driver.rules` (with their notes as help), call chains become code flows
and related locations, fixes become SARIF fixes, and each result carries the baseline key as
a partial fingerprint so viewers can track it across line shifts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from dpmlens import __version__
from dpmlens.core import jsonsafe
from dpmlens.core.findings import Finding, Severity, Span
from dpmlens.engine.baseline import fingerprint
from dpmlens.engine.check import CheckRun
from dpmlens.report.json import extra_json
from dpmlens.report.rule_text import description

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning"}  # info/hint -> note


def _level(severity: Any) -> str:
    try:
        return _LEVEL.get(Severity.parse(str(severity)), "note")
    except ValueError:
        return "warning"


def _uri(path: str) -> str:
    path = path.replace("\\", "/")
    return quote(path[2:] if path.startswith("./") else path, safe="/:@!$&'()*+,;=")


def _code_point_column(line_text: str, byte_column: int) -> int:
    """Findings count columns in bytes (like gcc); SARIF here counts code points."""
    return len(line_text.encode("utf-8")[: byte_column - 1].decode("utf-8", "replace")) + 1


def _region(span: Span, snippet: str | None = None) -> dict[str, Any]:
    start, end = span.column, span.end_column
    if snippet is not None and not snippet.isascii():
        start = _code_point_column(snippet, start)
        if span.end_line == span.line:
            end = _code_point_column(snippet, end)
    region: dict[str, Any] = {
        "startLine": span.line,
        "startColumn": start,
        "endLine": span.end_line,
        "endColumn": end,
    }
    if snippet is not None:
        region["snippet"] = {"text": snippet}
    return region


def _location(path: str, span: Span, message: str | None = None, snippet: str | None = None):
    location: dict[str, Any] = {
        "physicalLocation": {
            "artifactLocation": {"uri": _uri(path)},
            "region": _region(span, snippet),
        }
    }
    if message:
        location["message"] = {"text": message}
    return location


def _rule(rule: Any) -> dict[str, Any]:
    descriptor: dict[str, Any] = {
        "id": rule.id,
        "name": "".join(part.capitalize() for part in rule.kernel_type.split("_")),
        "shortDescription": {"text": rule.title},
        "fullDescription": {"text": description(rule.title, getattr(rule, "note", "") or "")},
        "defaultConfiguration": {"level": _level(rule.severity)},
        "properties": {"kernel_type": rule.kernel_type, "tags": ["power-management"]},
    }
    note = getattr(rule, "note", "") or ""
    if note:
        descriptor["help"] = {"text": note, "markdown": note}
    url = getattr(rule, "url", "") or ""
    if url:
        descriptor["helpUri"] = url
    return descriptor


def _result(f: Finding, index: dict[str, int], run: CheckRun) -> dict[str, Any]:
    snippet = run.source_lines.get((f.path, f.span.line))
    location = _location(f.path, f.span, snippet=snippet)
    if f.function:
        location["logicalLocations"] = [{"name": f.function, "kind": "function"}]
    result: dict[str, Any] = {
        "ruleId": f.rule,
        "level": _level(f.severity),
        "message": {"text": f.message},
        "locations": [location],
        "partialFingerprints": {"dpmlens/v1": fingerprint(f)},
        "properties": {
            "kernel_type": f.kernel_type,
            **({"phase": f.phase} if f.phase else {}),
            **extra_json(f),
        },
    }
    if f.rule in index:
        result["ruleIndex"] = index[f.rule]
    if f.chain:
        steps = [_location(s.path, s.span, s.note or f"{s.function}()") for s in f.chain]
        result["relatedLocations"] = [dict(step, id=i) for i, step in enumerate(steps)]
        result["codeFlows"] = [
            {"threadFlows": [{"locations": [{"location": step} for step in steps]}]}
        ]
    if f.fixes:
        result["fixes"] = [
            {
                "description": {"text": fix.title},
                "artifactChanges": [
                    {
                        "artifactLocation": {"uri": _uri(edit.path)},
                        "replacements": [
                            {
                                "deletedRegion": _region(edit.span),
                                "insertedContent": {"text": edit.new_text},
                            }
                        ],
                    }
                    for edit in fix.edits
                ],
            }
            for fix in f.fixes
        ]
    return result


def render(run: CheckRun, rules: Sequence[Any] = ()) -> str:
    ordered = sorted(rules, key=lambda r: r.id)
    index = {rule.id: i for i, rule in enumerate(ordered)}
    notifications = [
        {
            "level": "error",
            "message": {"text": e.message},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(e.path)}}}],
        }
        for e in run.errors
    ]
    document = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "dpmlens",
                        "version": __version__,
                        "rules": [_rule(rule) for rule in ordered],
                    }
                },
                "invocations": [
                    {
                        "executionSuccessful": not run.usage_errors,
                        "toolExecutionNotifications": notifications,
                    }
                ],
                "columnKind": "unicodeCodePoints",
                "results": [_result(f, index, run) for f in run.findings],
            }
        ],
    }
    return jsonsafe.dumps(document, indent=2) + "\n"

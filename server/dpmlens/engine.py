"""The one entry point every face uses: C source in, findings out.

    analyze_source(path, source, config, resolver=None) -> list[Finding]
    analyze_model(model, config, resolver=None) -> list[Finding]

`resolver` (optional) lets rules follow helpers into other files: an object with
`lookup(name) -> (FileModel, FunctionDef) | None` (the LSP workspace index); the CLI passes
None and rules stay within the file.
"""

from __future__ import annotations

from dataclasses import replace

from dpmlens.config import Config
from dpmlens.findings import Finding
from dpmlens.model.build import build_model
from dpmlens.model.types import FileModel
from dpmlens.rules.context import Context
from dpmlens.rules.loader import Rule, load_rules
from dpmlens.rules.registry import runner_for


def prefilter_keywords() -> tuple[bytes, ...]:
    """The byte prefilter's PM keywords plus the words that make a delay spec-linked without
    any other PM construct in the file (spec quantity names, padded constants such as
    USB_RESUME_TIMEOUT): files holding none of them cannot produce a finding."""
    from dpmlens.rules.loader import load_table
    from dpmlens.syntax.prefilter import keywords_for

    table = load_table("spec-delays")
    words: list[str] = []
    for q in table.get("quantities", []):
        words += [str(k) for k in q.get("keywords", []) or []]
        words += [str(c) for c in (q.get("constants") or {})]
    return keywords_for(words)


def prefilter_delay_words() -> tuple[bytes, ...]:
    """The delay functions' names (msleep, mdelay, ...): the spec words of
    `prefilter_keywords()` only matter in a file that names one of them (see
    `syntax.prefilter.may_contain_pm(delay_words=...)`)."""
    from dpmlens.rules.loader import load_table

    return tuple(str(n).encode() for n in load_table("spec-delays").get("delay_functions") or {})


def analyze_source(
    path: str, source: bytes, config: Config, resolver: object | None = None
) -> list[Finding]:
    return analyze_model(build_model(path, source), config, resolver)


def analyze_model(
    model: FileModel,
    config: Config,
    resolver: object | None = None,
    rules: list[Rule] | None = None,
) -> list[Finding]:
    ctx = Context(model, config, resolver)
    out: dict[tuple[str, str, int, int], Finding] = {}
    for rule in rules if rules is not None else load_rules():
        if not config.is_enabled(rule.id):
            continue
        for finding in runner_for(rule)(rule, ctx):
            setting = config.rules.get(rule.id)
            if setting is not None and setting.severity is not None:
                finding = replace(finding, severity=setting.severity)
            key = (finding.rule, finding.path, finding.span.line, finding.span.column)
            out.setdefault(key, finding)
    return sorted(out.values(), key=Finding.sort_key)

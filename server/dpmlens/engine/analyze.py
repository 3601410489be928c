"""The one entry point every face uses: C source in, findings out.

    analyze_source(path, source, config, resolver=None) -> list[Finding]
    analyze_model(model, config, resolver=None) -> list[Finding]

`resolver` (optional) lets rules follow helpers into other files: an object with
`lookup(name) -> (FileModel, FunctionDef) | None` (the LSP workspace index); the CLI passes
None and rules stay within the file.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import replace
from functools import lru_cache

from dpmlens.config.settings import Config
from dpmlens.core.findings import Finding
from dpmlens.model import footprint
from dpmlens.model.build import build_model
from dpmlens.model.keywords import callback_filter
from dpmlens.model.types import FileModel
from dpmlens.rules.context import Context
from dpmlens.rules.loader import Rule, load_rules
from dpmlens.syntax.filter_set import FilterSet
from dpmlens.syntax.prefilter import WordFilter


def prefilter(config: Config | None = None, rules: list[Rule] | None = None) -> WordFilter:
    """The byte prefilter for these rules: the union of what each enabled rule's checker needs
    (`rules.plugin.Keywords`), plus the model's callback words for checkers that look at
    callbacks. A file it rejects cannot produce a finding."""
    rules = rules if rules is not None else load_rules()
    enabled = tuple(r for r in rules if config is None or config.is_enabled(r.id))
    return _prefilter(enabled)


def rules_for(source: bytes, rules: list[Rule]) -> list[Rule]:
    """The `rules` whose own words `source` holds: the others cannot report in it (a batch
    check runs only these; the editor runs all, its footprints need every rule's reads)."""
    keep = _filter_set(rules).which(source)
    return [r for r, k in zip(rules, keep, strict=True) if k]


def warm(path: str, config: Config, rules: list[Rule] | None = None) -> None:
    """Before a batch check's workers fork: compile the rules' filters and let each enabled
    checker read what it reads once per tree (`Checker.warm`), so the workers share it."""
    rules = rules if rules is not None else load_rules()
    _ = _filter_set(rules)._fast
    for checker in {r.checker.name: r.checker for r in rules if config.is_enabled(r.id)}.values():
        if checker.warm is not None:
            checker.warm(path)


# the last rule list's filters, by the rules' identity (hashing 16 frozen Rules per file cost
# more than the lookup)
_LAST: list[tuple[list[Rule], FilterSet]] = []


def _filter_set(rules: list[Rule]) -> FilterSet:
    if _LAST and len(_LAST[0][0]) == len(rules) and all(
        a is b for a, b in zip(_LAST[0][0], rules, strict=True)
    ):
        return _LAST[0][1]
    found = _filters(tuple(_prefilter((r,)) for r in rules))
    _LAST[:] = [(list(rules), found)]
    return found


# by the words, not the Rule objects: `dpmlens cc` makes new ones per file (pm_config.py)
@lru_cache(maxsize=8)
def _filters(filters: tuple[WordFilter, ...]) -> FilterSet:
    return FilterSet(filters)


@lru_cache(maxsize=64)
def _prefilter(rules: tuple[Rule, ...]) -> WordFilter:
    out = WordFilter()
    for rule in rules:
        kw = rule.checker.keywords(rule.options)
        words = tuple(w.encode() for w in kw.words)
        needs = tuple(tuple(w.encode() for w in g) for g in kw.needs)
        out = out.union(
            WordFilter(
                words=() if needs else words,
                gated=tuple(w.encode() for w in kw.gated),
                gate=tuple(w.encode() for w in kw.gate),
                clauses=((words, *needs),) if needs and words else (),
            )
        )
        if kw.callbacks:
            out = out.union(callback_filter())
    return out


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
    try:
        return run_rules(ctx, config, rules if rules is not None else load_rules())
    finally:
        ctx.close()


def function_findings(
    model: FileModel, config: Config, resolver: object | None, function: str
) -> list[Finding]:
    """What the per-function checkers report at the calls of `function` alone (for
    incremental.py, after an edit in a function that nothing else read: no callback's walk
    entered it, so its delays are judged as reached by none)."""
    ctx = Context(model, config, resolver, only=function)
    try:
        return run_rules(ctx, config, per_function_rules())
    finally:
        ctx.close()


def per_function_rules() -> list[Rule]:
    return [rule for rule in load_rules() if rule.checker.per_function]


def run_rules(ctx: Context, config: Config, rules: list[Rule]) -> list[Finding]:
    """The enabled `rules`' findings in `ctx`, with the configured severities, one per rule
    and place, sorted."""
    out: dict[tuple[str, str, int, int], Finding] = {}
    enabled = [rule for rule in rules if config.is_enabled(rule.id)]
    # The per-function checkers last, what they read in a footprint unit of its own
    # (footprint.CHECKERS): what they leave in the shared caches no other rule reads, so an
    # edit that only they read is decided by running them again alone (incremental._rerun).
    # (With ctx.only, incremental.py judges one function: its units are the functions'.)
    shared = [rule for rule in enabled if not rule.checker.per_function]
    own = [rule for rule in enabled if rule.checker.per_function]
    for group in (shared, own):
        apart = group is own and ctx.only is None
        with footprint.unit(ctx.model, footprint.CHECKERS) if apart else nullcontext():
            for rule in group:
                for finding in rule.checker.run(rule, ctx):
                    setting = config.rules.get(rule.id)
                    if setting is not None and setting.severity is not None:
                        finding = replace(finding, severity=setting.severity)
                    key = (finding.rule, finding.path, finding.span.line, finding.span.column)
                    out.setdefault(key, finding)
    return sorted(out.values(), key=Finding.sort_key)

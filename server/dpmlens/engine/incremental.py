"""Incremental analysis of one open document: an edit that no rule can see reuses the findings.

    analyzer = IncrementalAnalyzer()
    result = analyzer.analyze_early(path, source, config, resolver)  # before parsing, or None
    result = result or analyzer.analyze(path, source, tree, config, resolver)
    result.findings          # identical to engine.analyze_model(build_model(...), ...)
    result.model             # None when the findings were reused: build it when needed

A full analysis records its footprint (model/footprint.py): the functions the rules read, the
text searches they made, the tree ranges, the helpers found in other files, the headers. The
next text is compared with the last one; when the only change lies inside one function's body,
the file's top-level structure is the same, that function is outside the footprint, no
recorded search (nor any of the model build's own: tables, drivers, headers) matches its old
or its new text, and the helpers of other files and the headers are unchanged, then no rule can
tell the two texts apart except by position: the old findings are moved by the lines the edit
added or removed. Otherwise the analysis runs in full.

Two things are judged again rather than sending the edit to a full analysis: the function's
own calls as the per-function checkers see them (its delays, when no callback's walk entered
it; its pm_runtime_get_sync() calls), and the file-wide answers the edit touches (does a
function lead to a delay, does the file call X, which function is the driver's sleep wrapper).
Both run on a model of the new text's functions (`build_model(functions_only=True)`).

An edit in a function that only the per-function checkers read beyond that (a callback's walk
entered it: `footprint.CHECKERS`, which engine.analyze.run_rules keeps apart by running those
checkers after the other rules) runs those checkers again, alone, on a model of the new text
(`_rerun`): their findings are replaced, the other rules' kept.

The structure is checked on the new tree, or, before the document is parsed again, by parsing
the edited function alone (`_parses_alone`: clean, or with the same errors as before, inside its
body): most keystrokes need no reparse of the document.

Kept honest by tests/test_incremental.py: long random edit sequences on real drivers, with and
without the helpers of their directory, the result compared with a full analysis after every
edit (and the structure assumed before parsing with the real one).
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from operator import itemgetter

import tree_sitter as ts

from dpmlens.config.settings import Config
from dpmlens.core.findings import ChainStep, Finding, Fix, Span, TextEdit
from dpmlens.core.text_change import changed_region
from dpmlens.engine.analyze import (
    analyze_model,
    function_findings,
    per_function_rules,
    run_rules,
)
from dpmlens.model import footprint
from dpmlens.model.build import TOP_LEVEL_CONTAINERS, NotBuilt, build_model, text_searches
from dpmlens.model.ctext import word_byte as _word
from dpmlens.model.footprint import Footprint
from dpmlens.model.headers import defines_of
from dpmlens.model.spliced import NotSpliced, Shift, Top, spliced_model
from dpmlens.model.types import FileModel
from dpmlens.rules import delays
from dpmlens.rules.context import Context
from dpmlens.rules.loader import load_rules
from dpmlens.syntax.parser import parse


@dataclass(frozen=True)
class Result:
    findings: list[Finding]
    # None when reused without one (the caller builds a model only if it needs one)
    model: FileModel | None
    reused: bool
    why: str  # why the analysis ran in full ("" when reused)
    how: str = ""  # "reused", "judged f()" or "full: " + why (for the log)


_Item = tuple[str, int, int]  # a top-level item (build.top_level's view): type, start, end
_Body = tuple[int, int, int, str]  # a function: start, body start, end, name


@dataclass
class _State:
    path: str
    source: bytes
    items: list[_Item]  # in document order
    bodies: list[_Body]
    findings: list[Finding]
    footprint: Footprint
    config: Config
    with_resolver: bool
    build: list[re.Pattern[bytes]] = field(default_factory=list)
    # no callback was found by text (build.recover_callbacks): a model of the functions the
    # tree has is the model, but for its tables and drivers, which an edit judged leaves be
    functions_suffice: bool = False
    # the top level of the last model built, and the edits since (model/spliced.Top): a model
    # spliced without parsing the document takes it from there rather than from the tree
    top: Top | None = None
    shifts: list[Shift] = field(default_factory=list)


@dataclass(frozen=True)
class Stale:
    """The document's last tree, `Tree.edit`ed by every edit since it was parsed, and the
    ranges those edits wrote (in the text now): lsp/documents.Document.stale(). An edit judged
    in a function that holds all of them is judged without parsing the document
    (model/spliced.py)."""

    tree: ts.Tree
    edited: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class _Decided:
    """An edit `_why_not` decided up to what needs a model of the new text (`_settle`)."""

    path: str
    source: bytes
    config: Config
    resolver: object | None
    items: list[_Item]  # the new text's top-level items and functions
    bodies: list[_Body]
    name: str  # the edited function, at [f_start, f_end) before the edit of `delta` bytes
    f_start: int
    f_end: int
    delta: int
    texts: tuple[bytes, bytes]  # its text before and after
    moved: list[Finding]  # the findings outside it, moved
    inside: list[Finding]  # those in it (the per-function checkers')
    rerun: bool  # run the per-function checkers again (else: judge the function again)
    judged: set[str]  # the per-function checkers' rule ids
    balance: bool  # run the balance rules again (they read the function: `_rerun_balance`)
    shift: Shift | None = None  # the edit, for the top level carried over (model/spliced.py)
    stale: Stale | None = None  # the document's last tree, as analyze_early was given it


@dataclass
class IncrementalAnalyzer:
    state: _State | None = None
    reused: int = 0  # of which `judged`: after judging the edited function again
    judged: int = 0
    rerun: int = 0  # of which after running the per-function checkers again (`_rerun`)
    spliced: int = 0  # judged without parsing the document (model/spliced.py)
    balanced: int = 0  # of the reused, after running the balance rules again alone
    kept: int = 0  # functions whose delay findings the reruns kept (`_keepable`)
    unwalked: int = 0  # callbacks' walks the reruns did not make again (they reached nothing)
    full: int = 0
    built: FileModel | None = None  # the model a reusing decision had to build, if any
    judged_name: str = ""  # the function the last reusing decision judged again, if any
    judged_how: str = "judged"  # how: "judged" (_judge_again) or "rerun" (_rerun)
    # (source, why) when analyze_early said no for a reason a tree would not change
    _early: tuple[bytes, str] | None = None
    # what analyze_early decided when only the judgement needed a tree (`_settle`)
    _pending: _Decided | None = None
    _top: Top | None = None  # the top level of the spliced model a judgement just used

    def forget(self) -> None:
        """Drop what is kept (settings or the workspace changed: the next run is a full one)."""
        self.state, self._pending = None, None

    def analyze_early(
        self, path: str, source: bytes, config: Config, resolver: object | None = None,
        stale: Stale | None = None,
    ) -> Result | None:  # fmt: skip
        """The last findings, moved, when the edit to `source` can be decided without a tree
        of it (see `_parses_alone`: the server then need not reparse the document; given the
        document's last tree as edited, `stale`, an edit judged again need not either);
        None: call `analyze` with the tree."""
        self.built, self.judged_name, self._pending = None, "", None
        why = self._why_not(path, source, None, None, config, resolver, stale)
        if why is not None:
            self._early = (source, why)
            return None
        assert self.state is not None
        self.reused += 1
        how = "reused before parsing"
        if self.judged_name:  # (judged on a model spliced from the last tree: model/spliced.py)
            how = f"{self.judged_how} {self.judged_name}() without parsing the document"
        return Result(self.state.findings, None, True, "", how)

    def analyze(
        self,
        path: str,
        source: bytes,
        tree: ts.Tree,
        config: Config,
        resolver: object | None = None,
    ) -> Result:
        top: tuple[list[_Item], list[_Body]] | None = None
        self.built, self.judged_name = None, ""
        early, self._early = self._early, None
        pending, self._pending = self._pending, None
        if early is not None and early[0] is source and early[1] != _NEEDS_TREE:
            why: str | None = early[1]  # (decided without the tree: it says the same)
        elif (
            pending is not None and pending.source is source and pending.config == config
            and pending.resolver is resolver
        ):  # fmt: skip
            # decided before parsing but for what needs a model of the new text (the edited
            # function parsed alone: the structure is known): resumed there
            why = self._settle(pending, tree)
        else:
            top = _top_level(tree)
            why = self._why_not(path, source, tree, top, config, resolver)
        if why is None:
            assert self.state is not None
            self.reused += 1
            how = f"{self.judged_how} {self.judged_name}()" if self.judged_name else "reused"
            return Result(self.state.findings, self.built, True, "", how)
        self.full += 1
        model = build_model(path, source, tree=tree)
        with footprint.record(model) as fp:
            findings = analyze_apart(model, config, resolver)
        if model.loader is not None:  # the headers the build or a rule read
            fp.headers.update(model.loader.header_files())
        items, bodies = top if top is not None else _top_level(tree)
        ranges = getattr(model.loader, "func_ranges", [])
        names = {start: name for start, _end, name in ranges}
        bodies = [(s, b, e, names.get(s, "")) for s, b, e, _ in bodies]
        self.state = _State(
            path, source, items, bodies, findings, fp, config, resolver is not None,
            text_searches(model),
            not getattr(model.loader, "recovered", True),
            Top.of(model),
        )
        return Result(findings, model, False, why, f"full: {why}")

    # -- the decision ---------------------------------------------------------------------

    def _why_not(
        self, path: str, source: bytes, tree: ts.Tree | None,
        top: tuple[list[_Item], list[_Body]] | None, config: Config, resolver: object | None,
        stale: Stale | None = None,
    ) -> str | None:  # fmt: skip
        """None when the last findings hold for `source` (and the state is moved to it), else
        why not. Without a tree (`top` None), the edited function is parsed on its own."""
        st = self.state
        if st is None:
            return "first analysis"
        if st.path != path or st.config != config or st.with_resolver != (resolver is not None):
            return "path, settings or workspace changed"
        fp = st.footprint
        if fp.whole is not None:
            return f"the rules read {fp.whole}"
        old = st.source
        if old == source:
            lo, old_hi, new_hi = len(old), len(old), len(source)
        else:
            lo, old_hi, new_hi = changed_region(old, source)
        delta = new_hi - old_hi
        hit = _enclosing_body(st.bodies, lo, old_hi)
        if hit is None:
            return "the edit is not inside one function body"
        f_start, _body, f_end, name = hit
        if not name:
            return "the edit is in a function the model does not name"
        if top is None:
            # (the items and bodies are in order of their starts: those from f_end on move
            # whole, those before it only where they end after it; `_moved_offset` inlined,
            # lpfc_init.c has ~1,900 items)
            before = bisect_right(st.items, f_start, key=_start)
            if not _parses_alone(source[f_start : f_end + delta], old[f_start:f_end]) or any(
                t == "ERROR" and f_end <= e for t, _s, e in st.items[:before]
            ):
                return _NEEDS_TREE
            k = bisect_left(st.items, f_end, key=_start)
            items = [(t, s, e + delta if e >= f_end else e) for t, s, e in st.items[:k]]
            items += [(t, s + delta, e + delta) for t, s, e in st.items[k:]]
            k = bisect_left(st.bodies, f_end, key=_first)
            bodies = [
                (s, b + delta if b >= f_end else b, e + delta if e >= f_end else e, n)
                for s, b, e, n in st.bodies[:k]
            ]  # fmt: skip
            bodies += [(s + delta, b + delta, e + delta, n) for s, b, e, n in st.bodies[k:]]
        else:
            items, bodies = top
            if not _same_structure(st.items, items, f_start, f_end, delta) or len(
                bodies
            ) != len(st.bodies):
                return "the edit changed the file's top-level structure"
            # the same functions, in the same order: their names carry over to the new tree's
            bodies = [
                (s, b, e, was[3]) for (s, b, e, _), was in zip(bodies, st.bodies, strict=True)
            ]
        if fp.touches(name, f_start, f_end):
            return f"the rules read {name}()"
        texts = (old[f_start:f_end], source[f_start : f_end + delta])
        for text in texts:
            if (key := fp.matches(text)) is not None:
                return f"{name}() matches a search of the rules ({key[:40]!r})"
            for pattern in st.build:
                if pattern.search(text) is not None:
                    return f"{name}() matches a search of the model ({pattern.pattern[:40]!r})"
        # The reads made to evaluate the delays of another function count like the rest;
        # those of this function's own delays, the search for delay calls and file-wide
        # answers are judged by evaluating them again on the new text (below).
        aside = frozenset({name, footprint.NAMES, footprint.CHECKER_NAMES, *fp.answers})
        # the balance rules read it (a probe, a remove, a helper of theirs): run them again
        balance = (b := fp.units.get(footprint.BALANCE)) is not None and _balance_reads(
            b, name, f_start, f_end, texts)
        rerun = False
        if (unit := fp.unit_reading(
            name, f_start, f_end, texts, aside | {footprint.BALANCE}
        )) is not None:  # fmt: skip
            # only the per-function checkers read it (a callback's walk entered it, another
            # function's delay read its text): run them again on the new text, keep the rest
            names = fp.units.get(footprint.NAMES)  # (its searches are shared with other rules)
            if names is not None and names.reads(name, f_start, f_end, texts):
                return f"the delays of {unit or 'the file'}() read {name}()"
            rerun = True
        if fp.callees:  # a call the tree sees may differ where the text looks alike
            return "the rules read every name the file calls"
        if (changed := _stale_elsewhere(fp, resolver)) is not None:
            return changed
        first = old.count(b"\n", 0, f_start) + 1
        last = first + old.count(b"\n", f_start, f_end)
        lines = source.count(b"\n", lo, new_hi) - old.count(b"\n", lo, old_hi)
        moved, inside = _moved(st.findings, path, first, last, lines)
        kept = first + old.count(b"\n", f_start, old_hi) < last  # (its last line as it was)
        shift = Shift(f_start, f_end, delta, last, lines, kept)
        # a finding in the function itself can only come from a per-function checker (any
        # other rule that placed one there read it); judged again, they are found again
        judged = {rule.id for rule in per_function_rules()}
        again = judged | (balance_rule_ids() if balance else set())
        if any(f.rule not in again for f in inside):
            return f"a finding lies in {name}()"
        decided = _Decided(
            path, source, config, resolver, items, bodies, name, f_start, f_end, delta, texts,
            moved, inside, rerun, judged, balance, shift, stale if tree is None else None,
        )  # fmt: skip
        why = self._settle(decided, tree)
        if why == _NEEDS_TREE and tree is None:
            self._pending = decided  # (`analyze` resumes here with the tree)
        return why

    def _settle(self, d: _Decided, tree: ts.Tree | None) -> str | None:
        """The end of `_why_not` (which decided everything but what needs a model of the new
        text): judge the edited function again or run the per-function checkers again, then
        move the state to the new text; None when the findings hold, else why not."""
        st = self.state
        assert st is not None
        fp = st.footprint.shifted(d.f_end, d.delta)
        found: list[Finding] = []
        end = d.f_end + d.delta
        balanced: list[Finding] = []
        balance_top: list[Top | None] = []
        if d.balance:
            why = self._rerun_balance(fp, d, end, tree, balanced, balance_top,
                                      (lambda: _dirty(d, st)) if tree is None else None)
            if why is not None:
                return why
        if d.rerun:
            why = self._rerun(fp, d.name, d.f_start, end, d.texts, found, d.path, d.source,
                              tree, d.config, d.resolver, d.moved,
                              (lambda: _dirty(d, st)) if tree is None else None)  # fmt: skip
            if why is not None:
                return why
            moved = sorted([f for f in d.moved if f.rule not in d.judged] + found,
                           key=Finding.sort_key)  # fmt: skip
        else:
            mine = any(f.rule in d.judged for f in d.inside)
            why = self._judge_again(
                fp, d.name, d.f_start, end, d.texts, mine, found, d.path, d.source,
                tree, d.config, d.resolver, (lambda: _dirty(d, st)) if tree is None else None,
            )  # fmt: skip
            if why is not None:
                return why
            moved = d.moved
            if d.inside or found:
                moved = sorted(moved + found, key=Finding.sort_key)
        if d.balance:  # (theirs, moved or in the function, replaced by the new ones)
            self.judged_name, self.judged_how = d.name, "balance"
            ids = balance_rule_ids()
            moved = sorted([f for f in moved if f.rule not in ids] + balanced,
                           key=Finding.sort_key)  # fmt: skip
        st.source, st.items, st.bodies, st.findings = d.source, d.items, d.bodies, moved
        st.footprint = fp
        top, self._top = self._top, None
        if top is None and balance_top:
            top = balance_top[0]
        if top is not None:  # (a spliced model's: the top level of the new text)
            st.top, st.shifts = top, []
        elif st.top is not None and d.shift is not None:
            both = st.shifts[-1].then(d.shift) if st.shifts else None
            if both is None:
                st.shifts.append(d.shift)
            elif both.delta or both.lines or not both.kept:
                st.shifts[-1] = both
            else:  # (typed and taken back)
                st.shifts.pop()
            if len(st.shifts) > _SHIFTS:
                st.top, st.shifts = None, []
        return None


    def _judge_again(
        self, fp: Footprint, name: str, start: int, end: int, texts: tuple[bytes, ...],
        must: bool, found: list[Finding], path: str, source: bytes, tree: ts.Tree | None,
        config: Config, resolver: object | None,
        stale: Callable[[], tuple[ts.Tree, list[tuple[int, int]], Top | None] | None]
        | None = None,
    ) -> str | None:  # fmt: skip
        """The units set aside for function `name` (now at [start, end)) that the edit
        touches (its own delays, also when `must`), judged on a model of the new text: None
        when they hold (the findings of the function's delays are then put in `found`, and
        `fp` updated with what the new judgement read), else why not. Without a tree, given
        `stale` (the last tree as edited, the other functions edits since went into), on a
        model spliced from it and the edited functions parsed alone (model/spliced.py)."""

        def touched(key: str) -> bool:
            u = fp.units.get(key)
            return u is not None and u.reads(name, start, end, texts)

        own = must or touched(name) or touched(footprint.NAMES) or touched(
            footprint.CHECKER_NAMES)
        answers = [key for key in fp.answers if touched(key)]
        if not own and not answers:
            return None
        light = self.state is not None and self.state.functions_suffice
        model = _new_text_model(path, source, tree, stale, start, end, light, every=False)
        if model is None:
            return _NEEDS_TREE
        try:
            with footprint.record(model) as again:
                # only the per-function checkers looked at this function's own calls (its
                # delays: no callback reaches them, else its walk read the function)
                found += function_findings(model, config, resolver, name) if own else []
                changed = [
                    key for key in answers
                    if footprint.answer(model, key, fp.answers[key][0]) != fp.answers[key][1]
                ]  # fmt: skip
        except NotSpliced:
            del found[:]
            return _NEEDS_TREE
        except Exception:
            if tree is not None:
                raise
            # (a rule handed the spliced tree's root to tree-sitter itself, which takes only
            # a real node: the judgement is made again on the document's tree)
            del found[:]
            return _NEEDS_TREE
        except NotBuilt as missing:
            return f"judging {name}() needs {missing}"
        if any(f.path != path or f.function != name for f in found):
            return f"a delay in {name}() is reported elsewhere"
        if changed:
            return f"the edit changes {changed[0]}"
        if again.whole is not None or again.callees:
            return f"judging {name}() again read the whole file"
        for key in (name, *answers):  # (the units of the other functions have not changed)
            if key in again.units:
                fp.units[key] = again.units[key]
        fp.lookups.update(again.lookups)
        if model.loader is not None:
            fp.headers.update(model.loader.header_files())
        # (the caller builds a whole one if it needs it; a spliced one serves this judgement only)
        self.built = None if light or tree is None else model
        if tree is None:
            self._top = Top.of(model)
        self.judged += 1
        self.spliced += tree is None
        self.judged_name, self.judged_how = name, "judged"
        return None


    def _rerun_balance(
        self, fp: Footprint, d: _Decided, end: int, tree: ts.Tree | None,
        found: list[Finding], top: list[Top | None],
        stale: Callable[[], tuple[ts.Tree, list[tuple[int, int]], Top | None] | None]
        | None = None,
    ) -> str | None:  # fmt: skip
        """The balance rules run again, alone, on a model of the new text, after an edit of
        function `d.name` (now at [d.f_start, end)) that only they and the units set aside
        read: None when nothing the other rules share changed (their findings, all of them,
        are then in `found`, and `fp` holds what they read now in place of what they read
        before), else why not. Without a tree, given `stale` (as for `_judge_again`), on a
        spliced model whose other functions are parsed alone when read (model/spliced.py);
        the new text's top level is then put in `top`."""
        model = _new_text_model(d.path, d.source, tree, stale, d.f_start, end)
        if model is None:
            return _NEEDS_TREE
        try:
            with footprint.record(model) as again:
                found += _balance_findings(model, d.config, d.resolver)
        except NotSpliced:
            del found[:]
            return _NEEDS_TREE
        except Exception:
            if tree is not None:
                raise
            # (a rule read what a spliced model does not give: again on the document's tree)
            del found[:]
            return _NEEDS_TREE
        if again.whole is not None or again.callees:
            return f"running the balance rules again read the whole file ({d.name}())"
        changed = [
            key for key, (_how, value) in again.answers.items()
            if key in fp.answers and fp.answers[key][1] != value
        ]  # fmt: skip
        if changed:
            return f"the edit changes {changed[0]}"
        # their unit is replaced; NAMES is shared with the delay rules (its searches add up);
        # the answers they asked, with what computing them read now
        for key, u in again.units.items():
            if key == footprint.NAMES and (names := fp.units.get(key)) is not None:
                fp.units[key] = _union(names, u)
            elif key == footprint.BALANCE or key in again.answers:
                fp.units[key] = u
        fp.units.setdefault(footprint.BALANCE, Footprint())
        fp.answers.update(again.answers)
        fp.functions |= again.functions
        fp.patterns.update(again.patterns)
        fp.ranges += again.ranges
        fp.lookups.update(again.lookups)
        if model.loader is not None:
            fp.headers.update(model.loader.header_files())
        self.built = None if tree is None else model
        if tree is None:
            top.append(Top.of(model))
            self.spliced += 1
        self.balanced += 1
        self.judged_name, self.judged_how = d.name, "balance"
        return None

    def _rerun(
        self, fp: Footprint, name: str, start: int, end: int, texts: tuple[bytes, ...],
        found: list[Finding], path: str, source: bytes, tree: ts.Tree | None, config: Config,
        resolver: object | None, last: list[Finding],
        stale: Callable[[], tuple[ts.Tree, list[tuple[int, int]], Top | None] | None]
        | None = None,
    ) -> str | None:  # fmt: skip
        """The per-function checkers run again, alone, on a model of the new text, after an
        edit of function `name` (now at [start, end)) that only they read, beside the
        file-wide answers the edit touches: None when those answers hold (their findings,
        all of them, are then in `found`, and `fp` holds what they read now in place of what
        they read before), else why not. The other rules ran first and read none of it.

        The delays of the functions no callback's walk reached, before or now, whose own
        reads the edit leaves alone (`_keepable`), are not evaluated again: their findings
        are the last ones (`last`: the findings outside the edited function, moved).

        Without a tree, given `stale` (as for `_judge_again`), on a spliced model whose other
        functions are parsed alone when read (model/spliced.py)."""
        answers = [
            key for key in fp.answers
            if (u := fp.units.get(key)) is not None and u.reads(name, start, end, texts)
        ]  # fmt: skip
        model = _new_text_model(path, source, tree, stale, start, end)
        if model is None:
            return _NEEDS_TREE
        try:
            return self._rerun_on(model, fp, name, start, end, texts, found, path, config,
                                  resolver, last, answers, spliced=tree is None)  # fmt: skip
        except NotSpliced:
            pass
        except Exception:
            if tree is not None:
                raise
        del found[:]  # (the spliced model would not do: made again on the document's tree)
        return _NEEDS_TREE

    def _rerun_on(
        self, model: FileModel, fp: Footprint, name: str, start: int, end: int,
        texts: tuple[bytes, ...], found: list[Finding], path: str, config: Config,
        resolver: object | None, last: list[Finding], answers: list[str], spliced: bool,
    ) -> str | None:  # fmt: skip
        keep = _keepable(fp, name, start, end, texts)
        empty = frozenset(
            key[len(footprint.WALK_EMPTY):] for key, u in fp.units.items()
            if key.startswith(footprint.WALK_EMPTY) and not u.reads(name, start, end, texts)
        )  # fmt: skip
        with footprint.record(model) as again:
            ctx = Context(model, config, resolver)
            try:
                # the walks' probes ("does this function lead to a delay") as they were: those
                # the edit touched are asked again below (`changed`)
                ctx.walker.assume_probes(model, fp.answers)
                delays.keep_unreached(ctx, keep, empty)
                found += run_rules(ctx, config, per_function_rules())
                kept = delays.kept_unreached(ctx)
                unwalked = delays.unwalked_callbacks(ctx)
            finally:
                ctx.close()
            changed = [
                key for key in answers
                if footprint.answer(model, key, fp.answers[key][0]) != fp.answers[key][1]
            ]  # fmt: skip
        if changed:
            return f"the edit changes {changed[0]}"
        if again.whole is not None or again.callees:
            return f"running the checkers of {name}() again read the whole file"
        mine = {rule.id for rule in per_function_rules() if rule.checker.name == "delays"}
        found += [f for f in last if f.rule in mine and f.path == path and f.function in kept]
        # what they read before, in their units (the functions' and CHECKERS), is replaced
        # by what they read now; NAMES is shared with other rules (its searches add up) and
        # the answers' units, asked by any rule, are kept unless asked again; a kept
        # function's unit is what its delays read last time (and what was read in it now)
        names = fp.units.get(footprint.NAMES)
        was = fp.units
        fp.units = {
            key: u for key, u in fp.units.items()
            if key in (footprint.NAMES, footprint.BALANCE) or key in fp.answers
        }  # fmt: skip
        for key, u in again.units.items():
            if key == footprint.NAMES and names is not None:
                fp.units[key] = _union(names, u)
            else:
                fp.units[key] = u
        for key in [*kept, *(footprint.WALK_EMPTY + cb for cb in unwalked)]:
            now = fp.units.get(key)
            fp.units[key] = was[key] if now is None else _union(was[key], now)
        fp.answers.update(again.answers)
        fp.functions |= again.functions
        fp.patterns.update(again.patterns)
        fp.ranges += again.ranges
        fp.lookups.update(again.lookups)
        if model.loader is not None:
            fp.headers.update(model.loader.header_files())
        self.built = None if spliced else model
        if spliced:
            self._top = Top.of(model)
            self.spliced += 1
        self.rerun += 1
        self.kept += len(kept)
        self.unwalked += len(unwalked)
        self.judged_name, self.judged_how = name, "rerun"
        return None


BALANCE_CHECKER = "lifetime-balance"


def balance_rule_ids() -> set[str]:
    """The probe/remove balance rules (their checker's), run apart (`analyze_apart`)."""
    return {rule.id for rule in load_rules() if rule.checker.name == BALANCE_CHECKER}


def analyze_apart(
    model: FileModel, config: Config, resolver: object | None = None
) -> list[Finding]:
    """engine.analyze_model's findings, the balance rules run after the others in a Context
    of their own, what they read in the footprint's unit `footprint.BALANCE`: an edit only
    they read reruns them alone (`_rerun_balance`). The same findings: a rule's findings do
    not depend on which rules ran before it in its Context (its caches are the file's facts),
    and they are merged and sorted as run_rules sorts them (by path, place and rule)."""
    rules = load_rules()
    ids = balance_rule_ids()
    if not any(config.is_enabled(i) for i in ids):
        return analyze_model(model, config, resolver, rules)
    found = analyze_model(model, config, resolver, [r for r in rules if r.id not in ids])
    return sorted(found + _balance_findings(model, config, resolver), key=Finding.sort_key)


def _new_text_model(
    path: str, source: bytes, tree: ts.Tree | None,
    stale: Callable[[], tuple[ts.Tree, list[tuple[int, int]], Top | None] | None] | None,
    start: int, end: int, light: bool = False, every: bool = True,
) -> FileModel | None:  # fmt: skip
    """A model of the new text, whose function at [start, end) was edited: of `tree` when
    there is one; else, as every edit since the last parse lies in a function's body, spliced
    from the last tree as edited (`stale`: their new subtrees each on its own, the rest from
    that tree; `every`: the other functions parsed alone when read, model/spliced.py). None:
    the document must be parsed."""
    if tree is not None:
        return build_model(path, source, tree, functions_only=light)
    last = stale() if stale is not None else None
    if last is None:
        return None
    return spliced_model(path, source, last[0], start, end, last[1], light, last[2], every=every)


def _balance_findings(model: FileModel, config: Config, resolver: object | None) -> list[Finding]:
    ctx = Context(model, config, resolver)
    try:
        with footprint.unit(model, footprint.BALANCE):
            return run_rules(ctx, config, [r for r in load_rules() if r.id in balance_rule_ids()])
    finally:
        ctx.close()


def _dirty(d: _Decided, st: _State) -> tuple[ts.Tree, list[tuple[int, int]], Top | None] | None:
    """The last tree of the document, the functions, but the edited one, that edits since
    it was parsed went into (each inside a body: decided before parsing), and the top level
    of the new text when carried over; None when there is no such tree or an edit lies
    elsewhere."""
    if d.stale is None:
        return None
    end = d.f_end + d.delta
    out: set[tuple[int, int]] = set()
    starts: list[int] | None = [b[0] for b in d.bodies]
    if any(a[2] > b[0] for a, b in zip(d.bodies, d.bodies[1:], strict=False)):
        starts = None  # (functions that overlap: each edit tried against every one)
    for s, e in d.stale.edited:
        if d.f_start < s and e < end:
            continue
        hit = _enclosing_body(d.bodies, s, e, starts)
        if hit is None:
            return None
        out.add((hit[0], hit[2]))
    top = None
    if st.top is not None and d.shift is not None:
        top = st.top.moved([*st.shifts, d.shift])
    return d.stale.tree, sorted(out), top


def _keepable(
    fp: Footprint, name: str, start: int, end: int, texts: tuple[bytes, ...]
) -> frozenset[str]:
    """The functions, but `name` (edited, now at [start, end)), whose delays a rerun of the
    per-function checkers need not evaluate again unless a walk reaches them now: the last
    analysis evaluated them in a unit of their own (`footprint.units`), which reads nothing
    the edit changed, and no walk reached them (the per-function checkers' own reads,
    `footprint.CHECKERS` and the walks' units, never touched them)."""
    walks = [
        u for key, u in fp.units.items()
        if key == footprint.CHECKERS or key.startswith((footprint.WALK, footprint.WALK_EMPTY))
    ]  # fmt: skip
    special = {footprint.NAMES, footprint.CHECKERS, footprint.CHECKER_NAMES, footprint.BALANCE,
               name}
    return frozenset(
        key for key, u in fp.units.items()
        if key not in special and key not in fp.answers
        and not key.startswith((footprint.WALK, footprint.WALK_EMPTY))
        and not any(key in w.functions for w in walks)
        and not u.reads(name, start, end, texts)
    )  # fmt: skip


def _union(a: Footprint, b: Footprint) -> Footprint:
    """What `a` or `b` read (their searches, functions and ranges)."""
    return Footprint(
        a.functions | b.functions, {**a.patterns, **b.patterns}, a.ranges + b.ranges,
        {**a.lookups, **b.lookups}, {**a.headers, **b.headers}, a.callees or b.callees,
        a.whole or b.whole,
    )  # fmt: skip


_NEEDS_TREE = "the edit is judged on a tree of the new text"
_start, _first = itemgetter(1), itemgetter(0)  # an item's start, a body's
_SHIFTS = 64  # edits a carried top level is moved over before it is read from a tree again


def _moved_offset(offset: int, f_end: int, delta: int) -> int:
    """A top-level item's start or end after an edit of `delta` bytes in the function ending
    at `f_end`: later items move, the edited function and its containers stretch."""
    return offset + delta if offset >= f_end else offset


def _parses_alone(function: bytes, before: bytes | None = None) -> bool:
    """Does the text of an edited function parse, on its own, as one function definition
    without an error? Then a parse of the whole new text has it in the old one's place: the
    parser reaches it in the state it reached the old one (the text before is the same),
    and leaves it in the state the old one left (a complete definition), so the rest parses
    as before. With an error anywhere in it, recovery may reach beyond: parse the document.

    Or, given the function's text `before` the edit: do both parse alone as one definition
    with the same errors, each inside the body, between its braces, skipping no brace and no
    `#` (the kernel's `container_of(work, struct usb_hub, leds.work)`, a macro loop's missing
    `;`)? The errors the edit left as they were recover as they did, inside the braces."""
    errors = _alone(function)
    if errors is None:
        return False
    return not errors or (before is not None and _alone(before) == errors)


_Errors = tuple[tuple[str, bool, bytes, tuple[str, ...]], ...]


@lru_cache(maxsize=16)  # the edited function's text after one keystroke is its text before the next
def _alone(function: bytes) -> _Errors | None:
    """None when `function` does not parse alone as one function definition (or has a `/*`
    that would open a comment in a longer text, or an error that may reach past its body);
    else its errors, each as (type, missing, text, the types of the nodes up to the body),
    in document order: () for a clean parse."""
    root = _alone_tree(function).root_node
    if root.child_count != 1:
        return None
    fn = root.children[0]
    body = fn.child_by_field_name("body")
    if not (
        fn.type == "function_definition"
        and fn.start_byte == 0
        and fn.end_byte == len(function)
        and body is not None
        and body.type == "compound_statement"
        and body.end_byte == len(function)
    ):
        return None
    errors: list[tuple[str, bool, bytes, tuple[str, ...]]] = []
    if root.has_error:
        close = body.children[-1] if body.child_count else None
        if close is None or close.type != "}" or close.is_missing:
            return None
        stack = [fn]
        while stack:
            node = stack.pop()
            if node.is_error or node.is_missing:
                text = node.text or b""
                if (
                    node.start_byte <= body.start_byte
                    or node.end_byte >= body.end_byte
                    or any(c in text for c in b"{}#")
                ):
                    return None
                path: list[str] = []
                up = node.parent
                while up is not None and up != fn:
                    path.append(up.type)
                    up = up.parent
                errors.append((node.type, node.is_missing, text, tuple(path)))
            elif node.has_error:
                stack.extend(reversed(node.children))
        if not errors:
            return None
    # A `/*` that opens no comment here (none closes it: `x / *p`) opens one in the whole
    # text when a `*/` follows further on: the one token that can reach past the function.
    at = function.find(b"/*")
    while at >= 0:
        lit = root.descendant_for_byte_range(at, at + 2)
        while lit is not None and lit.type not in _LITERALS:
            lit = lit.parent
        if lit is None:
            return None
        at = function.find(b"/*", at + 2)
    return tuple(errors)


_LITERALS = frozenset({"comment", "string_literal", "char_literal", "system_lib_string"})


@lru_cache(maxsize=16)
def _alone_tree(function: bytes) -> ts.Tree:
    return parse(function)


_NAME = re.compile(rb"[A-Za-z_]\w*")


def _balance_reads(
    u: Footprint, name: str, start: int, end: int, texts: tuple[bytes, bytes]
) -> bool:
    """Does an edit of function `name` (now at [start, end); its text before and after)
    change what the balance rules read (`footprint.BALANCE`)? Besides the functions and
    ranges they read, their searches: the names of their set-up calls, which they read by
    callee and caller (lifetime._set_up, setup_callers: never by place), the driver's exit
    and initcall, ACPI ids (read as present or not). A search that finds the same names in
    both texts, in the same order, each a call in both or in neither (as
    model.calls.calls_named tells a call: the word alone, an identifier called; in the
    function parsed alone, which the document's tree holds as it is: `_parses_alone`),
    reads the same: the rules see the same calls and callers. Anything else found counts."""
    if u.touches(name, start, end):
        return True
    for key, pattern in u.patterns.items():
        found = [[m.span() for m in pattern.finditer(text)] for text in texts]
        if not found[0] and not found[1]:
            continue
        if len(found[0]) != len(found[1]) or _NAME.fullmatch(key) is None:
            return True
        if _calls_at(texts[0], found[0]) != _calls_at(texts[1], found[1]):
            return True
    return False


def _calls_at(text: bytes, spans: list[tuple[int, int]]) -> list[bool]:
    """For each occurrence of a name in a function's `text`: is it a call of that name?"""
    root = _alone_tree(text).root_node
    out = []
    for pos, end in spans:
        word = (pos > 0 and _word(text[pos - 1])) or (end < len(text) and _word(text[end]))
        ident = None if word else root.descendant_for_byte_range(pos, end)
        call = ident.parent if ident is not None else None
        out.append(
            call is not None and ident is not None and ident.type == "identifier"
            and call.type == "call_expression" and call.start_byte == pos
            and call.child_count >= 2
        )  # fmt: skip
    return out



def _top_level(tree: ts.Tree) -> tuple[list[_Item], list[_Body]]:
    """The items build.top_level looks at, and each function's (start, body start, end); the
    name is filled in from the model."""
    items: list[_Item] = []
    bodies: list[_Body] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        for ch in node.children:
            items.append((ch.type, ch.start_byte, ch.end_byte))
            if ch.type == "function_definition":
                body = ch.child_by_field_name("body")
                if body is not None and body.type == "compound_statement":
                    bodies.append((ch.start_byte, body.start_byte, ch.end_byte, ""))
            elif ch.type in TOP_LEVEL_CONTAINERS:
                stack.append(ch)
    items.sort(key=lambda i: (i[1], i[2], i[0]))
    bodies.sort()
    return items, bodies


def _enclosing_body(
    bodies: list[_Body], lo: int, hi: int, starts: list[int] | None = None
) -> _Body | None:
    """The function whose body holds [lo, hi) without touching its braces. Given `starts`
    (each function's start, in order, the functions apart from each other), only the one
    that starts last at or before `lo` can: a document's edits since its last parse are
    many (`_dirty`)."""
    if starts is not None:
        i = bisect_right(starts, lo) - 1
        if i < 0:
            return None
        start, body, end, name = bodies[i]
        return (start, body, end, name) if body < lo and hi < end else None
    for start, body, end, name in bodies:
        if body < lo and hi < end and start <= lo:
            return start, body, end, name
    return None


def _same_structure(
    old: list[_Item], new: list[_Item], f_start: int, f_end: int, delta: int
) -> bool:
    """Is `new` `old` with the items after the edit moved by `delta` (and those around it,
    the edited function and its containers, stretched)?"""
    if len(old) != len(new):
        return False
    for (t0, s0, e0), (t1, s1, e1) in zip(old, new, strict=True):
        if t0 != t1:
            return False
        if (s1, e1) != (_moved_offset(s0, f_end, delta), _moved_offset(e0, f_end, delta)):
            return False
    return True


def _stale_elsewhere(fp: Footprint, resolver: object | None) -> str | None:
    """Has a helper of another file, or a local header, changed since the footprint?"""
    for hpath, defs in fp.headers.items():
        now = defines_of(hpath)
        if now is not defs and now != defs:
            return f"{hpath} changed"
    if fp.lookups and resolver is None:
        return "the workspace is gone"
    for name, was in fp.lookups.items():
        try:
            found = resolver.lookup(name)  # type: ignore[union-attr]
        except Exception:
            found = None
        if found is None:
            if was is not None:
                return f"{name}() is no longer found"
            continue
        if was is None or found[0].path != was[0] or (
            found[0].source is not was[1] and found[0].source != was[1]
        ):
            return f"{name}() changed in {found[0].path}"
    return None


def _moved(
    findings: list[Finding], path: str, first: int, last: int, lines: int
) -> tuple[list[Finding], list[Finding]]:
    """`findings` with every span of `path` below line `last` moved by `lines`, but for
    those with a span on lines first..last (the edited function), which come second."""
    out: list[Finding] = []
    inside: list[Finding] = []
    for f in findings:
        spans = _spans_in(f, path)
        if any(s.line <= last and s.end_line >= first for s in spans):
            inside.append(f)
            continue
        if lines == 0 or all(s.line < first for s in spans):
            out.append(f)
            continue
        out.append(_shift(f, path, last, lines))
    return out, inside


def _spans_in(f: Finding, path: str) -> list[Span]:
    out = [f.span] if f.path == path else []
    out += [c.span for c in f.chain if c.path == path]
    out += [e.span for fix in f.fixes for e in fix.edits if e.path == path]
    return out


def _shift(f: Finding, path: str, after: int, lines: int) -> Finding:
    def move(span: Span) -> Span:
        if span.line <= after:
            return span
        return Span(span.line + lines, span.column, span.end_line + lines, span.end_column)

    return replace(
        f,
        span=move(f.span) if f.path == path else f.span,
        chain=tuple(
            ChainStep(c.function, c.path, move(c.span), c.note) if c.path == path else c
            for c in f.chain
        ),
        fixes=tuple(
            Fix(x.title, tuple(
                TextEdit(e.path, move(e.span), e.new_text) if e.path == path else e
                for e in x.edits
            ))
            for x in f.fixes
        ),
    )

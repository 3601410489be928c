"""Diagnostics: analyse open C documents on open/change (debounced) and publish the findings.

One run = incremental reparse (documents.py) -> build_model(path, source, tree) ->
analyze_model(model, config, resolver) -> LSP Diagnostics, or, when the edit lies in a function
no rule can see, the last findings moved (incremental.py; the model is then built only when a
hover or CodeLens asks for it). The run happens on the event loop: with the tree reused it is a
few milliseconds, and it keeps the order of edits and results simple; a document of 1 MiB or
more is analysed in a worker process instead (offloop.py). The findings of the last run are
kept per document for code actions and hovers.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import OrderedDict

from lsprotocol import types
from pygls.uris import from_fs_path

from dpmlens.config.settings import Config
from dpmlens.core import limits
from dpmlens.core.budget import refusal
from dpmlens.core.durations import format_us
from dpmlens.core.findings import Finding, Severity, Span
from dpmlens.core.nesting import EditedNesting
from dpmlens.engine.incremental import IncrementalAnalyzer
from dpmlens.lsp.analysis import Analysis
from dpmlens.lsp.core import DpmlensServer, LanguageFeature
from dpmlens.lsp.documents import Document, byte_to_col, line_at, line_starts
from dpmlens.lsp.offloop import OffLoop, big_bytes
from dpmlens.lsp.project_config import ProjectConfigs
from dpmlens.lsp.rulebook import RuleBook
from dpmlens.lsp.settings import Settings
from dpmlens.lsp.trace_loader import Traces
from dpmlens.lsp.workspace_index import WorkspaceIndex
from dpmlens.model.types import FileModel

__all__ = ["Analysis", "Diagnostics", "analyze_document"]

_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
    Severity.HINT: types.DiagnosticSeverity.Hint,
}
_TAGS = {
    "deprecated": types.DiagnosticTag.Deprecated,
    "unnecessary": types.DiagnosticTag.Unnecessary,
}


def skip_reason(doc: Document, nesting: EditedNesting | None = None) -> str | None:
    """Why a document is not analyzed at all (limits.py), or None; `nesting`: the
    document's nesting check, carried over its edits."""
    return refusal(doc.source, nesting)


def too_large(doc: Document, config: Config) -> str | None:
    """Why a document is too large to analyse in the editor (over limits.EDITOR_SOURCE_BYTES
    and with PM code: the rules' prefilter matches it), or None."""
    limit = limits.EDITOR_SOURCE_BYTES
    if len(doc.source) <= limit.value:
        return None
    from dpmlens.engine.analyze import prefilter

    if not prefilter(config).matches(doc.source):
        return None  # nothing a rule could find: analysed as usual (quickly)
    size = f"{len(doc.source) / (1 << 20):.1f} MiB with PM code:"
    return f"not analysed in the editor: {limit.exceeded(size)}; `dpmlens check` analyses it"


def analyze_document(server: DpmlensServer, doc: Document) -> Analysis:
    """Model, then rules. A rule crash leaves the model (hover, CodeLens) usable. A document
    over a limit gets an empty model and no findings, and one log line saying why."""
    from dpmlens.model.build import build_model

    t0 = time.perf_counter()
    if (reason := skip_reason(doc, server.get_feature(Diagnostics).nesting(doc.uri))) is not None:
        if server.get_feature(Diagnostics).note_skip(doc.uri, reason):
            server.log("warning", f"dpmlens: not analyzed: {doc.path}: {reason}")
        return Analysis(doc.version, doc.source, _empty_model(doc), [], time.perf_counter() - t0)
    analyzer = server.get_feature(Diagnostics).analyzer(doc.uri)
    with server.guard("rules"):
        resolver = server.get_feature(WorkspaceIndex).resolver_for(doc.path)
        config = server.get_feature(ProjectConfigs).config_for(doc.path)
        # most edits are decided before the document is parsed again (incremental.py)
        result = analyzer.analyze_early(doc.path, doc.source, config, resolver, doc.stale())
        if result is None:
            result = analyzer.analyze(doc.path, doc.source, doc.ensure_tree(), config, resolver)
        seconds = time.perf_counter() - t0
        if result.model is None:  # reused: the model is built from the tree when asked
            return Analysis(doc.version, doc.source, None, result.findings, seconds,
                            (doc.path, doc.tree_later()), result.how)
        return Analysis(doc.version, doc.source, result.model, result.findings, seconds,
                        how=result.how)
    # a rule crashed (logged by the guard): the model still serves hover and CodeLens
    analyzer.forget()
    model = build_model(doc.path, doc.source, tree=doc.ensure_tree())
    return Analysis(doc.version, doc.source, model, [], time.perf_counter() - t0)


def _empty_model(doc: Document) -> FileModel:
    return FileModel(path=doc.path, source=doc.source, functions={}, calls=[], pm_tables={},
                     drivers=[], defines={})


_INDEXED = "computed by the workspace index"  # (Analysis.how of a didOpen it answered)
_KEPT = "kept by the workspace index from an earlier run"  # (... from its findings store)

# the rules whose findings sit on a delay call: a loaded trace's measurement of that call is
# added to the message
_DELAY_RULES = frozenset({"delay-beyond-spec", "msleep-under-20ms", "busy-wait-in-pm-callback"})


class Diagnostics(LanguageFeature):
    name = "diagnostics"

    def __init__(self, server: DpmlensServer) -> None:
        super().__init__(server)
        # the latest analysis per open document (shared: the index and the trace mapping
        # read the models)
        self.results: dict[str, Analysis] = server.documents.analyses
        self._pending: dict[str, asyncio.TimerHandle | asyncio.Handle] = {}
        self.runs = 0
        self._skips: dict[str, str] = {}  # uri -> the reason last logged
        self.unsaved: set[str] = set()  # documents edited since they were opened or saved
        self._analyzers: dict[str, IncrementalAnalyzer] = {}
        self._nesting: dict[str, EditedNesting] = {}
        self.offloop = OffLoop()  # big documents are analysed in a worker process

    def nesting(self, uri: str) -> EditedNesting:
        """The document's nesting check (carried over its edits)."""
        hit = self._nesting.get(uri)
        if hit is None:
            hit = self._nesting[uri] = EditedNesting()
        return hit

    def analyzer(self, uri: str) -> IncrementalAnalyzer:
        """The document's incremental analysis (what its last full analysis read)."""
        hit = self._analyzers.get(uri)
        if hit is None:
            hit = self._analyzers[uri] = IncrementalAnalyzer()
        return hit

    # -- lifecycle -------------------------------------------------------------------------

    def initialize(self) -> None:
        warm_up(self.server)

    def document_opened(self, doc: Document) -> None:
        self.unsaved.discard(doc.uri)
        if self.server.settings.enable and self._from_index(doc):
            # the model and the state the next edits need: the end of the directory's index
            # job runs the analysis anyway (index_updated), else it runs next
            index = self.server.get_feature(WorkspaceIndex)
            if not index.directory_pending(os.path.dirname(doc.path)):
                self.schedule(doc, 0)
            return
        self.schedule(doc, 0)

    def _from_index(self, doc: Document) -> bool:
        """Publish the findings the workspace index computed for this very text, when they
        still hold (index_findings.py): a didOpen that needs no parse. False: not done."""
        t0 = time.perf_counter()
        server = self.server
        index = server.get_feature(WorkspaceIndex)
        pre = index.precomputed(doc.path)
        if pre is None or len(doc.source) >= min(big_bytes(), limits.EDITOR_SOURCE_BYTES.value):
            return False
        if server.get_feature(Traces).state.result is not None:
            return False  # (delay findings quote the traces' measurements: needs the model)
        directory = os.path.dirname(doc.path)
        for other in server.documents.docs.values():  # (the resolver reads open documents)
            if other.uri in self.unsaved and os.path.dirname(other.path) == directory:
                return False
        config = server.get_feature(ProjectConfigs).config_for(doc.path)
        if not pre.holds(doc.path, doc.source, config) or skip_reason(
                doc, self.nesting(doc.uri)) is not None:
            return False
        index.want_directory(directory)  # (its hook runs after this one: see server.py)
        findings = list(pre.findings)
        res = Analysis(doc.version, doc.source, None, findings, time.perf_counter() - t0,
                       (doc.path, doc.tree_later()), _KEPT if pre.earlier else _INDEXED)
        self.results[doc.uri] = res
        self.runs += 1
        server.log("debug", analysed_message(doc.path, doc.version, len(findings), res.seconds,
                                             res.how))
        self.publish(doc.uri, doc.version, self.to_lsp(doc, findings))
        server.features.document_analysed(doc, res)
        return True

    def document_changed(self, doc: Document) -> None:
        self.unsaved.add(doc.uri)
        if self.server.settings.run != "onSave":  # onSave: the last analysis stands till saved
            self.schedule(doc, self.server.settings.debounce_ms)

    def document_saved(self, doc: Document) -> None:
        self.unsaved.discard(doc.uri)
        if self.server.settings.run == "onSave":
            self.schedule(doc, 0)

    def document_closed(self, doc: Document) -> None:
        self.unsaved.discard(doc.uri)
        self.clear(doc)

    def settings_changed(self, old: Settings, new: Settings) -> None:
        self.rerun_all()

    def traces_loaded(self) -> None:
        self.rerun_all()  # delay findings quote measurements

    def index_updated(self, directory: str | None) -> None:
        self.rerun_all()

    def shutdown(self) -> None:
        self.offloop.close()  # the worker of big documents, if one was started

    def rerun_all(self) -> None:
        # onSave: an edited, unsaved document keeps its last analysis here too (a settings
        # change or the workspace index must not analyze text the user has not saved)
        on_save = self.server.settings.run == "onSave"
        for analyzer in self._analyzers.values():  # what the last analyses read may be stale
            analyzer.forget()
        for doc in list(self.server.documents.docs.values()):
            if not (on_save and doc.uri in self.unsaved):
                self.schedule(doc, 0)

    # -- running ---------------------------------------------------------------------------

    def note_skip(self, uri: str, reason: str) -> bool:
        """True the first time this document is skipped for this reason (log it once)."""
        if self._skips.get(uri) == reason:
            return False
        self._skips[uri] = reason
        return True

    def schedule(self, doc: Document, delay_ms: int) -> None:
        loop = asyncio.get_running_loop()
        old = self._pending.pop(doc.uri, None)
        if old is not None:
            if delay_ms == 0:  # already queued to run right away: it will see this edit too
                self._pending[doc.uri] = old
                return
            old.cancel()
        if delay_ms == 0:
            self._pending[doc.uri] = loop.call_soon(self._run, doc.uri)
        else:
            self._pending[doc.uri] = loop.call_later(delay_ms / 1000, self._run, doc.uri)

    def _run(self, uri: str) -> None:
        self._pending.pop(uri, None)
        doc = self.server.documents.get(uri)
        if doc is not None:
            with self.server.guard("diagnostics"):
                self.run_now(doc)

    def current(self, doc: Document) -> Analysis | None:
        """The analysis of the document as it is now (runs it if edits are pending)."""
        res = self.results.get(doc.uri)
        if res is not None and res.source is doc.source:
            return res
        if not self.server.settings.enable:
            return None
        return self.run_now(doc)

    def run_now(self, doc: Document) -> Analysis | None:
        server = self.server
        pending = self._pending.pop(doc.uri, None)  # a hover/code action got here first
        if pending is not None:
            pending.cancel()
        if not server.settings.enable:
            self.publish(doc.uri, doc.version, [])
            return None
        if len(doc.source) > limits.EDITOR_SOURCE_BYTES.value and skip_reason(doc) is None:
            config = server.get_feature(ProjectConfigs).config_for(doc.path)
            if (reason := too_large(doc, config)) is not None:
                return self._too_large(doc, reason)
        if len(doc.source) >= big_bytes() and skip_reason(doc) is None:
            self._elsewhere(doc)  # the loop must not wait seconds for it: no result yet
            return None
        res = analyze_document(server, doc)
        self.results[doc.uri] = res
        self.runs += 1
        server.log("debug", analysed_message(doc.path, doc.version, len(res.findings),
                                             res.seconds, res.how))
        self.publish(doc.uri, doc.version, self.to_lsp(doc, res.findings))
        server.features.document_analysed(doc, res)
        return res

    def _too_large(self, doc: Document, reason: str) -> Analysis:
        """One Information diagnostic on the first line says why there are no findings."""
        if self.note_skip(doc.uri, reason):
            self.server.log("warning", f"dpmlens: {doc.path}: {reason}")
        res = Analysis(doc.version, doc.source, _empty_model(doc), [], 0.0, how="too large")
        self.results[doc.uri] = res
        self.runs += 1
        at = types.Range(start=types.Position(line=0, character=0),
                         end=types.Position(line=0, character=0))
        note = types.Diagnostic(range=at, message=f"dpmlens: {reason}", source="dpmlens",
                                severity=types.DiagnosticSeverity.Information)
        self.publish(doc.uri, doc.version, [note])
        self.server.features.document_analysed(doc, res)
        return res

    def _elsewhere(self, doc: Document) -> None:
        """Analyse a big document in the worker process; publish when it comes back, unless
        the text changed meanwhile (the newer text is queued by its own change event)."""
        server = self.server
        uri, path = doc.uri, doc.path
        if self.offloop.pending(uri) is doc.source:
            return  # this very text is already on its way

        def done(source: bytes, findings: list[Finding] | None, failed: str | None) -> None:
            current = server.documents.get(uri)
            if current is None or current.source is not source:
                return  # closed or superseded
            with server.guard("diagnostics (worker)"):
                if failed is not None:
                    if self.note_skip(uri, failed):
                        server.log("warning", f"dpmlens: not analyzed: {path}: {failed}")
                    findings = []
                res = Analysis(current.version, source, _empty_model(current), findings or [],
                               0.0)
                self.results[uri] = res
                self.runs += 1
                self.publish(uri, current.version, self.to_lsp(current, res.findings))
                server.features.document_analysed(current, res)

        config = server.get_feature(ProjectConfigs).config_for(path)
        self.offloop.submit(uri, path, doc.source, config, done)

    def publish(self, uri: str, version: int | None, diags: list[types.Diagnostic]) -> None:
        self.server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diags, version=version)
        )

    def clear(self, doc: Document) -> None:
        handle = self._pending.pop(doc.uri, None)
        if handle is not None:
            handle.cancel()
        self.results.pop(doc.uri, None)
        self._skips.pop(doc.uri, None)
        self._analyzers.pop(doc.uri, None)
        self._nesting.pop(doc.uri, None)
        self.publish(doc.uri, None, [])

    # -- conversion ------------------------------------------------------------------------

    def measured(self, doc: Document) -> dict[int, str]:
        """line -> what the loaded traces measured at the delay call there (delay_lens.py),
        for the delay rules' diagnostics: "measured 8 × 55.00 ms per resume · ..."."""
        traces = self.server.get_feature(Traces).state
        res = self.results.get(doc.uri)
        if res is None or traces.result is None:
            return {}
        if not traces.result.parsed.delay_sites:
            return {}
        return {lens.line: lens.measured for lens in traces.delay_lenses(doc, res.model)}

    def to_lsp(self, doc: Document, findings: list[Finding]) -> list[types.Diagnostic]:
        enc = self.server.encoding
        rules = self.server.get_feature(RuleBook).by_id()
        measured = self.measured(doc) if any(f.rule in _DELAY_RULES for f in findings) else {}
        out = []
        for f in findings:
            rule = rules.get(f.rule)
            url = rule.url if rule is not None else None
            span = anchor_span(f, doc.path)
            if span is None:
                continue
            message = f.message
            cost = measured.get(f.span.line) if f.rule in _DELAY_RULES else None
            if cost and f.path == doc.path:
                message += f" (traces: {cost})"
            out.append(
                types.Diagnostic(
                    range=doc.span_to_range(span, enc),
                    message=message,
                    severity=_SEVERITY.get(f.severity, types.DiagnosticSeverity.Warning),
                    code=f.rule,
                    code_description=types.CodeDescription(href=url) if url else None,
                    source="dpmlens",
                    related_information=[
                        types.DiagnosticRelatedInformation(
                            location=types.Location(
                                uri=self.uri_for(step.path, doc),
                                range=self.range_in(step.path, step.span, doc, enc),
                            ),
                            message=step.note or step.function,
                        )
                        for step in f.chain
                    ]
                    or None,
                    tags=[_TAGS[t] for t in f.tags if t in _TAGS] or None,
                )
            )
        return out

    def uri_for(self, path: str, doc: Document) -> str:
        if path == doc.path:
            return doc.uri
        other = self.server.documents.by_path(path)
        return other.uri if other is not None else (from_fs_path(path) or path)

    def range_in(self, path: str, span: Span, doc: Document, enc: str) -> types.Range:
        """Span (1-based byte columns) -> LSP Range, using the text of whichever file it is in."""
        if path == doc.path:
            return doc.span_to_range(span, enc)
        other = self.server.documents.by_path(path)
        if other is not None:
            return other.span_to_range(span, enc)
        lines = _disk_lines(self.server, path, span.line, span.end_line)
        return types.Range(
            start=types.Position(
                line=span.line - 1,
                character=byte_to_col(lines.get(span.line, b""), span.column - 1, enc),
            ),
            end=types.Position(
                line=span.end_line - 1,
                character=byte_to_col(lines.get(span.end_line, b""), span.end_column - 1, enc),
            ),
        )


def anchor_span(f: Finding, path: str) -> Span | None:
    """Where a finding shows in the document `path`.

    A finding reached through a helper in another file is located at the offending call over
    there; in this document it belongs on the last hop that is here (the call into the
    helper). The full chain stays in relatedInformation.
    """
    if f.path == path:
        return f.span
    here = [step for step in f.chain if step.path == path]
    return here[-1].span if here else None


def _disk_lines(server: DpmlensServer, path: str, *wanted: int) -> dict[int, bytes]:
    """A few 1-based lines of a file that is not open (for column conversion only)."""
    source = server.get_feature(WorkspaceIndex).source_of(path)
    if source is None:
        return {}
    starts = _line_starts(path, source)
    return {n: line_at(source, starts, n - 1) for n in wanted if 0 < n <= len(starts)}


_STARTS: OrderedDict[str, tuple[bytes, list[int]]] = OrderedDict()


def _line_starts(path: str, source: bytes) -> list[int]:
    """Where each line of another file starts: the chains of every edit's findings point
    into the same few helper files (splitting one per span cost a millisecond an edit)."""
    hit = _STARTS.get(path)
    if hit is None or (hit[0] is not source and hit[0] != source):  # (read again: equal)
        hit = _STARTS[path] = (source, line_starts(source))
        while len(_STARTS) > 16:
            _STARTS.popitem(last=False)
    _STARTS.move_to_end(path)
    return hit[1]


# What the rules make once per process on first use, made here: a delay with a comment in a
# callback (the spec keywords' regexes, ~35 ms), a probe that sets up what its remove undoes
# (the search anchors of the balance rules' set-up calls, ~45 ms): else the first document
# opened pays them (issue 29: a cold didOpen of hub.c)
_WARM_UP = b"""
static int w_suspend(struct device *dev) { msleep(1); return pm_runtime_get_sync(dev); }
static int w_resume(struct device *dev)
{
	/* wait */
	msleep(20);
	return 0;
}
static SIMPLE_DEV_PM_OPS(w_pm, w_suspend, w_resume);
static int w_probe(struct platform_device *pdev)
{
	pm_runtime_enable(&pdev->dev);
	device_init_wakeup(&pdev->dev, true);
	return 0;
}
static void w_remove(struct platform_device *pdev)
{
	pm_runtime_disable(&pdev->dev);
}
static struct platform_driver w_driver = {
	.probe = w_probe,
	.remove_new = w_remove,
	.driver = { .name = "w", .pm = &w_pm },
};
module_platform_driver(w_driver);
"""


def warm_up(server: DpmlensServer) -> None:
    """Import the engine, load the rules and compile their queries before the first document
    arrives (the client is waiting for `initialize` anyway), so didOpen pays only for parsing."""
    from dpmlens.engine.analyze import analyze_model
    from dpmlens.model.build import build_model

    server.get_feature(RuleBook).by_id()
    analyze_model(build_model("warm-up.c", _WARM_UP), server.settings.to_config())
    warm_protocol(server)


def warm_protocol(server: DpmlensServer) -> None:
    """Have cattrs generate its converters for the document notifications and for a
    diagnostic now: made on first use, they cost the first didOpen's publish and the first
    edit ~10 ms."""
    uri, at = "file:///warm-up.c", types.Position(line=0, character=0)
    for method, params in (
        (types.TEXT_DOCUMENT_DID_OPEN, {"textDocument": {
            "uri": uri, "languageId": "c", "version": 1, "text": ""}}),
        (types.TEXT_DOCUMENT_DID_CHANGE, {"textDocument": {"uri": uri, "version": 2},
            "contentChanges": [{"range": {"start": {"line": 0, "character": 0},
                                          "end": {"line": 0, "character": 0}}, "text": ""}]}),
    ):  # fmt: skip
        server.protocol.structure_message({"jsonrpc": "2.0", "method": method, "params": params})
    where = types.Range(start=at, end=at)
    diag = types.Diagnostic(
        range=where, message="", severity=types.DiagnosticSeverity.Warning, code="warm-up",
        code_description=types.CodeDescription(href="https://example.invalid"), source="dpmlens",
        related_information=[types.DiagnosticRelatedInformation(
            location=types.Location(uri=uri, range=where), message="")],
        tags=[types.DiagnosticTag.Unnecessary],
    )  # fmt: skip
    server.protocol._converter.unstructure(types.PublishDiagnosticsNotification(
        params=types.PublishDiagnosticsParams(uri=uri, diagnostics=[diag], version=1)))


def analysed_message(
    path: str, version: int | None, findings: int, seconds: float, how: str = ""
) -> str:
    """The debug log line of one analysis; `how`: reused, judged again, or why in full."""
    took = format_us(seconds * 1e6)
    return f"analysed {path} v{version}: {findings} findings in {took}" + (
        f" ({how})" if how else ""
    )

"""Quick fixes: each `Fix` a rule attached to a Finding becomes a `quickfix` code action.

Actions are keyed by the diagnostic code (rule id) and range, as the client sends them back in
`context.diagnostics`; a client that sends none gets the fixes of findings under the cursor.
"""

from __future__ import annotations

from lsprotocol import types

from dpmlens.core.findings import Finding
from dpmlens.lsp.core import DpmlensServer, LanguageFeature
from dpmlens.lsp.diagnostics import Diagnostics, anchor_span
from dpmlens.lsp.documents import Document


def _overlaps(a: types.Range, b: types.Range) -> bool:
    def key(p: types.Position) -> tuple[int, int]:
        return p.line, p.character

    return key(a.start) <= key(b.end) and key(b.start) <= key(a.end)


def actions_for(
    server: DpmlensServer, doc: Document, params: types.CodeActionParams
) -> list[types.CodeAction]:
    only = params.context.only
    if only and not any(k.startswith(types.CodeActionKind.QuickFix) for k in only):
        return []
    diagnostics = server.get_feature(Diagnostics)
    res = diagnostics.current(doc)
    if res is None:
        return []
    enc = server.encoding
    wanted = [d for d in params.context.diagnostics if d.source == "dpmlens"]
    out: list[types.CodeAction] = []
    for f in res.findings:
        if not f.fixes:
            continue
        # Where the diagnostic was shown in this document (a finding reached through a
        # helper in another file sits on the call into that helper), so ranges match.
        span = anchor_span(f, doc.path)
        if span is None:
            continue
        frange = doc.span_to_range(span, enc)
        matching = [d for d in wanted if d.code == f.rule and d.range == frange]
        if wanted and not matching:
            continue
        if not wanted and not _overlaps(frange, params.range):
            continue
        out.extend(_actions(diagnostics, doc, f, matching, enc))
    return out


def _actions(
    diagnostics: Diagnostics, doc: Document, f: Finding, diags: list[types.Diagnostic], enc: str
) -> list[types.CodeAction]:
    out = []
    for i, fix in enumerate(f.fixes):
        changes: dict[str, list[types.TextEdit]] = {}
        for e in fix.edits:
            uri = diagnostics.uri_for(e.path, doc)
            rng = diagnostics.range_in(e.path, e.span, doc, enc)
            changes.setdefault(uri, []).append(
                types.TextEdit(range=rng, new_text=e.new_text)
            )
        out.append(
            types.CodeAction(
                title=fix.title,
                kind=types.CodeActionKind.QuickFix,
                diagnostics=diags or None,
                is_preferred=i == 0,
                edit=types.WorkspaceEdit(changes=changes),
            )
        )
    return out


class CodeActions(LanguageFeature):
    name = "code actions"

    def __init__(self, server: DpmlensServer) -> None:
        super().__init__(server)
        server.handle(
            types.TEXT_DOCUMENT_CODE_ACTION, self.code_action,
            types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]),
        )

    def code_action(self, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        doc = self.server.documents.get(params.text_document.uri)
        if doc is None:
            return None
        with self.server.guard("code actions"):
            return actions_for(self.server, doc, params)
        return None

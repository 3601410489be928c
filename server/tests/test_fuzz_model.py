"""Fuzz: the C model and the rules on mutated real drivers and fixtures (issue 11).

Invariants: no exception; every finding (and each step of its chain) lies inside the file;
the findings for a text are the same whatever edits (incremental reparses) led to it.
"""

from __future__ import annotations

from pathlib import Path

from fuzz_support import c_corpus, mutated, record
from hypothesis import given
from hypothesis import strategies as st
from lsprotocol import types

from dpmlens.config.settings import Config
from dpmlens.core.findings import Finding
from dpmlens.core.nesting import too_deep
from dpmlens.engine.analyze import analyze_model
from dpmlens.lsp.documents import UTF8, Document
from dpmlens.model.build import build_model

CORPUS = c_corpus()
SOURCES = {p: p.read_bytes() for p in CORPUS}
CONFIG = Config()
SNIPPETS = ["{", "}", "(", ")", ";", "\n", "msleep(10);", "static ", "pm_runtime_get_sync(dev);",
            "enable_irq_wake(irq);", "/*", "*/", "#ifdef CONFIG_PM\n", "#endif\n", "\"", "x",
            ".suspend = foo_suspend,", "SIMPLE_DEV_PM_OPS(p, a, b);", "return 0;", "\t"]


def findings_of(path: str, source: bytes, tree: object = None) -> list[Finding]:
    if too_deep(source):  # the analysis budget: check and the server skip such files
        return []
    return analyze_model(build_model(path, source, tree=tree), CONFIG)


def assert_inside(path: str, source: bytes, findings: list[Finding]) -> None:
    lines = source.split(b"\n")
    for f in findings:
        spans = [f.span] if f.path == path else []
        spans += [s.span for s in f.chain if s.path == path]
        for sp in spans:
            assert 1 <= sp.line <= sp.end_line <= len(lines), (f, len(lines))
            assert 1 <= sp.column <= len(lines[sp.line - 1]) + 1, f
            assert 1 <= sp.end_column <= len(lines[sp.end_line - 1]) + 1, f
            assert sp.line < sp.end_line or sp.column <= sp.end_column, f


def check_source(path: Path, source: bytes) -> None:
    try:
        assert_inside(str(path), source, findings_of(str(path), source))
    except BaseException:
        record("c", source, path.suffix)
        raise


@given(st.sampled_from(CORPUS).flatmap(
    lambda p: st.tuples(st.just(p), mutated(SOURCES[p]))))
def test_mutated_drivers(case: tuple[Path, bytes]) -> None:
    check_source(*case)


def _point(text: bytes, offset: int) -> types.Position:
    line = text.count(b"\n", 0, offset)
    return types.Position(line=line, character=offset - (text.rfind(b"\n", 0, offset) + 1))


@given(st.data())
def test_edit_history_does_not_matter(data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(CORPUS))
    text = SOURCES[path]
    doc = Document(uri=path.as_uri(), path=str(path), version=1, source=text)
    doc.ensure_tree()
    for version in range(2, 2 + data.draw(st.integers(1, 8))):
        start = data.draw(st.integers(0, len(text)))
        end = data.draw(st.integers(start, min(len(text), start + 300)))
        new = data.draw(st.sampled_from(SNIPPETS) | st.text(
            st.characters(min_codepoint=9, max_codepoint=126), max_size=12))
        doc.apply_change(types.TextDocumentContentChangePartial(
            range=types.Range(start=_point(text, start), end=_point(text, end)), text=new), UTF8)
        doc.version = version
        text = text[:start] + new.encode() + text[end:]
        if data.draw(st.booleans()):
            doc.ensure_tree()  # a reparse between edits, as a hover would cause
    assert doc.source == text
    try:
        incremental = findings_of(str(path), text, doc.ensure_tree())
        assert incremental == findings_of(str(path), text)
    except BaseException:
        record("c-edits", text, path.suffix)
        raise

"""Incremental reparsing gives the tree (and so the findings) of a fresh parse of the same text,
also where the edit leaves broken code (found by test_fuzz_model, issue 11)."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types

from dpmlens.config.settings import Config
from dpmlens.engine.analyze import analyze_model
from dpmlens.lsp.documents import UTF8, Document
from dpmlens.model.build import build_model
from dpmlens.syntax.parser import parse

FIXTURE = Path(__file__).resolve().parents[2] / "test-fixtures" / "rules" / \
    "deprecated-pm-ops-macro-ifdef.c"


def _pos(text: bytes, offset: int) -> types.Position:
    return types.Position(line=text.count(b"\n", 0, offset),
                          character=offset - (text.rfind(b"\n", 0, offset) + 1))


def _edit(doc: Document, text: bytes, start: int, end: int, new: str) -> bytes:
    doc.apply_change(types.TextDocumentContentChangePartial(
        range=types.Range(start=_pos(text, start), end=_pos(text, end)), text=new), UTF8)
    return text[:start] + new.encode() + text[end:]


def test_broken_edit_parses_as_a_fresh_parse() -> None:
    src = FIXTURE.read_bytes()
    doc = Document(uri=FIXTURE.as_uri(), path=str(FIXTURE), version=1, source=src)
    doc.ensure_tree()
    # "static int foo_runtime_resume(struct device *dev)" -> "...(struct{": the edit the
    # fuzz suite found, in the first function under #ifdef CONFIG_PM.
    start = src.index(b" device *dev)\n{\n\treturn", 250)
    old = src[start:start + 13]
    text = _edit(doc, src, start, start + 13, "{")
    tree = doc.ensure_tree()
    assert str(tree.root_node) == str(parse(text).root_node)
    config = Config()
    assert analyze_model(build_model(str(FIXTURE), text, tree=tree), config) == \
        analyze_model(build_model(str(FIXTURE), text), config)
    # Fixing it again: correct code, incremental as before, still the fresh tree.
    text = _edit(doc, text, start, start + 1, old.decode())
    assert text == src
    assert str(doc.ensure_tree().root_node) == str(parse(src).root_node)

"""The language server's pure parts: settings parsing and document sync (real tree-sitter)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from kernel_trees import K612
from lsprotocol import types

from dpmlens.core.findings import Severity
from dpmlens.lsp.documents import Document, byte_to_col, col_to_byte, line_starts
from dpmlens.lsp.settings import parse_settings
from dpmlens.syntax.parser import parse

FIXTURE = Path(__file__).resolve().parents[2] / "test-fixtures" / "lsp" / "ws" / "foo_core.c"
HUB = K612 / "drivers/usb/core/hub.c"


def test_settings_full_object():
    s = parse_settings({
        "enable": True,
        "rules": {"wake-setup-in-noirq": {"enabled": True, "severity": "error"},
                  "msleep-under-20ms": "off", "busy-wait-in-pm-callback": False},
        "helperDepth": 5, "debounceMs": 0, "traceGlobs": ["**/*.txt"],
        "pathMappings": [{"from": "/build/linux", "to": "${workspaceFolder}/src"}],
        "logLevel": "debug",
    }, workspace_folder="/home/me/linux")
    assert s.problems == []
    cfg = s.to_config()
    assert cfg.helper_depth == 5
    assert cfg.severity_for("wake-setup-in-noirq", Severity.WARNING) == Severity.ERROR
    assert not cfg.is_enabled("msleep-under-20ms")
    assert not cfg.is_enabled("busy-wait-in-pm-callback")
    assert cfg.is_enabled("delay-beyond-spec")
    assert s.debounce_ms == 0 and s.trace_globs == ("**/*.txt",) and s.log_level == "debug"
    assert s.map_path("/build/linux/drivers/usb/core/hub.c") == \
        "/home/me/linux/src/drivers/usb/core/hub.c"
    assert s.map_path("/build/linux2/x.c") == "/build/linux2/x.c"  # prefix, not substring


def test_settings_nested_and_bad_values():
    s = parse_settings({"dpmlens": {"debounceMs": "soon", "helperDepth": -1,
                                    "rules": {"x": {"severity": "loud"}},
                                    "pathMappings": [{"from": 1}]}})
    assert s.debounce_ms == 150 and s.helper_depth == 3  # defaults kept
    assert len(s.problems) == 4
    assert all(p.startswith("settings: ") for p in s.problems)
    assert any("debounceMs" in p for p in s.problems)
    assert parse_settings(None).problems == []
    assert parse_settings([1, 2]).problems == ["settings: expected an object, got list"]


def test_utf16_columns():
    line = "a😀b é".encode()
    assert col_to_byte(line, 1, "utf-16") == 1
    assert col_to_byte(line, 3, "utf-16") == 5  # the emoji is 2 UTF-16 units, 4 bytes
    assert col_to_byte(line, 4, "utf-16") == 6
    assert col_to_byte(line, 99, "utf-16") == len(line)
    assert byte_to_col(line, 5, "utf-16") == 3
    assert byte_to_col(line, 5, "utf-32") == 2
    assert byte_to_col(line, 5, "utf-8") == 5


def _edit(doc: Document, line: int, col: int, end_line: int, end_col: int, text: str) -> None:
    doc.apply_change(types.TextDocumentContentChangePartial(
        range=types.Range(start=types.Position(line=line, character=col),
                          end=types.Position(line=end_line, character=end_col)),
        text=text), "utf-16")


def _check_against_full_parse(doc: Document) -> None:
    assert doc.starts == line_starts(doc.source)
    tree = doc.ensure_tree()
    assert str(tree.root_node) == str(parse(doc.source).root_node)


@pytest.mark.parametrize("path", [FIXTURE, HUB], ids=["fixture", "hub.c"])
def test_incremental_reparse_matches_full_parse(path: Path):
    if not path.exists():
        pytest.skip(f"{path} not present (kernel tree not extracted)")
    src = path.read_bytes()
    doc = Document(uri=path.as_uri(), path=str(path), version=1, source=src)
    doc.ensure_tree()
    lines = src.decode().split("\n")
    rng = random.Random(4)
    # Edits that keep the C well formed: comments, whitespace, new statements and lines.
    for _ in range(40):
        n = rng.randrange(len(doc.starts) - 1)
        kind = rng.randrange(4)
        if kind == 0:
            _edit(doc, n, 0, n, 0, "/* x */")
        elif kind == 1:
            _edit(doc, n, 0, n, 0, "\n")
        elif kind == 2:
            _edit(doc, n, 0, n, 0, "// a comment\n// two lines\n")
        else:
            _edit(doc, n, 0, n + 1, 0, "")  # delete a whole line ...
            _edit(doc, n, 0, n, 0, lines[0] + "\n")  # ... and insert another one
        if rng.random() < 0.3:  # sometimes several edits before one reparse
            _check_against_full_parse(doc)
    _check_against_full_parse(doc)


def test_whole_text_change_and_clamping():
    doc = Document(uri="file:///x.c", path="/x.c", version=1, source=b"int a;\n")
    doc.ensure_tree()
    doc.apply_change(types.TextDocumentContentChangeWholeDocument(text="int b;\nint c;\n"),
                     "utf-16")
    _check_against_full_parse(doc)
    _edit(doc, 50, 3, 60, 0, "x")  # beyond the end: appended, not an exception
    assert doc.source == b"int b;\nint c;\nx"
    _check_against_full_parse(doc)


HELPERS = b"""
static void foo_wake(struct foo *f) { enable_irq_wake(f->irq); }
static void foo_prep(struct foo *f, int on) { if (on) foo_wake(f); }
static void foo_arm(struct foo *f) { foo_prep(f, 0); foo_wake(f); }
static int foo_suspend_noirq(struct device *dev)
{
	foo_prep(dev_get_drvdata(dev), 0);
	foo_arm(dev_get_drvdata(dev));
	return 0;
}
static int foo_resume_noirq(struct device *dev) { return 0; }
static DEFINE_NOIRQ_DEV_PM_OPS(foo_pm, foo_suspend_noirq, foo_resume_noirq);
"""


def test_hover_and_rules_show_the_same_chain() -> None:
    """One walker: the hover on a helper names the chain the finding reports (here not the
    first textual path, foo_prep(f, 0), whose `if (on)` rules the call out)."""
    from dpmlens.config.settings import Config
    from dpmlens.engine.analyze import analyze_model
    from dpmlens.lsp.hover import _callers
    from dpmlens.model.build import build_model

    model = build_model("drivers/misc/foo.c", HELPERS)
    (finding,) = [f for f in analyze_model(model, Config()) if f.rule == "wake-setup-in-noirq"]
    chain = [s.function for s in finding.chain[1:]]
    hover_chains = [names for _roles, names in _callers(model, "foo_wake", 3)]
    assert chain == ["foo_suspend_noirq", "foo_arm", "foo_wake"]
    assert hover_chains == [chain]

"""The language server reads the CLI's `.dpmlens.toml`; editor settings override it per key;
a broken file is one diagnostic on the file and a log line; `run: onSave` analyzes on save."""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsp_harness import codes, open_file, wait_diagnostics, wait_for
from lsprotocol import types
from pytest_lsp import LanguageClient

from dpmlens.config.settings import Config, RuleSetting
from dpmlens.core.findings import Severity
from dpmlens.lsp.project_config import merge
from dpmlens.lsp.settings import parse_settings


def _settings(client: LanguageClient, values: dict) -> None:
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"dpmlens": {"debounceMs": 0, **values}})
    )


async def test_toml_applies_and_editor_overrides_per_key(client: LanguageClient):
    ws: Path = client.ws  # type: ignore[attr-defined]
    (ws / ".dpmlens.toml").write_text(
        '[rules]\nmsleep-under-20ms = false\nwake-setup-in-noirq = "error"\n'
    )
    uri = open_file(client, ws / "foo_core.c")
    diags = await wait_diagnostics(client, uri, lambda d: "wake-setup-in-noirq" in codes(d))
    assert "msleep-under-20ms" not in codes(diags)  # the file turned it off, as in the CLI
    wake = next(d for d in diags if d.code == "wake-setup-in-noirq")
    assert wake.severity == types.DiagnosticSeverity.Error
    # The editor configures msleep-under-20ms: that rule follows the editor, the other rule
    # keeps the file's severity.
    _settings(client, {"rules": {"msleep-under-20ms": {"enabled": True}}})
    diags = await wait_diagnostics(client, uri, lambda d: "msleep-under-20ms" in codes(d))
    wake = next(d for d in diags if d.code == "wake-setup-in-noirq")
    assert wake.severity == types.DiagnosticSeverity.Error


async def test_broken_toml_is_one_diagnostic_and_a_log_line(client: LanguageClient):
    ws: Path = client.ws  # type: ignore[attr-defined]
    toml = ws / ".dpmlens.toml"
    toml.write_text("[rules]\nmsleep-under-20ms = false\nhelper_depth = = 3\n")
    uri = open_file(client, ws / "foo_core.c")
    # Analyzed with the editor's settings alone (msleep-under-20ms on) ...
    await wait_diagnostics(client, uri, lambda d: "msleep-under-20ms" in codes(d))
    # ... and the file says what is wrong, where.
    diags = await wait_diagnostics(client, toml.as_uri(), lambda d: len(d) == 1)
    assert diags[0].range.start.line == 2 and diags[0].code == "config"
    assert "invalid TOML" in diags[0].message
    errors = [m.message for m in client.log_messages if m.type == types.MessageType.Error]
    assert len([m for m in errors if ".dpmlens.toml:3" in m]) == 1
    # Fixed: the diagnostic goes, the file applies.
    toml.write_text("[rules]\nmsleep-under-20ms = false\n")
    _settings(client, {})  # any trigger re-analyzes; the file is read again (mtime changed)
    await wait_diagnostics(client, toml.as_uri(), lambda d: d == [])
    await wait_diagnostics(client, uri, lambda d: "msleep-under-20ms" not in codes(d))


async def test_run_on_save(client: LanguageClient):
    ws: Path = client.ws  # type: ignore[attr-defined]
    path = ws / "foo_core.c"
    _settings(client, {"run": "onSave"})
    uri = open_file(client, path)  # opening analyzes in either mode
    await wait_diagnostics(client, uri, lambda d: "msleep-under-20ms" in codes(d))
    # The workspace index re-analyzes open documents once it is built; let that pass first.
    await wait_for(lambda: any("indexed" in m.message for m in client.log_messages))
    await asyncio.sleep(0.3)
    text = path.read_text().replace("msleep(5);", "udelay(5);")
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
    ))  # fmt: skip
    await asyncio.sleep(0.5)
    assert "msleep-under-20ms" in codes(client.diagnostics[uri])  # not re-analyzed yet
    # nor when the settings change (which re-analyzes saved documents): still unsaved
    _settings(client, {"run": "onSave", "debounceMs": 0})
    await asyncio.sleep(0.5)
    assert "msleep-under-20ms" in codes(client.diagnostics[uri])
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    await wait_diagnostics(client, uri, lambda d: "msleep-under-20ms" not in codes(d))
    sync = client.server_caps.text_document_sync  # type: ignore[attr-defined]
    assert isinstance(sync, types.TextDocumentSyncOptions) and sync.save


def test_merge_rules_and_explicit_keys():
    rules = {"a": RuleSetting(enabled=False), "b": RuleSetting(severity=Severity.ERROR)}
    base = Config(rules=rules, helper_depth=5, spec_overrides={"TRSTRCY": 10.0})
    vscode = parse_settings({"rules": {"a": {"enabled": True}}, "helperDepth": 3,
                             "explicitKeys": ["rules"]})  # fmt: skip
    merged = merge(base, vscode)
    assert merged.rules["a"].enabled and merged.rules["b"].severity == Severity.ERROR
    assert merged.helper_depth == 5  # VS Code sent the default, the user did not set it
    assert merged.spec_overrides == {"TRSTRCY": 10.0}
    neovim = parse_settings({"helperDepth": 1})  # no explicitKeys: what is sent is set
    assert merge(base, neovim).helper_depth == 1 and not merge(base, neovim).rules["a"].enabled
    assert parse_settings({"run": "sometimes"}).problems == [
        "settings: run: expected one of onType, onSave, got 'sometimes'"]

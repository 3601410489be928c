"""End-to-end: the real `dpmlens serve` process over stdio, driven by pytest-lsp."""

from __future__ import annotations

import pytest
from lsp_harness import command, line_of, open_file, wait_for
from lsprotocol import types
from pytest_lsp import LanguageClient


async def test_hover_on_pm_member(client: LanguageClient):
    ws = client.ws  # type: ignore[attr-defined]
    path = ws / "foo_core.c"
    uri = open_file(client, path)
    line = line_of(path, ".suspend_noirq = foo_suspend_noirq")
    col = path.read_text().splitlines()[line].index("suspend_noirq")
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri),
                          position=types.Position(line=line, character=col + 2))
    )
    assert hover is not None
    assert "device IRQs suspended" in hover.contents.value
    assert "runtime PM disabled" in hover.contents.value


@pytest.mark.parametrize("needle,expect", [
    ("static int foo_suspend_noirq", "suspend_noirq"),
    ("SYSTEM_SLEEP_PM_OPS(foo_suspend", "fills these"),
    ("static void foo_hw_off", "`foo_suspend()` -> `foo_hw_off()`"),
    ("static const struct dev_pm_ops foo_pm_ops", "`suspend_noirq` -> `foo_suspend_noirq`"),
])
async def test_hover_callback_and_macro(client: LanguageClient, needle: str, expect: str):
    ws = client.ws  # type: ignore[attr-defined]
    path = ws / "foo_core.c"
    uri = open_file(client, path)
    line = line_of(path, needle)
    text = path.read_text().splitlines()[line]
    word = needle.split()[-1].split("(")[0]
    col = text.index(word)
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri),
                          position=types.Position(line=line, character=col + 1))
    )
    assert hover is not None, f"no hover on {word}"
    assert expect in hover.contents.value


async def test_no_codelens_without_traces(client: LanguageClient):
    ws = client.ws  # type: ignore[attr-defined]
    uri = open_file(client, ws / "foo_core.c")
    await wait_for(lambda: uri in client.diagnostics, what="first diagnostics")
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    assert not lenses


async def test_capabilities_and_commands(client: LanguageClient):
    caps: types.ServerCapabilities = client.server_caps  # type: ignore[attr-defined]
    assert caps.hover_provider
    assert caps.code_lens_provider is not None
    assert caps.code_action_provider
    sync = caps.text_document_sync
    assert sync.change == types.TextDocumentSyncKind.Incremental
    from dpmlens.lsp.commands import COMMANDS

    assert set(caps.execute_command_provider.commands) == set(COMMANDS)
    # The file watchers were registered dynamically (VS Code supports it).
    regs = client.registrations  # type: ignore[attr-defined]
    await wait_for(
        lambda: any(r.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES for r in regs),
        what="watched-files registration",
    )
    status = await command(client, "dpmlens.traceStatus")
    assert status["files"] == 0 and status["samples"] == 0


async def test_explain_rule_and_bad_arguments(client: LanguageClient):
    got = await command(client, "dpmlens.explainRule", "wake-setup-in-noirq")
    assert got["id"] == "wake-setup-in-noirq"
    assert got["kernel_type"] == "PM_WAKE_SETUP_IN_NOIRQ"
    assert got["title"] == "Wake-source setup in a noirq callback, after IRQs were suspended"
    assert got["url"].startswith("https://")
    assert "suspend_device_irqs()" in got["markdown"]
    with pytest.raises(Exception, match="unknown rule"):
        await command(client, "dpmlens.explainRule", "nope")
    with pytest.raises(Exception, match="paths"):
        await command(client, "dpmlens.loadTraces", {"x": 1})

"""Big documents are analysed in a worker process (lsp/offloop.py): the server keeps answering
while one runs, a newer text supersedes it, and a run over the budget is reported as skipped."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from lsp_harness import SERVER_CMD, codes, copy_workspace, initialize, open_file, wait_diagnostics
from lsprotocol import types
from pytest_lsp import LanguageClient, make_test_lsp_client

# foo_core.c, then enough unrelated functions to pass the threshold below
_FILLER = "".join(
    f"static int filler_{i}(int a)\n{{\n\treturn a + {i};\n}}\n\n" for i in range(6000)
)


async def _start(tmp_path: Path, **env: str) -> tuple[LanguageClient, Path]:
    client = make_test_lsp_client()
    await client.start_io(*SERVER_CMD, env={**os.environ, "DPMLENS_OFFLOOP_BYTES": "100000",
                                            **env})
    ws = copy_workspace(tmp_path)
    await initialize(client, ws)
    return client, ws


def _publishes(client: LanguageClient) -> list[tuple[str, int | None]]:
    seen: list[tuple[str, int | None]] = []
    features = client.protocol.fm.features
    original = features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

    def record(params: types.PublishDiagnosticsParams) -> None:
        seen.append((params.uri, params.version))
        original(params)

    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = record
    return seen


async def test_big_document_does_not_hold_up_the_others(tmp_path: Path) -> None:
    client, ws = await _start(tmp_path)
    try:
        small = ws / "foo_core.c"
        big = ws / "big.c"
        big.write_text(small.read_text() + _FILLER)
        assert big.stat().st_size > 100_000
        seen = _publishes(client)
        big_uri = open_file(client, big)
        t0 = time.perf_counter()
        small_uri = open_file(client, small)
        small_diags = await wait_diagnostics(client, small_uri, lambda d: bool(d))
        hover = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=small_uri),
            position=types.Position(line=0, character=0)))
        answered = time.perf_counter() - t0
        assert (big_uri, 1) not in seen, "the big document was analysed before the small one"
        _ = hover
        big_diags = await wait_diagnostics(client, big_uri, lambda d: bool(d), timeout=60)
        # the big document is foo_core.c plus functions no rule cares about: same findings
        assert codes(big_diags) == codes(small_diags)
        assert answered < 5, answered
        await client.shutdown_session()
    finally:
        await client.stop()


async def test_a_newer_text_supersedes_the_run(tmp_path: Path) -> None:
    client, ws = await _start(tmp_path)
    try:
        big = ws / "big.c"
        big.write_text((ws / "foo_core.c").read_text() + _FILLER)
        seen = _publishes(client)
        uri = open_file(client, big)
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(start=types.Position(line=0, character=0),
                                  end=types.Position(line=0, character=0)),
                text="\n")]))
        await wait_diagnostics(client, uri, lambda d: (uri, 2) in seen, timeout=60)
        await asyncio.sleep(0.5)
        assert [v for u, v in seen if u == uri] == [2]
        diags = client.diagnostics[uri]
        assert diags and min(d.range.start.line for d in diags) >= 1  # the new text's lines
        await client.shutdown_session()  # the worker is closed with the server
        errors = [m.message for m in client.log_messages if m.type == types.MessageType.Error]
        assert not errors, errors
    finally:
        await client.stop()


async def test_a_run_over_the_budget_is_skipped_and_said(tmp_path: Path) -> None:
    # spawning the worker alone takes longer than this budget
    client, ws = await _start(tmp_path, DPMLENS_FILE_TIMEOUT="0.05")
    try:
        big = ws / "big.c"
        big.write_text((ws / "foo_core.c").read_text() + _FILLER)
        uri = open_file(client, big)
        await wait_diagnostics(client, uri, lambda d: d == [], timeout=60)
        warnings = [m.message for m in client.log_messages
                    if "not analyzed" in m.message and "big.c" in m.message]
        assert warnings and "DPMLENS_FILE_TIMEOUT" in warnings[0], warnings
        # the server is still there and answers
        small_uri = open_file(client, ws / "foo_core.c")
        await wait_diagnostics(client, small_uri, lambda d: bool(d))
        await client.shutdown_session()
    finally:
        await client.stop()

"""issue 11 in the language server (real process over stdio): one bad trace does not spoil
`dpmlens.loadTraces` (class 5), special files never block it, and documents over a limit
(size, nesting) are skipped with one log line while the server keeps answering (classes 2, 3).
"""

from __future__ import annotations

import asyncio
import gzip
import os
from pathlib import Path

import pytest_lsp
from lsp_harness import (
    SERVER_CMD,
    codes,
    command,
    copy_workspace,
    initialize,
    open_file,
    wait_diagnostics,
    wait_for,
)
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

DEEP = ("static int foo_suspend(struct device *d)\n" + "{" * 50_000 + "msleep(5);"
        + "}" * 50_000 + "\nstatic SIMPLE_DEV_PM_OPS(p, foo_suspend, NULL);\n")


@pytest_lsp.fixture(config=ClientServerConfig(
    server_command=SERVER_CMD,
    server_env={**os.environ, "DPMLENS_MAX_SOURCE_BYTES": "200K"}))
async def client(lsp_client: LanguageClient, tmp_path):
    lsp_client.ws = copy_workspace(tmp_path)  # type: ignore[attr-defined]
    await initialize(lsp_client, lsp_client.ws)  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


async def test_load_traces_good_beside_bad(client: LanguageClient) -> None:
    ws: Path = client.ws  # type: ignore[attr-defined]
    good = ws / "traces" / "foo_ftrace.txt"
    corrupt = ws / "traces" / "cut_ftrace.txt.gz"
    corrupt.write_bytes(gzip.compress(good.read_bytes())[:-40])
    notgz = ws / "traces" / "notgz_ftrace.txt.gz"
    notgz.write_bytes(b"plain text")
    fifo = ws / "traces" / "pipe_ftrace.txt"
    os.mkfifo(fifo)
    zero = ws / "traces" / "zero.perfetto-trace"
    zero.symlink_to("/dev/zero")
    missing = ws / "traces" / "gone_ftrace.txt"
    paths = [str(p) for p in (good, corrupt, notgz, fifo, zero, missing)]
    status = await asyncio.wait_for(command(client, "dpmlens.loadTraces", {"paths": paths}), 20)
    assert status["samples"] >= 9  # foo_ftrace.txt (9) and what the cut copy still had
    errors = "\n".join(status["errors"])
    for bad, why in ((notgz, "named .gz but not gzip data"),
                     (corrupt, "compressed data is truncated"),
                     (fifo, "a FIFO, not a trace file; skipped"),
                     (zero, "a device, not a trace file; skipped"),
                     (missing, "no such file or directory")):
        assert f"{bad}: {why}" in errors, errors
    # Still serving, and the missing path is not kept for the next load.
    st = await command(client, "dpmlens.traceStatus")
    assert st["samples"] == status["samples"]


async def test_deep_nesting_is_skipped_and_the_server_answers(client: LanguageClient) -> None:
    ws: Path = client.ws  # type: ignore[attr-defined]
    deep = ws / "deep.c"
    deep.write_text(DEEP)
    uri = open_file(client, deep)
    await wait_diagnostics(client, uri, lambda d: d == [], what="deep.c: no findings", timeout=10)
    hover = await asyncio.wait_for(client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=0, character=12))), 5)
    assert hover is None
    await wait_for(lambda: any("too deeply nested to analyze" in m.message
                               for m in client.log_messages), what="skip logged")
    # The other documents are analyzed as before.
    core = ws / "foo_core.c"
    core_uri = open_file(client, core)
    await wait_diagnostics(client, core_uri, lambda d: "msleep-under-20ms" in codes(d))


async def test_document_over_the_size_limit(client: LanguageClient) -> None:
    ws: Path = client.ws  # type: ignore[attr-defined]
    core = ws / "foo_core.c"
    text = core.read_text() + "/*" + "x" * 300_000 + "*/\n"
    uri = open_file(client, core, text)
    await wait_diagnostics(client, uri, lambda d: d == [], what="big: no findings")
    await wait_for(lambda: [m for m in client.log_messages
                            if "over the 200 KiB limit for a C source file" in m.message
                            and "DPMLENS_MAX_SOURCE_BYTES" in m.message], what="logged")
    # Back under the limit: analyzed again.
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=core.read_text())]))
    await wait_diagnostics(client, uri, lambda d: "msleep-under-20ms" in codes(d))

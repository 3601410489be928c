"""Workspace index: $/progress, following helpers after files change on disk, TCP transport."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from pathlib import Path

from lsp_harness import codes, copy_workspace, line_of, open_file, wait_diagnostics
from lsprotocol import types
from pygls.lsp.client import LanguageClient as PlainClient
from pytest_lsp import LanguageClient


async def test_index_reports_progress(client: LanguageClient):
    async def ended() -> list:
        for reports in client.progress_reports.values():
            if reports and isinstance(reports[-1], types.WorkDoneProgressEnd):
                return reports
        return []

    for _ in range(200):
        reports = await ended()
        if reports:
            break
        await asyncio.sleep(0.05)
    assert reports, f"no finished $/progress: {client.progress_reports}"
    assert isinstance(reports[0], types.WorkDoneProgressBegin)
    assert "indexing" in reports[0].title
    # 4 C files, 2 of them with PM tables or drivers.
    assert "indexed 4 C files" in reports[-1].message
    assert "2 with PM tables or drivers" in reports[-1].message


async def test_new_helper_file_on_disk_is_followed(client: LanguageClient):
    ws: Path = client.ws  # type: ignore[attr-defined]
    path = ws / "foo_core.c"
    # Move the helper out of the directory: no wake finding.
    helper = (ws / "foo_wake.c").read_text()
    (ws / "foo_wake.c").unlink()
    uri = open_file(client, path)
    await wait_diagnostics(client, uri, lambda d: "msleep-under-20ms" in codes(d))
    await asyncio.sleep(0.5)  # the directory index has run by now
    assert "wake-setup-in-noirq" not in codes(list(client.diagnostics[uri]))
    # It comes back under another name; the client reports the new file.
    (ws / "foo_pm_helpers.c").write_text(helper)
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=(ws / "foo_pm_helpers.c").as_uri(),
                        type=types.FileChangeType.Created)]))
    diags = await wait_diagnostics(client, uri, lambda d: "wake-setup-in-noirq" in codes(d),
                                   what="finding through the new file")
    d = next(x for x in diags if x.code == "wake-setup-in-noirq")
    assert d.range.start.line == line_of(path, "foo_arm_wake(foo);")
    assert any(r.location.uri.endswith("foo_pm_helpers.c") for r in d.related_information)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_tcp_transport(tmp_path: Path):
    ws = copy_workspace(tmp_path)
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "dpmlens.lsp", "--tcp", f"127.0.0.1:{port}"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        client = PlainClient("tcp-test", "1")
        got: dict[str, list[types.Diagnostic]] = {}

        @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_diags(ls: PlainClient, params: types.PublishDiagnosticsParams) -> None:
            got[params.uri] = list(params.diagnostics)

        for _ in range(100):
            try:
                await client.start_tcp("127.0.0.1", port)
                break
            except OSError:
                await asyncio.sleep(0.1)
        await client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(), root_uri=ws.as_uri(),
            initialization_options={"debounceMs": 0, "traceGlobs": []}))
        client.initialized(types.InitializedParams())
        path = ws / "foo_core.c"
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=path.as_uri(), language_id="c",
                                                 version=1, text=path.read_text())))
        for _ in range(200):
            if "msleep-under-20ms" in codes(got.get(path.as_uri(), [])):
                break
            await asyncio.sleep(0.05)
        assert "msleep-under-20ms" in codes(got.get(path.as_uri(), []))
        await client.shutdown_async(None)
        client.exit(None)
        await client.stop()
    finally:
        proc.terminate()
        out = proc.communicate(timeout=30)[0]
    assert out == b"", "nothing may be written to stdout"

"""Traces in the editor: load a capture, CodeLens text, hover distribution, commands."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from kernel_trees import K612
from lsp_harness import command, line_of, open_file, wait_for
from lsprotocol import types
from pytest_lsp import LanguageClient


async def lenses(client: LanguageClient, uri: str) -> list[types.CodeLens]:
    got = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    return list(got or [])


async def test_load_trace_gives_codelens_and_hover(client: LanguageClient):
    ws: Path = client.ws  # type: ignore[attr-defined]
    path = ws / "foo_core.c"
    uri = open_file(client, path)
    await wait_for(lambda: uri in client.diagnostics, what="diagnostics")
    assert await lenses(client, uri) == []

    status = await command(client, "dpmlens.loadTraces",
                           {"paths": [str(ws / "traces" / "foo_ftrace.txt")]})
    assert status["files"] == 1
    assert status["samples"] == 9
    assert status["cycles"] == 3
    assert status["callbacks_mapped"] == 3
    assert status["callbacks_unmapped"] == 0
    assert status["errors"] == []
    await wait_for(lambda: client.lens_refreshes > 0,  # type: ignore[attr-defined]
                   what="workspace/codeLens/refresh")

    got = await lenses(client, uri)
    by_line: dict[int, list[str]] = {}
    for lens in got:
        by_line.setdefault(lens.range.start.line, []).append(lens.command.title)
    noirq = by_line[line_of(path, "static int foo_suspend_noirq(")]
    assert noirq == [
        "suspend_noirq · median 2.10 ms · p95 2.37 ms · max 2.40 ms · 3 cycles · foo-sensor.0"
    ]
    assert by_line[line_of(path, "static int foo_resume(")] == [
        "resume · median 3.00 ms · p95 3.09 ms · max 3.10 ms · 3 cycles · foo-sensor.0"
    ]
    table = by_line[line_of(path, "static const struct dev_pm_ops foo_pm_ops")]
    assert table == ["dev_pm_ops · median sum per phase: suspend 1.25 ms · "
                     "suspend_noirq 2.10 ms · resume 3.00 ms"]

    line = line_of(path, "static int foo_resume(")
    col = path.read_text().splitlines()[line].index("foo_resume") + 2
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=line, character=col)))
    assert hover is not None
    text = hover.contents.value
    assert "**Measured**" in text
    assert "| resume | foo-sensor.0 | 3 | 2.90 ms | 3.00 ms | 3.09 ms | 3.10 ms |" in text
    # 2.9, 3.0, 3.1 ms in 8 bins from 2.9 to 3.1: first, middle and last bin.
    assert "| `█   █  █` |" in text

    slow = await command(client, "dpmlens.slowestCallbacks", {"limit": 2})
    assert [c["phase"] for c in slow["callbacks"]] == ["resume", "suspend_noirq"]
    first = slow["callbacks"][0]
    assert first["driver"] == "foo-sensor" and first["device"] == "foo-sensor.0"
    assert first["source"]["path"] == str(path)
    assert first["source"]["line"] == line + 1  # 1-based in the protocol
    assert first["source"]["function"] == "foo_resume"
    assert first["unmapped_reason"] is None
    assert {p["phase"] for p in slow["phases"]} >= {"suspend", "resume"}

    cleared = await command(client, "dpmlens.clearTraces")
    assert cleared["samples"] == 0
    assert await lenses(client, uri) == []


async def test_trace_globs_load_at_start(client: LanguageClient, tmp_path):
    """A second server whose settings have trace globs loads the capture by itself."""
    # The fixture's server runs with traceGlobs []; ask for the default globs.
    ws: Path = client.ws  # type: ignore[attr-defined]
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"dpmlens": {"debounceMs": 0, "traceGlobs": ["**/*_ftrace.txt"]}}))

    async def loaded() -> bool:
        st = await command(client, "dpmlens.traceStatus")
        return st["samples"] == 9

    for _ in range(100):
        if await loaded():
            break
        await asyncio.sleep(0.1)
    assert await loaded(), "trace globs did not load the fixture capture"
    uri = open_file(client, ws / "foo_core.c")
    # Mapped once the workspace index has the driver; the server then refreshes the lenses.
    for _ in range(100):
        if await lenses(client, uri):
            break
        await asyncio.sleep(0.1)
    st = await command(client, "dpmlens.traceStatus")
    assert st["callbacks_mapped"] == 3, st
    assert await lenses(client, uri)

    # The capture grows on disk (one more cycle); the client reports the change: reloaded.
    trace = ws / "traces" / "foo_ftrace.txt"
    lines = trace.read_text().splitlines(keepends=True)
    body = [ln for ln in lines if not ln.startswith("#")]
    per_cycle = len(body) // 3
    trace.write_text("".join(lines) + "".join(body[:per_cycle]).replace(" 1", " 9"))
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=trace.as_uri(), type=types.FileChangeType.Changed)]))
    for _ in range(300):  # (a loaded CI machine: parse and map run in threads)
        st = await command(client, "dpmlens.traceStatus")
        if st["samples"] == 12:
            break
        await asyncio.sleep(0.1)
    assert st["samples"] == 12 and st["cycles"] == 4, st


async def test_broken_and_missing_traces_do_not_kill_the_server(client: LanguageClient):
    ws: Path = client.ws  # type: ignore[attr-defined]
    bad = ws / "traces" / "garbage_ftrace.txt"
    bad.write_bytes(b"# tracer: nop\n\x00\xff\xfe not a trace\n" * 100)
    status = await command(client, "dpmlens.loadTraces", {"paths": [str(bad)]})
    assert status["samples"] == 0
    with pytest.raises(Exception, match="no such file"):
        await command(client, "dpmlens.loadTraces", {"paths": [str(ws / "nope.txt")]})
    # Still serving.
    st = await command(client, "dpmlens.traceStatus")
    assert "errors" in st


async def test_load_with_work_done_token_reports_progress(client: LanguageClient):
    ws: Path = client.ws  # type: ignore[attr-defined]
    token = "load-1"
    client.progress_reports[token] = []
    status = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="dpmlens.loadTraces", work_done_token=token,
        arguments=[{"paths": [str(ws / "traces")]}]))  # a directory works too
    assert status["samples"] == 9
    reports = client.progress_reports[token]
    await wait_for(lambda: reports and isinstance(reports[-1], types.WorkDoneProgressEnd),
                   what="progress end")
    assert isinstance(reports[0], types.WorkDoneProgressBegin)
    assert reports[0].cancellable


KERNEL_USB_CORE = K612 / "drivers/usb/core"
SHARED_TRACES = Path(__file__).resolve().parents[3] / "shared" / "traces"


async def test_real_traces_on_real_usb_core(client: LanguageClient, tmp_path: Path):
    """pm-graph's real captures onto linux-6.12 drivers/usb/core, copied into the workspace."""
    if not KERNEL_USB_CORE.is_dir() or not SHARED_TRACES.is_dir():
        pytest.skip(f"needs {KERNEL_USB_CORE} (linux-source-6.12) and {SHARED_TRACES}")
    import shutil

    ws: Path = client.ws  # type: ignore[attr-defined]
    core = ws / "usb_core"
    shutil.copytree(KERNEL_USB_CORE, core)
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=p.as_uri(), type=types.FileChangeType.Created)
        for p in sorted(core.glob("*.c"))]))
    generic = core / "generic.c"
    uri = open_file(client, generic)
    await wait_for(lambda: uri in client.diagnostics, what="diagnostics")
    status = await command(client, "dpmlens.loadTraces", {"paths": [str(SHARED_TRACES)]})
    assert status["samples"] > 1000 and status["errors"] == []
    slow = await command(client, "dpmlens.slowestCallbacks", {"limit": 5000})
    usb = [c for c in slow["callbacks"] if c["driver"] == "usb" and c["source"]]
    assert usb, "no USB device callback mapped"
    assert {c["source"]["function"] for c in usb} <= {
        "usb_generic_driver_suspend", "usb_generic_driver_resume"}
    assert all(c["source"]["path"] == str(generic) for c in usb)
    titles = [lens.command.title for lens in await lenses(client, uri)]
    assert any(t.startswith("resume · median") and "devices)" in t for t in titles), titles


def test_cancel_request_leaves_traces_unchanged(tmp_path: Path):
    """$/cancelRequest on a running loadTraces: an error answer, nothing installed.

    Driven by the raw JSON-RPC client of bench/bench_lsp.py, which sends exactly what it is
    told (the request id is ours to cancel)."""
    import sys

    from lsp_harness import REPO, SERVER_CMD

    sys.path.insert(0, str(REPO / "bench"))
    from bench_lsp import Client

    many = tmp_path / "many"
    many.mkdir()
    capture = (REPO / "test-fixtures" / "lsp" / "ws" / "traces" / "foo_ftrace.txt").read_bytes()
    for i in range(3000):
        (many / f"t{i:04d}_ftrace.txt").write_bytes(capture)
    c = Client(SERVER_CMD)
    try:
        c.request("initialize", {"processId": None, "rootUri": None, "capabilities": {},
                                 "initializationOptions": {"traceGlobs": []}})
        c.notify("initialized", {})
        c._send({"jsonrpc": "2.0", "id": "load-1", "method": "workspace/executeCommand",
                 "params": {"command": "dpmlens.loadTraces",
                            "arguments": [{"paths": [str(many)]}]}})
        import time

        time.sleep(0.2)
        c.notify("$/cancelRequest", {"id": "load-1"})
        with c.lock:
            assert c.lock.wait_for(lambda: "load-1" in c.responses, 60)
        answer = c.responses.pop("load-1")
        assert answer.get("error", {}).get("code") == -32800, answer  # RequestCancelled
        status = c.request("workspace/executeCommand",
                           {"command": "dpmlens.traceStatus", "arguments": []})["result"]
        assert status["samples"] == 0, "a cancelled load must not install anything"
        # nor remember its paths, nor go on in the background: the next load reads only what
        # it names, and nothing replaces it later
        one = REPO / "test-fixtures" / "lsp" / "ws" / "traces" / "foo_ftrace.txt"
        status = c.request("workspace/executeCommand",
                           {"command": "dpmlens.loadTraces",
                            "arguments": [{"paths": [str(one)]}]})["result"]
        assert status["files"] == 1, status
        time.sleep(1.0)
        status = c.request("workspace/executeCommand",
                           {"command": "dpmlens.traceStatus", "arguments": []})["result"]
        assert status["files"] == 1, status
    finally:
        c.close()


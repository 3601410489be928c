"""Runtime PM in the editor (the real server over stdio): CodeLens over runtime_suspend /
runtime_resume, hover details, the runtime rows of dpmlens.slowestCallbacks."""

from __future__ import annotations

import shutil
from pathlib import Path

from lsp_harness import command, line_of, open_file, wait_for
from lsprotocol import types
from pytest_lsp import LanguageClient
from traces_helpers import FIXTURES


async def _titles(client: LanguageClient, uri: str) -> dict[int, list[str]]:
    got = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    out: dict[int, list[str]] = {}
    for lens in got or []:
        out.setdefault(lens.range.start.line, []).append(lens.command.title)
    return out


async def test_runtime_callbacks_get_lenses_hover_and_view_rows(client: LanguageClient):
    ws: Path = client.ws  # type: ignore[attr-defined]
    path = ws / "foo_i2c.c"
    shutil.copy(FIXTURES / "rpm_src" / "foo_i2c.c", path)
    uri = open_file(client, path)
    await wait_for(lambda: uri in client.diagnostics, what="diagnostics")

    status = await command(client, "dpmlens.loadTraces",
                           {"paths": [str(FIXTURES / "rpm_6.12_trace_cmd.txt")]})
    assert status["files"] == 1 and status["errors"] == []
    assert status["runtime_devices"] == 3 and status["runtime_mapped"] == 2
    await wait_for(lambda: client.lens_refreshes > 0,  # type: ignore[attr-defined]
                   what="workspace/codeLens/refresh")

    by_line = await _titles(client, uri)
    assert by_line[line_of(path, "static int foo_i2c_runtime_resume(")] == [
        "runtime_resume · 6 × · median 3.05 ms · p95 3.80 ms · 60% of suspends shorter than "
        "break-even · 2 errors (-EACCES, -EAGAIN) · i2c_foo.0"]
    assert by_line[line_of(path, "static int foo_i2c_runtime_suspend(")] == [
        "runtime_suspend · 6 × · median 1.00 ms · p95 1.15 ms · 60% of suspends shorter than "
        "break-even · 2 errors (-EACCES, -EAGAIN) · i2c_foo.0"]
    # the system sleep lens is still there and the table sum leaves runtime PM out
    assert by_line[line_of(path, "static int foo_i2c_suspend_late(")] == [
        "suspend_late · median 300 us · p95 300 us · max 300 us · 1 cycles · i2c_foo.0"]
    assert by_line[line_of(path, "static const struct dev_pm_ops foo_i2c_pm")] == [
        "dev_pm_ops · median sum per phase: suspend_late 300 us"]

    line = line_of(path, "static int foo_i2c_runtime_resume(")
    col = path.read_text().splitlines()[line].index("foo_i2c_runtime_resume") + 2
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=line, character=col)))
    assert hover is not None
    text = hover.contents.value
    assert "| runtime_resume | i2c_foo.0 | 6 | 2.80 ms | 3.05 ms | 3.80 ms | 4.00 ms |" in text
    assert "**Runtime PM**" in text
    assert "break-even 4.05 ms (resume + suspend median)" in text
    assert "3 of 5 suspended periods shorter (60%)" in text
    assert "autosuspend after 50.10 ms idle" in text
    assert "a resume first resumes its parent: 1.51 ms of it" in text
    assert "`rpm_resume` returned -EACCES 1×" in text

    slow = await command(client, "dpmlens.slowestCallbacks", {"limit": 10})
    rt = {(r["device"], r["phase"]): r for r in slow["runtime"]}
    row = rt[("i2c_foo.0", "runtime_resume")]
    assert row["source"]["function"] == "foo_i2c_runtime_resume"
    assert row["source"]["path"] == str(path) and row["source"]["uri"].startswith("file:")
    assert row["runtime"]["short_share"] == 0.6
    assert rt[("0000:00:14.0", "runtime_suspend")]["source"] is None
    assert all(c["phase"] != "runtime_resume" for c in slow["callbacks"])


async def test_runtime_only_capture_counts_as_loaded(client: LanguageClient, tmp_path: Path):
    ws: Path = client.ws  # type: ignore[attr-defined]
    path = ws / "foo_i2c.c"
    shutil.copy(FIXTURES / "rpm_src" / "foo_i2c.c", path)
    uri = open_file(client, path)
    await wait_for(lambda: uri in client.diagnostics, what="diagnostics")
    # no device_pm_callback events: the driver of each device is unknown
    only = [ln for ln in (FIXTURES / "rpm_6.1_trace.txt").read_text().splitlines()
            if "device_pm_callback" not in ln]
    (tmp_path / "rpm_only.txt").write_text("\n".join(only) + "\n")
    status = await command(client, "dpmlens.loadTraces", {"paths": [str(tmp_path /
                                                                      "rpm_only.txt")]})
    assert status["files"] == 1 and status["samples"] == 0
    assert status["runtime_devices"] == 3 and status["runtime_mapped"] == 0
    slow = await command(client, "dpmlens.slowestCallbacks", {"limit": 10})
    assert slow["runtime"] and all(r["source"] is None for r in slow["runtime"])
    assert all("name only the device" in r["unmapped_reason"] for r in slow["runtime"])

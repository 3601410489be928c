"""The fleet on the code (issue 22, item 4): the real server over stdio reads a store made by
`dpmlens fleet ingest` from the real captures in ../shared/traces and shows its figures as
CodeLens and hover over the callbacks and delay calls of a driver registering as "i915"
(test-fixtures/fleet-editor: its callbacks and delay calls are those the captures measured);
a new ingest refreshes them; a bad store is one message, and the server goes on."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
from fleet_helpers import dpmlens
from lsp_harness import REPO, line_of, open_file, wait_for
from lsprotocol import types
from pytest_lsp import LanguageClient

TRACES = REPO.parent / "shared" / "traces"
FIXTURE = REPO / "test-fixtures" / "fleet-editor" / "gpu" / "i915_pm.c"

# What the 4.6.0-rc4+ captures measured (2 cycles of host ivybridge), 3.15 the kernel before.
RESUME = ("resume · p50 586.71 ms · p95 594.25 ms · 2 cycles on 1 machine (4.6.0-rc4+) · "
          "+539.04 ms vs 3.15.0-latest · via bus")
VDD_ON = ("msleep(200) · resume · p50 203.12 ms · p95 203.73 ms per cycle · 2 cycles on "
          "1 machine (4.6.0-rc4+) · on the critical path in 2 of 2 cycles")


@pytest.fixture(autouse=True)
def _fast_poll(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server checks the store's folders every 0.2 s here (5 s by default)."""
    monkeypatch.setenv("DPMLENS_FLEET_POLL", "0.2")


def _ingest(store: Path, *captures: Path) -> None:
    if not TRACES.is_dir():
        pytest.skip("real captures not found (../shared/traces is absent): the fleet store "
                    "of these tests is ingested from them")
    r = dpmlens("fleet", "ingest", "--store", str(store), "-j", "1", "-q", *map(str, captures))
    assert r.returncode == 0, r.stderr


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    s = tmp_path_factory.mktemp("fleet") / "store"
    _ingest(s, TRACES)
    return s


async def _lenses(client: LanguageClient, uri: str) -> dict[int, list[str]]:
    got = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    out: dict[int, list[str]] = {}
    for lens in got or []:
        assert lens.command is not None
        out.setdefault(lens.range.start.line, []).append(lens.command.title)
    return out


async def _hover(client: LanguageClient, uri: str, path: Path, needle: str) -> str:
    line = line_of(path, needle)
    col = path.read_text().splitlines()[line].index(needle) + 1
    got = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=line, character=col)))
    assert got is not None, f"no hover on {needle}"
    assert isinstance(got.contents, types.MarkupContent)
    return got.contents.value


def _driver(ws: Path) -> Path:
    (ws / "gpu").mkdir()
    return Path(shutil.copy(FIXTURE, ws / "gpu" / "i915_pm.c"))


def _settings(client: LanguageClient, **values: object) -> None:
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"dpmlens": {"traceGlobs": [], "debounceMs": 0, **values}}))


async def _wait_lens(client: LanguageClient, uri: str, line: int, want: str) -> list[str]:
    """The lenses at `line` once `want` is one of them (the store loads asynchronously)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + 30.0
    while True:
        got = (await _lenses(client, uri)).get(line, [])
        if want in got:
            return got
        if loop.time() > end:
            raise AssertionError(f"lens {want!r} not shown at line {line}: {got}")
        await asyncio.sleep(0.1)


async def test_setting_shows_lens_and_hover(client: LanguageClient, store: Path) -> None:
    ws: Path = client.ws  # type: ignore[attr-defined]
    path = _driver(ws)
    uri = open_file(client, path)
    await wait_for(lambda: uri in client.diagnostics, what="diagnostics")
    assert await _lenses(client, uri) == {}  # no store yet
    _settings(client, fleetStore=str(store))
    await wait_for(lambda: client.lens_refreshes > 0,  # type: ignore[attr-defined]
                   what="workspace/codeLens/refresh")
    resume = line_of(path, "static int i915_pm_resume(")
    assert await _wait_lens(client, uri, resume, RESUME) == [RESUME]
    by_line = await _lenses(client, uri)
    assert by_line[line_of(path, "static int i915_pm_suspend_late(")] == [
        "suspend_late · p50 12.50 ms · p95 12.50 ms · 1 cycle on 1 machine (4.6.0-rc4+) · "
        "-3.15 ms vs 3.15.0-latest"]
    assert by_line[line_of(path, "msleep(200)")] == [VDD_ON]
    assert by_line[line_of(path, "msleep(50)")] == [
        "msleep(50) · suspend · p50 53.90 ms · p95 54.53 ms per cycle · 2 cycles on 1 machine "
        "(4.6.0-rc4+) · on the critical path in 2 of 2 cycles"]

    text = await _hover(client, uri, path, "i915_pm_resume(")
    assert f"**Fleet** (`{store}`" in text
    assert ("| resume (via bus) | 4.6.0-rc4+ | 2 | 1 | 586.71 ms | 594.25 ms | 2 of 2 cycles, "
            "p50 586.71 ms | +539.04 ms vs 3.15.0-latest | 0 |") in text
    delay = await _hover(client, uri, path, "msleep(200)")
    assert "`msleep(200)` in `edp_panel_vdd_on()`" in delay
    assert "- 2 calls in 2 cycles" in delay
    assert "- on the critical path in 2 of 2 cycles (p50 203.12 ms per cycle)" in delay
    logs = [m.message for m in client.log_messages]
    assert any(f"fleet store {store}: 6 cycles, kernels 3.15.0-latest .. 4.6.0-rc4+" in m
               for m in logs), logs


async def test_toml_store_refreshed_by_a_new_ingest(client: LanguageClient,
                                                   tmp_path: Path) -> None:
    """`[fleet] store` (relative to the file); the store first holds kernel 3.15 only, then
    an ingest of the 4.6 captures lands while the server runs: the lens follows."""
    ws: Path = client.ws  # type: ignore[attr-defined]
    store = tmp_path / "fleet-store"
    _ingest(store, TRACES / "pm-graph-3.15")
    (ws / ".dpmlens.toml").write_text(f'[fleet]\nstore = "../{store.name}"\n')
    path = _driver(ws)
    uri = open_file(client, path)
    resume = line_of(path, "static int i915_pm_resume(")
    before = "resume · p50 47.67 ms · p95 87.42 ms · 3 cycles on 1 machine (3.15.0-latest)"
    got = await _wait_lens(client, uri, resume, before + " · via bus")
    assert len(got) == 1
    _ingest(store, TRACES / "pm-graph-4.6")
    assert await _wait_lens(client, uri, resume, RESUME) == [RESUME]


def _messages(client: LanguageClient) -> list[str]:
    return [m.message for m in client.messages]  # window/showMessage


async def test_bad_stores_are_one_message_each(client: LanguageClient, tmp_path: Path,
                                               store: Path) -> None:
    ws: Path = client.ws  # type: ignore[attr-defined]
    path = _driver(ws)
    uri = open_file(client, path)
    await wait_for(lambda: uri in client.diagnostics, what="diagnostics")

    missing = tmp_path / "nowhere"
    _settings(client, fleetStore=str(missing))
    await wait_for(lambda: any(str(missing) in m for m in _messages(client)),
                   what="a message about the missing store")
    newer = tmp_path / "newer"
    shutil.copytree(store, newer)
    (newer / "dpmlens-store.json").write_text(json.dumps({"format": 99,
                                                          "created_by": "dpmlens 9"}))
    _settings(client, fleetStore=str(newer))
    await wait_for(lambda: any("newer dpmlens" in m for m in _messages(client)),
                   what="a message about the newer store")
    corrupt = tmp_path / "corrupt"
    shutil.copytree(store, corrupt)
    victim = next((corrupt / "callbacks").glob("*/*.parquet"))
    victim.write_bytes(b"PAR1 not parquet at all")
    _settings(client, fleetStore=str(corrupt))
    await wait_for(lambda: any(f"fleet store {corrupt}: cannot be read" in m
                               for m in _messages(client)),
                   what="a message about the corrupt store")
    # polled again and again (0.2 s), each problem was said once
    await asyncio.sleep(1.0)
    said = _messages(client)
    assert len([m for m in said if str(missing) in m]) == 1, said
    assert len([m for m in said if "newer dpmlens" in m]) == 1, said
    assert len([m for m in said if str(corrupt) in m]) == 1, said
    assert await _lenses(client, uri) == {}
    # the server is alive and the good store still works
    _settings(client, fleetStore=str(store))
    assert await _wait_lens(client, uri, line_of(path, "static int i915_pm_resume("), RESUME)

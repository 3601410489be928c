"""didOpen answered with the findings the workspace index computed (lsp/index_findings.py):
the first answer is the one the server's own analysis settles on, and every change the
findings may depend on sends the open back to a full analysis."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from kernel_trees import K612
from lsp_harness import (
    CONFIG,
    codes,
    copy_workspace,
    initialize,
    open_file,
    wait_diagnostics,
    wait_for,
)
from lsprotocol import types
from pytest_lsp import LanguageClient

from dpmlens.config.settings import Config, RuleSetting
from dpmlens.engine.analyze import analyze_model
from dpmlens.lsp.index_findings import DirLookup, DirModels, directory_stamp, precompute
from dpmlens.lsp.index_worker import findings_many, visible_model
from dpmlens.model.build import build_model

INDEXED = "computed by the workspace index"


class _History(dict[str, Any]):
    """client.diagnostics, keeping every publish (pytest-lsp keeps the last)."""

    def __init__(self) -> None:
        super().__init__()
        self.all: list[tuple[str, list[types.Diagnostic]]] = []

    def __setitem__(self, uri: str, diags: Any) -> None:
        self.all.append((uri, list(diags)))
        super().__setitem__(uri, diags)


def _how(client: LanguageClient, path: Path, version: int = 1) -> list[str]:
    """How each analysis of `path` at `version` went, from the server's debug log lines."""
    head = f"analysed {path} v{version}: "
    return [m.message.rsplit("(", 1)[-1].rstrip(")") for m in client.log_messages
            if m.message.startswith(head)]


@pytest_lsp.fixture(config=CONFIG)
async def client(lsp_client: LanguageClient, tmp_path: Path):  # (debug: how each analysis went)
    lsp_client.ws = copy_workspace(tmp_path)  # type: ignore[attr-defined]
    await initialize(lsp_client, lsp_client.ws, {"logLevel": "debug"})  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


async def _indexed(client: LanguageClient) -> None:
    """The scan has ended, and the findings computed after it."""
    await wait_for(lambda: any("dpmlens: computed the findings of" in m.message
                               for m in client.log_messages), what="the index's findings")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return copy_workspace(tmp_path)


def _server_view(path: Path) -> list[Any]:
    """A full analysis with the directory's helpers (the server's own: the end-to-end test)."""
    source = path.read_bytes()
    return analyze_model(build_model(str(path), source), Config(),
                         DirLookup(str(path), DirModels(visible_model)))


def test_precomputed_follows_the_directory_helpers(ws: Path):
    path = ws / "foo_core.c"
    [(got, pre)] = findings_many([str(path)], Config())
    assert got == str(path) and pre is not None
    assert "wake-setup-in-noirq" in {f.rule for f in pre.findings}  # (through foo_wake.c)
    assert list(pre.findings) == _server_view(path)
    assert pre.holds(str(path), path.read_bytes(), Config())
    (ws / "empty.c").write_text("int x;\n")  # (no PM word: no finding, none to compute)
    [(_p, none)] = findings_many([str(ws / "empty.c")], Config())
    assert none is not None and none.findings == ()


def test_precomputed_holds_only_for_what_it_read(ws: Path):
    path = ws / "foo_core.c"
    source = path.read_bytes()
    pre = precompute(str(path), source, build_model(str(path), source), Config(),
                     DirModels(visible_model))
    assert pre is not None
    assert not pre.holds(str(path), source + b"\n", Config())  # another text
    off = Config(rules={"msleep-under-20ms": RuleSetting(enabled=False)})
    assert not pre.holds(str(path), source, off)  # another configuration
    helper = ws / "foo_wake.c"
    st = helper.stat()
    os.utime(helper, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert directory_stamp(str(path)) != pre.stamp
    assert not pre.holds(str(path), source, Config())  # a file of the directory changed


def test_a_helper_file_too_big_to_read_here_is_not_precomputed(ws: Path, monkeypatch):
    monkeypatch.setattr("dpmlens.lsp.index_findings.SIBLING_BYTES", 100)  # foo_wake.c: ~250
    path = ws / "foo_core.c"
    source = path.read_bytes()
    assert precompute(str(path), source, build_model(str(path), source), Config(),
                      DirModels(visible_model)) is None


def test_a_helper_defined_twice_is_not_precomputed(ws: Path):
    shutil.copy(ws / "foo_wake.c", ws / "foo_wake2.c")  # which one the server finds: its order
    path = ws / "foo_core.c"
    source = path.read_bytes()
    assert precompute(str(path), source, build_model(str(path), source), Config(),
                     DirModels(visible_model)) is None


async def test_open_after_the_index_publishes_its_findings(client: LanguageClient):
    ws: Path = client.ws  # type: ignore[attr-defined]
    await _indexed(client)
    history = _History()
    client.diagnostics = history
    path = ws / "foo_core.c"
    uri = open_file(client, path)
    # the server's own analysis comes after (once the directory job ended) ...
    await wait_for(lambda: len(_how(client, path)) >= 2, what="the server's own analysis")
    hows = _how(client, path)
    assert hows[0] == INDEXED, hows
    assert hows[1].startswith("full"), hows
    # (its log line comes before its publish)
    await wait_for(lambda: len([u for u, _d in history.all if u == uri]) >= 2, what="2 answers")
    answers = [d for u, d in history.all if u == uri]
    # ... and says the same: the first answer is the settled one
    assert all(a == answers[-1] for a in answers)
    assert "wake-setup-in-noirq" in codes(answers[0])


async def test_open_beside_an_edited_sibling_is_analysed(client: LanguageClient):
    ws: Path = client.ws  # type: ignore[attr-defined]
    await _indexed(client)
    helper = ws / "foo_wake.c"
    huri = open_file(client, helper)
    await wait_for(lambda: _how(client, helper), what="the helper's analysis")
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=huri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(
            text=helper.read_text().replace("enable_irq_wake", "disable_irq_wake"))],
    ))
    path = ws / "foo_core.c"
    open_file(client, path)
    await wait_for(lambda: _how(client, path), what="the analysis")
    assert _how(client, path)[0] != INDEXED  # (the resolver reads the unsaved helper)


def test_a_worker_reads_a_changed_directory_again(ws: Path):
    models = DirModels(visible_model)
    path = ws / "foo_core.c"
    source = path.read_bytes()
    pre = precompute(str(path), source, build_model(str(path), source), Config(), models)
    assert pre is not None and "wake-setup-in-noirq" in {f.rule for f in pre.findings}
    helper = ws / "foo_wake.c"  # the helper no longer arms wakeup: the same worker sees it
    helper.write_text(helper.read_text().replace("enable_irq_wake", "disable_irq_wake"))
    st = helper.stat()
    os.utime(helper, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    again = precompute(str(path), source, build_model(str(path), source), Config(), models)
    assert again is not None and "wake-setup-in-noirq" not in {f.rule for f in again.findings}


def test_a_header_read_elsewhere_is_part_of_the_key(tmp_path: Path):
    (tmp_path / "a.h").write_text("#define A_WAIT_MS 5\n")
    sub = tmp_path / "sub"
    sub.mkdir()
    path = sub / "a.c"
    path.write_text(
        '#include <linux/delay.h>\n#include <linux/pm.h>\n#include "../a.h"\n'
        "static int a_suspend(struct device *dev)\n{\n\tmsleep(A_WAIT_MS);\n\treturn 0;\n}\n"
        "static int a_resume(struct device *dev)\n{\n\treturn 0;\n}\n"
        "static SIMPLE_DEV_PM_OPS(a_pm, a_suspend, a_resume);\n")
    source = path.read_bytes()
    pre = precompute(str(path), source, build_model(str(path), source), Config(),
                     DirModels(visible_model))
    assert pre is not None and pre.findings  # (msleep(5): under 20 ms)
    assert [h for h, _s, _m in pre.headers] == [str(tmp_path / "sub" / ".." / "a.h")]
    assert pre.holds(str(path), source, Config())
    (tmp_path / "a.h").write_text("#define A_WAIT_MS 50\n")
    st = (tmp_path / "a.h").stat()
    os.utime(tmp_path / "a.h", ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert not pre.holds(str(path), source, Config())


@pytest.mark.skipif(not (K612 / "drivers/usb/core/port.c").is_file(), reason=f"needs {K612}")
def test_delays_reached_in_helpers_read_while_reported():
    """drivers/usb/core/port.c with the helpers of its directory (as the server analyses it
    once the directory is indexed): reporting a delay reached in hub.c read another helper
    file's delays for the first time, while they were being listed (the rules crashed: the
    editor showed no diagnostics for port.c); the index's findings found it."""
    path = K612 / "drivers/usb/core/port.c"
    source = path.read_bytes()
    findings = analyze_model(build_model(str(path), source), Config(),
                             DirLookup(str(path), DirModels(visible_model)))
    assert findings == analyze_model(build_model(str(path), source), Config(),
                                     DirLookup(str(path), DirModels(visible_model)))
    [(_p, pre)] = findings_many([str(path)], Config())
    assert pre is not None and list(pre.findings) == findings


def test_a_file_the_scan_did_not_parse_gets_none_only_when_nothing_can_be_found(ws: Path):
    quiet, loud = ws / "plain.c", ws / "foo_core.c"
    quiet.write_text("int plain(int x)\n{\n\treturn x + 1;\n}\n")
    got = dict(findings_many([str(quiet), str(loud)], Config(), parsed=frozenset()))
    assert got[str(quiet)] is not None and got[str(quiet)].findings == ()
    assert got[str(quiet)].holds(str(quiet), quiet.read_bytes(), Config())
    assert got[str(loud)] is None  # (PM code the scan did not parse: opened the usual way)


@pytest_lsp.fixture(config=CONFIG)
async def client_without_pass(lsp_client: LanguageClient, tmp_path: Path):
    lsp_client.ws = copy_workspace(tmp_path)  # type: ignore[attr-defined]
    await initialize(lsp_client, lsp_client.ws,  # type: ignore[attr-defined]
                     {"logLevel": "debug", "indexFindings": False})
    yield
    await lsp_client.shutdown_session()


async def test_index_findings_off_means_no_background_pass(client_without_pass: LanguageClient):
    client = client_without_pass
    ws: Path = client.ws  # type: ignore[attr-defined]
    await wait_for(lambda: any("indexed" in m.message for m in client.log_messages),
                   what="the scan")
    await asyncio.sleep(3)  # (on, the pass over these four files ends well within this)
    assert not any("computed the findings" in m.message for m in client.log_messages)
    path = ws / "foo_core.c"
    uri = open_file(client, path)
    await wait_for(lambda: _how(client, path), what="the analysis")
    assert INDEXED not in _how(client, path)
    # (the helper's finding once the directory job has run, as before the pass existed)
    await wait_diagnostics(client, uri, lambda d: "wake-setup-in-noirq" in codes(d))


def test_index_findings_setting_is_parsed():
    from dpmlens.lsp.settings import parse_settings

    assert parse_settings({}).index_findings is True
    assert parse_settings({"indexFindings": False}).index_findings is False
    bad = parse_settings({"indexFindings": "no"})
    assert bad.index_findings is True and any("indexFindings" in p for p in bad.problems)


async def test_index_findings_turned_on_after_the_scan_runs_the_pass(
        client_without_pass: LanguageClient):
    client = client_without_pass
    ws: Path = client.ws  # type: ignore[attr-defined]
    await wait_for(lambda: any("indexed" in m.message for m in client.log_messages),
                   what="the scan")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={
        "dpmlens": {"logLevel": "debug", "indexFindings": True, "debounceMs": 0,
                    "traceGlobs": []}}))
    await _indexed(client)
    path = ws / "foo_core.c"
    open_file(client, path)
    await wait_for(lambda: _how(client, path), what="the analysis")
    assert _how(client, path)[0] == INDEXED

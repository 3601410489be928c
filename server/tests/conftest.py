"""The `client` fixture of the language-server tests (test_lsp_*.py): the real server over
stdio, initialized on a fresh copy of test-fixtures/lsp/ws (at `client.ws`)."""

from __future__ import annotations

import pytest
import pytest_lsp
from lsp_harness import CONFIG, copy_workspace, initialize
from pytest_lsp import LanguageClient


@pytest_lsp.fixture(config=CONFIG)
async def client(lsp_client: LanguageClient, tmp_path):
    lsp_client.ws = copy_workspace(tmp_path)  # type: ignore[attr-defined]
    result = await initialize(lsp_client, lsp_client.ws)  # type: ignore[attr-defined]
    lsp_client.server_caps = result.capabilities  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


@pytest.fixture(autouse=True)
def _private_result_cache(tmp_path_factory, monkeypatch):
    """`dpmlens check` caches results under $XDG_CACHE_HOME: each test gets its own. And
    `dpmlens cc` runs in-process (no background worker) unless a test asks for one."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
    monkeypatch.setenv("DPMLENS_CC_WORKER", "0")

"""Inputs that broke dpmlens once (test-fixtures/fuzz/), under the fuzz suite's invariants."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fuzz_support import FIXTURES, FUZZ
from raw_lsp import RawServer
from test_fuzz_model import check_source
from test_fuzz_traces import check_capture


def _inputs(kind: str) -> list[Path]:
    return sorted(p for p in (FUZZ / kind).iterdir() if p.is_file())


@pytest.mark.parametrize("path", _inputs("c"), ids=lambda p: p.name)
def test_c_inputs(path: Path) -> None:
    t0 = time.monotonic()
    check_source(path, path.read_bytes())
    assert time.monotonic() - t0 < 10


@pytest.mark.parametrize("path", _inputs("traces"), ids=lambda p: p.name)
def test_trace_inputs(path: Path) -> None:
    t0 = time.monotonic()
    check_capture(path.name, path.read_bytes(), gz=False, cut=0)
    assert time.monotonic() - t0 < 10


@pytest.fixture(scope="module", params=["stdio", "tcp"])
def server(tmp_path_factory: pytest.TempPathFactory,
           request: pytest.FixtureRequest) -> Iterator[RawServer]:
    ws = tmp_path_factory.mktemp("regress") / "ws"
    shutil.copytree(FIXTURES / "lsp" / "ws", ws)
    srv = RawServer(ws, transport=request.param)
    srv.initialize()
    yield srv
    srv.close()


@pytest.mark.parametrize("path", _inputs("lsp"), ids=lambda p: p.name)
def test_lsp_inputs(server: RawServer, path: Path) -> None:
    server.send(path.read_bytes())
    server.alive(timeout=10)

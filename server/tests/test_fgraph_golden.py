"""The function_graph reader gives exactly what it gave before its rewrite for speed (issue 9):
every sample, phase time, step, delay row, skipped line and note, on real captures rewritten in
the graph form and on synthetic ones (tests/fgraph_corpus.py), read in one block and in blocks
cut at awkward places."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fgraph_corpus import GOLDEN, corpus, load_dump, real_captures

from dpmlens.traces.read import ftrace as ftrace_mod

GOLDEN_DATA = json.loads(GOLDEN.read_text())
CORPUS = corpus()


def _check(name: str, got: dict) -> None:
    want = GOLDEN_DATA[name]
    # the summary first: a readable failure; then the digest over every number
    assert {k: v for k, v in got.items() if k != "digest"} == \
        {k: v for k, v in want.items() if k != "digest"}, name
    assert got["digest"] == want["digest"], name


@pytest.mark.parametrize("name", sorted(n for n in GOLDEN_DATA if not n.startswith("real:")))
def test_synthetic_captures_read_as_before(name: str, tmp_path: Path) -> None:
    _check(name, load_dump(name, CORPUS[name], tmp_path))


def test_real_captures_read_as_before(tmp_path: Path) -> None:
    names = [n for n in GOLDEN_DATA if n.startswith("real:")]
    if not real_captures():
        pytest.skip("real captures not found (../shared is absent)")
    missing = [n for n in names if n not in CORPUS]
    assert not missing, f"captures gone from ../shared/traces: {missing}"
    for name in names:
        _check(name, load_dump(name, CORPUS[name], tmp_path))


@pytest.mark.parametrize("chunk", [97, 4096])
def test_block_boundaries(chunk: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ftrace_mod, "CHUNK", chunk)
    for name in ("synthetic-0", "synthetic-0-broken", "synthetic-3", "synthetic-crlf", "bench"):
        _check(name, load_dump(name, CORPUS[name], tmp_path))


def test_caches_cleared_midway(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a file of ever new line shapes empties the reader's caches (flat memory): same result
    from dpmlens.traces.read import ftrace_graph

    monkeypatch.setattr(ftrace_graph, "_MAX_SHAPES", 3)
    monkeypatch.setattr(ftrace_mod, "CHUNK", 4096)
    for name in ("synthetic-0", "synthetic-1-broken", "fixture"):
        _check(name, load_dump(name, CORPUS[name], tmp_path))

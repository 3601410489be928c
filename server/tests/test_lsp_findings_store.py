"""The workspace index's findings kept across restarts (lsp/findings_store.py): what is stored
comes back equal, is used only while it holds, and a restarted server answers didOpen with
it before its own pass has run."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from kernel_trees import K612
from lsp_harness import SERVER_CMD, codes, copy_workspace, initialize, open_file, wait_for
from pytest_lsp import LanguageClient, make_test_lsp_client

from dpmlens.config.settings import Config, RuleSetting
from dpmlens.lsp import findings_store
from dpmlens.lsp.findings_store import FindingsStore
from dpmlens.lsp.index_findings import Precomputed
from dpmlens.lsp.index_worker import findings_many

INDEXED = "computed by the workspace index"
KEPT = "kept by the workspace index from an earlier run"


def _store(tmp_path: Path, build: str = "build-1") -> FindingsStore:
    return FindingsStore(tmp_path / "cache" / "editor" / "s.json", build)


def _found(paths: list[Path]) -> dict[str, Precomputed]:
    out = dict(findings_many([str(p) for p in paths], Config()))
    assert all(pre is not None for pre in out.values())
    return out  # type: ignore[return-value]


def test_stored_findings_come_back_equal(tmp_path: Path):
    ws = copy_workspace(tmp_path)
    found = _found(sorted(ws.glob("*.c")))
    assert any(pre.findings for pre in found.values())  # (foo_core.c: through foo_wake.c)
    assert _store(tmp_path).save(found) == len(found)
    again = _store(tmp_path)
    assert again.load() is None and len(again) == len(found)
    for path, pre in found.items():
        assert again.get(path, Config()) == pre
        assert again.get(path, Config()).holds(path, Path(path).read_bytes(), Config())
    # each directory's files are listed once, not once per file
    data = json.loads(again.path.read_text())
    assert len(data["dirs"]) == 1 and all(isinstance(e[2], int) for e in data["files"].values())


@pytest.mark.skipif(not (K612 / "drivers/usb/core/hub.c").is_file(), reason=f"needs {K612}")
def test_real_findings_come_back_equal(tmp_path: Path):
    """drivers/usb/core with its helpers: chains through other files, fixes, tags."""
    core = K612 / "drivers/usb/core"
    found = _found([core / "hub.c", core / "port.c", core / "driver.c"])
    assert sum(len(pre.findings) for pre in found.values()) >= 3
    _store(tmp_path).save(found)
    again = _store(tmp_path)
    assert again.load() is None
    for path, pre in found.items():
        assert again.get(path, Config()) == pre


def test_stored_findings_are_for_their_configuration_and_build(tmp_path: Path):
    ws = copy_workspace(tmp_path)
    found = _found([ws / "foo_core.c"])
    _store(tmp_path).save(found)
    store = _store(tmp_path)
    store.load()
    off = Config(rules={"msleep-under-20ms": RuleSetting(enabled=False)})
    assert store.get(str(ws / "foo_core.c"), off) is None
    other = _store(tmp_path, build="build-2")  # another dpmlens or rule set: nothing
    assert other.load() is None and len(other) == 0


def test_stored_findings_are_for_their_kernel_version(tmp_path: Path, monkeypatch):
    """msleep()'s extra jiffy before 6.12: the same file in a tree checked out at another
    version has other findings."""
    ws = copy_workspace(tmp_path)
    (tmp_path / "Makefile").write_text("VERSION = 6\nPATCHLEVEL = 1\n")
    found = _found([ws / "foo_core.c"])
    _store(tmp_path).save(found)
    store = _store(tmp_path)
    store.load()
    assert store.get(str(ws / "foo_core.c"), Config()) is not None
    (tmp_path / "Makefile").write_text("VERSION = 6\nPATCHLEVEL = 12\n")
    findings_store.tree_version.cache_clear()  # (a new server process)
    assert store.get(str(ws / "foo_core.c"), Config()) is None


def test_a_damaged_store_is_an_empty_one(tmp_path: Path):
    store = _store(tmp_path)
    store.path.parent.mkdir(parents=True)
    store.path.write_text('{"format": 2, "build": "build-1", "files": ')
    problem = store.load()
    assert problem is not None and str(store.path) in problem and len(store) == 0
    store.path.write_text(json.dumps({"format": 2, "build": "build-1", "configs": [],
                                      "dirs": [], "files": {"/x.c": ["zz", 0, 0, [], [], None]}}))
    assert store.load() is None and store.get("/x.c", Config()) is None  # (bad entry)


def test_at_most_max_stores_are_kept(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(findings_store, "MAX_STORES", 2)
    for i in range(4):
        store = FindingsStore(tmp_path / "editor" / f"s{i}.json", "build-1")
        store.save({})
        os.utime(store.path, ns=(i * 10**9, i * 10**9))
    store.save({})  # (s3 again: the newest)
    assert sorted(p.name for p in (tmp_path / "editor").glob("*.json")) == ["s2.json", "s3.json"]


def test_a_failed_save_leaves_the_old_store(tmp_path: Path, monkeypatch):
    ws = copy_workspace(tmp_path)
    found = _found([ws / "foo_core.c"])
    store = _store(tmp_path)
    store.save(found)
    before = store.path.read_bytes()

    def full(path: object, text: str, encoding: str = "utf-8") -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(findings_store, "write_text_atomic", full)
    with pytest.raises(OSError):
        store.save({})
    assert store.path.read_bytes() == before


def test_the_pass_takes_stored_findings_that_hold_without_a_parse(tmp_path: Path, monkeypatch):
    ws = copy_workspace(tmp_path)
    path = ws / "foo_core.c"
    [(_p, pre)] = findings_many([str(path)], Config())
    assert pre is not None

    def no_parse(*_a: object, **_k: object) -> None:
        raise AssertionError("parsed")

    monkeypatch.setattr("dpmlens.model.build.build_model", no_parse)
    [(_p, got)] = findings_many([str(path)], Config(), stored={str(path): pre})
    assert got is pre
    path.write_text(path.read_text() + "\n")  # another text: computed again (here: fails)
    [(_p, got)] = findings_many([str(path)], Config(), stored={str(path): pre})
    assert got is None


async def _server(ws: Path, cache: Path) -> LanguageClient:
    client = make_test_lsp_client()
    await client.start_io(*SERVER_CMD, env={**os.environ, "XDG_CACHE_HOME": str(cache)})
    await initialize(client, ws, {"logLevel": "debug"})
    return client


def _logged(client: LanguageClient, text: str) -> bool:
    return any(text in m.message for m in client.log_messages)


async def test_a_restarted_server_answers_didopen_from_the_store(tmp_path: Path):
    ws = copy_workspace(tmp_path)
    cache = tmp_path / "xdg"
    first = await _server(ws, cache)
    try:
        await wait_for(lambda: _logged(first, "dpmlens: stored the findings of"),
                       timeout=60, what="the findings stored")
        assert _logged(first, "; 0 kept from an earlier run")
    finally:
        await first.shutdown_session()
    assert list((cache / "dpmlens" / "editor").glob("*.json"))

    second = await _server(ws, cache)
    try:
        await wait_for(lambda: _logged(second, "dpmlens: read the stored findings of"),
                       timeout=60, what="the store read")
        path = ws / "foo_core.c"
        uri = open_file(second, path)
        head = f"analysed {path} v1: "
        await wait_for(lambda: [m for m in second.log_messages if m.message.startswith(head)],
                       timeout=60, what="the first answer")
        first_how = next(m.message for m in second.log_messages if m.message.startswith(head))
        assert first_how.endswith(f"({KEPT})"), first_how
        assert "wake-setup-in-noirq" in codes(second.diagnostics[uri])
        changed = ws / "bar_legacy.c"  # opened with another text than the one stored
        open_file(second, changed, changed.read_text() + "\n")
        head = f"analysed {changed} v1: "
        await wait_for(lambda: [m for m in second.log_messages if m.message.startswith(head)],
                       timeout=60, what="the changed file's analysis")
        how = next(m.message for m in second.log_messages if m.message.startswith(head))
        assert not how.endswith((f"({INDEXED})", f"({KEPT})")), how
        # the pass took the stored findings of the files that did not change
        await wait_for(lambda: _logged(second, "dpmlens: computed the findings of"),
                       timeout=60, what="the pass")
        done = next(m.message for m in second.log_messages
                    if "dpmlens: computed the findings of" in m.message)
        assert re.search(r"; [1-9]\d* kept from an earlier run", done), done
    finally:
        await second.shutdown_session()


def test_one_listing_per_directory_gives_each_file_its_stamp(tmp_path: Path):
    from dpmlens.lsp.index_findings import Listings, directory_stamp

    dirs = [copy_workspace(tmp_path)]
    if (K612 / "drivers/usb/core").is_dir():
        dirs.append(K612 / "drivers/usb/core")
    for d in dirs:
        listings = Listings()
        for path in sorted(d.glob("*.[ch]")):
            assert listings.stamp(str(path)) == directory_stamp(str(path))
    # taken before a sibling changed: the stamp is the old one, which then fails `holds`
    ws = dirs[0]
    listings = Listings()
    old = listings.stamp(str(ws / "foo_core.c"))
    helper = ws / "foo_wake.c"
    st = helper.stat()
    os.utime(helper, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert listings.stamp(str(ws / "foo_core.c")) == old != directory_stamp(str(ws / "foo_core.c"))
    [(_p, pre)] = findings_many([str(ws / "foo_core.c")], Config())
    assert pre is not None and pre.holds(str(ws / "foo_core.c"), (ws / "foo_core.c").read_bytes(),
                                         Config())


async def test_a_cache_that_cannot_be_written_is_one_warning(tmp_path: Path):
    ws = copy_workspace(tmp_path)
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")
    client = await _server(ws, blocked)
    try:
        await wait_for(lambda: _logged(client, "dpmlens: findings not stored in"),
                       timeout=60, what="the warning")
        path = ws / "foo_core.c"
        uri = open_file(client, path)
        await wait_for(lambda: "wake-setup-in-noirq" in codes(client.diagnostics.get(uri, [])),
                       timeout=60, what="the diagnostics")
    finally:
        await client.shutdown_session()

"""The result cache of `dpmlens check`: same findings warm as cold, nothing reanalyzed on an
unchanged (or only touched) tree, cross-file inputs in the key, safe and bounded on disk."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from cli_helpers import DEMO, NOIRQ_WAKE, run_cli, write_driver

from dpmlens.config.settings import Config
from dpmlens.engine import result_cache
from dpmlens.engine.check import check_paths
from dpmlens.engine.result_cache import open_cache


def _run(paths: list[str], cache_dir: Path, config: Config | None = None):
    cache = open_cache(str(cache_dir), config or Config(), None, True)
    run = check_paths(paths, config or Config(), 1, cache=cache)
    cache.save()
    return run, cache


def _tree(tmp: Path) -> Path:
    write_driver(tmp / "drivers" / "a" / "foo.c")
    write_driver(tmp / "drivers" / "a" / "bar.c", NOIRQ_WAKE.replace("foo", "bar"))
    (tmp / "drivers" / "b").mkdir(parents=True)
    (tmp / "drivers" / "b" / "plain.c").write_text("int plain(void) { return 0; }\n")
    return tmp / "drivers"


def test_warm_equals_cold_and_analyzes_nothing(tmp_path):
    tree = _tree(tmp_path)
    cold, c1 = _run([str(tree), str(DEMO)], tmp_path / "cache")
    warm, c2 = _run([str(tree), str(DEMO)], tmp_path / "cache")
    assert c1.hits == 0 and c1.misses == 4
    assert c2.hits == 4 and c2.misses == 0
    assert warm.findings == cold.findings and warm.source_lines == cold.source_lines
    assert (warm.files_checked, warm.files_analyzed, warm.bytes_checked, warm.lines_checked) == (
        cold.files_checked, cold.files_analyzed, cold.bytes_checked, cold.lines_checked)
    assert (tmp_path / "cache" / "CACHEDIR.TAG").read_text().startswith(
        "Signature: 8a477f597d28d172789f06886806bc55")


def test_touch_edit_sibling_and_header(tmp_path):
    tree = _tree(tmp_path)
    _run([str(tree)], tmp_path / "cache")
    foo = tree / "a" / "foo.c"
    os.utime(foo, ns=(1, 1))  # touched: same bytes, other mtime
    _, cache = _run([str(tree)], tmp_path / "cache")
    assert cache.misses == 0
    # An edit reanalyzes the file and its directory (sibling_waits reads the other .c files),
    # not the other directories.
    foo.write_text(NOIRQ_WAKE + "\n")
    _, cache = _run([str(tree)], tmp_path / "cache")
    assert (cache.hits, cache.misses) == (1, 2)
    # A local header a file includes is part of its key.
    (tree / "b" / "plain.h").write_text("#define X 1\n")
    (tree / "b" / "plain.c").write_text('#include "plain.h"\n' + NOIRQ_WAKE)
    _run([str(tree)], tmp_path / "cache")
    (tree / "b" / "plain.h").write_text("#define X 2\n")
    _, cache = _run([str(tree / "b")], tmp_path / "cache")
    assert cache.misses == 2  # plain.c (its header changed) and plain.h itself
    # A file without PM code needs no other file: its empty result stands.
    (tree / "b" / "other.c").write_text('#include "plain.h"\nint other(void) { return 0; }\n')
    _run([str(tree / "b")], tmp_path / "cache")
    (tree / "b" / "plain.h").write_text("#define X 3\n")
    _, cache = _run([str(tree / "b" / "other.c")], tmp_path / "cache")
    assert (cache.hits, cache.misses) == (1, 0)


def test_config_and_rules_are_part_of_the_key(tmp_path):
    tree = _tree(tmp_path)
    first, _ = _run([str(tree)], tmp_path / "cache")
    other = Config(helper_depth=1)
    _, cache = _run([str(tree)], tmp_path / "cache", other)
    assert cache.hits == 0
    assert len(list((tmp_path / "cache" / "v1").glob("*.json"))) == 2


def test_cli_options_and_identical_reports(tmp_path, capsys, monkeypatch):
    tree = _tree(tmp_path)
    cache_dir = tmp_path / "c"
    args = ["check", "-f", "json", "--cache-dir", str(cache_dir), str(tree)]
    cold = json.loads(run_cli(capsys, *args).out)
    warm = json.loads(run_cli(capsys, *args).out)
    for doc in (cold, warm):
        doc["summary"].pop("elapsed_seconds")
    assert warm == cold and cold["findings"]
    r = run_cli(capsys, "check", "--no-cache", "--cache-dir", str(tmp_path / "n"), str(tree))
    assert r.code == 1 and not (tmp_path / "n").exists()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    run_cli(capsys, "check", str(tree))
    assert (tmp_path / "xdg" / "dpmlens" / "CACHEDIR.TAG").is_file()


def test_broken_pack_and_read_only_dir_are_ignored(tmp_path, capsys):
    tree = _tree(tmp_path)
    _, cache = _run([str(tree)], tmp_path / "cache")
    cache.pack.write_text("{not json")
    run, cache = _run([str(tree)], tmp_path / "cache")
    assert cache.hits == 0 and len(run.findings) == 2
    assert json.loads(cache.pack.read_text())["format"] == result_cache.FORMAT
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    r = run_cli(capsys, "check", "--cache-dir", str(blocked / "sub"), str(tree))
    assert r.code == 1 and "error" not in r.err


def test_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(result_cache, "MAX_RESULTS", 2)
    monkeypatch.setattr(result_cache, "MAX_PACKS", 1)
    tree = _tree(tmp_path)
    _, cache = _run([str(tree)], tmp_path / "cache")
    assert len(json.loads(cache.pack.read_text())["results"]) == 2
    _run([str(tree)], tmp_path / "cache", Config(helper_depth=2))
    assert len(list((tmp_path / "cache" / "v1").glob("*.json"))) == 1


def test_concurrent_runs_leave_a_valid_pack(tmp_path):
    tree = _tree(tmp_path)
    for n in range(20):
        write_driver(tree / "many" / f"d{n}.c", NOIRQ_WAKE.replace("foo", f"d{n}"))
    command = [sys.executable, "-m", "dpmlens.cli", "check", "-q", "-j", "1", "--cache-dir",
               str(tmp_path / "cache"), "-f", "json", str(tree)]  # fmt: skip
    procs = [subprocess.Popen(command, stdout=subprocess.PIPE) for _ in range(3)]
    outs = [json.loads(p.communicate()[0])["findings"] for p in procs]
    assert outs[0] == outs[1] == outs[2] and len(outs[0]) == 22
    packs = list((tmp_path / "cache" / "v1").glob("*.json"))
    assert len(packs) == 1 and json.loads(packs[0].read_text())["format"] == 1
    assert not list((tmp_path / "cache" / "v1").glob(".*.tmp"))

"""The fleet under faults, on the capture lab's real runs (test-fixtures/lab, always present):
bad captures of every kind, a full disk (a real tmpfs when the test may mount one), a folder
that is not a store, `fleet sql` that tries to write. Each: a clear message naming the input,
no traceback, and the store answering with its old count or its old count plus the whole
ingest. (A kill mid-ingest and two ingests at once: tests/test_fleet_store.py.)"""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fleet_helpers import REPO, dpmlens

LAB = REPO / "test-fixtures" / "lab"
GOOD = LAB / "k61-mem"  # dmesg + ftrace of 2 cycles


def _count(store: Path) -> int:
    r = dpmlens("fleet", "sql", "--store", str(store), "--format", "json",
                "SELECT count(*) AS n FROM captures")
    assert r.returncode == 0, r.stderr
    return int(json.loads(r.stdout)[0]["n"])


def _files(store: Path) -> dict[str, bytes]:
    return {str(p.relative_to(store)): p.read_bytes() for p in sorted(store.rglob("*"))
            if p.is_file() and ".staging" not in p.parts and p.name != ".lock"}


def _member(t: tarfile.TarFile, name: str, data: bytes = b"", kind: bytes = tarfile.REGTYPE,
            link: str = "") -> None:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.size = kind, link, len(data) if kind == tarfile.REGTYPE else 0
    t.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)


def _bad_captures(d: Path) -> dict[str, str]:
    """file name -> what its reject must say."""
    d.mkdir()
    ftrace = gzip.decompress((GOOD / "ftrace.txt.gz").read_bytes())
    (d / "empty_dmesg.txt").write_bytes(b"")
    (d / "binary_ftrace.txt").write_bytes(bytes(range(256)) * 40)
    (d / "plain_ftrace.txt.gz").write_text("tracer: nop, but not gzip\n")
    (d / "cut_ftrace.txt.gz").write_bytes((GOOD / "ftrace.txt.gz").read_bytes()[:20000])
    with tarfile.open(d / "escape.tar.gz", "w:gz") as t:
        _member(t, "../../escaped_dmesg.txt", b"PM: suspend entry (deep)\n")
    with tarfile.open(d / "links.tar", "w") as t:
        _member(t, "cap/dmesg.txt", kind=tarfile.SYMTYPE, link="/etc/passwd")
        _member(t, "cap/ftrace.txt", kind=tarfile.LNKTYPE, link="../../etc/hostname")
    with tarfile.open(d / "inlink.tar", "w") as t:  # a link that stays inside: still no file
        _member(t, "cap/ftrace.txt", ftrace[:1000])
        _member(t, "cap/trace.txt", kind=tarfile.SYMTYPE, link="ftrace.txt")
    return {
        "empty_dmesg.txt": "empty file",
        "binary_ftrace.txt": "binary data that is not a Perfetto trace",
        "plain_ftrace.txt.gz": "named .gz but not gzip data",
        "cut_ftrace.txt.gz": "Compressed file ended before the end-of-stream marker",
        "escape.tar.gz": "is outside the destination",
        "links.tar": "is a link to an absolute path",
        "inlink.tar": "inlink.tar",
    }


def test_bad_captures_are_named_and_the_good_one_lands(tmp_path: Path) -> None:
    store = tmp_path / "store"
    assert dpmlens("fleet", "ingest", "--store", str(store), "-q", str(GOOD)).returncode == 0
    before = _count(store)
    bad = _bad_captures(tmp_path / "bad")
    r = dpmlens("fleet", "ingest", "--store", str(store), str(LAB / "k612-mem"),
                *(str(tmp_path / "bad" / n) for n in sorted(bad)))
    assert r.returncode == 1, r.stderr  # some rejected, the rest stored
    assert "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("dpmlens: rejected: ")]
    for name, why in bad.items():
        line = next((ln for ln in lines if name in ln), None)
        assert line is not None and why in line, (name, r.stderr)
        assert "dpmlens-fleet-" not in line  # never a temporary path
    assert _count(store) == before + 2  # old count plus the whole ingest (k612-mem, 2 cycles)
    assert not (tmp_path / "escaped_dmesg.txt").exists()
    assert not any(p.name == "escaped_dmesg.txt" for p in Path("/").glob("*"))


def test_a_capture_cut_mid_line_is_stored_as_far_as_it_goes(tmp_path: Path) -> None:
    store = tmp_path / "store"
    cut = tmp_path / "cut" / "ftrace.txt"
    cut.parent.mkdir()
    cut.write_bytes(gzip.decompress((GOOD / "ftrace.txt.gz").read_bytes())[:300_000])
    r = dpmlens("fleet", "ingest", "--store", str(store), str(cut))
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    out = dpmlens("fleet", "sql", "--store", str(store), "--format", "json",
                  "SELECT outcome, count(*) AS n FROM captures GROUP BY ALL").stdout
    assert {x["outcome"] for x in json.loads(out)} <= {"pass", "partial"}


def test_a_folder_that_is_not_a_store(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "todo.txt").write_text("not a store\n")
    r = dpmlens("fleet", "ingest", "--store", str(notes), str(GOOD))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"{notes}: exists and is not a dpmlens fleet store" in r.stderr
    assert sorted(p.name for p in notes.iterdir()) == ["todo.txt"]  # nothing written
    for args in (["report"], ["sql", "SELECT 1"]):
        r = dpmlens("fleet", *args, "--store", str(notes))
        assert r.returncode == 2 and "Traceback" not in r.stderr
        assert f"{notes}: not a dpmlens fleet store" in r.stderr
    afile = tmp_path / "afile"
    afile.write_text("x\n")
    r = dpmlens("fleet", "ingest", "--store", str(afile), str(GOOD))
    assert r.returncode == 2 and str(afile) in r.stderr and "Traceback" not in r.stderr
    assert afile.read_text() == "x\n"


@pytest.mark.parametrize("query", [
    "COPY (SELECT 1 AS capture_id) TO '{store}/captures/evil.parquet'",
    "COPY captures TO '{tmp}/out.csv'",
    "CREATE TABLE t AS SELECT * FROM captures",
    "ATTACH '{tmp}/x.duckdb'",
    "EXPORT DATABASE '{tmp}/export'",
    "INSTALL httpfs",
    "SELECT 1; COPY (SELECT 1) TO '{tmp}/two.csv'",
])
def test_fleet_sql_that_tries_to_write_is_refused(tmp_path: Path, query: str) -> None:
    store = tmp_path / "store"
    assert dpmlens("fleet", "ingest", "--store", str(store), "-q", str(GOOD)).returncode == 0
    before = _files(store)
    r = dpmlens("fleet", "sql", "--store", str(store), query.format(store=store, tmp=tmp_path))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "fleet sql" in r.stderr
    assert _files(store) == before and _count(store) == 2  # cycles of the one capture
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store"]  # nothing written anywhere
    ok = dpmlens("fleet", "sql", "--store", str(store), "--format", "csv",
                 "WITH c AS (SELECT kernel FROM captures) SELECT count(*) AS n FROM c")
    assert ok.returncode == 0 and ok.stdout.splitlines()[-1] == "2"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 256 KiB tmpfs (root, and a kernel that lets this process mount)."""
    where = tmp_path / "disk"
    where.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(where)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=False)


def test_a_full_disk_leaves_the_store_as_it_was(small_disk: Path) -> None:
    store = small_disk / "store"
    assert dpmlens("fleet", "ingest", "--store", str(store), "-q", str(GOOD)).returncode == 0
    before = _files(store)
    r = dpmlens("fleet", "ingest", "--store", str(store), "-j", "1",
                str(LAB / "ab" / "6.1" / "A1"))  # 40 cycles: ~330 KiB of Parquet
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "No space left on device" in r.stderr and "the store is unchanged" in r.stderr
    assert "Traceback" not in r.stderr
    assert _files(store) == before and _count(store) == 2
    assert not any((store / ".staging").iterdir())


def _parts() -> list[Path]:
    """The A/B experiment's ftrace parts of both kernels: 8 cycles each, ~40 captures."""
    return sorted(p for p in (LAB / "ab").glob("*/*/part*") if p.is_dir())


def test_sigkill_mid_ingest_then_the_next_ingest_lands_all(tmp_path: Path) -> None:
    import signal
    import sys
    import time

    store = tmp_path / "store"
    assert dpmlens("fleet", "ingest", "--store", str(store), "-q", str(GOOD)).returncode == 0
    before, old = _files(store), _count(store)
    parts = _parts()
    cycles = 8 * len(parts)
    killed = []
    for delay in (1.0, 2.5, 4.0):
        p = subprocess.Popen([sys.executable, "-m", "dpmlens.cli", "fleet", "ingest", "--store",
                              str(store), "-j", "1", *map(str, parts)],
                             cwd=REPO / "server", stderr=subprocess.PIPE, text=True)
        time.sleep(delay)
        if p.poll() is not None:
            p.communicate()
            break  # it finished first: a later kill would find a no-op
        p.send_signal(signal.SIGKILL)
        p.communicate()
        n = _count(store)
        assert n in (old, old + cycles), n  # never a part of an ingest
        killed.append(delay)
        if n != old:
            break  # the kill came after the commit's last rename: all of it landed
        assert _files(store) == before
    assert killed, "every ingest finished before the kill"
    r = dpmlens("fleet", "ingest", "--store", str(store), *map(str, parts))
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert _count(store) == old + cycles
    assert not any((store / ".staging").iterdir())  # the dead ingests' folders removed


def test_two_ingests_at_once_land_each_capture_once(tmp_path: Path) -> None:
    import sys

    store = tmp_path / "store"
    parts = _parts()
    half = len(parts) // 2
    sets = [parts[: half + 4], parts[half - 4:]]  # 8 captures in both
    procs = [subprocess.Popen([sys.executable, "-m", "dpmlens.cli", "fleet", "ingest",
                               "--store", str(store), "-j", "1", *map(str, s)],
                              cwd=REPO / "server", stderr=subprocess.PIPE, text=True)
             for s in sets]
    errs = [p.communicate(timeout=600)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errs
    r = dpmlens("fleet", "sql", "--store", str(store), "--format", "json",
                "SELECT count(*) AS n, count(DISTINCT (capture_id, cycle)) AS u FROM captures")
    assert json.loads(r.stdout) == [{"n": 8 * len(parts), "u": 8 * len(parts)}]

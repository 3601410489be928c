"""`dpmlens fleet ingest|sql` on real captures: tables, ids, re-ingest, bad input, a full
disk, a kill mid-ingest, two ingests at once, a store from a newer dpmlens."""

from __future__ import annotations

import gzip
import json
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import duckdb
import pytest
from fleet_helpers import REPO, dpmlens
from kernel_trees import K612
from traces_helpers import shared_traces


def _sql(store: Path, query: str) -> list[dict]:
    r = dpmlens("fleet", "sql", "--store", str(store), "--format", "json", query)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _files(store: Path) -> dict[str, bytes]:
    """Every visible data file and the marker, with content (what readers can see)."""
    return {str(p.relative_to(store)): p.read_bytes() for p in sorted(store.rglob("*"))
            if p.is_file() and ".staging" not in p.parts and p.name != ".lock"}


def test_ingest_real_captures_tables_and_metadata(tmp_path: Path) -> None:
    store = tmp_path / "store"
    r = dpmlens("fleet", "ingest", "--store", str(store), str(shared_traces()),
                "--meta", "site=lab", "--meta", "trigger=rtcwake")
    assert r.returncode == 0, r.stderr
    assert "6 captures, 6 cycles" in r.stderr
    caps = _sql(store, "SELECT * FROM captures ORDER BY kernel, mode")
    assert [(c["kernel"], c["host"], c["mode"]) for c in caps] == [
        ("3.15.0-latest", "skynet", m) for m in ("disk", "freeze", "mem", "standby")] + [
        ("4.6.0-rc4+", "ivybridge", "freeze"), ("4.6.0-rc4+", "ivybridge", "mem")]
    by_mode = {(c["kernel"], c["mode"]): c for c in caps}
    # the 3.15 captures resume with usb errors (-71 EPROTO, -13 EACCES) in dmesg and ftrace
    mem315 = by_mode[("3.15.0-latest", "mem")]
    assert mem315["outcome"] == "fail" and mem315["error_codes"] == [-71, -13]
    assert mem315["fail_phase"] == "resume"
    ivy = by_mode[("4.6.0-rc4+", "mem")]
    assert ivy["outcome"] == "pass" and ivy["callbacks"] == 1902
    assert ivy["fw_resume_us"] == 154987  # "# fwsuspend 817934 fwresume 154987182" (ns)
    assert ivy["captured_at"].startswith("2016-04-22T15:57:37")
    assert ivy["trigger"] == "rtcwake" and ivy["tags"] == [{"key": "site", "value": "lab"}]
    assert len(ivy["source_files"]) == 2  # the sleepgraph test: dmesg + ftrace, one capture
    cb = _sql(store, "SELECT count(*) AS n, count(*) FILTER (WHERE on_critical_path) AS path,"
                     " min(duration_us) >= 0 AS nonneg FROM callbacks")
    assert cb[0]["n"] == sum(c["callbacks"] for c in caps) and 0 < cb[0]["path"] < cb[0]["n"]
    # the 4.6 captures have kprobe'd delays (msleep ...), the 3.15 ones kernel steps
    assert _sql(store, "SELECT count(*) AS n FROM delays")[0]["n"] > 0
    assert _sql(store, "SELECT count(*) AS n FROM kernel_steps")[0]["n"] > 0
    iss = _sql(store, "SELECT pattern, sum(count) AS n FROM issues GROUP BY pattern "
                      "ORDER BY n DESC LIMIT 1")
    assert "error -N" in iss[0]["pattern"]
    # partitions: capture dates, never kernel versions
    dirs = {p.name for p in (store / "callbacks").iterdir()}
    assert dirs == {"capture_date=2014-06-13", "capture_date=2016-04-22"}


def test_types_are_portable(tmp_path: Path) -> None:
    store = tmp_path / "store"
    assert dpmlens("fleet", "ingest", "--store", str(store), str(shared_traces())).returncode == 0
    con = duckdb.connect()
    bad = ("UUID", "HUGEINT", "INTERVAL", "TIMESTAMP_NS", "TIMESTAMP WITH TIME ZONE_NS")
    for f in store.rglob("*.parquet"):
        for name, typ, *_ in con.execute(f"DESCRIBE SELECT * FROM read_parquet('{f}', "
                                         "hive_partitioning = false)").fetchall():
            assert not any(b in typ for b in bad), (f, name, typ)
            if "at" in name.split("_")[-1:]:
                assert typ == "TIMESTAMP WITH TIME ZONE", (name, typ)
        meta = con.execute(f"SELECT DISTINCT type, logical_type FROM parquet_schema('{f}')"
                           ).fetchall()
        for _, logical in meta:  # timestamps: UTC-adjusted microseconds
            if logical and "Timestamp" in logical:
                assert "isAdjustedToUTC=1" in logical and "MICROS=MicroSeconds()" in logical
                assert "NANOS=<null>" in logical, logical


def test_reingest_is_a_noop_whatever_the_name(tmp_path: Path) -> None:
    store = tmp_path / "store"
    src = shared_traces() / "pm-graph-3.15"
    assert dpmlens("fleet", "ingest", "--store", str(store), str(src)).returncode == 0
    before = _files(store)
    # the same bytes: copied, renamed, packed in a .tar.gz
    copy = tmp_path / "copy"
    shutil.copytree(src, copy)
    arch = tmp_path / "caps.tar.gz"
    with tarfile.open(arch, "w:gz") as t:
        t.add(src, arcname="pm-graph-3.15")
    for again in (src, copy, arch):
        r = dpmlens("fleet", "ingest", "--store", str(store), str(again))
        assert r.returncode == 0, r.stderr
        assert "0 captures" in r.stderr and "4 already in the store" in r.stderr
    assert _files(store) == before


def test_archives_and_gz_are_read(tmp_path: Path) -> None:
    store = tmp_path / "store"
    src = shared_traces() / "pm-graph-4.6"
    arch = tmp_path / "multi.tar.gz"
    with tarfile.open(arch, "w:gz") as t:
        t.add(src, arcname="multi")
    gz = tmp_path / "skynet_mem_ftrace.txt.gz"
    gz.write_bytes(gzip.compress((shared_traces() / "pm-graph-3.15/skynet_mem_ftrace.txt")
                                 .read_bytes()))
    r = dpmlens("fleet", "ingest", "--store", str(store), str(arch), str(gz))
    assert r.returncode == 0, r.stderr
    rows = _sql(store, "SELECT kernel, source_files FROM captures ORDER BY kernel")
    assert [r["kernel"] for r in rows] == ["3.15.0-latest", "4.6.0-rc4+", "4.6.0-rc4+"]
    assert any("multi.tar.gz!" in f for r in rows for f in r["source_files"])


def test_bad_captures_are_rejected_and_the_rest_stored(tmp_path: Path) -> None:
    store = tmp_path / "store"
    caps = tmp_path / "caps"
    caps.mkdir()
    shutil.copy(shared_traces() / "pm-graph-3.15/skynet_mem_ftrace.txt", caps)
    (caps / "notes_dmesg.txt").write_text("nothing about suspend here\n")
    (caps / "broken_ftrace.txt.gz").write_bytes(b"\x1f\x8b\x08\x00garbage")
    r = dpmlens("fleet", "ingest", "--store", str(store), str(caps),
                str(tmp_path / "missing"))
    assert r.returncode == 1, r.stderr  # some rejected, the rest stored
    assert "Traceback" not in r.stderr
    assert "1 captures" in r.stderr and "3 rejected" in r.stderr
    assert f"rejected: {tmp_path / 'missing'}: no such file or directory" in r.stderr
    rej = _sql(store, "SELECT path, reason FROM rejects ORDER BY path")
    assert len(rej) == 3
    assert any("notes_dmesg.txt" in x["path"] for x in rej)
    assert any("broken_ftrace.txt.gz" in x["path"] and x["reason"] for x in rej)
    assert _sql(store, "SELECT count(*) AS n FROM captures")[0]["n"] == 1


def test_newer_store_is_refused_older_read(tmp_path: Path) -> None:
    store = tmp_path / "store"
    assert dpmlens("fleet", "ingest", "--store", str(store),
                   str(shared_traces() / "pm-graph-4.6")).returncode == 0
    marker = store / "dpmlens-store.json"
    info = json.loads(marker.read_text())
    marker.write_text(json.dumps({**info, "format": 99, "created_by": "dpmlens 9.0"}))
    for args in (["sql", "SELECT 1"], ["report"],
                 ["ingest", str(shared_traces() / "pm-graph-3.15")]):
        r = dpmlens("fleet", *args, "--store", str(store))
        assert r.returncode == 2 and "Traceback" not in r.stderr
        assert "written by a newer dpmlens (dpmlens 9.0, store format 99)" in r.stderr
    marker.write_text(json.dumps({**info, "format": 0}))  # older: read
    assert dpmlens("fleet", "sql", "--store", str(store), "SELECT 1").returncode == 0
    r = dpmlens("fleet", "sql", "--store", str(tmp_path), "SELECT 1")
    assert r.returncode == 2 and "not a dpmlens fleet store" in r.stderr


def test_sql_error_is_one_line(tmp_path: Path) -> None:
    store = tmp_path / "store"
    assert dpmlens("fleet", "ingest", "--store", str(store),
                   str(shared_traces() / "pm-graph-4.6")).returncode == 0
    r = dpmlens("fleet", "sql", "--store", str(store), "SELECT nope FROM callbacks")
    assert r.returncode == 2 and "Traceback" not in r.stderr and "query failed" in r.stderr


def test_full_disk_leaves_the_store_as_it_was(tmp_path: Path) -> None:
    if shutil.which("prlimit") is None:
        pytest.skip("prlimit (util-linux) is not installed")
    store = tmp_path / "store"
    assert dpmlens("fleet", "ingest", "--store", str(store),
                   str(shared_traces() / "pm-graph-3.15")).returncode == 0
    before = _files(store)
    # 1 KB per file: no Parquet file of the new captures fits (they are several KB)
    r = subprocess.run(["prlimit", "--fsize=1024", sys.executable, "-m", "dpmlens.cli",
                        "fleet", "ingest", "--store", str(store), "-j", "1",
                        str(shared_traces() / "pm-graph-4.6")],
                       capture_output=True, text=True, cwd=REPO / "server", timeout=300)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "the store is unchanged" in r.stderr and "Traceback" not in r.stderr
    assert _files(store) == before
    assert not any((store / ".staging").iterdir())
    # and the next ingest (no limit) lands
    r = dpmlens("fleet", "ingest", "--store", str(store), str(shared_traces() / "pm-graph-4.6"))
    assert r.returncode == 0 and "2 captures" in r.stderr, r.stderr


def test_sigkill_mid_ingest_leaves_the_store_as_it_was(tmp_path: Path) -> None:
    store = tmp_path / "store"
    assert dpmlens("fleet", "ingest", "--store", str(store),
                   str(shared_traces() / "pm-graph-3.15")).returncode == 0
    before = _files(store)
    caps = tmp_path / "many"
    src = shared_traces() / "pm-graph-4.6/suspend-160422-155735-ivybridge-dev-late"
    for i in range(40):  # distinct content: one stamp byte changed per copy
        d = caps / f"t{i:02d}"
        d.mkdir(parents=True)
        for f in src.iterdir():
            text = f.read_text(errors="replace").replace("155737", f"1557{i:02d}", 1)
            (d / f.name).write_text(text)
    killed_in = []
    for delay in (0.8, 1.6, 2.4):
        p = subprocess.Popen([sys.executable, "-m", "dpmlens.cli", "fleet", "ingest",
                              "--store", str(store), "-j", "1", str(caps)],
                             cwd=REPO / "server", stderr=subprocess.PIPE, text=True)
        time.sleep(delay)
        if p.poll() is not None:
            p.wait()
            break  # it finished first (an idle machine): later kills would find a no-op
        p.send_signal(signal.SIGKILL)
        p.wait()
        if _files(store) != before:
            # the kill came after the commit's last rename (a loaded machine): then all of it
            # landed, never a part
            rows = _sql(store, "SELECT count(*) AS n FROM captures")
            assert rows == [{"n": 44}]
            killed_in.append(-delay)  # killed, after the commit
            break
        killed_in.append(delay)
    assert killed_in, "every ingest finished before the kill: make the input larger"
    # the next ingest cleans up the dead ingests' staging folders and lands everything once
    r = dpmlens("fleet", "ingest", "--store", str(store), str(caps))
    assert r.returncode == 0, r.stderr
    rows = _sql(store, "SELECT count(*) AS n, count(DISTINCT capture_id) AS ids FROM captures")
    assert rows == [{"n": 44, "ids": 44}]  # 4 from before + 40
    assert not any((store / ".staging").iterdir())


def test_interrupted_commit_is_rolled_forward(tmp_path: Path) -> None:
    """A kill between the journal and the last rename: the next writer finishes the move."""
    from dpmlens.fleet.store import JOURNAL, STAGING, Staging, Store

    store = Store(tmp_path / "store")
    store.check(create=True)
    st = Staging(store, "deadbeef")
    (st.dir / "captures/capture_date=2020-01-01").mkdir(parents=True)
    con = duckdb.connect()
    f = st.dir / "captures/capture_date=2020-01-01/x.parquet"
    con.execute(f"COPY (SELECT 'abc' AS capture_id, 0::BIGINT AS cycle) TO '{f}' (FORMAT parquet)")
    (st.dir / JOURNAL).write_text(json.dumps([[str(f.relative_to(st.dir))] * 2]))
    st.close()  # the owner is gone
    done = store.recover()
    assert done and "completed an interrupted commit" in done[0]
    assert (store.root / "captures/capture_date=2020-01-01/x.parquet").is_file()
    assert not any((store.root / STAGING).iterdir())


def test_two_ingests_at_once_both_land(tmp_path: Path) -> None:
    store = tmp_path / "store"
    a, b = shared_traces() / "pm-graph-3.15", shared_traces() / "pm-graph-4.6"
    procs = [subprocess.Popen([sys.executable, "-m", "dpmlens.cli", "fleet", "ingest",
                               "--store", str(store), "-j", "1", str(x), str(a)],
                              cwd=REPO / "server", stderr=subprocess.PIPE, text=True)
             for x in (a, b)]
    errs = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errs
    rows = _sql(store, "SELECT capture_id, count(*) AS n FROM captures GROUP BY ALL")
    assert len(rows) == 6 and all(r["n"] == 1 for r in rows)  # both landed, no duplicates
    # the histograms hold the committed callbacks, once (also when one ingest dropped its copy)
    assert _sql(store, HIST_MATCHES_RAW) == [{"differ": 0}]


HIST_MATCHES_RAW = """
    SELECT count(*) AS differ FROM (
      SELECT kernel, driver, device, phase, count(*) AS n,
             count(*) FILTER (WHERE error <> 0) AS f, sum(duration_us) AS s FROM callbacks
      GROUP BY ALL) r FULL JOIN (
      SELECT kernel, driver, device, phase, sum(n) AS n, sum(failures) AS f, sum(sum_us) AS s
      FROM callback_hist GROUP BY ALL) h USING (kernel, driver, device, phase)
    WHERE r.n IS DISTINCT FROM h.n OR r.f IS DISTINCT FROM h.f OR r.s IS DISTINCT FROM h.s"""


def test_source_mapping_with_source(tmp_path: Path) -> None:
    tree = K612 / "drivers/gpu/drm/i915"
    if not tree.is_dir():
        pytest.skip(f"kernel tree not found at {tree} (CI has no kernel trees)")
    store = tmp_path / "store"
    r = dpmlens("fleet", "ingest", "--store", str(store), "--source", str(tree),
                str(shared_traces() / "pm-graph-3.15/skynet_mem_ftrace.txt"))
    assert r.returncode == 0, r.stderr
    rows = _sql(store, "SELECT phase, function, file, line FROM source_map "
                       "WHERE driver = 'i915' AND phase = 'resume'")
    assert rows and rows[0]["function"] == "i915_pm_resume"
    assert rows[0]["file"].endswith("i915_driver.c") and rows[0]["line"] > 0


def test_capture_cut_before_resume_is_partial(tmp_path: Path) -> None:
    """A capture that ends after suspend (a hang, or a cut log) is `partial`, not `pass`."""
    lines = (shared_traces() / "pm-graph-4.6/suspend-160422-155735-ivybridge-dev-late/"
             "ivybridge_mem_ftrace.txt").read_text(errors="replace").splitlines()
    cut = next(i for i, ln in enumerate(lines) if "[resume]" in ln)
    (tmp_path / "cut_ftrace.txt").write_text("\n".join(lines[:cut]) + "\n")
    store = tmp_path / "store"
    r = dpmlens("fleet", "ingest", "--store", str(store), str(tmp_path / "cut_ftrace.txt"))
    assert r.returncode == 0, r.stderr
    rows = _sql(store, "SELECT outcome, suspend_us, resume_us FROM captures")
    assert rows == [{"outcome": "partial", "suspend_us": rows[0]["suspend_us"],
                     "resume_us": 0}] and rows[0]["suspend_us"] > 0

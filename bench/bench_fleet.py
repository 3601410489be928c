#!/usr/bin/env python3
"""Benchmark the fleet store (issue 22; BENCHMARKS.md, "Fleet").

1. Ingest: N sleepgraph-sized captures (the real ivybridge mem capture of pm-graph 4.6,
   1,902 callbacks, with per-cycle noise: dpmlens.fleet.synthetic) through `dpmlens fleet
   ingest -j 2` in a child process: cycles/s, CPU, peak RSS (the largest process of the tree),
   at two sizes to show memory stays flat. Floor measured in the same run: `load_traces()` of
   the same captures in one process (the trace reader alone, one core).
2. Store size: bytes on disk per cycle of that store.
3. `fleet report` over 10^8 callback rows: a synthetic store written directly with DuckDB
   (66,667 cycles x 1,500 callbacks, 5 kernels, 200 hosts, 300 drivers; the schema, sort
   order and partitioning of `fleet ingest`) as a format-1 store, brought to format 2 by
   `Store.migrate()` (timed: the duration histograms of all 10^8 rows, what ingests write
   batch by batch), then timed in a child process: all per-driver and per-device
   percentiles + the regressions between the kernels from the histograms; the same for one
   driver; the whole report; and, as the same-run reference, the exact path from the raw
   rows (`--exact`).

    python bench/bench_fleet.py [--captures 600] [--rows 100000000] [--skip-big]

Data goes to bench-data/fleet/ (gitignored); the big store is reused when present.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench-data" / "fleet"
sys.path.insert(0, str(REPO / "server"))

from dpmlens.fleet import synthetic  # noqa: E402
from dpmlens.fleet.schema import TABLES  # noqa: E402

IVY = "pm-graph-4.6/suspend-160422-155735-ivybridge-dev-late/ivybridge_mem_ftrace.txt"


def child(code: str) -> dict:
    """Run python code in a fresh process; it prints one JSON line last."""
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=REPO / "server")
    if r.returncode != 0:
        raise SystemExit(r.stderr)
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out.setdefault("wall_s", round(time.perf_counter() - t0, 3))
    return out


def ingest_bench(n: int) -> dict:
    tpl = synthetic.shared_template(IVY)
    if tpl is None:
        raise SystemExit("../shared/traces not found: the ingest benchmark reads a real capture")
    caps = OUT / f"captures-{n}"
    if not caps.is_dir():
        fleet = synthetic.Fleet(["6.11.0", "6.12.0"], hosts=max(1, n // 100),
                                cycles_per_host_kernel=min(n, 50))
        fleet.hosts = max(1, n // (2 * fleet.cycles_per_host_kernel))
        synthetic.generate(tpl, fleet, caps)
    store = OUT / f"store-{n}"
    shutil.rmtree(store, ignore_errors=True)
    code = f"""
import json, time
from dpmlens.fleet.ingest import ingest
from dpmlens.fleet.store import Store
t = time.perf_counter()
s = ingest(Store({str(store)!r}), [{str(caps)!r}], {{}}, jobs=2)
w = time.perf_counter() - t
print(json.dumps({{"captures": s.captures, "cycles": s.cycles, "callbacks": s.callbacks,
                  "rejects": len(s.rejects), "wall_s": round(w, 2), "cpu_s": round(s.cpu_s, 2),
                  "parent_cpu_s": round(s.parent_cpu_s, 2),
                  "peak_rss_mb": round(s.peak_rss_mb, 1)}}))
"""
    out = {"load_before": _load(), **child(code), "load_after": _load()}
    size = sum(p.stat().st_size for p in store.rglob("*") if p.is_file())
    cb_size = sum(p.stat().st_size for p in (store / "callbacks").rglob("*.parquet"))
    out.update({"cycles_per_s": round(out["cycles"] / out["wall_s"], 1),
                "cycles_per_cpu_s": round(out["cycles"] / out["cpu_s"], 1),
                "store_bytes": size, "bytes_per_cycle": round(size / out["cycles"]),
                "callback_bytes_per_cycle": round(cb_size / out["cycles"]),
                "callbacks_per_cycle": round(out["callbacks"] / out["cycles"])})
    return out


def reader_floor(n: int) -> dict:
    caps = OUT / f"captures-{n}"
    code = f"""
import json, time, resource
from pathlib import Path
from dpmlens.traces import load_traces
c = time.process_time()
files = sorted(Path({str(caps)!r}).rglob('*_ftrace.txt'))
t = time.perf_counter()
for f in files:
    load_traces([str(f)])
w = time.perf_counter() - t
u = resource.getrusage(resource.RUSAGE_SELF)
cpu = time.process_time() - c
print(json.dumps({{"files": len(files), "wall_s": round(w, 2), "cpu_s": round(cpu, 2),
                  "per_capture_cpu_ms": round(cpu / len(files) * 1000, 1),
                  "captures_per_cpu_s": round(len(files) / cpu, 1)}}))
"""
    return child(code)


KERNELS = ["6.8.0", "6.9.0", "6.10.0", "6.11.0", "6.12.0"]
PHASES = ["suspend", "suspend_late", "suspend_noirq", "resume_noirq", "resume_early", "resume"]


def big_store(rows: int, per_cycle: int = 1500) -> Path:
    """10^8 callback rows, written with DuckDB in the store's layout (not through ingest:
    parsing 66,667 text captures would take the benchmark hours). Device 7 (driver drv7) is
    30 ms slower in resume from 6.10 on: the regression the report must find."""
    import duckdb

    store = OUT / f"big-{rows}-v2"  # v2: callbacks sorted by driver in each file
    if (store / "dpmlens-store.json").is_file():
        return store
    shutil.rmtree(store, ignore_errors=True)
    tmp = OUT / f"big-{rows}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    cycles = rows // per_cycle
    con = duckdb.connect()
    con.execute("SET threads = 2")
    con.execute("SET preserve_insertion_order = true")
    kern = "['" + "','".join(KERNELS) + "']"
    phases = "['" + "','".join(PHASES) + "']"
    # u(x): a uniform in [0,1) from a hash, deterministic
    cyc = f"""
      SELECT c AS cyc, printf('%020x', hash(c, 'capture') % 1000000000000000000) AS capture_id,
             {kern}[1 + (c * 5) // {cycles}] AS kernel,
             'host' || lpad(CAST(hash(c, 'host') % 200 AS VARCHAR), 3, '0') AS host,
             'machine' || CAST(hash(c, 'host') % 200 % 20 AS VARCHAR) AS machine,
             DATE '2026-01-01' + CAST(c // 1000 AS INTEGER) AS capture_date
      FROM range({cycles}) t(c)"""
    con.execute(f"CREATE TABLE cyc AS {cyc}")
    con.execute(f"""COPY (
      SELECT capture_id, 0::BIGINT AS cycle,
             CAST(capture_date AS TIMESTAMPTZ) AS captured_at, kernel, host, machine,
             'mem' AS mode, 'rtcwake' AS trigger, NULL::BIGINT AS fw_suspend_us,
             NULL::BIGINT AS fw_resume_us, NULL AS sysinfo, NULL AS command,
             CASE WHEN hash(cyc, 'f') % 100 = 0 THEN 'fail' ELSE 'pass' END AS outcome,
             NULL AS fail_phase, []::BIGINT[] AS error_codes, 900000::BIGINT AS suspend_us,
             700000::BIGINT AS resume_us, {per_cycle}::BIGINT AS callbacks,
             []::VARCHAR[] AS source_files, []::VARCHAR[] AS notes,
             []::STRUCT(key VARCHAR, value VARCHAR)[] AS tags, 'bench' AS ingest_id,
             now()::TIMESTAMPTZ AS ingested_at, '0.1.0' AS dpmlens_version, capture_date
      FROM cyc ORDER BY cyc) TO '{tmp}/captures' (FORMAT parquet, COMPRESSION zstd,
      PARTITION_BY (capture_date), FILENAME_PATTERN 'bench-{{i}}')""")
    for part in range(0, cycles, 10000):  # bounded memory: 15M rows per COPY
        hi = min(cycles, part + 10000)
        con.execute(f"""COPY (
          SELECT c.capture_id, 0::BIGINT AS cycle, c.kernel, c.host, c.machine,
                 'drv' || CAST(d % 300 AS VARCHAR) AS driver,
                 'dev' || CAST(d AS VARCHAR) AS device, 'dev' || CAST(d // 8 AS VARCHAR) AS parent,
                 {phases}[1 + d % 6] AS phase, 'bus' AS layer,
                 'kworker/u8:' || CAST(d % 8 AS VARCHAR) AS thread,
                 (c.cyc * 10000000 + d * 500)::BIGINT AS start_us,
                 CAST((50 + (hash(d) % 20000)) * (0.8 + 0.4 * (hash(c.cyc, d) % 1000000) / 1e6)
                      + CASE WHEN d = 7 AND c.kernel IN ('6.10.0', '6.11.0', '6.12.0')
                             THEN 30000 ELSE 0 END AS BIGINT) AS duration_us,
                 CASE WHEN hash(c.cyc, d, 'e') % 100000 = 0 THEN -110 ELSE 0 END::BIGINT AS error,
                 (d % 25 = 0) AS on_critical_path, c.capture_date
          FROM (SELECT * FROM cyc WHERE cyc >= {part} AND cyc < {hi}) c,
               range({per_cycle}) r(d)
          ORDER BY driver, device, phase, c.capture_id) TO '{tmp}/callbacks' (FORMAT parquet, COMPRESSION zstd,
          PARTITION_BY (capture_date), OVERWRITE_OR_IGNORE,
          FILENAME_PATTERN 'bench-{part}-{{i}}')""")
        print(f"  big store: {hi * per_cycle:,} rows", file=sys.stderr, flush=True)
    for t, cols in TABLES.items():  # the other tables: empty but typed
        if t in ("captures", "callbacks"):
            continue
        typed = ", ".join(f"CAST(NULL AS {ty}) AS {c}" for c, ty in cols)
        (tmp / t / "capture_date=2026-01-01").mkdir(parents=True)
        con.execute(f"COPY (SELECT {typed} WHERE false) TO "
                    f"'{tmp}/{t}/capture_date=2026-01-01/empty.parquet' (FORMAT parquet)")
    (tmp / "dpmlens-store.json").write_text('{"format": 1, "created_by": "bench_fleet"}\n')
    tmp.rename(store)
    return store


def migrate_bench(store: Path) -> dict:
    """Format 1 -> 2: the histograms of every callback row (redone on each run: the store is
    the benchmark's own)."""
    marker = store / "dpmlens-store.json"
    if json.loads(marker.read_text())["format"] != 1:
        shutil.rmtree(store / "callback_hist", ignore_errors=True)
        marker.write_text('{"format": 1, "created_by": "bench_fleet"}\n')
    code = f"""
import json, time, resource
from dpmlens.fleet.store import Store
t, c = time.perf_counter(), time.process_time()
done = Store({str(store)!r}).migrate()
print(json.dumps({{"done": done, "wall_s": round(time.perf_counter() - t, 2),
                  "cpu_s": round(time.process_time() - c, 2),
                  "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}}))
"""
    out = child(code)
    hist = list((store / "callback_hist").rglob("*.parquet"))
    out["hist_bytes"] = sum(p.stat().st_size for p in hist)
    import duckdb
    lst = ", ".join(f"'{p}'" for p in hist)
    out["hist_rows"] = duckdb.sql(f"SELECT count(*) FROM read_parquet([{lst}])").fetchall()[0][0]
    return out


def report_bench(store: Path, exact: bool = True) -> dict:
    code = f"""
import json, time, resource
from dpmlens.fleet.store import Store
cpu = time.process_time  # all threads of the process (DuckDB's too)
from dpmlens.fleet import hist_stats, stats, regress, report_model, thresholds
con = Store({str(store)!r}).connect(threads=2)
out = {{}}
t = time.perf_counter(); n = con.execute("SELECT count(*) FROM callbacks").fetchone()[0]
out["rows"] = n; out["count_s"] = round(time.perf_counter() - t, 2)
sc = stats.Scope("kernel")
def found(r):
    return sorted({{(c.kind, c.driver, c.device, c.phase, c.changed_from) for c in r.changes}})
t, c = time.perf_counter(), cpu()
g = stats.groups(con, sc)
rows, binned = hist_stats.callback_stats(con, sc)
out["percentiles_s"] = round(time.perf_counter() - t, 2)
r = regress.find(con, sc, g, per_device=rows, hist=binned)
out["all_drivers_s"] = round(time.perf_counter() - t, 2)
out["all_drivers_cpu_s"] = round(cpu() - c, 2)
out["stats_rows"] = len(rows); out["tested"] = r.tested; out["found"] = found(r)
one = stats.Scope("kernel", driver="drv7")
t, c = time.perf_counter(), cpu()
rows1, b1 = hist_stats.callback_stats(con, one)
r1 = regress.find(con, one, g, per_device=rows1, hist=b1)
out["one_driver_s"] = round(time.perf_counter() - t, 2)
out["one_driver_cpu_s"] = round(cpu() - c, 2)
out["one_found"] = found(r1)
settings, _ = thresholds.load(None, "/")
t, c = time.perf_counter(), cpu()
doc = report_model.build(con, sc, settings, "big", histograms=True)
out["full_report_s"] = round(time.perf_counter() - t, 2)
out["full_report_cpu_s"] = round(cpu() - c, 2)
out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
if {exact!r}:  # the same-run reference: exact quantiles and sampled tests from the raw rows
    t, c = time.perf_counter(), cpu()
    rows_x = stats.callback_stats(con, sc)
    out["exact_percentiles_s"] = round(time.perf_counter() - t, 2)
    rx = regress.find(con, sc, g, per_device=rows_x)
    out["exact_all_drivers_s"] = round(time.perf_counter() - t, 2)
    out["exact_all_drivers_cpu_s"] = round(cpu() - c, 2)
    out["exact_found"] = found(rx)
    ex = {{(x["grp"], x["driver"], x["device"], x["phase"]): x for x in rows_x}}
    worst = 0.0
    for x in rows:
        e = ex[(x["grp"], x["driver"], x["device"], x["phase"])]
        for q in ("p50_us", "p95_us", "p99_us"):
            worst = max(worst, abs(x[q] - e[q]) / max(e[q], 1))
    out["worst_percentile_error"] = worst
    out["peak_rss_mb_with_exact"] = round(
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
print(json.dumps(out))
"""
    return child(code)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--captures", type=int, default=600)
    ap.add_argument("--rows", type=int, default=100_000_000)
    ap.add_argument("--skip-big", action="store_true")
    ap.add_argument("--only-big", action="store_true")
    ap.add_argument("--no-exact", action="store_true", help="skip the raw-row reference")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    res: dict = {"uptime": subprocess.run(["uptime"], capture_output=True, text=True).stdout
                 .strip(), "cpu": _cpu()}
    small = max(100, args.captures // 4)
    if not args.only_big:
        res["ingest_small"] = ingest_bench(small)
        res["ingest"] = ingest_bench(args.captures)
        res["reader_floor"] = reader_floor(small)
        print(json.dumps(res, indent=1), flush=True)
    if not args.skip_big:
        t = time.perf_counter()
        store = big_store(args.rows)
        res["big_store_build_s"] = round(time.perf_counter() - t, 1)
        res["migrate"] = migrate_bench(store)
        res["big_store_bytes"] = sum(p.stat().st_size for p in store.rglob("*") if p.is_file())
        res["report"] = report_bench(store, exact=not args.no_exact)
        res["uptime_after"] = subprocess.run(["uptime"], capture_output=True,
                                             text=True).stdout.strip()
    print(json.dumps(res, indent=1))
    (OUT / "last.json").write_text(json.dumps(res, indent=1))


def _load() -> str:
    return Path("/proc/loadavg").read_text().split(" ", 3)[:3].__str__()


def _cpu() -> str:
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    return next((ln.split(":", 1)[1].strip() for ln in out.splitlines()
                 if ln.startswith("Model name")), "?")


if __name__ == "__main__":
    main()

"""Store stage: per-ingest histograms of callback durations (table `callback_hist`).

Written next to the raw rows by every ingest (and once over an older store's rows by the
migration to store format 2): one row per (kernel, driver, device, phase, capture_date,
duration bucket) of the ingest's callbacks, with the runs, failures, runs on the critical
path, their time and the sum of durations. `fleet report --by kernel` reads these ~10^5 rows
instead of the 10^8 raw ones; the raw rows stay the source of truth (`fleet sql`, `--exact`,
`--by host|machine`, Spark).

Buckets keep a duration's 8 leading bits: d < 256 us is its own bucket (exact); above, the
bucket is d with its low bitlen(d) - 8 bits cleared, `width_us` = 2^(bitlen(d) - 8) <= lo/128.
A bucket stands for the midpoint of its integers, lo + (width - 1)/2, within (width - 1)/2
< d/256 of every value in it (dpmlens.fleet.binned states what that bounds).
"""

from __future__ import annotations

from pathlib import Path

import duckdb

SIG_BITS = 8
EXACT_BELOW = 1 << SIG_BITS  # 256 us
TABLE = "callback_hist"
WORST = "phase_worst"  # per (capture, cycle, phase): its slowest callback
DERIVED = (TABLE, WORST)


def _shift(col: str) -> str:
    return f"(CAST(floor(log2({col})) AS BIGINT) - {SIG_BITS - 1})"


def bucket_sql(col: str = "duration_us") -> str:
    """The bucket (its lowest value) of a BIGINT duration, in DuckDB SQL."""
    return (f"CASE WHEN {col} < {EXACT_BELOW} THEN {col} "
            f"ELSE ({col} >> {_shift(col)}) << {_shift(col)} END")


def width_sql(col: str = "duration_us") -> str:
    return f"CASE WHEN {col} < {EXACT_BELOW} THEN 1 ELSE 1 << {_shift(col)} END"


def bucket_py(d: int) -> tuple[int, int]:
    """(bucket, width) of one duration: the definition, for tests and readers without SQL."""
    if d < EXACT_BELOW:
        return d, 1
    s = d.bit_length() - SIG_BITS
    return (d >> s) << s, 1 << s


def aggregate_sql(files: list[Path]) -> str:
    """SELECT of the histogram rows of some callbacks Parquet files (hive-partitioned by
    capture_date), sorted by driver first so a query for one driver skips other row groups."""
    lst = ", ".join(_quote(str(f)) for f in files)
    return f"""
      SELECT kernel, driver, device, phase, {bucket_sql()} AS bucket_us,
             {width_sql()} AS width_us, count(*) AS n,
             count(*) FILTER (WHERE error <> 0) AS failures,
             count(*) FILTER (WHERE on_critical_path) AS on_path,
             coalesce(sum(duration_us) FILTER (WHERE on_critical_path), 0)::BIGINT AS path_us,
             sum(duration_us)::BIGINT AS sum_us, capture_date
      FROM read_parquet([{lst}], hive_partitioning = true, union_by_name = true)
      WHERE duration_us IS NOT NULL
      GROUP BY kernel, driver, device, phase, bucket_us, width_us, capture_date
      ORDER BY driver, device, phase, kernel, bucket_us"""


def worst_sql(files: list[Path]) -> str:
    """SELECT of pm-graph's "worst device" per cycle and phase (one row each): what
    `fleet report` counts per phase without reading every run."""
    lst = ", ".join(_quote(str(f)) for f in files)
    return f"""
      SELECT kernel, host, machine, capture_id, cycle, phase,
             max({{'u': duration_us, 'driver': driver, 'device': device}}) AS w,
             max(duration_us) AS duration_us, capture_date
      FROM read_parquet([{lst}], hive_partitioning = true, union_by_name = true)
      WHERE duration_us IS NOT NULL
      GROUP BY kernel, host, machine, capture_id, cycle, phase, capture_date"""


def write(con: duckdb.DuckDBPyConnection, files: list[Path], out_dir: Path, name: str) -> None:
    """Write the derived tables of `files` (callbacks Parquet) under out_dir/<table>/
    capture_date=D/<name>-<i>.parquet: the histograms and the worst device per phase."""
    if not files:
        return
    opts = ("(FORMAT parquet, COMPRESSION zstd, PARTITION_BY (capture_date), "
            f"OVERWRITE_OR_IGNORE, FILENAME_PATTERN '{name}-{{i}}')")
    con.execute(f"COPY ({aggregate_sql(files)}) TO {_quote(str(out_dir / TABLE))} {opts}")
    con.execute(f"COPY (SELECT kernel, host, machine, capture_id, cycle, phase, "
                f"w.driver AS driver, w.device AS device, duration_us, capture_date "
                f"FROM ({worst_sql(files)}) ORDER BY capture_id, cycle, phase) "
                f"TO {_quote(str(out_dir / WORST))} {opts}")


def _quote(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"

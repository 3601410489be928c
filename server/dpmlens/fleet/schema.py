"""The store's tables: columns and their types, the one definition every stage uses.

Only types every engine reads (Spark, Trino, BigQuery, Polars): BIGINT (int64) durations in
microseconds, TIMESTAMPTZ (UTC, microseconds), VARCHAR, BOOLEAN, DOUBLE, lists and structs.
Never UUID, HUGEINT, INTERVAL or TIMESTAMP_NS. Kernel versions are columns, never folder
names (`kernel=6.10` in a folder name reads as the number 6.1 in Spark and Polars).
"""

from __future__ import annotations

# Bump when a table changes incompatibly; a store written with a higher number is refused.
# 1: raw tables only. 2: + callback_hist (per-ingest duration histograms) and phase_worst
# (the slowest callback per cycle and phase), both derived from callbacks (dpmlens.fleet.hist);
# a format-1 store is read as it is (reports from the raw rows) and migrated by the next
# ingest or `fleet migrate`.
STORE_FORMAT = 2
# the one folder level: capture_date=YYYY-MM-DD (for rejects: the ingest date)
PARTITION = "capture_date"

_WHO = [("kernel", "VARCHAR"), ("host", "VARCHAR"), ("machine", "VARCHAR")]

TABLES: dict[str, list[tuple[str, str]]] = {
    # one row per suspend/resume cycle
    "captures": [
        ("capture_id", "VARCHAR"), ("cycle", "BIGINT"), ("captured_at", "TIMESTAMPTZ"),
        *_WHO, ("mode", "VARCHAR"), ("trigger", "VARCHAR"),
        ("fw_suspend_us", "BIGINT"), ("fw_resume_us", "BIGINT"),
        ("sysinfo", "VARCHAR"), ("command", "VARCHAR"),
        ("outcome", "VARCHAR"),  # pass | fail | partial
        ("fail_phase", "VARCHAR"), ("error_codes", "BIGINT[]"),
        ("suspend_us", "BIGINT"), ("resume_us", "BIGINT"), ("callbacks", "BIGINT"),
        ("source_files", "VARCHAR[]"), ("notes", "VARCHAR[]"),
        ("tags", "STRUCT(key VARCHAR, value VARCHAR)[]"),
        ("ingest_id", "VARCHAR"), ("ingested_at", "TIMESTAMPTZ"), ("dpmlens_version", "VARCHAR"),
    ],
    "phases": [
        ("capture_id", "VARCHAR"), ("cycle", "BIGINT"), *_WHO,
        ("phase", "VARCHAR"), ("start_us", "BIGINT"), ("wall_us", "BIGINT"),
        ("measured", "BOOLEAN"),
    ],
    "callbacks": [
        ("capture_id", "VARCHAR"), ("cycle", "BIGINT"), *_WHO,
        ("driver", "VARCHAR"), ("device", "VARCHAR"), ("parent", "VARCHAR"),
        ("phase", "VARCHAR"), ("layer", "VARCHAR"), ("thread", "VARCHAR"),
        ("start_us", "BIGINT"), ("duration_us", "BIGINT"), ("error", "BIGINT"),
        ("on_critical_path", "BOOLEAN"),
    ],
    "kernel_steps": [
        ("capture_id", "VARCHAR"), ("cycle", "BIGINT"), *_WHO,
        ("step", "VARCHAR"), ("value", "BIGINT"), ("start_us", "BIGINT"),
        ("duration_us", "BIGINT"),
    ],
    "delays": [
        ("capture_id", "VARCHAR"), ("cycle", "BIGINT"), *_WHO,
        ("func", "VARCHAR"), ("caller", "VARCHAR"), ("requested_us", "BIGINT"),
        ("calls", "BIGINT"), ("total_us", "BIGINT"), ("start_us", "BIGINT"),
        ("driver", "VARCHAR"), ("device", "VARCHAR"), ("phase", "VARCHAR"),
        ("on_critical_path", "BOOLEAN"),
    ],
    "rpm_events": [
        ("capture_id", "VARCHAR"), *_WHO, ("device", "VARCHAR"), ("kind", "VARCHAR"),
        ("start_us", "BIGINT"), ("duration_us", "BIGINT"), ("ret", "BIGINT"),
        ("usage", "BIGINT"), ("thread", "VARCHAR"),
    ],
    "source_map": [
        ("capture_id", "VARCHAR"), ("driver", "VARCHAR"), ("device", "VARCHAR"),
        ("phase", "VARCHAR"), ("function", "VARCHAR"), ("file", "VARCHAR"), ("line", "BIGINT"),
        ("member", "VARCHAR"), ("ops_table", "VARCHAR"), ("via", "VARCHAR"),
    ],
    "issues": [
        ("capture_id", "VARCHAR"), *_WHO, ("pattern", "VARCHAR"), ("example", "VARCHAR"),
        ("count", "BIGINT"),
    ],
    # per ingest: callbacks binned by duration (dpmlens.fleet.hist); derived from `callbacks`
    "callback_hist": [
        *_WHO[:1], ("driver", "VARCHAR"), ("device", "VARCHAR"), ("phase", "VARCHAR"),
        ("bucket_us", "BIGINT"), ("width_us", "BIGINT"), ("n", "BIGINT"),
        ("failures", "BIGINT"), ("on_path", "BIGINT"), ("path_us", "BIGINT"),
        ("sum_us", "BIGINT"),
    ],
    # per ingest: the slowest callback of each (capture, cycle, phase); derived from `callbacks`
    # per callback run: its wait for other devices' callbacks (a lock, a shared controller),
    # from the capture's evidence (traces.analysis.lock_waits): runs the evidence says nothing
    # of have no row; a format-2 store without this table reads as one without evidence
    "callback_waits": [
        ("capture_id", "VARCHAR"), ("cycle", "BIGINT"), *_WHO, ("driver", "VARCHAR"),
        ("device", "VARCHAR"), ("phase", "VARCHAR"), ("start_us", "BIGINT"),
        ("wait_us", "BIGINT"), ("waited_for", "VARCHAR[]"), ("evidence", "VARCHAR"),
    ],
    "phase_worst": [
        ("capture_id", "VARCHAR"), ("cycle", "BIGINT"), *_WHO, ("phase", "VARCHAR"),
        ("driver", "VARCHAR"), ("device", "VARCHAR"), ("duration_us", "BIGINT"),
    ],
    "rejects": [
        ("path", "VARCHAR"), ("capture_id", "VARCHAR"), ("reason", "VARCHAR"),
        ("ingest_id", "VARCHAR"), ("rejected_at", "TIMESTAMPTZ"),
    ],
}

# Rows of these tables are sorted before writing: neighbours share values, so Parquet's
# dictionary/RLE and zstd store them in little space. Callbacks are sorted by callback first:
# a row group then holds few drivers, and its min/max statistics let a query for one driver
# skip the others' row groups.
SORT = {
    "callbacks": "driver, device, phase, capture_id, cycle",
    "phases": "capture_id, cycle, start_us",
    "kernel_steps": "capture_id, cycle, start_us",
    "delays": "capture_id, cycle, start_us",
    "rpm_events": "capture_id, start_us",
    "callback_waits": "driver, device, phase, capture_id, cycle",
}

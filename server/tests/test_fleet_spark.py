"""A real local Spark reads the store `fleet ingest` wrote and gets DuckDB's percentiles,
number for number (docs/fleet.md, "Beyond one machine").

Percentile: linear interpolation between closest ranks at position (n-1)q (Hyndman-Fan type
7) -- DuckDB's quantile_cont and Spark's exact `percentile` both compute it -- rounded to
0.001 us in both (dpmlens.fleet.stats says why that loses no digit). pyspark is
installed into the venv by `make .venv/.spark` (part of `make test`); the test skips only
when there is no Java runtime.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from fleet_helpers import synthetic_store

from dpmlens.fleet import stats
from dpmlens.fleet.store import Store


def _java() -> None:
    home = os.environ.get("JAVA_HOME")
    if not (shutil.which("java") or (home and Path(home, "bin", "java").is_file())):
        pytest.skip("no Java runtime (Spark needs Java 17 or 21): apt-get install "
                    "openjdk-17-jre-headless")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synthetic_store(tmp_path_factory.getbasetemp())


def test_spark_and_duckdb_agree_on_every_percentile(store: Path) -> None:
    _java()
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        pytest.fail("pyspark is not installed: `make .venv/.spark` installs it (make test does)")
    con = Store(store).connect()
    duck = {(r["grp"], r["driver"], r["device"], r["phase"]):
            (r["n"], r["p50_us"], r["p95_us"], r["p99_us"])
            for r in stats.callback_stats(con, stats.Scope("kernel"))}
    con.close()
    spark = (SparkSession.builder.master("local[2]").appName("dpmlens-fleet-test")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
             .config("spark.driver.memory", "1g").getOrCreate())
    try:
        spark.read.parquet(str(store / "callbacks")).createOrReplaceTempView("callbacks")
        schema = dict(spark.table("callbacks").dtypes)
        assert schema["kernel"] == "string" and schema["duration_us"] == "bigint"
        assert schema["capture_date"] == "date"  # the partition folder, read as a date
        q = """SELECT kernel, driver, {dev} AS device, phase, count(*) AS n,
                      transform(percentile(duration_us, array(0.5, 0.95, 0.99)),
                                x -> round(x, 3)) AS q
               FROM callbacks GROUP BY kernel, driver, {grp} phase"""
        rows = (spark.sql(q.format(dev="'*'", grp="")).collect()
                + spark.sql(q.format(dev="device", grp="device,")).collect())
        cycles = spark.read.parquet(str(store / "captures")).count()
    finally:
        spark.stop()
    sparkd = {(r["kernel"], r["driver"], r["device"], r["phase"]):
              (r["n"], r["q"][0], r["q"][1], r["q"][2]) for r in rows}
    assert cycles == 1800
    assert len(sparkd) == len(duck) > 1000
    assert sparkd.keys() == duck.keys()
    differ = [(k, duck[k], sparkd[k]) for k in duck if duck[k] != sparkd[k]]
    assert not differ, differ[:5]

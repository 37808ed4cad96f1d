"""Issue 20: writes into bucket-partitioned tables by Spark's own Parquet writer.

Spark has no expression for the spec's bucket hash, so a bucket field used to send every write
into such a table through the Python data source. Now a native write computes it with the
lakecat SQL catalog's ``bucket`` function (``spark_ext/native/partitions.py``), and the tasks
of a merge-on-read statement compute it themselves (``NativeRows``). This script times, in one
session with the catalog ``lake``, on tables partitioned by ``bucket(8, id)``, alternating the
order each round:

* ``lk.write`` of ``--rows`` rows: native (the catalog's function) against the data source
  (the same call with the session's lakecat catalog settings unset for its duration, which is
  what a session without a catalog does);
* the same native ``lk.write`` against plain Parquet written by Spark
  (``partitionBy(pmod(hash(id), 8))``, Spark's own hash: the floor of a partitioned write);
* a merge-on-read ``UPDATE`` of 1% of the rows: the new rows written in the tasks against
  staged through the data source (``spark.lakecat.nativeRowLevelWrites=false``).

Reported: median seconds (min-max) per mode and the median of the per-round ratios.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from common import PairedRounds, Report, base_parser, catalog_session, workdir

ROW_LEVEL_SETTING = "spark.lakecat.nativeRowLevelWrites"
MODES = ("native", "data source")
COLUMNS = "id bigint, v bigint, name string, value double, ts timestamp"
MOR = ", ".join(f"'write.{kind}.mode' = 'merge-on-read'" for kind in ("delete", "update", "merge"))


def main() -> None:
    parser = base_parser(__doc__ or "")
    parser.add_argument("--rows", type=int, default=None, help="rows written (2,000,000)")
    parser.add_argument("--repeats", type=int, default=None, help="rounds (5)")
    args = parser.parse_args()
    rows = args.rows or (20_000 if args.quick else 2_000_000)
    repeats = args.repeats or (2 if args.quick else 5)
    from pyspark.sql import functions as F

    import lakecat.spark_ext as lk
    from lakecat.catalog import Catalog

    report = Report("bench_bucket_writes", {**vars(args), "rows": rows, "repeats": repeats})
    with workdir(args, "lakecat-bench-bucket-writes-") as root:
        catalog = Catalog.embedded(Path(root) / "lake")
        spark = catalog_session(catalog, "lakecat-bench-bucket-writes")
        lk.register(spark, catalog=catalog)  # the "lakecat" format lk.write falls back to
        # the rows of bench_spark.py (and v, which the UPDATE changes)
        big = spark.range(rows).selectExpr(
            "id",
            "id % 97 AS v",
            "concat('name-', cast(id % 1000 as string)) AS name",
            "cast(id as double) * 0.5 AS value",
            "timestamp_seconds(1700000000 + id) AS ts",
        )
        big = big.cache()
        big.count()
        catalog_conf = "spark.sql.catalog.lake"
        plugin = spark.conf.get(catalog_conf)
        for mode in ("native", "source", "plain"):
            spark.sql(
                f"CREATE TABLE lake.db.write_{mode} ({COLUMNS}) PARTITIONED BY (bucket(8, id))"
            )
        for mode in ("native", "source"):
            spark.sql(
                f"CREATE TABLE lake.db.mor_{mode} ({COLUMNS}) "
                f"PARTITIONED BY (bucket(8, id)) TBLPROPERTIES ({MOR})"
            )
            lk.write(big, f"db.mor_{mode}", catalog=catalog)

        def without_catalog(call: Any) -> Any:
            def run() -> Any:
                spark.conf.unset(catalog_conf)
                try:
                    support = call()
                finally:
                    spark.conf.set(catalog_conf, plugin)
                assert not support.native, "the write went native without the catalog"
                return support

            return run

        def native_write(table: str) -> Any:
            def run() -> Any:
                support = lk.write(big, table, catalog=catalog)
                assert support.native, support.reason
                return support

            return run

        def update(table: str, setting: str, round_: int) -> Any:
            def run() -> Any:
                spark.conf.set(ROW_LEVEL_SETTING, setting)
                try:
                    return spark.sql(
                        f"UPDATE lake.db.{table} SET v = v + 1 WHERE id % 100 = {round_}"
                    ).collect()
                finally:
                    spark.conf.unset(ROW_LEVEL_SETTING)

            return run

        plain_folder = os.path.join(root, "plain")

        def plain(round_: int) -> Any:
            bucketed = big.withColumn("b", F.pmod(F.hash("id"), F.lit(8)))
            return lambda: bucketed.write.partitionBy("b").parquet(f"{plain_folder}/{round_}")

        steps = {
            "native": lambda r: {
                f"lk.write {rows:,} rows": native_write("db.write_native"),
                "UPDATE 1% (merge-on-read)": update("mor_native", "true", r),
            },
            "data source": lambda r: {
                f"lk.write {rows:,} rows": without_catalog(
                    lambda: lk.write(big, "db.write_source", catalog=catalog)
                ),
                "UPDATE 1% (merge-on-read)": update("mor_source", "false", r),
            },
        }
        against_source = PairedRounds(list(steps["native"](0)), *MODES)
        against_plain = PairedRounds([f"write {rows:,} rows"], "lakecat native", "plain Parquet")
        for round_ in range(repeats + 1):  # round 0 warms up
            seconds: dict[tuple[str, str], float] = {}
            for mode in MODES if round_ % 2 else MODES[::-1]:
                for name, run in steps[mode](round_).items():
                    start = time.perf_counter()
                    run()
                    seconds[(name, mode)] = time.perf_counter() - start
            against_source.record(round_, seconds)
            pair: dict[tuple[str, str], float] = {}
            runs = {
                "lakecat native": native_write("db.write_plain"),
                "plain Parquet": plain(round_),
            }
            for mode in list(runs) if round_ % 2 else list(runs)[::-1]:
                start = time.perf_counter()
                runs[mode]()
                pair[(f"write {rows:,} rows", mode)] = time.perf_counter() - start
            against_plain.record(round_, pair)
        spark.stop()
        catalog.close()
    report.table(
        f"bucket(8, id) tables: native against the data source ({repeats} rounds, seconds)",
        ["statement", "native", "data source", "ratio (min-max)"],
        against_source.rows(),
    )
    report.table(
        f"bucket(8, id): lakecat's native write against plain Parquet ({repeats} rounds)",
        ["statement", "lakecat native", "plain Parquet", "ratio (min-max)"],
        against_plain.rows(),
    )
    report.data = {"against_source": against_source.data(), "against_plain": against_plain.data()}
    report.write()


if __name__ == "__main__":
    main()

"""Issue 20: the catalog's transform functions against Spark's built-in hash, in one session.

``SELECT sum(lake.system.bucket(16, id))`` (and ``truncate(10, id)``, ``hours(ts)``,
``bucket(16, s)`` of a string) over a cached DataFrame of ``--rows`` rows, each against Spark's
built-in ``sum(hash(...))`` of the same column in the same run, interleaved, ``--repeats`` times
after a warm-up. The ratio is the function's cost over a built-in expression's: Spark runs the
transforms row by row (``ScalarFunction.produceResult``), a built-in in generated code.

``--jar`` runs with another build of the catalog plugin: for an A/B of two builds, run the
script once per jar, alternating.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from common import Report, base_parser, median, workdir

QUERIES = {
    "bucket(16, id)": ("lake.system.bucket(16, id)", "hash(id)"),
    "truncate(10, id)": ("lake.system.truncate(10, id)", "hash(id)"),
    "hours(ts)": ("lake.system.hours(ts)", "hash(ts)"),
    "bucket(16, s)": ("lake.system.bucket(16, s)", "hash(s)"),
}


def main() -> None:
    parser = base_parser(__doc__ or "")
    parser.add_argument("--rows", type=int, default=None, help="rows (10,000,000)")
    parser.add_argument("--repeats", type=int, default=None, help="repeats (5)")
    parser.add_argument("--jar", help="the catalog plugin's jar (default: the shipped one)")
    args = parser.parse_args()
    rows = args.rows or (200_000 if args.quick else 10_000_000)
    repeats = args.repeats or (1 if args.quick else 5)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from lakecat.catalog import Catalog
    from lakecat.spark_ext import attach_catalog, catalog_jar

    jar = args.jar or catalog_jar()
    report = Report("bench_sql_functions", {**vars(args), "rows": rows, "repeats": repeats})
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("lakecat-bench-sql-functions")
        .config("spark.driver.extraClassPath", jar)
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    with workdir(args, "lakecat-bench-functions-") as root:
        catalog = Catalog.embedded(Path(root) / "lake")
        attach_catalog(spark, "lake", catalog=catalog)
        spark.range(rows).selectExpr(
            "id", "timestamp_micros(id * 1000003) AS ts", "CAST(id AS STRING) AS s"
        ).cache().createOrReplaceTempView("src")
        spark.sql("SELECT count(*) FROM src").collect()  # materialize the cache

        def timed(expression: str) -> float:
            start = time.perf_counter()
            spark.sql(f"SELECT sum({expression}) FROM src").collect()
            return time.perf_counter() - start

        for ours, theirs in QUERIES.values():  # warm-up
            timed(ours)
            timed(theirs)
        times: dict[str, tuple[list[float], list[float]]] = {q: ([], []) for q in QUERIES}
        for _ in range(repeats):
            for name, (ours, theirs) in QUERIES.items():
                times[name][0].append(timed(ours))
                times[name][1].append(timed(theirs))
        spark.stop()
        catalog.close()
    body = []
    for name, (ours, theirs) in times.items():
        ratios = [a / b for a, b in zip(ours, theirs, strict=True)]
        body.append(
            [
                name,
                f"{median(ours):.3f} ({min(ours):.3f}-{max(ours):.3f})",
                f"{median(theirs):.3f}",
                f"{median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f}x)",
            ]
        )
    report.table(
        f"transform functions over {rows:,} rows ({repeats} repeats, seconds; jar {jar})",
        ["function", "seconds (min-max)", "built-in hash", "ratio (min-max)"],
        body,
    )
    report.write()


if __name__ == "__main__":
    main()

"""Issue 5: Spark writing and reading through lakecat vs plain Parquet, in one run.

The same DataFrame (10 million rows by default: ``id`` long, ``name`` string, ``value``
double, ``ts`` timestamp; cached in memory first, so both writers start from the same rows)
is written with ``df.write.parquet(path)`` and appended to a lakecat table with
``df.write.format("lakecat").mode("append").save(...)``, then read back with
``spark.read.parquet(path)`` and ``spark.read.format("lakecat").load(...)``, each read
aggregating every column (``sum(id)``, ``count(name)``, ``sum(value)``, ``max(ts)``), so every
value crosses from the files into Spark. Both write zstd-compressed Parquet (lakecat's default
codec; Spark's is set to match), on a local ``local[2]`` Spark session.

A full-size warm-up round comes first and is not counted (the JVM's JIT and the Python
workers are still warming up during the first jobs); then each measurement is repeated
``--repeats`` times and the tables show medians. lakecat's write includes its commit (one
catalog commit on the driver); its read includes planning (loading the table and manifests).

The same DataFrame is also appended with lakecat's native path, ``lakecat.spark_ext.write``
(Spark's own Parquet writer writes the files, lakecat plans and commits; see
``docs/spark.md``), into a table of its own, and read back with ``lakecat.spark_ext.read``
(lakecat plans, Spark's Parquet reader reads); the tables show both paths next to plain
Parquet, and the script fails if either path's read disagrees.

Two more rows measure what any Python data source pays in Spark 4, lakecat or not, on the
same data: a *no-op Arrow writer* that only receives the batches Spark sends to Python, and a
*minimal reader* that hands Spark the lakecat table's Parquet files with nothing but
``pyarrow.parquet.ParquetFile.iter_batches`` (Spark converts every value a Python data
source returns into a row: its Python sources have no columnar reads). lakecat / floor shows
lakecat's own cost on top of that transport.

Targets: lakecat's write <= 1.3x and its read <= 1.5x the plain Parquet time (reported for
the data source and for the native path).

    python benchmarks/bench_spark.py
    python benchmarks/bench_spark.py --quick
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from common import Report, base_parser, median, ratio, timed, workdir
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)

AGGREGATES = ["sum(id) as ids", "count(name) as names", "sum(value) as total", "max(ts) as last"]


def spark_session(cores: int) -> Any:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName("lakecat-bench-spark")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "4g")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", str(cores))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.parquet.compression.codec", "zstd")
        # Rows per Arrow batch from Spark to Python writers (default 10,000): bigger batches
        # cut the per-batch cost of the transfer. docs/spark.md recommends it for lakecat
        # writes; Spark's own Parquet writer does not use it.
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "100000")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session


def dataframe(spark: Any, rows: int, partitions: int) -> Any:
    df = spark.range(rows, numPartitions=partitions).selectExpr(
        "id",
        "concat('name-', cast(id % 1000 as string)) as name",
        "cast(id as double) * 0.5 as value",
        "timestamp_seconds(1700000000 + id) as ts",
    )
    df = df.persist()
    df.count()
    return df


def aggregate(df: Any) -> tuple[Any, ...]:
    return tuple(df.selectExpr(*AGGREGATES).collect()[0])


# ---- the transport floor: Python data sources that do nothing but move batches -------------
class NoopWriter(DataSourceArrowWriter):  # type: ignore[misc]
    def write(self, iterator: Any) -> WriterCommitMessage:
        for _ in iterator:
            pass
        return WriterCommitMessage()


class FilesPartition(InputPartition):  # type: ignore[misc]
    def __init__(self, paths: list[str]) -> None:
        self.paths = paths


class MinimalReader(DataSourceReader):  # type: ignore[misc]
    def __init__(self, schema: Any, groups: list[list[str]]) -> None:
        from pyspark.sql.pandas.types import to_arrow_schema

        self.target = to_arrow_schema(schema, timezone="UTC")
        self.groups = groups

    def partitions(self) -> list[InputPartition]:
        return [FilesPartition(g) for g in self.groups]

    def read(self, partition: Any) -> Any:
        import pyarrow as pa
        import pyarrow.parquet as pq

        for path in partition.paths:
            for batch in pq.ParquetFile(path.removeprefix("file://")).iter_batches(262_144):
                yield pa.RecordBatch.from_arrays(batch.columns, schema=self.target)


class Floor(DataSource):  # type: ignore[misc]
    """``format("floor")``: the no-op writer, and the minimal reader of option ``groups``."""

    @classmethod
    def name(cls) -> str:
        return "floor"

    def schema(self) -> str:
        return "id long, name string, value double, ts timestamp"

    def writer(self, schema: Any, overwrite: bool) -> DataSourceArrowWriter:
        return NoopWriter()

    def reader(self, schema: Any) -> DataSourceReader:
        groups = [g.split(",") for g in self.options["groups"].split(";")]
        return MinimalReader(schema, groups)


def same_partitions(catalog: Any, table: str, parts: int) -> str:
    """The lakecat table's files, in ``parts`` groups of about equal size."""
    files = sorted(
        catalog.load_table(table).scan().plan_files(), key=lambda f: -f.file_size_in_bytes
    )
    groups: list[list[str]] = [[] for _ in range(min(parts, len(files)))]
    sizes = [0] * len(groups)
    for f in files:
        i = sizes.index(min(sizes))
        groups[i].append(f.file_path)
        sizes[i] += f.file_size_in_bytes
    return ";".join(",".join(g) for g in groups)


def main() -> None:
    parser = base_parser(__doc__ or "")
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cores", type=int, default=2)
    args = parser.parse_args()
    if args.quick:
        args.rows, args.repeats = 500_000, 1
    report = Report("spark", vars(args))

    from lakecat.catalog import Catalog
    from lakecat.spark_ext import native_read_support, native_write_support, read, register, write

    spark = spark_session(args.cores)
    with workdir(args, "bench-spark") as folder:
        catalog = Catalog.embedded(folder / "lake")
        catalog.create_namespace("bench")
        register(spark, catalog=catalog)
        data = dataframe(spark, args.rows, args.cores)
        schema = data.schema

        def lakecat_table(name: str) -> str:
            catalog.create_table(f"bench.{name}", _arrow_schema(schema))
            return f"bench.{name}"

        spark.dataSource.register(Floor)
        # p: plain Parquet, l: the lakecat data source, j: lakecat's native (JVM Parquet)
        # path, n/m: the Python data source floor (no-op writer / minimal reader).
        keys = ("pw", "lw", "jw", "nw", "pr", "lr", "jr", "mr")
        times: dict[str, list[float]] = {k: [] for k in keys}
        results: set[tuple[Any, ...]] = set()
        for r in range(args.repeats + 1):  # round 0 warms up and is not counted
            path = str(folder / f"plain-{r}.parquet")
            table = lakecat_table(f"events_{r}")
            round_times = {}
            with timed() as t:
                data.write.parquet(path)
            round_times["pw"] = t.wall_s
            with timed() as t:
                data.write.format("lakecat").mode("append").save(table)
            round_times["lw"] = t.wall_s
            native = lakecat_table(f"native_{r}")
            if r == 0:
                support = native_write_support(data, native)
                if not support.native:
                    raise SystemExit(f"the native write does not apply: {support.reason}")
            with timed() as t:
                write(data, native)
            round_times["jw"] = t.wall_s
            with timed() as t:
                data.write.format("floor").mode("append").save()
            round_times["nw"] = t.wall_s
            with timed() as t:
                results.add(aggregate(spark.read.parquet(path)))
            round_times["pr"] = t.wall_s
            with timed() as t:
                results.add(aggregate(spark.read.format("lakecat").load(table)))
            round_times["lr"] = t.wall_s
            if r == 0:
                support = native_read_support(spark, native)
                if not support.native:
                    raise SystemExit(f"the native read does not apply: {support.reason}")
            with timed() as t:
                results.add(aggregate(read(spark, native)))
            round_times["jr"] = t.wall_s
            groups = same_partitions(catalog, table, args.cores)
            with timed() as t:
                results.add(aggregate(spark.read.format("floor").option("groups", groups).load()))
            round_times["mr"] = t.wall_s
            print(
                f"  round {r}{' (warm-up)' if r == 0 else ''}: "
                + ", ".join(f"{k} {v:.2f}s" for k, v in round_times.items())
            )
            if r > 0:
                for key, value in round_times.items():
                    times[key].append(value)
        if len(results) != 1:
            raise SystemExit(f"the reads disagree: {results}")

        m = {key: median(values) for key, values in times.items()}
        write_ratio = ratio(m["lw"], m["pw"])
        read_ratio = ratio(m["lr"], m["pr"])
        native_write_ratio = ratio(m["jw"], m["pw"])
        native_read_ratio = ratio(m["jr"], m["pr"])
        files = len(catalog.load_table(f"bench.events_{args.repeats}").scan().plan_files())
        native_files = len(catalog.load_table(f"bench.native_{args.repeats}").scan().plan_files())
        report.table(
            f"{args.rows:,} rows, local[{args.cores}], median of {args.repeats} (seconds)",
            [
                "",
                "plain Parquet",
                "lakecat source",
                "lakecat native",
                "Python source floor",
                "source / Parquet",
                "native / Parquet",
                "floor / Parquet",
                "source / floor",
            ],
            [
                [
                    "write",
                    m["pw"],
                    m["lw"],
                    m["jw"],
                    m["nw"],
                    write_ratio,
                    native_write_ratio,
                    ratio(m["nw"], m["pw"]),
                    ratio(m["lw"], m["nw"]),
                ],
                [
                    "read (aggregate every column)",
                    m["pr"],
                    m["lr"],
                    m["jr"],
                    m["mr"],
                    read_ratio,
                    native_read_ratio,
                    ratio(m["mr"], m["pr"]),
                    ratio(m["lr"], m["mr"]),
                ],
            ],
        )
        report.note(
            f"lakecat wrote {files} data files per append through the data source, "
            f"{native_files} natively; rounds: {times}"
        )
        report.target(
            "lakecat source write <= 1.3x df.write.parquet",
            write_ratio <= 1.3,
            f"{write_ratio:.2f}x",
        )
        report.target(
            "lakecat source read <= 1.5x spark.read.parquet",
            read_ratio <= 1.5,
            f"{read_ratio:.2f}x",
        )
        report.target(
            "lakecat native write (lk.write) <= 1.3x df.write.parquet",
            native_write_ratio <= 1.3,
            f"{native_write_ratio:.2f}x",
        )
        report.target(
            "lakecat native read (lk.read) <= 1.5x spark.read.parquet",
            native_read_ratio <= 1.5,
            f"{native_read_ratio:.2f}x",
        )
        report.data = {"times": times, "rows": args.rows}
        catalog.close()
    spark.stop()
    report.write()


def _arrow_schema(spark_schema: Any) -> Any:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(spark_schema, timezone="UTC")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()

"""Issue 20: what counting NaN values costs a native write.

In a session with a lakecat SQL catalog, a native write of a table with a float or double
column goes through the catalog plugin's ``IdParquetFormat``, whose write support counts each
float and double column's NaN values into the footer (``lakecat.nan.counts``), so that the
files' metrics carry NaN counts and ``x > v`` (NaN included in Spark) can prune them. This
script times, in one session on one SQL catalog, alternating the order each round:

* ``lk.write`` of ``--rows`` rows (``id``, ``part`` = ``id % 8``, ``name`` string, ``value``
  double, every 1,000th NaN) into a table partitioned by ``part``, through ``IdParquetFormat``
  (as shipped) against Spark's own Parquet format (the native plan's ``plugin_format``
  switched off in this process, which is how the write ran before).

Since the plugin's format also rolls files at the table's target size (512 MiB by default, above
what one task writes here), what the ratio measures is the NaN counting and the size checks
together.

Each mode writes tables of its own. Reported: median seconds (min-max) per mode and the median
of the per-round ratios ``IdParquetFormat / Spark's Parquet``; the metrics are checked (NaN
counts present through ``IdParquetFormat`` only, summing to the NaN rows).
"""

from __future__ import annotations

import dataclasses
import importlib
import time
from pathlib import Path

from common import PairedRounds, Report, base_parser, catalog_session, workdir

MODES = ("IdParquetFormat", "Spark's Parquet")
COLUMNS = "id bigint, part int, name string, value double"


def main() -> None:
    parser = base_parser(__doc__ or "")
    parser.add_argument("--rows", type=int, default=None, help="rows of lk.write (10,000,000)")
    parser.add_argument("--repeats", type=int, default=None, help="rounds (5)")
    args = parser.parse_args()
    rows = args.rows or (20_000 if args.quick else 10_000_000)
    repeats = args.repeats or (2 if args.quick else 5)

    import lakecat.spark_ext as lk
    from lakecat.catalog import Catalog

    # the module (the package's ``write`` is its function)
    native_write = importlib.import_module("lakecat.spark_ext.native.write")

    shipped = native_write._plan

    def spark_format(*args: object, **kwargs: object) -> object:
        return dataclasses.replace(shipped(*args, **kwargs), plugin_format=False)

    report = Report("bench_nan_counts", {**vars(args), "rows": rows, "repeats": repeats})
    with workdir(args, "lakecat-bench-nan-counts-") as root:
        catalog = Catalog.embedded(Path(root) / "lake")
        spark = catalog_session(catalog, "lakecat-bench-nan-counts")
        frame = spark.range(rows).selectExpr(
            "id",
            "CAST(id % 8 AS int) AS part",
            "concat('name-', id % 1000) AS name",
            "IF(id % 1000 = 7, CAST('NaN' AS double), CAST(id AS double) * 0.5) AS value",
        )
        frame = frame.cache()
        frame.count()
        nans = len(range(7, rows, 1000))

        def write(mode: str, name: str) -> None:
            native_write._plan = shipped if mode == MODES[0] else spark_format
            try:
                result = lk.write(frame, f"db.{name}", catalog=catalog)
            finally:
                native_write._plan = shipped
            if not result.native:
                raise SystemExit(f"the write did not run natively: {result.reason}")

        step = f"lk.write {rows:,} rows"

        def name(mode: str, round_: int) -> str:
            return f"t_{'id' if mode == MODES[0] else 'spark'}_{round_}"

        def create(mode: str, round_: int) -> None:
            spark.sql(
                f"CREATE TABLE lake.db.{name(mode, round_)} ({COLUMNS}) PARTITIONED BY (part)"
            )

        def timed_write(_: str, mode: str, round_: int) -> tuple[float, None]:
            start = time.perf_counter()
            write(mode, name(mode, round_))
            seconds = time.perf_counter() - start
            table = catalog.load_table(f"db.{name(mode, round_)}")
            value = table.schema().find_field("value").field_id
            counts = [f.nan_value_counts.get(value) for f in table.scan().plan_files()]
            expected = nans if mode == MODES[0] else 0
            if sum(c or 0 for c in counts) != expected or (mode == MODES[0]) != all(
                c is not None for c in counts
            ):
                raise SystemExit(f"{mode}: NaN counts {counts}, expected {expected} in all")
            return seconds, None

        rounds = PairedRounds([step], *MODES)
        rounds.run(repeats, timed_write, before=create)
        spark.stop()
        catalog.close()
    rounds.report_to(
        report,
        f"native writes of a table with a double column ({repeats} rounds, seconds)",
    )
    report.write()


if __name__ == "__main__":
    main()

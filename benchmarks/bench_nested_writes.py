"""Issue 20: native writes of tables with list and map columns against the Python data source.

Spark's own Parquet writer writes lakecat's native writes; for list and map columns the SQL
catalog plugin's ``IdParquetFormat`` adds the field ids of their elements, keys and values
(``spark_ext/native/columns.py``). Before, such tables always went through the Python data
source. This script times, in one session on one SQL catalog, alternating the order each round:

* ``lk.write`` of ``--rows`` rows (``id``, ``part`` = ``id % 8``, ``tags`` a list of two
  strings, ``m`` a map of two entries, ``value`` double) into a table partitioned by ``part``:
  natively against ``df.write.format(<the catalog's data source>)``, the data source write
  ``lk.write`` falls back to;
* a merge-on-read ``UPDATE`` of 1% of those rows: its new rows written in the statement's tasks
  (``NativeRows``) against staged through the data source
  (``spark.lakecat.nativeRowLevelWrites=false``).

Each mode writes tables of its own, so both see tables of the same history. Reported: median
seconds (min-max) per mode and the median of the per-round ratios ``native / data source``.
"""

from __future__ import annotations

import time
from pathlib import Path

from common import PairedRounds, Report, base_parser, catalog_session, workdir

MODES = ("native", "data source")
ROW_LEVEL = "spark.lakecat.nativeRowLevelWrites"
COLUMNS = "id bigint, part int, tags array<string>, m map<string, bigint>, value double"


def main() -> None:
    parser = base_parser(__doc__ or "")
    parser.add_argument("--rows", type=int, default=None, help="rows of lk.write (2,000,000)")
    parser.add_argument("--repeats", type=int, default=None, help="rounds (5)")
    args = parser.parse_args()
    rows = args.rows or (20_000 if args.quick else 2_000_000)
    repeats = args.repeats or (2 if args.quick else 5)

    import lakecat.spark_ext as lk
    from lakecat.catalog import Catalog
    from lakecat.spark_ext.sql.plugin import data_format

    report = Report("bench_nested_writes", {**vars(args), "rows": rows, "repeats": repeats})
    with workdir(args, "lakecat-bench-nested-writes-") as root:
        catalog = Catalog.embedded(Path(root) / "lake")
        spark = catalog_session(catalog, "lakecat-bench-nested-writes")
        frame = spark.range(rows).selectExpr(
            "id",
            "CAST(id % 8 AS int) AS part",
            "array(concat('t', id % 10), concat('u', id % 7)) AS tags",
            "map('a', id % 100, 'b', id % 3) AS m",
            "CAST(id AS double) * 0.5 AS value",
        )
        frame = frame.cache()
        frame.count()

        def table(kind: str, mode: str, round_: int) -> str:
            name = f"{kind}_{mode.replace(' ', '_')}_{round_}"
            properties = "'write.update.mode' = 'merge-on-read'"
            spark.sql(
                f"CREATE TABLE lake.db.{name} ({COLUMNS}) PARTITIONED BY (part) "
                f"TBLPROPERTIES ({properties})"
            )
            return name

        def write(mode: str, name: str) -> None:
            if mode == "native":
                result = lk.write(frame, f"db.{name}", catalog=catalog)
                if not result.native:
                    raise SystemExit(f"the write did not run natively: {result.reason}")
            else:
                frame.write.format(data_format("lake")).mode("append").save(f"db.{name}")

        def update(mode: str, name: str) -> None:
            spark.conf.set(ROW_LEVEL, str(mode == "native").lower())
            spark.sql(
                f"UPDATE lake.db.{name} SET tags = array('x'), value = -value WHERE id % 100 = 7"
            ).collect()
            spark.conf.unset(ROW_LEVEL)

        steps = [f"lk.write {rows:,} rows", f"merge-on-read UPDATE of {rows // 100:,} rows"]
        expected = (rows, len(range(7, rows, 100)), 2 * rows - len(range(7, rows, 100)))

        def timed(step: str, mode: str, round_: int) -> tuple[float, None]:
            if step == steps[0]:
                written = table("w", mode, round_)
                start = time.perf_counter()
                write(mode, written)
                return time.perf_counter() - start, None
            updated = table("u", mode, round_)
            lk.write(frame, f"db.{updated}", catalog=catalog)
            start = time.perf_counter()
            update(mode, updated)
            seconds = time.perf_counter() - start
            counts = spark.sql(
                f"SELECT count(*), count_if(value < 0), sum(size(tags)) FROM lake.db.{updated}"
            ).collect()[0]
            if tuple(counts) != expected:
                raise SystemExit(f"{mode}: the UPDATE left {tuple(counts)}, not {expected}")
            return seconds, None

        rounds = PairedRounds(steps, *MODES)
        rounds.run(repeats, timed)
        spark.stop()
        catalog.close()
    report.table(
        f"writes of a table with list and map columns ({repeats} rounds, seconds)",
        ["statement", "native (IdParquetFormat)", "Python data source", "ratio (min-max)"],
        rounds.rows(),
    )
    report.data = rounds.data()
    report.write()


if __name__ == "__main__":
    main()

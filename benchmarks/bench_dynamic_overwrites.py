"""Issue 20: a dynamic partition overwrite written by Spark's Parquet writer.

``INSERT OVERWRITE`` with ``spark.sql.sources.partitionOverwriteMode=dynamic`` (and
``df.writeTo(t).overwritePartitions()``) into a lakecat table is now rewritten by the SQL
extension into the native write an ``INSERT INTO`` gets (``NativeDynamicOverwrites``): Spark's
own Parquet writer writes the rows, the bridge commits them as a dynamic overwrite. Before, Spark
planned it as a V2 batch write, every row through the Python data source. This script times,
in one session on one SQL catalog, alternating the order each round:

* the dynamic ``INSERT OVERWRITE`` of ``--rows`` rows (``id``, ``part`` = ``id % 8``, ``name``,
  ``value``; half of the 8 partitions: ``part < 4``) into a fresh table partitioned by ``part``
  that holds the same ``--rows`` rows of all 8 partitions, natively (as shipped) against
  ``spark.lakecat.nativeDynamicOverwrites=false`` (the data source's write, as before).

Each mode overwrites tables of its own. Reported: median seconds (min-max) per mode and the
median of the per-round ratios ``native / data source``; the rows are checked (each mode's
table holds the overwritten partitions' new rows and the other partitions' old ones).
"""

from __future__ import annotations

import time
from pathlib import Path

from common import (
    SQL_COLUMNS,
    PairedRounds,
    Report,
    base_parser,
    catalog_session,
    source_view,
    workdir,
)

MODES = ("native", "data source")
SETTING = "spark.lakecat.nativeDynamicOverwrites"


def main() -> None:
    parser = base_parser(__doc__ or "")
    parser.add_argument("--rows", type=int, default=None, help="rows overwritten (5,000,000)")
    parser.add_argument("--repeats", type=int, default=None, help="rounds (5)")
    args = parser.parse_args()
    rows = args.rows or (20_000 if args.quick else 5_000_000)
    repeats = args.repeats or (2 if args.quick else 5)

    from lakecat.catalog import Catalog

    report = Report("bench_dynamic_overwrites", {**vars(args), "rows": rows, "repeats": repeats})
    with workdir(args, "lakecat-bench-dynamic-overwrites-") as root:
        catalog = Catalog.embedded(Path(root) / "lake")
        spark = catalog_session(catalog, "lakecat-bench-dynamic-overwrites")
        source_view(spark, rows)
        spark.sql("SELECT count(*) FROM src").collect()  # cached
        spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
        step = f"INSERT OVERWRITE (dynamic) of {rows // 2:,} rows"

        def name(mode: str, round_: int) -> str:
            return f"lake.db.t_{'native' if mode == MODES[0] else 'source'}_{round_}"

        def fresh(mode: str, round_: int) -> None:
            spark.sql(f"CREATE TABLE {name(mode, round_)} ({SQL_COLUMNS}) PARTITIONED BY (part)")
            spark.sql(f"INSERT INTO {name(mode, round_)} SELECT * FROM src")

        def overwrite(_: str, mode: str, round_: int) -> tuple[float, object]:
            spark.conf.set(SETTING, "true" if mode == MODES[0] else "false")
            try:
                start = time.perf_counter()
                spark.sql(
                    f"INSERT OVERWRITE {name(mode, round_)} "
                    "SELECT id + 1, part, name, -value FROM src WHERE part < 4"
                )
                seconds = time.perf_counter() - start
            finally:
                spark.conf.unset(SETTING)
            answer = spark.sql(
                f"SELECT part < 4, count(*), sum(id), sum(value) FROM {name(mode, round_)} "
                "GROUP BY 1 ORDER BY 1"
            ).collect()
            return seconds, [tuple(r) for r in answer]

        rounds = PairedRounds([step], *MODES)
        rounds.run(repeats, overwrite, before=fresh)
        spark.stop()
        catalog.close()
    rounds.report_to(report, f"dynamic partition overwrites ({repeats} rounds, seconds)")
    report.write()


if __name__ == "__main__":
    main()

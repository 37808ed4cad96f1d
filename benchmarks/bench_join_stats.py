"""Issue 20: what the scan's size estimate buys joins with lakecat tables.

The catalog plugin's scans report statistics to Spark's optimizer (``SupportsReportStatistics``:
the planned files' rows, times the default size of the columns read). Without them Spark took
every lakecat table as larger than any broadcast threshold and planned a sort-merge join,
shuffling both sides, however small the table. This script times, in one session on one SQL
catalog, alternating the order each round:

* a join of a ``--rows``-row table (``id``, ``part`` = ``id % 8``, ``name``, ``value``;
  partitioned by ``part``) with a 1,000-row lakecat dimension table, grouped by the
  dimension's label;
* a merge-on-read ``MERGE`` into a fresh copy of the large table from a lakecat table holding
  1% of one partition's rows (``ON t.id = u.id``: the source's values replace the target's),

each as shipped (Spark broadcasts the small table, as the estimate allows) and with
``spark.sql.autoBroadcastJoinThreshold=-1`` (no broadcast: the sort-merge join Spark planned
before). The plans are checked (a broadcast join in the first mode only), and so are the
answers (the same in both). Reported: median seconds (min-max) per mode and the median of the
per-round ratios ``estimated / no broadcast``.
"""

from __future__ import annotations

from pathlib import Path

from common import (
    SQL_COLUMNS,
    Report,
    base_parser,
    catalog_session,
    join_and_merge_rounds,
    source_view,
    workdir,
)

MODES = ("estimated (broadcast)", "no broadcast (before)")
NO_BROADCAST = {"spark.sql.autoBroadcastJoinThreshold": "-1"}
JOIN = (
    "SELECT d.label, count(*), sum(f.value) FROM lake.db.fact f "
    "JOIN lake.db.dim d ON f.id % 1000 = d.k GROUP BY d.label"
)


def main() -> None:
    parser = base_parser(__doc__ or "")
    parser.add_argument("--rows", type=int, default=None, help="rows of the large table (10M)")
    parser.add_argument("--repeats", type=int, default=None, help="rounds (5)")
    args = parser.parse_args()
    rows = args.rows or (40_000 if args.quick else 10_000_000)
    repeats = args.repeats or (2 if args.quick else 5)

    from lakecat.catalog import Catalog

    report = Report("bench_join_stats", {**vars(args), "rows": rows, "repeats": repeats})
    with workdir(args, "lakecat-bench-join-stats-") as root:
        catalog = Catalog.embedded(Path(root) / "lake")
        spark = catalog_session(catalog, "lakecat-bench-join-stats")
        source_view(spark, rows)
        spark.sql(f"CREATE TABLE lake.db.fact ({SQL_COLUMNS}) PARTITIONED BY (part)")
        spark.sql("INSERT INTO lake.db.fact SELECT * FROM src")
        spark.sql("CREATE TABLE lake.db.dim (k bigint, label string)")
        spark.sql("INSERT INTO lake.db.dim SELECT id, concat('l', id % 10) FROM range(1000)")
        spark.sql(f"CREATE TABLE lake.db.upd ({SQL_COLUMNS})")
        spark.sql(
            "INSERT INTO lake.db.upd SELECT id, part, name, -value FROM src "
            "WHERE part = 3 AND id % 800 = 3"
        )
        updated = spark.table("lake.db.upd").count()

        def check_plan(mode: str, plan: str) -> str | None:
            broadcast = "BroadcastHashJoin" in plan
            return None if broadcast == (mode == MODES[0]) else f"broadcast planned: {broadcast}"

        steps = (
            f"join {rows:,} rows with a 1,000-row table",
            f"merge-on-read MERGE of {updated:,} rows from a table",
        )
        rounds = join_and_merge_rounds(
            spark,
            steps,
            MODES,
            repeats,
            join=JOIN,
            spec="PARTITIONED BY (part)",
            updated=updated,
            conf=lambda mode: {} if mode == MODES[0] else NO_BROADCAST,
            check_plan=check_plan,
        )
        spark.stop()
        catalog.close()
    rounds.report_to(report, f"joins with small lakecat tables ({repeats} rounds, seconds)")
    report.write()


if __name__ == "__main__":
    main()

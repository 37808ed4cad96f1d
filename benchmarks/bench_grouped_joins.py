"""Issue 20: storage-partitioned joins, with ``spark.lakecat.preserveDataGrouping``.

With the setting on, the catalog plugin's scans tell Spark how their files are grouped by
partition (``KeyGroupedPartitioning``), and Spark joins two tables partitioned alike without
shuffling either side. This script times, in one session on one SQL catalog, alternating the
order each round:

* a join of two ``--rows``-row tables partitioned by ``bucket(16, id)`` on ``id`` (an
  aggregate of the joined rows);
* a merge-on-read ``MERGE`` into a fresh copy of the first table from a lakecat table
  partitioned alike holding 5% of its rows (``ON t.id = u.id``),

each with the grouping (no shuffle of the tables: checked in the plan) and without it (Spark's
sort-merge join shuffling both sides; broadcasts are off in both modes). The answers are
checked (the same in both). Reported: median seconds (min-max) per mode and the median of
the per-round ratios ``grouped / not grouped``.
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

MODES = ("grouped (no shuffle)", "not grouped (shuffle)")
GROUPING = "spark.lakecat.preserveDataGrouping"
NO_BROADCAST = {"spark.sql.autoBroadcastJoinThreshold": "-1"}
SPEC = "PARTITIONED BY (bucket(16, id))"
JOIN = (
    "SELECT count(*), sum(f.value + o.weight) FROM lake.db.fact f "
    "JOIN lake.db.other o ON f.id = o.id"
)


def main() -> None:
    parser = base_parser(__doc__ or "")
    parser.add_argument("--rows", type=int, default=None, help="rows of each table (10M)")
    parser.add_argument("--repeats", type=int, default=None, help="rounds (5)")
    args = parser.parse_args()
    rows = args.rows or (40_000 if args.quick else 10_000_000)
    repeats = args.repeats or (2 if args.quick else 5)

    from lakecat.catalog import Catalog

    report = Report("bench_grouped_joins", {**vars(args), "rows": rows, "repeats": repeats})
    with workdir(args, "lakecat-bench-grouped-joins-") as root:
        catalog = Catalog.embedded(Path(root) / "lake")
        spark = catalog_session(catalog, "lakecat-bench-grouped-joins")
        source_view(spark, rows)
        spark.sql(f"CREATE TABLE lake.db.fact ({SQL_COLUMNS}) {SPEC}")
        spark.sql("INSERT INTO lake.db.fact SELECT * FROM src")
        spark.sql(f"CREATE TABLE lake.db.other (id bigint, weight double) {SPEC}")
        spark.sql("INSERT INTO lake.db.other SELECT id * 2, CAST(id % 7 AS double) FROM src")
        spark.sql(f"CREATE TABLE lake.db.upd ({SQL_COLUMNS}) {SPEC}")
        spark.sql(
            "INSERT INTO lake.db.upd SELECT id, part, name, -value FROM src WHERE id % 20 = 3"
        )
        updated = spark.table("lake.db.upd").count()

        def check_plan(mode: str, plan: str) -> str | None:
            shuffled = "Exchange hashpartitioning(id" in plan
            return None if shuffled != (mode == MODES[0]) else f"the tables shuffled: {shuffled}"

        steps = (
            f"join two {rows:,}-row tables on their bucket column",
            f"merge-on-read MERGE of {updated:,} rows from a table partitioned alike",
        )
        rounds = join_and_merge_rounds(
            spark,
            steps,
            MODES,
            repeats,
            join=JOIN,
            spec=SPEC,
            updated=updated,
            conf=lambda mode: {**NO_BROADCAST, GROUPING: str(mode == MODES[0]).lower()},
            check_plan=check_plan,
        )
        spark.stop()
        catalog.close()
    rounds.report_to(report, f"joins of tables partitioned alike ({repeats} rounds, seconds)")
    report.write()


if __name__ == "__main__":
    main()

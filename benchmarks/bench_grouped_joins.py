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

import time
from pathlib import Path
from typing import Any

from common import PairedRounds, Report, base_parser, catalog_session, workdir

MODES = ("grouped (no shuffle)", "not grouped (shuffle)")
GROUPING = "spark.lakecat.preserveDataGrouping"
NO_BROADCAST = {"spark.sql.autoBroadcastJoinThreshold": "-1"}
COLUMNS = "id bigint, part int, name string, value double"
SPEC = "PARTITIONED BY (bucket(16, id))"
JOIN = (
    "SELECT count(*), sum(f.value + o.weight) FROM lake.db.fact f "
    "JOIN lake.db.other o ON f.id = o.id"
)
MERGE = (
    "MERGE INTO lake.db.{target} t USING lake.db.upd u ON t.id = u.id "
    "WHEN MATCHED THEN UPDATE SET value = u.value"
)


def main() -> None:
    parser = base_parser(__doc__ or "")
    parser.add_argument("--rows", type=int, default=None, help="rows of each table (10M)")
    parser.add_argument("--repeats", type=int, default=None, help="rounds (5)")
    args = parser.parse_args()
    rows = args.rows or (40_000 if args.quick else 10_000_000)
    repeats = args.repeats or (2 if args.quick else 5)

    from lakecat.catalog import Catalog
    from lakecat.spark_ext.native.write import session_conf

    report = Report("bench_grouped_joins", {**vars(args), "rows": rows, "repeats": repeats})
    with workdir(args, "lakecat-bench-grouped-joins-") as root:
        catalog = Catalog.embedded(Path(root) / "lake")
        spark = catalog_session(catalog, "lakecat-bench-grouped-joins")
        source = spark.range(rows).selectExpr(
            "id",
            "CAST(id % 8 AS int) AS part",
            "concat('name-', id % 1000) AS name",
            "CAST(id AS double) * 0.5 AS value",
        )
        source.cache().createOrReplaceTempView("src")
        spark.sql(f"CREATE TABLE lake.db.fact ({COLUMNS}) {SPEC}")
        spark.sql("INSERT INTO lake.db.fact SELECT * FROM src")
        spark.sql(f"CREATE TABLE lake.db.other (id bigint, weight double) {SPEC}")
        spark.sql("INSERT INTO lake.db.other SELECT id * 2, CAST(id % 7 AS double) FROM src")
        spark.sql(f"CREATE TABLE lake.db.upd ({COLUMNS}) {SPEC}")
        spark.sql(
            "INSERT INTO lake.db.upd SELECT id, part, name, -value FROM src WHERE id % 20 = 3"
        )
        updated = spark.table("lake.db.upd").count()

        def executed(query: str) -> str:
            text: str = spark.sql(f"EXPLAIN {query}").collect()[0][0]
            return text

        def run(mode: str, step: str, target: str) -> tuple[float, Any]:
            conf = {**NO_BROADCAST, GROUPING: str(mode == MODES[0]).lower()}
            query = JOIN if step == STEPS[0] else MERGE.format(target=target)
            with session_conf(spark, conf):
                shuffled = "Exchange hashpartitioning(id" in executed(query)
                if shuffled == (mode == MODES[0]):
                    raise SystemExit(f"{step}, {mode}: the tables shuffled: {shuffled}")
                start = time.perf_counter()
                answer = sorted(spark.sql(query).collect())
                seconds = time.perf_counter() - start
            if step == STEPS[1]:
                answer = spark.sql(
                    f"SELECT count(*), sum(value) FROM lake.db.{target} WHERE value < 0"
                ).collect()
                if answer[0][0] != updated:
                    raise SystemExit(f"the MERGE updated {answer[0][0]} rows, not {updated}")
            return seconds, answer

        STEPS = (
            f"join two {rows:,}-row tables on their bucket column",
            f"merge-on-read MERGE of {updated:,} rows from a table partitioned alike",
        )
        rounds = PairedRounds(list(STEPS), *MODES)
        for round_ in range(repeats + 1):  # round 0 warms up
            seconds: dict[tuple[str, str], float] = {}
            answers: dict[str, set[str]] = {}
            for mode in MODES if round_ % 2 else MODES[::-1]:
                target = f"t_{round_}_{MODES.index(mode)}"
                spark.sql(
                    f"CREATE TABLE lake.db.{target} ({COLUMNS}) {SPEC} "
                    "TBLPROPERTIES ('write.merge.mode' = 'merge-on-read')"
                )
                spark.sql(f"INSERT INTO lake.db.{target} SELECT * FROM src")
                for step in STEPS:
                    seconds[(step, mode)], answer = run(mode, step, target)
                    answers.setdefault(step, set()).add(repr(answer))
            if any(len(a) != 1 for a in answers.values()):
                raise SystemExit(f"the modes disagree: {answers}")
            rounds.record(round_, seconds)
        spark.stop()
        catalog.close()
    rounds.report_to(report, f"joins of tables partitioned alike ({repeats} rounds, seconds)")
    report.write()


if __name__ == "__main__":
    main()

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

import time
from pathlib import Path
from typing import Any

from common import PairedRounds, Report, base_parser, catalog_session, workdir

MODES = ("estimated (broadcast)", "no broadcast (before)")
NO_BROADCAST = {"spark.sql.autoBroadcastJoinThreshold": "-1"}
COLUMNS = "id bigint, part int, name string, value double"
JOIN = (
    "SELECT d.label, count(*), sum(f.value) FROM lake.db.fact f "
    "JOIN lake.db.dim d ON f.id % 1000 = d.k GROUP BY d.label"
)
MERGE = (
    "MERGE INTO lake.db.{target} t USING lake.db.upd u ON t.id = u.id "
    "WHEN MATCHED THEN UPDATE SET value = u.value"
)


def main() -> None:
    parser = base_parser(__doc__ or "")
    parser.add_argument("--rows", type=int, default=None, help="rows of the large table (10M)")
    parser.add_argument("--repeats", type=int, default=None, help="rounds (5)")
    args = parser.parse_args()
    rows = args.rows or (40_000 if args.quick else 10_000_000)
    repeats = args.repeats or (2 if args.quick else 5)

    from lakecat.catalog import Catalog
    from lakecat.spark_ext.native.write import session_conf

    report = Report("bench_join_stats", {**vars(args), "rows": rows, "repeats": repeats})
    with workdir(args, "lakecat-bench-join-stats-") as root:
        catalog = Catalog.embedded(Path(root) / "lake")
        spark = catalog_session(catalog, "lakecat-bench-join-stats")
        source = spark.range(rows).selectExpr(
            "id",
            "CAST(id % 8 AS int) AS part",
            "concat('name-', id % 1000) AS name",
            "CAST(id AS double) * 0.5 AS value",
        )
        source.cache().createOrReplaceTempView("src")
        spark.sql(f"CREATE TABLE lake.db.fact ({COLUMNS}) PARTITIONED BY (part)")
        spark.sql("INSERT INTO lake.db.fact SELECT * FROM src")
        spark.sql("CREATE TABLE lake.db.dim (k bigint, label string)")
        spark.sql("INSERT INTO lake.db.dim SELECT id, concat('l', id % 10) FROM range(1000)")
        spark.sql(f"CREATE TABLE lake.db.upd ({COLUMNS})")
        spark.sql(
            "INSERT INTO lake.db.upd SELECT id, part, name, -value FROM src "
            "WHERE part = 3 AND id % 800 = 3"
        )
        updated = spark.table("lake.db.upd").count()

        def plan(query: str) -> str:
            text: str = spark.sql(f"EXPLAIN {query}").collect()[0][0]
            return text

        def run(mode: str, step: str, target: str) -> tuple[float, Any]:
            conf = {} if mode == MODES[0] else NO_BROADCAST
            query = JOIN if step == STEPS[0] else MERGE.format(target=target)
            with session_conf(spark, conf):
                broadcast = "BroadcastHashJoin" in plan(query)
                if broadcast != (mode == MODES[0]):
                    raise SystemExit(f"{step}, {mode}: broadcast join planned: {broadcast}")
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
            f"join {rows:,} rows with a 1,000-row table",
            f"merge-on-read MERGE of {updated:,} rows from a table",
        )
        rounds = PairedRounds(list(STEPS), *MODES)
        for round_ in range(repeats + 1):  # round 0 warms up
            seconds: dict[tuple[str, str], float] = {}
            answers: dict[str, set[str]] = {}
            for mode in MODES if round_ % 2 else MODES[::-1]:
                target = f"t_{round_}_{MODES.index(mode)}"
                spark.sql(
                    f"CREATE TABLE lake.db.{target} ({COLUMNS}) PARTITIONED BY (part) "
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
    rounds.report_to(
        report,
        f"joins with small lakecat tables ({repeats} rounds, seconds)",
    )
    report.write()


if __name__ == "__main__":
    main()

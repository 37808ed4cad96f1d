"""Merge-on-read SQL statements: new rows written in the tasks vs staged through Python.

A merge-on-read ``UPDATE``/``MERGE`` through lakecat's SQL catalog writes its new rows either
with Spark's Parquet writer inside the statement's tasks (``NativeRows``, the default where the
table qualifies) or through the Python data source in staging mode (the session setting
``spark.lakecat.nativeRowLevelWrites=false``, and every table that does not qualify). This
times both on the same data, in one run, interleaved.

Each round makes two copies of a table of 10 million rows by default (``src`` of
``java_merge.source_views``: ``id``, ``part`` = ``id % 8``, ``name``, ``value``), ``PARTITIONED
BY (part)``, format v2, every ``write.*.mode`` merge-on-read, and runs on each, with the
setting on for one copy and off for the other (which goes first alternates by round):

* ``UPDATE ... SET value = -value WHERE part = 3``: 1/8 of the rows (1.25M by default) deleted
  by position and written again;
* ``MERGE`` of ``upd`` (1% of partition 3's rows) ``ON t.id = upd.id AND t.part = 3 WHEN
  MATCHED THEN UPDATE``: the issue's small MERGE;
* ``MERGE`` of 200,000 new rows spread over all 8 partitions (``WHEN MATCHED THEN UPDATE ...
  WHEN NOT MATCHED THEN INSERT *``; the matched clause, which matches nothing, keeps it a
  row-level statement: a MERGE that only inserts is planned as an append): each task meets
  every partition, so the native writer keeps a file open per partition;
* ``DELETE`` of 1% of partition 5's rows, and of all of partition 6's rows but one (a
  condition on ``id``, so that it is not a metadata-only delete): no new rows, so with the
  setting on the statement plans no Python data source write at all.

After each statement both copies must hold the same rows (an aggregate over every column).
A first round warms up and is not counted; the table shows medians, the ratio (in the tasks /
staged) its per-round median and spread.

``--write-mode copy-on-write`` makes the same comparison for copy-on-write tables, whose
rewrites the setting switches between Spark's Parquet writer (``NativeRowLevelWrites``) and the
Python data source; ``--format-version 3`` for tables with row lineage.

    python benchmarks/bench_spark_delta_rows.py
    python benchmarks/bench_spark_delta_rows.py --quick
    python benchmarks/bench_spark_delta_rows.py --write-mode copy-on-write --format-version 3
"""

from __future__ import annotations

import re
from typing import Any

from bench_spark_sql import COLUMNS, catalog_session, sql_parser
from common import PairedRounds, Report, timed, workdir
from java_merge import source_views

SETTING = "spark.lakecat.nativeRowLevelWrites"
CHECK = "count(*), sum(id), sum(part), count(name), sum(value)"
MODES = ("tasks", "staged")
# the folders of files Spark's Parquet writer wrote: merge-on-read rows written in the tasks,
# copy-on-write rewrites' job folders (and INSERTs')
WRITTEN_BY_SPARK = re.compile(r"/data/(delta-)?[0-9a-f]{32}/")


def data_files(catalog: Any, table: str) -> set[str]:
    """The data files of a table's current snapshot."""
    loaded = catalog.load_table(table.removeprefix("lake."))
    return {f.file_path for f in loaded.scan().plan_files()}


def main() -> None:
    parser = sql_parser(__doc__ or "")
    parser.add_argument(
        "--write-mode",
        choices=("merge-on-read", "copy-on-write"),
        default="merge-on-read",
        help="the tables' write.delete/update/merge.mode (copy-on-write: the setting switches "
        "the rewrite by Spark's Parquet writer, NativeRowLevelWrites)",
    )
    parser.add_argument("--format-version", choices=("2", "3"), default="2")
    args = parser.parse_args()
    if args.quick:
        args.rows, args.repeats = 400_000, 1
    name = "spark-delta-rows" if args.write_mode == "merge-on-read" else "spark-cow-rows"
    report = Report(f"{name}-v{args.format_version}", vars(args))

    with workdir(args, "bench-spark-delta-rows") as folder:
        catalog, spark = catalog_session(folder, args.cores)
        source_views(spark, args.rows, args.cores)
        new = spark.range(args.rows, args.rows + 200_000, numPartitions=args.cores).selectExpr(
            "id", "cast(id % 8 as int) AS part", "'new' AS name", "cast(id as double) AS value"
        )
        new.persist().count()
        new.createOrReplaceTempView("new_rows")
        statements = {
            "update": "UPDATE {t} SET value = -value WHERE part = 3",
            "merge": (
                "MERGE INTO {t} t USING upd ON t.id = upd.id AND t.part = 3 "
                "WHEN MATCHED THEN UPDATE SET value = upd.value"
            ),
            "insert_merge": (
                "MERGE INTO {t} t USING new_rows s ON t.id = s.id "
                "WHEN MATCHED THEN UPDATE SET value = s.value WHEN NOT MATCHED THEN INSERT *"
            ),
            "delete": "DELETE FROM {t} WHERE part = 5 AND id % 800 = 5",
            "delete_partition": "DELETE FROM {t} WHERE part = 6 AND id > 6",
        }
        rounds = PairedRounds(list(statements), *MODES)

        def create(name: str) -> str:
            modes = ", ".join(
                f"'write.{kind}.mode' = '{args.write_mode}'"
                for kind in ("delete", "update", "merge")
            )
            spark.sql(
                f"CREATE TABLE lake.bench.{name} ({COLUMNS}) PARTITIONED BY (part) "
                f"TBLPROPERTIES ('format-version' = '{args.format_version}', {modes})"
            )
            spark.sql(f"INSERT INTO lake.bench.{name} SELECT * FROM src")
            return f"lake.bench.{name}"

        for r in range(args.repeats + 1):  # round 0 warms up and is not counted
            tables = {m: create(f"{m}_{r}") for m in MODES}
            inserted = {m: data_files(catalog, tables[m]) for m in MODES}
            order = MODES if r % 2 == 0 else MODES[::-1]
            round_times: dict[tuple[str, str], float] = {}
            for name, statement in statements.items():
                for mode in order:
                    spark.conf.set(SETTING, "true" if mode == "tasks" else "false")
                    with timed() as w:
                        spark.sql(statement.format(t=tables[mode]))
                    round_times[(name, mode)] = w.wall_s
                spark.conf.unset(SETTING)
                checks = {
                    tuple(spark.sql(f"SELECT {CHECK} FROM {t}").first()) for t in tables.values()
                }
                if len(checks) != 1:
                    raise SystemExit(f"the copies disagree after the {name}: {checks}")
            for m in MODES:  # the statements' new files: Spark's writer's exactly with it on
                added = data_files(catalog, tables[m]) - inserted[m]
                by_spark = sum(bool(WRITTEN_BY_SPARK.search(path)) for path in added)
                if (m == "tasks") != (by_spark > 0):
                    raise SystemExit(f"the {m} copy has {by_spark} files of Spark's writer")
            rounds.record(r, round_times)
        spark.stop()

    report.table(
        f"{args.write_mode} statements, format v{args.format_version}, at {args.rows:,} rows, "
        f"seconds (median, min-max of {args.repeats} rounds)",
        ["statement", "Spark's Parquet writer", "the Python data source", "ratio"],
        rounds.rows(),
    )
    report.data = rounds.data()
    report.write()


if __name__ == "__main__":
    main()

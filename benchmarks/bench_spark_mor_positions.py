"""``lk.delete`` / ``lk.update`` / ``lk.merge`` against the same SQL statements, large changes.

A merge-on-read change through the Python API (``lk.delete``, ``lk.update``, ``lk.merge``)
gathers the positions of the rows it changes on the driver, where they become position delete
files (v3: deletion vectors). The SQL catalog's statements gather them as Roaring bitmaps in the
plugin's tasks. A copy-on-write change reads the rows of the files it rewrites (the Python API
with Spark's Parquet reader where the files qualify, ``spark_ext/dml/file_rows.py``) and
writes them back. This times both on the same data, in one run, interleaved, for changes of
millions of rows, where the way the positions and rows travel shows.

Each round makes two copies of a table of 10 million rows by default (``src`` of
``java_merge.source_views``: ``id``, ``part`` = ``id % 8``, ``name``, ``value``),
``PARTITIONED BY (part)``, every ``write.*.mode`` merge-on-read (``--write-mode
copy-on-write``: copy-on-write), and runs on one copy through the Python API and on the other
through SQL (which goes first alternates by round):

* a delete of half the rows (``id % 2 = 0``): 5 million positions in 16 delete files;
* a delete of 1% of partition 5's rows;
* an update of a tenth of the rows (``id % 10 = 1``): a million positions, and the rows'
  new versions;
* a merge of ``upd`` (1% of partition 3's rows, ``value`` negated) on ``id`` and ``part``,
  updating ``value``.

After each change both copies must hold the same rows (an aggregate over every column). A first
round warms up and is not counted; the table shows medians, the ratio (Python API / SQL) its
per-round median and spread.

    python benchmarks/bench_spark_mor_positions.py
    python benchmarks/bench_spark_mor_positions.py --quick --format-version 3
    python benchmarks/bench_spark_mor_positions.py --write-mode copy-on-write
    python benchmarks/bench_spark_mor_positions.py --changes merge_one_percent
"""

from __future__ import annotations

from bench_spark_delta_rows import CHECK
from bench_spark_sql import COLUMNS, catalog_session, sql_parser
from common import PairedRounds, Report, timed, workdir
from java_merge import source_views

MODES = ("python", "sql")
CHANGES = {
    "delete_half": ("delete", "id % 2 = 0", None),
    "delete_one_percent": ("delete", "part = 5 AND id % 800 = 5", None),
    "update_tenth": ("update", "id % 10 = 1", "-value"),
    "merge_one_percent": ("merge", "t.id = s.id AND t.part = s.part", "s.value"),
}


def main() -> None:
    parser = sql_parser(__doc__ or "")
    parser.add_argument("--format-version", choices=("2", "3"), default="2")
    parser.add_argument(
        "--write-mode", choices=("merge-on-read", "copy-on-write"), default="merge-on-read"
    )
    parser.add_argument(
        "--changes",
        nargs="+",
        choices=list(CHANGES),
        default=list(CHANGES),
        help="the changes to run, in this order (each on the table the ones before left)",
    )
    args = parser.parse_args()
    if args.quick:
        args.rows, args.repeats = 400_000, 1
    suffix = "" if args.write_mode == "merge-on-read" else "-cow"
    report = Report(f"spark-mor-positions-v{args.format_version}{suffix}", vars(args))

    import lakecat.spark_ext as lk

    with workdir(args, "bench-spark-mor-positions") as folder:
        catalog, spark = catalog_session(folder, args.cores)
        lk.register(spark, catalog=catalog)  # the data source lk.delete / lk.update read through
        source_views(spark, args.rows, args.cores)
        rounds = PairedRounds(list(args.changes), *MODES)

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
            return f"bench.{name}"

        def run(mode: str, table: str, change: str) -> None:
            kind, condition, value = CHANGES[change]
            if mode == "python" and kind == "delete":
                lk.delete(spark, table, condition, catalog=catalog)
            elif mode == "python" and kind == "update":
                lk.update(spark, table, condition, {"value": value}, catalog=catalog)
            elif mode == "python":
                lk.merge(
                    spark,
                    target=table,
                    source=spark.table("upd"),
                    on=condition,
                    when_matched_update={"value": value},
                    catalog=catalog,
                )
            elif kind == "delete":
                spark.sql(f"DELETE FROM lake.{table} WHERE {condition}")
            elif kind == "merge":
                spark.sql(
                    f"MERGE INTO lake.{table} t USING upd s ON {condition} "
                    f"WHEN MATCHED THEN UPDATE SET value = {value}"
                )
            else:
                spark.sql(f"UPDATE lake.{table} SET value = {value} WHERE {condition}")

        for r in range(args.repeats + 1):  # round 0 warms up and is not counted
            tables = {m: create(f"{m}_{r}") for m in MODES}
            order = MODES if r % 2 == 0 else MODES[::-1]
            round_times: dict[tuple[str, str], float] = {}
            for change in args.changes:
                for mode in order:
                    with timed() as w:
                        run(mode, tables[mode], change)
                    round_times[(change, mode)] = w.wall_s
                checks = {
                    tuple(spark.sql(f"SELECT {CHECK} FROM lake.{t}").first())
                    for t in tables.values()
                }
                if len(checks) != 1:
                    raise SystemExit(f"the copies disagree after {change}: {checks}")
            rounds.record(r, round_times)
        spark.stop()

    report.table(
        f"{args.write_mode} changes, format v{args.format_version}, at {args.rows:,} rows, "
        f"seconds (median, min-max of {args.repeats} rounds)",
        ["change", "Python API (lk.*)", "SQL", "ratio"],
        rounds.rows(),
    )
    report.data = rounds.data()
    report.write()


if __name__ == "__main__":
    main()

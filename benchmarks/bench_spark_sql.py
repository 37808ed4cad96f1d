"""Issue 20: Spark SQL through lakecat's catalog plugin vs plain Parquet, in one run.

The same cached DataFrame (10 million rows by default: ``id`` long, ``part`` int = ``id % 8``,
``name`` string, ``value`` double) is written partitioned 8 ways by ``part``, as plain Parquet
(``df.write.partitionBy("part").parquet(path)``) and into a lakecat table through the SQL
catalog (``INSERT INTO lake.bench.t SELECT * FROM src``, a table ``PARTITIONED BY (part)``),
on a ``local[2]`` session with zstd for both. Then, through SQL on each:

* full scan: ``SELECT sum(id), count(name), sum(value)`` over every row;
* one partition: the same aggregate ``WHERE part = 3`` (plain Parquet prunes the other
  directories; lakecat must prune the other files by its partition values);
  both scans are also timed through ``spark.read.parquet`` over the lakecat table's own data
  folder (the same files, ``part=N`` folders pruned by Spark): the issue's scan targets compare
  the catalog's read with plain Parquet reads of the same files, which isolates the read path
  from the files each writer wrote (their number, sizes and encodings); and through Spark's own
  DataSource V2 Parquet source (``ParquetTable``: ``BatchScanExec``, as every V2 connector's
  scan, the catalog's included, where ``spark.read.parquet`` plans Spark's V1
  ``FileSourceScanExec``), which tells what any V2 read of these files costs in the same
  process;
  both scans of the lakecat table name their reader on their ``EXPLAIN`` line, recorded in
  the report (``reader=parquet``: Spark's own Parquet reader, the table having no delete
  files; ``reader=lakecat``: the Python data source);
* MERGE: ``MERGE INTO lake.bench.t USING upd ON t.id = upd.id WHEN MATCHED THEN UPDATE SET
  value = upd.value`` with ``upd`` = 1% of partition 3's rows, against an ``INSERT INTO`` of the
  same rows into an empty table of the same definition (the issue's comparison), and the number
  of files the MERGE rewrote against the table's files; then the same MERGE with the partition
  in its condition (``ON t.id = upd.id AND t.part = 3``) on a fresh copy of the table, whose
  scans (the runtime ``_file`` filter's and the rewrite's) prune to the partition; and, as the
  floor of the first MERGE in any engine, Spark's own join of the table's files (through
  ``spark.read.parquet``) with ``upd`` on ``id``, reading every column and each row's file as
  the MERGE's scan does, writing nothing.

``--merge-mode merge-on-read`` creates the lakecat tables with ``write.merge.mode =
merge-on-read``: the MERGE then rewrites no data file and writes position delete files
(``--format-version 3``: deletion vectors; the tables then also carry row lineage).
After the MERGE both lakecat scans run again (through those delete files, in that mode), against
the same scans before it. ``--kept-rows views`` reads through delete files with views of each
batch's kept rows instead of moving them inside Spark's vectors (the default), which makes
Spark's code for the scans' query shape slower for every later round (docs/benchmarks.md).

``--iceberg-java`` then times the same INSERT, MERGEs and INSERT of the updated rows on
Iceberg Java 1.10.2's own Spark runtime (the peers' Spark 3.5, ``../shared/peers``, set up by
its ``setup.sh``; ``java_merge.py``), with the same number of repeats, after lakecat's session
has stopped: its MERGE / INSERT ratios are the reference implementation's for the same
statements on the same machine (its absolute seconds are Spark 3.5's). In the same session it
also writes the rows as plain Parquet and times the full scan and the one-partition aggregate on
both, so the reference's INSERT and scans against plain Parquet (Spark 3.5's) stand next to
lakecat's.

Each repeat writes fresh copies (a new path, a new table) and runs every measurement
(interleaved); the four reads of each scan (plain Parquet, the same files, the catalog, the
same files through Spark's V2 source) run in an order rotated every round, so that none always
runs first. A first round warms the JVM and
the Python workers up and is not counted. The tables show medians, the ratios their per-repeat
medians and spread (min-max).

Targets (the issue): full scan and one partition <= 1.1x plain Parquet over the same files
(one partition <= 1.0x of the separately written plain Parquet), INSERT <= 1.1x;
the MERGE rewrites only the files holding the updated rows and takes <= 2x the INSERT of the
same rows.

    python benchmarks/bench_spark_sql.py
    python benchmarks/bench_spark_sql.py --quick
    python benchmarks/bench_spark_sql.py --merge-mode merge-on-read --iceberg-java
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from common import Report, base_parser, local_path, median, ratio, timed, workdir
from java_merge import source_views

AGGREGATE = "sum(id) AS ids, count(name) AS names, sum(value) AS total"
COLUMNS = "id bigint, part int, name string, value double"
PEERS_HOME = Path(os.environ.get("PEERS_HOME") or Path.home() / ".cache" / "lakecat-peers")
JAVA_MERGE = Path(__file__).with_name("java_merge.py")


def join_every_column(files: Any, upd: Any) -> int:
    """Spark's own inner join of Parquet files (a DataFrame of them) with ``upd`` on ``id``,
    reading every column and each row's file as a MERGE reads the table's rows; the rows
    matched. The least a MERGE whose condition does not name the partition does in any engine:
    the updated ids are spread over every file's id range, so no statistics rule a file out."""
    rows = files.selectExpr("*", "_metadata.file_path AS _file")
    joined = rows.join(upd.select("id"), "id")
    hashed = joined.selectExpr("count(*) AS n", "sum(hash(*)) AS h").collect()[0]
    return int(hashed["n"])


def v2_files(spark: Any, data: Path) -> Any:
    """The Parquet files under ``data`` read through Spark's own DataSource V2 Parquet source
    (``ParquetTable``, a ``BatchScanExec`` as the catalog's scans are) instead of its V1
    ``FileSourceScanExec``: Spark 4 reads Parquet through V1 unless ``parquet`` is left out of
    ``spark.sql.sources.useV1SourceList`` when the DataFrame is made."""
    key = "spark.sql.sources.useV1SourceList"
    before = spark.conf.get(key)
    spark.conf.set(key, ",".join(x for x in before.split(",") if x.strip() != "parquet"))
    try:
        frame = spark.read.parquet(str(data))
    finally:
        spark.conf.set(key, before)
    plan = frame._jdf.queryExecution().analyzed().toString()
    if not plan.startswith("RelationV2"):
        raise SystemExit(f"not a V2 Parquet read: {plan}")
    return frame


def spark_session(cores: int, catalog: Any) -> Any:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    import lakecat.spark_ext as lk

    session = (
        lk.session("lake", catalog=catalog)
        .master(f"local[{cores}]")
        .appName("lakecat-bench-spark-sql")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "4g")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", str(cores))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.parquet.compression.codec", "zstd")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "100000")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session


def catalog_session(folder: Path, cores: int) -> tuple[Any, Any]:
    """An embedded catalog in ``folder`` with the namespace ``bench``, and a session with it
    attached as ``lake``."""
    from lakecat.catalog import Catalog

    catalog = Catalog.embedded(folder / "lake")
    catalog.create_namespace("bench")
    return catalog, spark_session(cores, catalog)


def spread(values: list[float]) -> str:
    return f"{median(values):.2f}x ({min(values):.2f}-{max(values):.2f}x)"


def sql_parser(doc: str) -> argparse.ArgumentParser:
    """The options of the Spark SQL benchmarks: the common ones, rows, repeats and cores."""
    parser = base_parser(doc)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cores", type=int, default=2)
    return parser


def main() -> None:
    parser = sql_parser(__doc__ or "")
    parser.add_argument(
        "--merge-mode",
        choices=("copy-on-write", "merge-on-read"),
        default="copy-on-write",
        help="the lakecat table's write.merge.mode (merge-on-read: the MERGE writes delete "
        "files instead of rewriting data files)",
    )
    parser.add_argument(
        "--format-version",
        choices=("2", "3"),
        default="2",
        help="the lakecat tables' format version (3: row lineage, deletion vectors)",
    )
    parser.add_argument(
        "--kept-rows",
        choices=("moved", "views"),
        default="moved",
        help="how reads through delete files give a batch's kept rows: moved inside Spark's "
        "vectors (the default) or views of them (spark.lakecat.moveKeptRows=false), to compare",
    )
    parser.add_argument(
        "--iceberg-java",
        action="store_true",
        help="also time the INSERT, scans and MERGEs on Iceberg Java's Spark runtime (the peers')",
    )
    args = parser.parse_args()
    if args.quick:
        args.rows, args.repeats = 400_000, 1
    report = Report("spark-sql", vars(args))

    with workdir(args, "bench-spark-sql") as folder:
        catalog, spark = catalog_session(folder, args.cores)
        spark.conf.set("spark.lakecat.moveKeptRows", str(args.kept_rows == "moved").lower())
        src, updated_rows = source_views(spark, args.rows, args.cores)

        def create(name: str) -> str:
            spark.sql(
                f"CREATE TABLE lake.bench.{name} ({COLUMNS}) PARTITIONED BY (part) "
                f"TBLPROPERTIES ('write.merge.mode' = '{args.merge_mode}', "
                f"'format-version' = '{args.format_version}')"
            )
            return f"lake.bench.{name}"

        def aggregate(relation: str, where: str = "") -> tuple[Any, ...]:
            return tuple(spark.sql(f"SELECT {AGGREGATE} FROM {relation} {where}").collect()[0])

        def reader(relation: str, where: str = "") -> str:
            """The reader named on the scan's EXPLAIN line (lakecat tables)."""
            plan = spark.sql(f"EXPLAIN SELECT {AGGREGATE} FROM {relation} {where}").collect()[0][0]
            line = next(x for x in plan.splitlines() if "BatchScan" in x)
            return line.split("reader=", 1)[1].split(",", 1)[0] if "reader=" in line else "?"

        keys = ("pw", "lw", "ps", "fs", "ls", "pp", "fp", "lp", "merge", "insert", "merge_part")
        keys += ("join", "vs", "vp")
        keys += ("ls_after", "lp_after")
        times: dict[str, list[float]] = {k: [] for k in keys}
        ratio_keys = ("write", "scan", "part", "same_scan", "same_part", "merge", "merge_part")
        ratio_keys += ("after_scan", "after_part", "join", "merge_join", "v2_scan", "v2_part")
        ratios: dict[str, list[float]] = {k: [] for k in ratio_keys}
        rewritten: list[tuple[int, int, int]] = []
        for r in range(args.repeats + 1):  # round 0 warms up and is not counted
            path = str(folder / f"plain-{r}")
            table = create(f"t_{r}")
            same_rows = create(f"inserted_{r}")
            t: dict[str, float] = {}
            with timed() as w:
                src.write.partitionBy("part").parquet(path)
            t["pw"] = w.wall_s
            with timed() as w:
                spark.sql(f"INSERT INTO {table} SELECT * FROM src")
            t["lw"] = w.wall_s
            spark.read.parquet(path).createOrReplaceTempView("plain")
            data = local_path(catalog.load_table(f"bench.t_{r}").location) / "data"
            same_files = spark.read.parquet(str(data))
            same_files.createOrReplaceTempView("same_files")
            v2_files(spark, data).createOrReplaceTempView("v2_files")
            results = set()
            # the four reads of each query run in an order rotated every round, so that no
            # reader always runs first after the writes (or after the others)
            relations = ("plain", "same_files", table, "v2_files")
            for where, keys_ in (
                ("", ("ps", "fs", "ls", "vs")),
                ("WHERE part = 3", ("pp", "fp", "lp", "vp")),
            ):
                reads = list(zip(keys_, relations, strict=True))
                for key, relation in reads[r % 4 :] + reads[: r % 4]:
                    with timed() as w:
                        results.add(aggregate(relation, where))
                    t[key] = w.wall_s
            if len(results) != 2:  # each aggregate, the same over every relation
                raise SystemExit(f"plain Parquet and lakecat disagree: {results}")
            readers = {reader(table), reader(table, "WHERE part = 3")}
            with timed() as w:  # what any engine's MERGE without the partition must do at least
                matched = join_every_column(same_files, spark.table("upd"))
            t["join"] = w.wall_s
            if matched != updated_rows:
                raise SystemExit(f"the join matched {matched} rows, not {updated_rows}")
            before = catalog.load_table(f"bench.t_{r}")
            files_before = len(before.scan().plan_files())
            in_partition = len(before.scan(row_filter="part = 3").plan_files())
            with timed() as w:
                spark.sql(
                    f"MERGE INTO {table} t USING upd ON t.id = upd.id "
                    "WHEN MATCHED THEN UPDATE SET value = upd.value"
                )
            t["merge"] = w.wall_s
            with timed() as w:
                spark.sql(f"INSERT INTO {same_rows} SELECT * FROM upd")
            t["insert"] = w.wall_s
            # the same MERGE with the partition in its condition, on a copy of the table: the
            # scans that choose and read the rows prune to the partition
            keyed = create(f"k_{r}")
            spark.sql(f"INSERT INTO {keyed} SELECT * FROM src")
            with timed() as w:
                spark.sql(
                    f"MERGE INTO {keyed} t USING upd ON t.id = upd.id AND t.part = 3 "
                    "WHEN MATCHED THEN UPDATE SET value = upd.value"
                )
            t["merge_part"] = w.wall_s
            merged = before.refresh().current_snapshot()
            assert merged is not None
            removed = int(merged.summary.get("deleted-data-files", "0"))
            delete_files = int(merged.summary.get("added-delete-files", "0"))
            changed = spark.sql(f"SELECT count(*) FROM {table} WHERE value < 0").collect()[0][0]
            if changed != updated_rows:
                raise SystemExit(f"the MERGE updated {changed} rows, not {updated_rows}")
            # the same scans of the table after the MERGE (merge-on-read: through its deletes)
            with timed() as w:
                aggregate(table)
            t["ls_after"] = w.wall_s
            with timed() as w:
                aggregate(table, "WHERE part = 3")
            t["lp_after"] = w.wall_s
            after_readers = {reader(table), reader(table, "WHERE part = 3")}
            print(
                f"  round {r}{' (warm-up)' if r == 0 else ''}: "
                + ", ".join(f"{k} {v:.2f}s" for k, v in t.items())
                + f"; merge rewrote {removed} of {files_before} files"
                + f" and added {delete_files} delete files; reader "
                + "/".join(sorted(readers))
                + ", after the MERGE "
                + "/".join(sorted(after_readers))
            )
            if r > 0:
                for key, value in t.items():
                    times[key].append(value)
                ratios["write"].append(ratio(t["lw"], t["pw"]))
                ratios["scan"].append(ratio(t["ls"], t["ps"]))
                ratios["part"].append(ratio(t["lp"], t["pp"]))
                ratios["same_scan"].append(ratio(t["ls"], t["fs"]))
                ratios["same_part"].append(ratio(t["lp"], t["fp"]))
                ratios["merge"].append(ratio(t["merge"], t["insert"]))
                ratios["merge_part"].append(ratio(t["merge_part"], t["insert"]))
                ratios["join"].append(ratio(t["join"], t["insert"]))
                ratios["merge_join"].append(ratio(t["merge"], t["join"]))
                ratios["after_scan"].append(ratio(t["ls_after"], t["ls"]))
                ratios["after_part"].append(ratio(t["lp_after"], t["lp"]))
                ratios["v2_scan"].append(ratio(t["ls"], t["vs"]))
                ratios["v2_part"].append(ratio(t["lp"], t["vp"]))
                rewritten.append((removed, in_partition, files_before))

        report.note(f"the lakecat scans' reader (EXPLAIN): {'/'.join(sorted(readers))}")
        report.note(
            f"after the MERGE (delete files: {delete_files}): {'/'.join(sorted(after_readers))}"
        )
        m = {key: median(values) for key, values in times.items()}
        report.table(
            f"{args.rows:,} rows in 8 partitions, local[{args.cores}], median of "
            f"{args.repeats} (seconds)",
            ["", "plain Parquet", "lakecat SQL catalog", "lakecat / Parquet, median (min-max)"],
            [
                ["INSERT (write every row)", m["pw"], m["lw"], spread(ratios["write"])],
                ["full scan (aggregate every column)", m["ps"], m["ls"], spread(ratios["scan"])],
                ["one partition (WHERE part = 3)", m["pp"], m["lp"], spread(ratios["part"])],
            ],
        )
        removed, in_partition, total = rewritten[-1]
        report.table(
            f"MERGE updating {updated_rows:,} rows (1% of one partition) vs INSERT of the same "
            "rows into an empty table (seconds)",
            [
                "MERGE condition",
                "MERGE",
                "INSERT same rows",
                "MERGE / INSERT",
                "files rewritten",
                "partition's files",
                "table's files",
            ],
            [
                [
                    "t.id = upd.id",
                    m["merge"],
                    m["insert"],
                    spread(ratios["merge"]),
                    removed,
                    in_partition,
                    total,
                ],
                [
                    "t.id = upd.id AND t.part = 3",
                    m["merge_part"],
                    m["insert"],
                    spread(ratios["merge_part"]),
                    "",
                    "",
                    "",
                ],
                [
                    "(no MERGE: Spark's join of the same files on t.id = upd.id, every column)",
                    m["join"],
                    m["insert"],
                    spread(ratios["join"]),
                    "",
                    "",
                    "",
                ],
            ],
        )
        report.note(
            "the MERGE on t.id = upd.id against Spark's bare join of the same Parquet files "
            f"(the rows it must read and match): {spread(ratios['merge_join'])}"
        )
        report.table(
            "Reads of the same files: the catalog's scan vs spark.read.parquet over the lakecat "
            "table's data folder (seconds)",
            [
                "",
                "Parquet, same files",
                "lakecat SQL catalog",
                "lakecat / Parquet, median (min-max)",
            ],
            [
                ["full scan", m["fs"], m["ls"], spread(ratios["same_scan"])],
                ["one partition (WHERE part = 3)", m["fp"], m["lp"], spread(ratios["same_part"])],
            ],
        )
        report.table(
            "Reads of the same files through DataSource V2: the catalog's scan vs Spark's own V2 "
            "Parquet source over the lakecat table's data folder (seconds)",
            [
                "",
                "Spark's V2 Parquet, same files",
                "lakecat SQL catalog",
                "lakecat / V2 Parquet, median (min-max)",
            ],
            [
                ["full scan", m["vs"], m["ls"], spread(ratios["v2_scan"])],
                ["one partition (WHERE part = 3)", m["vp"], m["lp"], spread(ratios["v2_part"])],
            ],
        )
        report.table(
            "The lakecat table's scans after the MERGE (merge-on-read: through its position "
            "delete files) against before it (seconds)",
            ["", "before the MERGE", "after the MERGE", "after / before, median (min-max)"],
            [
                ["full scan", m["ls"], m["ls_after"], spread(ratios["after_scan"])],
                ["one partition", m["lp"], m["lp_after"], spread(ratios["after_part"])],
            ],
        )
        report.target(
            "full scan <= 1.1x plain Parquet over the same files",
            median(ratios["same_scan"]) <= 1.1,
            spread(ratios["same_scan"]),
        )
        report.target(
            "one partition <= 1.1x plain Parquet over the same files",
            median(ratios["same_part"]) <= 1.1,
            spread(ratios["same_part"]),
        )
        report.target(
            "full scan <= 1.1x plain Parquet", median(ratios["scan"]) <= 1.1, spread(ratios["scan"])
        )
        report.target(
            "one partition <= 1.0x plain Parquet",
            median(ratios["part"]) <= 1.0,
            spread(ratios["part"]),
        )
        report.target(
            "INSERT <= 1.1x plain Parquet", median(ratios["write"]) <= 1.1, spread(ratios["write"])
        )
        report.target(
            "MERGE rewrites only the files holding the updated rows",
            all(rem <= part for rem, part, _ in rewritten),
            f"{removed} of the partition's {in_partition} files",
        )
        report.target(
            "MERGE <= 2x an INSERT of the same rows",
            median(ratios["merge"]) <= 2.0,
            spread(ratios["merge"]),
        )
        report.target(
            "MERGE with the partition in its condition <= 2x an INSERT of the same rows",
            median(ratios["merge_part"]) <= 2.0,
            spread(ratios["merge_part"]),
        )
        spark.stop()
        if args.iceberg_java:
            iceberg_java(report, args, folder / "iceberg-java", m["merge"], m["merge_part"])
    report.write()


def iceberg_java(report: Report, args: Any, folder: Path, merge: float, merge_part: float) -> None:
    """Iceberg Java's figures for the same statements (``java_merge.py``), next to lakecat's."""
    folder.mkdir()
    python = PEERS_HOME / "spark35" / "bin" / "python"
    env = {**os.environ, "PYSPARK_PYTHON": str(python), "PYSPARK_DRIVER_PYTHON": str(python)}
    command = [str(python), str(JAVA_MERGE), str(folder), str(args.rows), str(args.repeats)]
    ran = subprocess.run(
        [*command, args.merge_mode, args.format_version],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    if ran.returncode != 0:
        raise SystemExit(f"Iceberg Java's MERGE run failed:\n{ran.stderr[-3000:]}")
    times = json.loads(ran.stdout.strip().splitlines()[-1])
    m = {key: median(values) for key, values in times.items()}
    merge_ratios = [ratio(a, b) for a, b in zip(times["merge"], times["insert"], strict=True)]
    part_ratios = [ratio(a, b) for a, b in zip(times["merge_part"], times["insert"], strict=True)]
    report.table(
        f"Iceberg Java 1.10.2 (Spark 3.5, local[2]) on the same statements, {args.merge_mode}, "
        f"format v{args.format_version}, median of {args.repeats} (seconds); lakecat's MERGEs "
        "from the table above",
        [
            "MERGE condition",
            "Iceberg Java MERGE",
            "its INSERT of the same rows",
            "MERGE / INSERT, median (min-max)",
            "lakecat MERGE",
        ],
        [
            ["t.id = upd.id", m["merge"], m["insert"], spread(merge_ratios), merge],
            [
                "t.id = upd.id AND t.part = 3",
                m["merge_part"],
                m["insert"],
                spread(part_ratios),
                merge_part,
            ],
        ],
    )
    report.note(f"Iceberg Java's INSERT of every row: {m['write']:.2f} s (median)")
    rows = []
    for label, key in (
        ("INSERT (write every row)", "write"),
        ("full scan (aggregate every column)", "scan"),
        ("one partition (WHERE part = 3)", "part"),
    ):
        plain = times[f"{key}_plain"]
        ratios = [ratio(a, b) for a, b in zip(times[key], plain, strict=True)]
        rows.append([label, median(plain), m[key], spread(ratios)])
    report.table(
        "Iceberg Java 1.10.2 against Spark 3.5's plain Parquet in its session (the reference "
        f"for lakecat's targets against plain Parquet), median of {args.repeats} (seconds)",
        ["", "plain Parquet", "Iceberg Java", "Iceberg Java / Parquet, median (min-max)"],
        rows,
    )


if __name__ == "__main__":
    main()

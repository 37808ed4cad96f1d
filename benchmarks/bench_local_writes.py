"""Issue 20: native writes into a local warehouse through lakecat's local file system.

Spark's writer makes its folders and files through Hadoop's local file system, which (without
Hadoop's native library, as with the PySpark wheels) starts a ``chmod`` process for each and
writes a ``.crc`` file beside each data file; lakecat's native writes pass their own
(``lakecat.spark.LocalFiles``, ``spark_ext/native/local_files.py``) instead. This script times
the same statements with the session setting ``spark.lakecat.localFileSystem`` = ``lakecat``
(the default) and ``hadoop`` (Hadoop's own), alternating the order each round, in one session
on one SQL catalog:

* ``INSERT`` of 60 rows into a table partitioned 4 ways (SQL through the catalog);
* ``lk.write`` of ``--rows`` rows partitioned 8 ways (the Python API);
* a merge-on-read ``UPDATE`` of 10 rows (the new rows written in Spark's tasks);
* a copy-on-write ``UPDATE`` of 10 rows (the rows of the files holding them rewritten by the
  native writer).

Each statement runs on a table of its own per setting, so both settings see tables of the same
history. Reported: median seconds (min-max) per setting and the median of the per-round ratios
``lakecat / hadoop``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from common import PairedRounds, Report, base_parser, catalog_session, workdir

SETTING = "spark.lakecat.localFileSystem"
CHOICES = ("lakecat", "hadoop")
MOR = ", ".join(f"'write.{kind}.mode' = 'merge-on-read'" for kind in ("delete", "update", "merge"))


def main() -> None:
    parser = base_parser(__doc__ or "")
    parser.add_argument("--rows", type=int, default=None, help="rows of lk.write (2,000,000)")
    parser.add_argument("--repeats", type=int, default=None, help="rounds (7)")
    args = parser.parse_args()
    rows = args.rows or (20_000 if args.quick else 2_000_000)
    repeats = args.repeats or (2 if args.quick else 7)

    import lakecat.spark_ext as lk
    from lakecat.catalog import Catalog

    report = Report("bench_local_writes", {**vars(args), "rows": rows, "repeats": repeats})
    with workdir(args, "lakecat-bench-local-writes-") as root:
        catalog = Catalog.embedded(Path(root) / "lake")
        spark = catalog_session(catalog, "lakecat-bench-local-writes")
        big = spark.range(rows).selectExpr("id", "id % 8 AS part", "id * 3 AS v").cache()
        big.count()
        for choice in CHOICES:
            spark.sql(
                f"CREATE TABLE lake.db.small_{choice} (id bigint, part int) PARTITIONED BY (part)"
            )
            spark.sql(
                f"CREATE TABLE lake.db.big_{choice} (id bigint, part bigint, v bigint) "
                "PARTITIONED BY (part)"
            )
            for kind, properties in (("mor", MOR), ("cow", "'format-version' = '2'")):
                spark.sql(
                    f"CREATE TABLE lake.db.{kind}_{choice} (id bigint, part int, v bigint) "
                    f"PARTITIONED BY (part) TBLPROPERTIES ({properties})"
                )
                spark.sql(
                    f"INSERT INTO lake.db.{kind}_{choice} SELECT id, CAST(id % 4 AS int), id "
                    "FROM range(0, 100000)"
                )

        def statements(choice: str, round_: int) -> dict[str, Any]:
            low = round_ * 10
            return {
                "INSERT 60 rows": lambda: spark.sql(
                    f"INSERT INTO lake.db.small_{choice} SELECT id, CAST(id % 4 AS int) "
                    "FROM range(0, 60)"
                ).collect(),
                f"lk.write {rows:,} rows": lambda: lk.write(
                    big, f"db.big_{choice}", catalog=catalog
                ),
                "UPDATE 10 rows (merge-on-read)": lambda: spark.sql(
                    f"UPDATE lake.db.mor_{choice} SET v = v + 1 "
                    f"WHERE id >= {low} AND id < {low + 10}"
                ).collect(),
                "UPDATE 10 rows (copy-on-write)": lambda: spark.sql(
                    f"UPDATE lake.db.cow_{choice} SET v = v + 1 "
                    f"WHERE id >= {low} AND id < {low + 10}"
                ).collect(),
            }

        rounds = PairedRounds(list(statements("lakecat", 0)), *CHOICES)
        for round_ in range(repeats + 1):  # round 0 warms up
            seconds: dict[tuple[str, str], float] = {}
            for choice in CHOICES if round_ % 2 else CHOICES[::-1]:
                spark.conf.set(SETTING, choice)
                for name, run in statements(choice, round_).items():
                    start = time.perf_counter()
                    run()
                    seconds[(name, choice)] = time.perf_counter() - start
            rounds.record(round_, seconds)
        spark.conf.unset(SETTING)
        spark.stop()
        catalog.close()
    report.table(
        f"native writes into a local warehouse ({repeats} rounds, seconds)",
        ["statement", "lakecat's LocalFiles", "Hadoop's local file system", "ratio (min-max)"],
        rounds.rows(),
    )
    report.data = rounds.data()
    report.write()


if __name__ == "__main__":
    main()

"""Issue 20: aggregates answered from the files' metrics (Spark's aggregate push-down).

The catalog plugin's scan builder answers ``count(*)``, ``count(col)``, ``min`` and ``max``
without ``GROUP BY`` from the metrics of the data files the read plans, when no filter is left
for Spark to evaluate on the rows and no delete file applies (docs/spark-sql.md, "Aggregates
from metadata"): no data file is opened and Spark runs no job. This script times, in one
session on one SQL catalog, alternating the order each round, on a table of ``--rows`` rows
(``id``, ``part`` = ``id % 8``, ``name``, ``value``; partitioned by ``part``) written by
``--inserts`` INSERTs (so many files):

* ``SELECT count(*)`` of the whole table;
* ``SELECT count(*), min(id), max(id)`` of one partition (``WHERE part = 3``);

as shipped against ``spark.lakecat.aggregatePushDown=false`` (Spark reads the rows and
aggregates them, as before), with the same answers (checked). Reported: median seconds
(min-max) per mode and the median of the per-round ratios ``from metrics / from the rows``.
"""

from __future__ import annotations

import time
from pathlib import Path

from common import PairedRounds, Report, base_parser, catalog_session, workdir

MODES = ("from metrics", "from the rows (before)")
OFF = {"spark.lakecat.aggregatePushDown": "false"}
COLUMNS = "id bigint, part int, name string, value double"
QUERIES = {
    "count(*) of the table": "SELECT count(*) FROM lake.db.t",
    "count(*), min(id), max(id) of one partition": (
        "SELECT count(*), min(id), max(id) FROM lake.db.t WHERE part = 3"
    ),
}


def main() -> None:
    parser = base_parser(__doc__ or "")
    parser.add_argument("--rows", type=int, default=None, help="rows of the table (10M)")
    parser.add_argument("--inserts", type=int, default=8, help="INSERTs that write them (8)")
    parser.add_argument("--repeats", type=int, default=None, help="rounds (7)")
    args = parser.parse_args()
    rows = args.rows or (40_000 if args.quick else 10_000_000)
    repeats = args.repeats or (2 if args.quick else 7)

    from lakecat.catalog import Catalog
    from lakecat.spark_ext.native.write import session_conf

    report = Report("bench_aggregates", {**vars(args), "rows": rows, "repeats": repeats})
    with workdir(args, "lakecat-bench-aggregates-") as root:
        catalog = Catalog.embedded(Path(root) / "lake")
        spark = catalog_session(catalog, "lakecat-bench-aggregates")
        spark.sql(f"CREATE TABLE lake.db.t ({COLUMNS}) PARTITIONED BY (part)")
        step = rows // args.inserts
        for start in range(0, rows, step):
            spark.sql(
                "INSERT INTO lake.db.t SELECT id, CAST(id % 8 AS int), concat('name-', id % 1000), "
                f"CAST(id AS double) * 0.5 FROM range({start}, {min(start + step, rows)})"
            )
        files = len(catalog.load_table("db.t").scan().plan_files())

        def run(mode: str, query: str) -> tuple[float, list[tuple[object, ...]]]:
            with session_conf(spark, {} if mode == MODES[0] else OFF):
                df = spark.sql(query)
                plan = df._jdf.queryExecution().executedPlan().toString()
                if ("BatchScan" not in plan) != (mode == MODES[0]):
                    raise SystemExit(f"{query}, {mode}: the plan reads the table: {plan}")
                start = time.perf_counter()
                answer = [tuple(r) for r in spark.sql(query).collect()]
                return time.perf_counter() - start, answer

        rounds = PairedRounds(list(QUERIES), *MODES)
        for round_ in range(repeats + 1):  # round 0 warms up
            seconds: dict[tuple[str, str], float] = {}
            for name, query in QUERIES.items():
                answers = set()
                for mode in MODES if round_ % 2 else MODES[::-1]:
                    seconds[(name, mode)], answer = run(mode, query)
                    answers.add(repr(answer))
                if len(answers) != 1:
                    raise SystemExit(f"{name}: the modes disagree: {answers}")
            rounds.record(round_, seconds)
        spark.stop()
        catalog.close()
    rounds.report_to(
        report,
        f"aggregates of a {rows:,}-row table of {files} files ({repeats} rounds, seconds)",
        "query",
    )
    report.write()


if __name__ == "__main__":
    main()

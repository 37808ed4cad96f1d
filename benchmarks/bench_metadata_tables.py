"""Metadata tables through the Spark SQL catalog: what a query that selects few columns saves
now that the plugin prunes them (no issue target; issue 20's metadata tables).

One table of ``--columns`` columns (default 21: bigint, double, string and date in turn) with
``--files`` data files (default 2,000, one per partition of one append). Each repeat runs, in
an order that rotates by repeat, on a ``local[2]`` session:

* ``SELECT file_path FROM lake.bench.t.files``: one column; ``readable_metrics`` (every
  column's sizes, counts and decoded bounds, per file) is not made;
* ``SELECT count(*) FROM lake.bench.t.entries``: the first column only;
* ``SELECT file_path, readable_metrics FROM lake.bench.t.files``: the decoded bounds;
* ``SELECT * FROM lake.bench.t.files``: every column, what every query made before the pruning.

Each query's rows are collected on the driver. The ratio is the query's time over ``SELECT *``'s
in the same repeat.

    python benchmarks/bench_metadata_tables.py              # 2,000 files, 7 repeats
    python benchmarks/bench_metadata_tables.py --quick      # 300 files, 3 repeats
"""

from __future__ import annotations

import datetime as dt
import gc
import time
from pathlib import Path

import pyarrow as pa
from bench_spark_sql import catalog_session
from common import Report, base_parser, median, workdir

QUERIES = {
    "file_path": "SELECT file_path FROM lake.bench.t.files",
    "count(*) of entries": "SELECT count(*) FROM lake.bench.t.entries",
    "file_path, readable_metrics": "SELECT file_path, readable_metrics FROM lake.bench.t.files",
    "*": "SELECT * FROM lake.bench.t.files",
}


def wide_rows(files: int, columns: int, per_file: int = 5) -> pa.Table:
    """``per_file`` rows for each of ``files`` partitions ``p``, and ``columns`` columns."""
    n = files * per_file
    data: dict[str, pa.Array] = {"p": pa.array([i // per_file for i in range(n)], pa.int64())}
    makers = (
        lambda i: pa.array(range(i, i + n), pa.int64()),
        lambda i: pa.array([x * 0.5 + i for x in range(n)], pa.float64()),
        lambda i: pa.array([f"value-{i}-{x}" for x in range(n)], pa.string()),
        lambda i: pa.array([dt.date(2020, 1, 1) + dt.timedelta(days=x % 900) for x in range(n)]),
    )
    for c in range(columns - 1):
        data[f"c{c}"] = makers[c % len(makers)](c)
    return pa.table(data)


def main() -> None:
    parser = base_parser(__doc__ or "")
    parser.add_argument("--files", type=int, default=None, help="data files (2,000)")
    parser.add_argument("--columns", type=int, default=21)
    parser.add_argument("--repeats", type=int, default=None, help="repeats (7)")
    args = parser.parse_args()
    files = args.files or (300 if args.quick else 2_000)
    repeats = args.repeats or (3 if args.quick else 7)
    report = Report("bench_metadata_tables", {**vars(args), "files": files, "repeats": repeats})
    with workdir(args, "lakecat-bench-metadata-") as root:
        catalog, spark = catalog_session(Path(root), 2)
        table = catalog.create_table(
            "bench.t", wide_rows(1, args.columns).schema, partition_by=["p"]
        )
        table.append(wide_rows(files, args.columns))
        assert len(table.scan().plan_files()) == files
        for sql in QUERIES.values():  # warm-up: the session, the Python workers
            spark.sql(sql).collect()
        times: dict[str, list[float]] = {name: [] for name in QUERIES}
        names = list(QUERIES)
        for r in range(repeats):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                gc.collect()
                t0 = time.perf_counter()
                got = spark.sql(QUERIES[name]).collect()
                times[name].append(time.perf_counter() - t0)
                assert len(got) == (1 if name.startswith("count") else files), name
        spark.stop()
        catalog.close()
    body = []
    for name, values in times.items():
        ratios = [v / s for v, s in zip(values, times["*"], strict=True)]
        body.append(
            [
                QUERIES[name],
                round(median(values), 3),
                round(min(values), 3),
                round(max(values), 3),
                f"{median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f}x)",
            ]
        )
    report.table(
        f"metadata table queries on {files:,} files of {args.columns} columns "
        f"({repeats} repeats, seconds)",
        ["query", "median", "min", "max", "/ SELECT * (median, min-max)"],
        body,
    )
    report.write()


if __name__ == "__main__":
    main()

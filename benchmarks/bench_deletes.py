"""Issue 18: reading a table with 1% of its rows deleted, against the same rows compacted.

Iceberg Java 1.10.2 (the peers' Spark 3.5 venv, ``../shared/peers``) writes three tables from
the same rows (``java_delete_tables.py``): ``pos`` (v2, the 1% deleted through position delete
files), ``dv`` (v3, deletion vectors) and ``compacted`` (the remaining rows, no deletes). lakecat
reads each whole with ``table.scan().to_arrow()`` through one catalog on Java's JDBC catalog,
interleaved (pos, dv, compacted, pos, ...) ``--repeats`` times; the tables show the median and
the spread (min-max) of the wall time, and the ratios with deletes / compacted per repeat.

Target: reading with deletes within 1.3x of reading the compacted table.

``--writer lakecat`` builds the same three tables with lakecat instead (issue 19: reading what
lakecat's own merge-on-read deletes wrote): ten appends of the same rows, then
``table.delete(...)`` of the same 1% on the v2 table (position delete files) and the v3 table
(deletion vectors); ``compacted`` holds the remaining rows.

    python benchmarks/bench_deletes.py               # 10 million rows
    python benchmarks/bench_deletes.py --quick       # 200,000 rows
    python benchmarks/bench_deletes.py --writer lakecat
"""

from __future__ import annotations

import gc
import os
import subprocess
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from common import Report, base_parser, median, workdir

from lakecat.catalog import Catalog
from lakecat.metadata.expressions import In

PEERS_HOME = Path(os.environ.get("PEERS_HOME") or Path.home() / ".cache" / "lakecat-peers")
SPARK_PYTHON = PEERS_HOME / "spark35" / "bin" / "python"
BUILDER = Path(__file__).with_name("java_delete_tables.py")
TABLES = ("pos", "dv", "compacted")


def main() -> None:
    parser = base_parser(__doc__ or "")
    parser.add_argument("--rows", type=int, default=None, help="rows per table (10,000,000)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--writer", choices=("java", "lakecat"), default="java", help="who writes the tables"
    )
    args = parser.parse_args()
    rows = args.rows or (200_000 if args.quick else 10_000_000)
    report = Report("bench_deletes", {**vars(args), "rows": rows})
    with workdir(args, "lakecat-bench-deletes-") as root:
        started = time.monotonic()
        if args.writer == "java":
            build_with_java(root, rows)
        catalog = Catalog(
            f"sqlite:///{root / 'catalog.db'}", warehouse=str(root / "warehouse"), name="peers"
        )
        if args.writer == "lakecat":
            build_with_lakecat(catalog, rows)
        report.note(f"tables built by {args.writer} in {time.monotonic() - started:.0f} s")
        times: dict[str, list[float]] = {t: [] for t in TABLES}
        counts: dict[str, int] = {}
        for _ in range(args.repeats):
            for name in TABLES:
                table = catalog.load_table(f"db.{name}")
                gc.collect()
                t0 = time.perf_counter()
                data = table.scan().to_arrow()
                times[name].append(time.perf_counter() - t0)
                counts[name] = data.num_rows
                del data
        catalog.close()
    expected = rows - rows // 100 - (1 if rows % 100 > 7 else 0)
    report.table(
        f"Full read of {rows:,} rows, 1% deleted (lakecat to_arrow, {args.repeats} repeats)",
        ["table", "rows read", "median s", "min s", "max s"],
        [
            [
                n,
                counts[n],
                round(median(times[n]), 3),
                round(min(times[n]), 3),
                round(max(times[n]), 3),
            ]
            for n in TABLES
        ],
    )
    ratios = {
        n: [a / b for a, b in zip(times[n], times["compacted"], strict=True)] for n in ("pos", "dv")
    }
    report.table(
        "Read with deletes / read of the compacted table (per repeat)",
        ["deletes", "median", "min", "max"],
        [[n, round(median(r), 2), round(min(r), 2), round(max(r), 2)] for n, r in ratios.items()],
    )
    assert all(counts[n] == expected for n in TABLES), (counts, expected)
    for name, r in ratios.items():
        report.target(
            f"reading with {'position deletes' if name == 'pos' else 'deletion vectors'} within "
            "1.3x of the compacted table",
            median(r) <= 1.3,
            f"{median(r):.2f}x median ({min(r):.2f}-{max(r):.2f}x)",
        )
    report.write()


def build_with_java(root: Path, rows: int) -> None:
    built = subprocess.run(
        [str(SPARK_PYTHON), str(BUILDER), str(root), str(rows)],
        capture_output=True,
        text=True,
        check=False,
    )
    if built.returncode != 0:
        raise SystemExit(f"Iceberg Java could not build the tables:\n{built.stderr[-3000:]}")


def build_with_lakecat(catalog: Catalog, rows: int) -> None:
    """The tables of ``java_delete_tables.py``, written and deleted from by lakecat."""
    catalog.create_namespace("db")
    ids = pa.array(range(rows), pa.int64())
    data = pa.table(
        {
            "id": ids,
            "cat": pc.binary_join_element_wise(
                pa.scalar("c"), pc.cast(pc.bit_wise_and(ids, 15), pa.string()), ""
            ),
            "value": pc.multiply(pc.cast(ids, pa.float64()), 0.5),
        }
    )
    deleted = pc.equal(pc.subtract(ids, pc.multiply(pc.divide(ids, 100), 100)), 7)  # id % 100
    mor = {"write.delete.mode": "merge-on-read"}
    size = -(-rows // 10)
    for name, props in (
        ("pos", {**mor, "format-version": "2"}),
        ("dv", {**mor, "format-version": "3"}),
        ("compacted", {}),
    ):
        table = catalog.create_table(f"db.{name}", data.schema, properties=props)
        for start in range(0, rows, size):  # ten data files, as Iceberg Java writes them
            chunk = data.slice(start, size)
            if name == "compacted":
                chunk = chunk.filter(pc.invert(deleted.slice(start, size)))
            table.append(chunk)
        if name != "compacted":
            gone = data.filter(deleted).column("id").to_pylist()
            table.delete(In("id", frozenset(gone)))


if __name__ == "__main__":
    main()

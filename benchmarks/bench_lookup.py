"""Selective reads of a big file: what the Parquet page index saves (no issue target; issue 19's
merge-on-read tables are where it matters most, since their files have deletes to apply).

Two tables of the same rows in one data file each (``--rows``, default 10 million; the columns
of ``bench_merge_on_read``): ``plain``, and ``deletes`` (merge-on-read, with ten position delete
files from ten deletes of 10 rows). Each repeat times ``table.scan(filter).to_arrow()`` for a
lookup of one id and for a range of 100 ids (other ids each repeat), in three modes,
interleaved:

* ``pages``: lakecat as it is: row groups pruned by their statistics, then only the pages the
  page index cannot rule out are decoded;
* ``row groups``: the page index not used (``page_index.worth_reading`` says no);
* ``whole file``: a file with deletes read without any pruning, as before pruned reads with
  deletes existed (``DeleteReader.read(prune=False)``; the ``plain`` table has no such mode).

    python benchmarks/bench_lookup.py              # 10 million rows, 7 repeats
    python benchmarks/bench_lookup.py --quick      # 500,000 rows, 3 repeats
"""

from __future__ import annotations

import functools
import gc
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench_merge_on_read import make_rows
from common import Report, base_parser, median, workdir

from lakecat.catalog import Catalog, Table
from lakecat.catalog.read.deletes import DeleteReader
from lakecat.metadata.io import page_index

MODES = ("pages", "row groups", "whole file")


@contextmanager
def mode(name: str) -> Iterator[None]:
    saved_worth, saved_read = page_index.worth_reading, DeleteReader.read
    try:
        if name != "pages":
            page_index.worth_reading = lambda footer_bytes, rows: False
        if name == "whole file":
            DeleteReader.read = functools.partialmethod(saved_read, prune=False)  # type: ignore[method-assign]
        yield
    finally:
        page_index.worth_reading, DeleteReader.read = saved_worth, saved_read  # type: ignore[method-assign]


def timed_read(table: Table, text: str, expected: int) -> float:
    gc.collect()
    t0 = time.perf_counter()
    got = table.scan(text).to_arrow()
    elapsed = time.perf_counter() - t0
    assert got.num_rows == expected, (text, got.num_rows)
    return elapsed


def main() -> None:
    parser = base_parser(__doc__ or "")
    parser.add_argument("--rows", type=int, default=None, help="rows (10,000,000)")
    parser.add_argument("--repeats", type=int, default=None, help="repeats (7)")
    args = parser.parse_args()
    rows = args.rows or (500_000 if args.quick else 10_000_000)
    repeats = args.repeats or (3 if args.quick else 7)
    report = Report("bench_lookup", {**vars(args), "rows": rows, "repeats": repeats})
    with workdir(args, "lakecat-bench-lookup-") as root:
        catalog = Catalog.embedded(Path(root))
        catalog.create_namespace("db")
        data = make_rows(rows)
        one_file = {"write.target-file-size-bytes": str(1 << 40)}
        plain = catalog.create_table("db.plain", data.schema, properties=one_file)
        deletes = catalog.create_table(
            "db.deletes",
            data.schema,
            properties={**one_file, "write.delete.mode": "merge-on-read"},
        )
        for t in (plain, deletes):
            t.append(data)
        del data
        step = rows // 10
        deleted = set()
        for r in range(10):  # ids ending in 7 of each tenth, never looked up below
            ids = [i * step + 7 + 10 * r for i in range(10)]
            deleted.update(ids)
            deletes.delete(f"id IN ({', '.join(map(str, ids))})")
        assert len(deletes.scan().plan().deletes) == 1
        times: dict[tuple[str, str, str], list[float]] = {}
        for r in range(repeats):
            key = (r * 7_919_993 + 12_345) % (rows - 200)
            key -= key % 10  # ends in 0: never a deleted id
            queries = {
                "one id": (f"id = {key}", 1),
                "100 ids": (f"id BETWEEN {key} AND {key + 99}", 100),
            }
            for table_name, table in (("plain", plain), ("deletes", deletes)):
                for m in MODES:
                    if table_name == "plain" and m == "whole file":
                        continue
                    for q, (text, n) in queries.items():
                        if table_name == "deletes":
                            n -= len([i for i in range(key, key + n) if i in deleted])
                        with mode(m):
                            elapsed = timed_read(table, text, n)
                        times.setdefault((table_name, q, m), []).append(elapsed)
        catalog.close()
    body = []
    for (table_name, q, m), values in times.items():
        pages = times[(table_name, q, "pages")]
        speedup = [o / p for o, p in zip(values, pages, strict=True)]
        body.append(
            [
                table_name,
                q,
                m,
                round(median(values) * 1000, 1),
                round(min(values) * 1000, 1),
                round(max(values) * 1000, 1),
                round(median(speedup), 1),
            ]
        )
    report.table(
        f"table.scan(filter).to_arrow() on one {rows:,}-row file ({repeats} repeats)",
        ["table", "filter", "mode", "median ms", "min ms", "max ms", "mode / pages (median)"],
        body,
    )
    report.write()


if __name__ == "__main__":
    main()

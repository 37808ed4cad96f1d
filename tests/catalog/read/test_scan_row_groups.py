"""A filtered scan reads only the row groups of a file whose statistics may match."""

from __future__ import annotations

import hashlib

import pyarrow as pa
from counting_io import CountingIO

from lakecat.catalog import Catalog


def test_a_filtered_scan_skips_row_groups_that_cannot_match(sqlite_url: str, warehouse: str):
    counting = CountingIO()
    lake = Catalog(sqlite_url, warehouse=warehouse, io=counting)
    lake.create_namespace("db")
    table = lake.create_table(
        "db.t",
        pa.schema([("id", pa.int64()), ("name", pa.string())]),
        properties={"write.parquet.row-group-limit": "1000"},
    )
    ids = list(range(10_000))  # one file of ten row groups, ids ascending
    table.append(pa.table({"id": ids, "name": [f"name {i}" for i in ids]}))

    def bytes_read(row_filter: str) -> tuple[int, int]:
        counting.counter[0] = 0
        rows = table.to_arrow(row_filter).num_rows
        return rows, counting.counter[0]

    footer = bytes_read("id = 999 AND id = 1000")  # the file may match, none of its row groups
    one = bytes_read("id >= 4000 AND id < 4010")
    every = bytes_read("name != 'x'")  # the statistics rule out no row group
    assert (footer[0], one[0], every[0]) == (0, 10, 10_000)
    assert (one[1] - footer[1]) * 5 < every[1] - footer[1]  # one row group of ten


def test_count_reads_only_the_columns_its_filter_needs(sqlite_url: str, warehouse: str) -> None:
    counting = CountingIO()
    lake = Catalog(sqlite_url, warehouse=warehouse, io=counting)
    lake.create_namespace("db")
    table = lake.create_table(
        "db.c",
        pa.schema([("id", pa.int64()), ("note", pa.string())]),
        properties={"write.delete.mode": "merge-on-read"},
    )
    ids = list(range(20_000))
    notes = [hashlib.sha256(str(i).encode()).hexdigest() for i in ids]  # incompressible
    table.append(pa.table({"id": ids, "note": notes}))

    def counted(row_filter: str | None) -> tuple[int, int, int, int]:
        counting.counter[0] = 0
        n = table.scan(row_filter).count()
        count_bytes = counting.counter[0]
        counting.counter[0] = 0
        rows = table.to_arrow(row_filter).num_rows
        return n, rows, count_bytes, counting.counter[0]

    n, rows, count_bytes, read_bytes = counted("id >= 5000")
    assert n == rows == 15_000
    assert count_bytes * 3 < read_bytes  # the id column, not the notes
    table.delete("id < 100")  # merge-on-read: a position delete file, no rewrite
    n, rows, count_bytes, read_bytes = counted(None)  # deletes apply: counted by reading
    assert n == rows == 19_900
    assert count_bytes * 3 < read_bytes

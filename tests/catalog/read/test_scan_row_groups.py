"""A filtered scan reads only the row groups of a file whose statistics may match."""

from __future__ import annotations

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

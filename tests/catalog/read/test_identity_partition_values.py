"""A data file without the source column of an identity partition field (a file imported by
another engine, e.g. Spark's ``add_files``) reads that column from its partition value, as the
spec's column resolution rules say: in scans, filters and copy-on-write rewrites alike."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakecat.catalog import Catalog, Table
from lakecat.metadata.io import local_path


@pytest.fixture
def table(sqlite_url: str, warehouse: str) -> Table:
    lake = Catalog(sqlite_url, warehouse=warehouse)
    lake.create_namespace("db")
    t = lake.create_table(
        "db.t", pa.schema([("id", pa.int64()), ("cat", pa.string())]), partition_by=["cat"]
    )
    t.append(pa.table({"id": [1, 2, 3], "cat": ["x", "x", "x"]}))
    t.append(pa.table({"id": [4], "cat": ["y"]}))
    for f in t.scan("cat = 'x'").plan_files():  # the 'x' file loses its cat column
        path = local_path(f.file_path)
        assert path is not None
        pq.write_table(pq.read_table(path).select(["id"]), path)
    return t


def _rows(t: pa.Table) -> list[tuple[int, str | None]]:
    return sorted(zip(t.column("id").to_pylist(), t.column("cat").to_pylist(), strict=True))


def test_a_scan_fills_the_missing_column_from_the_partition_value(table: Table) -> None:
    assert _rows(table.to_arrow()) == [(1, "x"), (2, "x"), (3, "x"), (4, "y")]
    assert _rows(table.to_arrow("cat = 'x' AND id > 1")) == [(2, "x"), (3, "x")]
    assert table.to_arrow(columns=["cat"]).column("cat").to_pylist().count("x") == 3


def test_copy_on_write_rewrites_keep_the_partition_value(table: Table) -> None:
    table.delete("id = 1")
    table.update({"id": 20}, "id = 2")
    assert _rows(table.refresh().to_arrow()) == [(3, "x"), (4, "y"), (20, "x")]

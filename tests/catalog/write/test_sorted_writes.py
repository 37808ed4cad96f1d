"""Writes to a table with a sort order write every data file sorted by it, and say so.

The table's default sort order (``create_table(sort_by=...)``, ``replace_sort_order``, SQL's
``WRITE ORDERED BY``) orders the rows of each new data file: by each field's transform,
direction and null order, rows equal on every field in the order they came. The files record
the order's id, so a compaction by the table's order leaves them alone. Without a sort order,
and in a compaction that does not sort, rows keep their order.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakecat.catalog import Catalog, Table
from lakecat.catalog.maintenance import rewrite_data_files
from lakecat.metadata.io.fileio import local_path
from lakecat.metadata.table.sorting import SortField, SortOrder

SCHEMA = pa.schema([("id", pa.int64()), ("region", pa.string()), ("name", pa.string())])


def rows(ids: list[int | None], regions: list[str] | None = None) -> pa.Table:
    regions = regions or ["eu" if (i or 0) % 2 else "us" for i in ids]
    return pa.table(
        {"id": ids, "region": regions, "name": [f"n{k}" for k in range(len(ids))]}, schema=SCHEMA
    )


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[Catalog]:
    with Catalog.embedded(tmp_path / "lake") as c:
        c.create_namespace("db")
        yield c


def file_rows(t: Table) -> list[list[dict[str, object]]]:
    """The rows of each data file of the current snapshot, as stored, files by path."""
    files = sorted(t.scan().plan_files(), key=lambda f: f.file_path)
    return [pq.read_table(local_path(f.file_path)).to_pylist() for f in files]


def test_an_append_writes_its_rows_in_the_table_sort_order(catalog: Catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, sort_by=[("id", "desc")])
    t.append(rows([3, None, 1, 7, 3, None, 5]))
    (stored,) = file_rows(t)
    # descending, nulls last (Iceberg's default for desc); the two 3s keep their order
    assert [r["id"] for r in stored] == [7, 5, 3, 3, 1, None, None]
    assert [r["name"] for r in stored if r["id"] == 3] == ["n0", "n4"]
    (f,) = t.scan().plan_files()
    assert f.sort_order_id == t.metadata.default_sort_order_id != 0


def test_each_field_has_its_transform_direction_and_null_order(catalog: Catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA)
    schema = t.metadata.schema()
    region, ident = schema.find_field("region").field_id, schema.find_field("id").field_id
    t.replace_sort_order(
        SortOrder(
            1,
            (
                SortField(region, "truncate[1]", "asc", "nulls-last"),
                SortField(ident, "identity", "asc", "nulls-first"),
            ),
        )
    )
    t.append(rows([4, 2, None, 9, 1], ["us", "eu", "eu", None, "us"]))
    (stored,) = file_rows(t)
    assert [(r["region"], r["id"]) for r in stored] == [
        ("eu", None),
        ("eu", 2),
        ("us", 1),
        ("us", 4),
        (None, 9),
    ]


def test_every_file_of_a_partitioned_write_is_sorted(catalog: Catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, partition_by=["region"], sort_by=["id"])
    ids = [(i * 7919) % 1000 for i in range(1000)]
    t.append(rows(ids))
    stored = file_rows(t)
    assert len(stored) == 2
    for part in stored:
        got = [r["id"] for r in part]
        assert got == sorted(got)
        assert len({r["region"] for r in part}) == 1
    assert sorted(t.to_arrow().column("id").to_pylist()) == sorted(ids)


def test_a_table_without_a_sort_order_keeps_the_rows_order(catalog: Catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA)
    t.append(rows([3, 1, 2]))
    (stored,) = file_rows(t)
    assert [r["id"] for r in stored] == [3, 1, 2]
    (f,) = t.scan().plan_files()
    assert not f.sort_order_id


def test_copy_on_write_rewrites_are_sorted_too(catalog: Catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA)
    t.append(rows([5, 3, 9, 1]))
    t.replace_sort_order(SortOrder(1, (SortField(1, "identity", "asc", "nulls-first"),)))
    t.delete("id = 9")
    (stored,) = file_rows(t)
    assert [r["id"] for r in stored] == [1, 3, 5]


def test_a_compaction_by_the_table_order_leaves_files_written_in_it_alone(
    catalog: Catalog,
) -> None:
    t = catalog.create_table("db.t", SCHEMA, sort_by=["id"])
    t.append(rows([5, 3, 9, 1]))
    before = {f.file_path for f in t.scan().plan_files()}
    result = rewrite_data_files(t, sort_by="table")
    assert result.files_removed == 0
    assert {f.file_path for f in t.refresh().scan().plan_files()} == before


def test_a_compaction_that_does_not_sort_keeps_the_rows_order(catalog: Catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA)
    t.append(rows([5, 3]))
    t.append(rows([9, 1]))
    t.replace_sort_order(SortOrder(1, (SortField(1, "identity", "asc", "nulls-first"),)))
    rewrite_data_files(t)
    (stored,) = file_rows(t.refresh())
    # the two files' rows one after the other, each file's in its order
    assert [r["id"] for r in stored] in ([5, 3, 9, 1], [9, 1, 5, 3])
    (f,) = t.scan().plan_files()
    assert not f.sort_order_id

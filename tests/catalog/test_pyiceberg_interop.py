"""Interop with pyiceberg 0.12, the test oracle, on every catalog backend.

pyiceberg reads every table lakecat writes (``StaticTable.from_metadata`` and its
``SqlCatalog`` on the same database) with identical rows at the current and every older
snapshot; lakecat reads tables pyiceberg wrote, including after pyiceberg's deletes and
overwrites; a table created by either shows up in the other's listing.
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.expressions import EqualTo
from pyiceberg.table import StaticTable

from lakecat.catalog import Catalog
from lakecat.metadata.schema.types import StringType


def rows(ids: range, region: str) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "ts": pa.array(
                [dt.datetime(2024, 3, 1 + i % 3, tzinfo=dt.UTC) for i in ids],
                pa.timestamp("us", tz="UTC"),
            ),
            "region": pa.array([region] * len(ids)),
            "amount": pa.array([i * 1.25 for i in ids]),
            "d": pa.array([dt.date(2024, 1, 1 + i % 28) for i in ids], pa.date32()),
        }
    )


def canon(t: pa.Table, columns: list[str]) -> list[tuple[object, ...]]:
    t = t.select(columns)
    return sorted(zip(*(t.column(c).to_pylist() for c in columns), strict=True))


@pytest.fixture
def both(catalog_url: str, warehouse: str):
    lake = Catalog(catalog_url, warehouse=warehouse)
    lake.create_namespace("db")
    py = SqlCatalog("lakecat", uri=catalog_url, warehouse=lake.warehouse)
    yield lake, py
    lake.close()
    py.engine.dispose()


def test_pyiceberg_reads_every_snapshot_of_a_lakecat_table(both) -> None:
    lake, py = both
    t = lake.create_table(
        "db.events",
        rows(range(1), "eu").schema,
        partition_by=[("ts", "day"), "region", ("id", "bucket[4]")],
    )
    t.append(rows(range(0, 30), "eu"))
    t.append(rows(range(30, 60), "us"))
    t.delete("region = 'us' AND id >= 50")
    t.overwrite(rows(range(100, 110), "eu"), "region = 'eu' AND id < 10")
    t.update({"amount": 0.0}, "id = 31")
    with t.update_schema() as u:
        u.add_column("note", StringType())
    t.append(rows(range(200, 205), "ap").append_column("note", pa.array(["x"] * 5)))
    columns = ["id", "region", "amount"]

    static = StaticTable.from_metadata(t.metadata_location)
    loaded = py.load_table("db.events")
    for snap in t.snapshots():
        want = canon(t.to_arrow(snapshot_id=snap.snapshot_id), columns)
        assert canon(static.scan(snapshot_id=snap.snapshot_id).to_arrow(), columns) == want
        assert canon(loaded.scan(snapshot_id=snap.snapshot_id).to_arrow(), columns) == want
    current = loaded.scan(row_filter=EqualTo("region", "us")).to_arrow()
    assert canon(current, columns) == canon(t.to_arrow("region = 'us'"), columns)
    assert loaded.scan().to_arrow().column("note").to_pylist().count("x") == 5


def test_lakecat_reads_a_table_pyiceberg_wrote_and_changed(both) -> None:
    lake, py = both
    tbl = py.create_table("db.py_made", schema=rows(range(1), "eu").schema)
    tbl.append(rows(range(0, 20), "eu"))
    tbl.append(rows(range(20, 40), "us"))
    tbl.delete(delete_filter=EqualTo("region", "us"))
    tbl.overwrite(rows(range(100, 105), "eu"), overwrite_filter=EqualTo("region", "eu"))
    tbl = py.load_table("db.py_made")
    columns = ["id", "region", "amount", "d"]

    t = lake.load_table("db.py_made")
    for snap in tbl.metadata.snapshots:
        want = canon(tbl.scan(snapshot_id=snap.snapshot_id).to_arrow(), columns)
        assert canon(t.to_arrow(snapshot_id=snap.snapshot_id), columns) == want
    # and lakecat can keep writing to it, which pyiceberg then reads
    t.append(rows(range(300, 303), "eu"))
    assert canon(py.load_table("db.py_made").scan().to_arrow(), columns) == canon(
        t.to_arrow(), columns
    )


def test_tables_made_by_either_are_listed_by_the_other(both) -> None:
    lake, py = both
    lake.create_table("db.from_lakecat", rows(range(1), "eu").schema)
    py.create_table("db.from_pyiceberg", schema=rows(range(1), "eu").schema)
    assert {name for _, name in lake.list_tables("db")} == {"from_lakecat", "from_pyiceberg"}
    assert set(py.list_tables("db")) == {("db", "from_lakecat"), ("db", "from_pyiceberg")}
    py.create_namespace("made_by_py")
    assert ("made_by_py",) in lake.list_namespaces()


AWKWARD_REGIONS = ["a/b", "50%", "x y", "é", "q?#&="]


def test_pyiceberg_finds_the_files_of_partitions_with_escaped_values(both) -> None:  # type: ignore[no-untyped-def]
    """Partition folders carry URL-escaped values (``region=a%2Fb``, as Iceberg Java names
    them) and the files on disk carry exactly those names, which pyiceberg takes literally."""
    lake, py = both
    table = lake.create_table("db.awkward", rows(range(1), "eu").schema, partition_by=["region"])
    for i, region in enumerate(AWKWARD_REGIONS):
        table.append(rows(range(i * 10, i * 10 + 3), region))
    got = py.load_table("db.awkward").scan().to_arrow()
    assert canon(got, ["id", "region"]) == canon(
        lake.load_table("db.awkward").to_arrow(), ["id", "region"]
    )
    assert sorted(set(got["region"].to_pylist())) == sorted(AWKWARD_REGIONS)
    for region in AWKWARD_REGIONS:
        only = py.load_table("db.awkward").scan(row_filter=EqualTo("region", region)).to_arrow()
        assert set(only["region"].to_pylist()) == {region}


def test_pyiceberg_sees_lakecat_s_views_as_no_tables(both) -> None:
    """pyiceberg 0.12's SqlCatalog has no views; it leaves the rows of type VIEW alone."""
    from pyiceberg.exceptions import NoSuchTableError

    lake, py = both
    lake.create_table("db.t", rows(range(1), "eu").schema)
    lake.create_view("db.v", "SELECT id FROM t", pa.schema([("id", pa.int64())]))
    assert py.list_tables("db") == [("db", "t")]
    assert not py.table_exists("db.v")
    with pytest.raises(NoSuchTableError):
        py.load_table("db.v")
    py.drop_table("db.t")
    assert lake.view_exists("db.v") and lake.list_tables("db") == []

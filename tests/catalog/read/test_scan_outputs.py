"""A scan into pandas, polars and DuckDB (each an optional dependency: the ``test`` extra
installs them all), and the typed refusal when one is missing."""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from lakecat.catalog import Catalog, Table
from lakecat.metadata.errors import UnsupportedFeature
from lakecat.metadata.schema.types import LongType

pandas = pytest.importorskip("pandas")
polars = pytest.importorskip("polars")
duckdb = pytest.importorskip("duckdb")


@pytest.fixture
def table(sqlite_url: str, warehouse: str) -> Iterator[Table]:
    lake = Catalog(sqlite_url, warehouse=warehouse)
    lake.create_namespace("db")
    t = lake.create_table(
        "db.t", pa.schema([("id", pa.int64()), ("region", pa.string()), ("v", pa.float64())])
    )
    for k in range(4):
        ids = list(range(k * 25, (k + 1) * 25))
        t.append(
            pa.table(
                {
                    "id": ids,
                    "region": [("eu", "us", None)[i % 3] for i in ids],
                    "v": [i * 0.5 for i in ids],
                }
            )
        )
    with t.update_schema() as u:  # files of two schemas
        u.rename_column("v", "value")
        u.add_column("extra", LongType())
    t.append(pa.table({"id": [100], "region": ["ap"], "value": [50.0], "extra": [7]}))
    yield t
    lake.close()


def test_to_pandas_holds_the_scans_rows(table: Table):
    frame = table.scan("region = 'eu'", columns=["id", "value"]).to_pandas()
    assert isinstance(frame, pandas.DataFrame)
    assert list(frame.columns) == ["id", "value"]
    assert sorted(frame["id"].tolist()) == [i for i in range(100) if i % 3 == 0]


def test_to_polars_is_lazy_and_reads_only_the_columns_used(table: Table, monkeypatch):
    scan = table.scan("id >= 10")
    read: list[list[str]] = []
    batches = scan._batches

    def recording(batch_rows: int, cap: int, projected: Any) -> Iterator[pa.RecordBatch]:
        read.append([f.name for f in projected.fields])
        return batches(batch_rows, cap, projected)

    monkeypatch.setattr(scan, "_batches", recording)
    frame = scan.to_polars()
    assert isinstance(frame, polars.LazyFrame)
    assert read == []  # nothing read until collected
    got = frame.filter(polars.col("region") == "us").select(["id", "region"]).collect()
    assert sorted(got["id"].to_list()) == [i for i in range(10, 100) if i % 3 == 1]
    assert read == [["id", "region"]]
    everything = frame.collect()  # collected again: read again
    assert everything.height == 91 and everything.columns == ["id", "region", "value", "extra"]
    assert frame.head(5).collect().height == 5


def test_to_duckdb_registers_a_view_duckdb_queries(table: Table):
    con = duckdb.connect()
    returned = table.scan("id < 90").to_duckdb(con, "events")
    assert returned is con
    got = con.execute(
        "SELECT region, count(*), sum(extra) FROM events "
        "WHERE region IS NOT NULL GROUP BY region ORDER BY region"
    ).fetchall()
    assert got == [("eu", 30, None), ("us", 30, None)]
    con.close()


def test_to_duckdb_sees_the_latest_columns_of_every_file(table: Table):
    con = duckdb.connect()
    table.scan().to_duckdb(con, "t")
    rows = con.execute("SELECT id, value, extra FROM t WHERE id >= 99 ORDER BY id").fetchall()
    assert rows == [(99, 49.5, None), (100, 50.0, 7)]
    con.close()


def test_the_duckdb_view_answers_every_query_at_the_scans_snapshot(table: Table):
    """Each query reads the scan afresh; a later commit does not change what the view of a
    scan (a snapshot) returns."""
    con = duckdb.connect()
    table.scan().to_duckdb(con, "t")
    assert con.execute("SELECT count(*) FROM t").fetchone() == (101,)
    table.append(pa.table({"id": [200], "region": ["eu"], "value": [1.0], "extra": [1]}))
    assert con.execute("SELECT count(*), max(id) FROM t").fetchone() == (101, 100)
    assert con.execute("SELECT count(*) FROM t WHERE region = 'eu'").fetchone() == (34,)
    con.close()


@pytest.mark.parametrize(
    ("method", "module"),
    [("to_pandas", "pandas"), ("to_polars", "polars"), ("to_duckdb", "duckdb")],
)
def test_a_missing_library_is_a_typed_refusal_naming_the_extra(
    table: Table, monkeypatch: pytest.MonkeyPatch, method: str, module: str
):
    real_import = builtins.__import__

    def without(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == module or name.startswith(module + "."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without)
    monkeypatch.delitem(__import__("sys").modules, module)
    args = (object(), "v") if method == "to_duckdb" else ()
    with pytest.raises(UnsupportedFeature, match=rf"lakecat\[{module}\]"):
        getattr(table.scan(), method)(*args)

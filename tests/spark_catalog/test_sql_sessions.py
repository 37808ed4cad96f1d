"""The attached catalog from another session of the same application (``spark.newSession()``).

Spark registers Python data sources per session, so a second session that names the catalog
used to fail every statement that reads or writes through lakecat's data source with
``DATA_SOURCE_NOT_FOUND``. The plugin now registers them there as the attaching session holds
them, and a native write plans its Parquet settings in the session of the statement.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakecat.metadata.io.fileio import local_path
from lakecat.spark_ext.sql.plugin import CATALOG_CLASS

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us", tz="UTC"))])
DAY = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)


@pytest.fixture
def other(lake) -> Iterator[Any]:
    """A new session of the test's application, naming the catalog ``lake``."""
    session = lake.spark.newSession()
    session.conf.set("spark.sql.catalog.lake", CATALOG_CLASS)
    session.conf.set("spark.sql.session.timeZone", "UTC")
    yield session


def test_another_session_reads_writes_and_queries_metadata(lake, other) -> None:
    table = lake.catalog.create_table("db.t", SCHEMA)
    table.append(pa.table({"id": [1, 2], "ts": [DAY, DAY]}, SCHEMA))

    other.sql("INSERT INTO lake.db.t VALUES (3, timestamp'2024-05-02 00:00:00')")
    other.sql("UPDATE lake.db.t SET id = 20 WHERE id = 2")
    other.sql("DELETE FROM lake.db.t WHERE id % 3 = 0")

    assert sorted(r.id for r in other.sql("SELECT id FROM lake.db.t").collect()) == [1, 20]
    assert lake.rows("db.t", "id") == [(1,), (20,)]
    operations = [r.operation for r in other.sql("SELECT * FROM lake.db.t.snapshots").collect()]
    # the DELETE drops the file holding only 3 whole (the runtime filter leaves {1, 20} alone)
    assert operations == ["append", "append", "overwrite", "delete"]


def test_a_native_insert_from_another_session_writes_lakecats_parquet(lake, other) -> None:
    """The write's Parquet settings (microsecond timestamps, field ids) are set in the session
    the statement runs in; set in the attaching session they would not apply, and Spark would
    write INT96 timestamps without field ids."""
    table = lake.catalog.create_table("db.t", SCHEMA)

    other.sql("INSERT INTO lake.db.t VALUES (1, timestamp'2024-05-02 00:00:00')")

    (written,) = table.refresh().scan().plan_files()
    local = local_path(written.file_path)
    assert local is not None
    parquet = pq.ParquetFile(local)
    column = parquet.schema.column(1)
    assert column.physical_type == "INT64"
    assert parquet.schema_arrow.field("ts").metadata[b"PARQUET:field_id"] == b"2"
    assert lake.rows("db.t", "id", "ts") == [(1, dt.datetime(2024, 5, 2, tzinfo=dt.UTC))]


def test_a_procedure_called_in_another_session_runs_in_that_session(lake, other) -> None:
    table = lake.catalog.create_table("db.t", SCHEMA)
    table.append(pa.table({"id": [1], "ts": [DAY]}, SCHEMA))

    other.sql("CALL lake.system.create_changelog_view(table => 'db.t', changelog_view => 'cv')")

    assert [r.id for r in other.sql("SELECT id FROM cv").collect()] == [1]
    assert not lake.spark.catalog.tableExists("cv")  # a temporary view of the caller's session

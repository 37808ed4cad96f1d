"""Time travel and incremental reads through Spark read options."""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

import pyarrow as pa
import pytest

from lakecat.catalog import Catalog, Table
from lakecat.metadata.schema.types import StringType

pytestmark = pytest.mark.spark


def rows(ids: range) -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64())})


def read(spark: Any, **options: str) -> list[int]:
    reader = spark.read.format("lakecat")
    for key, value in options.items():
        reader = reader.option(key.replace("_", "-"), value)
    return sorted(r.id for r in reader.load("db.t").collect())


@pytest.fixture
def history(lake: Catalog) -> tuple[Table, list[int]]:
    """Three appends (ids 0-2, 3-5, 6-8), then a delete of id 0; snapshot ids in order."""
    table = lake.create_table("db.t", rows(range(0)).schema)
    snapshots = []
    for start in (0, 3, 6):
        table.append(rows(range(start, start + 3)))
        snapshots.append(table.current_snapshot().snapshot_id)
        time.sleep(0.01)  # distinct commit times
    table.delete("id = 0")
    snapshots.append(table.current_snapshot().snapshot_id)
    return table, snapshots


def test_snapshot_id_reads_that_snapshot(spark: Any, history: tuple[Table, list[int]]) -> None:
    _, snapshots = history
    assert read(spark, snapshot_id=str(snapshots[0])) == [0, 1, 2]
    assert read(spark, snapshot_id=str(snapshots[2])) == list(range(9))
    assert read(spark) == list(range(1, 9))


def test_as_of_timestamp_takes_milliseconds_or_iso_text(
    spark: Any, history: tuple[Table, list[int]]
) -> None:
    table, snapshots = history
    second = table.metadata.snapshot_by_id(snapshots[1]).timestamp_ms
    assert read(spark, as_of_timestamp=str(second)) == list(range(6))
    iso = dt.datetime.fromtimestamp(second / 1000, tz=dt.UTC).isoformat()
    assert read(spark, as_of_timestamp=iso) == list(range(6))
    with pytest.raises(Exception, match="no snapshot at or before"):
        read(spark, as_of_timestamp="2000-01-01T00:00:00")


def test_tag_and_branch_read_their_snapshots(spark: Any, history: tuple[Table, list[int]]) -> None:
    table, snapshots = history
    table.create_tag("first", snapshots[0])
    table.create_branch("dev", snapshots[1])
    table.append(rows(range(100, 102)), branch="dev")
    assert read(spark, tag="first") == [0, 1, 2]
    assert read(spark, branch="dev") == [*range(6), 100, 101]
    with pytest.raises(Exception, match="choose one"):
        read(spark, tag="first", branch="dev")


def test_a_tag_reads_with_the_schema_of_its_snapshot(
    spark: Any, history: tuple[Table, list[int]]
) -> None:
    table, snapshots = history
    table.create_tag("before", snapshots[2])
    with table.update_schema() as update:
        update.add_column("note", StringType())
    tagged = spark.read.format("lakecat").option("tag", "before").load("db.t")
    current = spark.read.format("lakecat").load("db.t")
    assert tagged.columns == ["id"]
    assert current.columns == ["id", "note"]


def test_incremental_read_returns_the_rows_appended_in_between(
    spark: Any, history: tuple[Table, list[int]]
) -> None:
    _, snapshots = history
    between = read(spark, start_snapshot_id=str(snapshots[0]), end_snapshot_id=str(snapshots[2]))
    assert between == list(range(3, 9))
    # Without an end: up to the current snapshot; the delete snapshot adds no rows.
    assert read(spark, start_snapshot_id=str(snapshots[1])) == [6, 7, 8]
    with pytest.raises(Exception, match="not an ancestor"):
        read(spark, start_snapshot_id=str(snapshots[2]), end_snapshot_id=str(snapshots[0]))

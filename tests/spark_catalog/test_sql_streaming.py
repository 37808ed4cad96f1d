"""Structured Streaming through the catalog ``lake``: ``writeStream.toTable`` commits each
micro-batch exactly once, and ``readStream.table`` reads the rows appended to a table (within
the rate limits) and fails with the lakecat error on the first line of its message."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lakecat.spark_ext as lk
from lakecat.catalog.maintenance import rollback_to_snapshot
from lakecat.metadata.errors import ValidationError

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64())])


def add_source_file(folder: Path, start: int) -> None:
    folder.mkdir(exist_ok=True)
    ids = pa.table({"id": pa.array(range(start, start + 5), pa.int64())})
    pq.write_table(ids, folder / f"part-{start:05d}.parquet")


def write_stream(spark: Any, source: Path, checkpoint: Path, table: str) -> None:
    query = (
        spark.readStream.schema("id long")
        .option("maxFilesPerTrigger", 1)
        .parquet(str(source))
        .writeStream.option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .toTable(table)
    )
    query.awaitTermination(120)
    assert query.exception() is None


def read_stream(spark: Any, table: str, checkpoint: Path, **options: str) -> list[int]:
    """Run a stream of ``table`` until it caught up; the ids it read in this run."""
    seen: list[int] = []

    def collect(batch: Any, _: int) -> None:
        seen.extend(r.id for r in batch.collect())

    reader = spark.readStream
    for key, value in options.items():
        reader = reader.option(key, value)
    query = (
        reader.table(table)
        .writeStream.option("checkpointLocation", str(checkpoint))
        .foreachBatch(collect)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    if query.exception() is not None:
        raise AssertionError(str(query.exception()))
    return sorted(seen)


def test_write_stream_to_table_commits_each_batch_once(lake, tmp_path: Path) -> None:
    table = lake.catalog.create_table("db.t", SCHEMA)
    source, checkpoint = tmp_path / "source", tmp_path / "checkpoint"
    for start in (0, 5):
        add_source_file(source, start)

    write_stream(lake.spark, source, checkpoint, "lake.db.t")
    write_stream(lake.spark, source, checkpoint, "lake.db.t")  # nothing new: no commit
    add_source_file(source, 10)
    write_stream(lake.spark, source, checkpoint, "lake.db.t")

    table.refresh()
    assert sorted(table.to_arrow().column("id").to_pylist()) == list(range(15))
    assert [s.summary["lakecat.app-version"] for s in table.snapshots()] == ["0", "1", "2"]


def test_read_stream_reads_each_append_once_and_skips_compactions(lake, tmp_path: Path) -> None:
    from lakecat.catalog.maintenance import rewrite_data_files

    table = lake.catalog.create_table("db.t", SCHEMA)
    table.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    table.append(pa.table({"id": pa.array([3], pa.int64())}))
    checkpoint = tmp_path / "checkpoint"

    assert read_stream(lake.spark, "lake.db.t", checkpoint) == [1, 2, 3]
    assert read_stream(lake.spark, "lake.db.t", checkpoint) == []
    rewrite_data_files(table.refresh())  # a replace: no new rows
    table.refresh().append(pa.table({"id": pa.array([4, 5], pa.int64())}))
    assert read_stream(lake.spark, "lake.db.t", checkpoint) == [4, 5]


def test_a_stream_reads_the_metadata_columns_of_each_row(lake, tmp_path: Path) -> None:
    lake.sql("CREATE TABLE lake.db.m (id bigint, cat string) PARTITIONED BY (cat)")
    lake.sql("INSERT INTO lake.db.m VALUES (1, 'a'), (2, 'b')")
    lake.sql("ALTER TABLE lake.db.m ADD PARTITION FIELD bucket(2, id)")
    lake.sql("INSERT INTO lake.db.m VALUES (3, 'a')")
    files = {
        f.partition[0]: f.file_path for f in lake.catalog.load_table("db.m").scan().plan_files()
    }
    seen: list[tuple[Any, ...]] = []

    def collect(batch: Any, _: int) -> None:
        seen.extend(tuple(r) for r in batch.collect())

    query = (
        lake.spark.readStream.table("lake.db.m")
        .selectExpr("id", "_spec_id", "_partition.cat", "_pos", "_file")
        .writeStream.option("checkpointLocation", str(tmp_path / "checkpoint"))
        .foreachBatch(collect)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)

    assert query.exception() is None
    assert sorted(r[:4] for r in seen) == [(1, 0, "a", 0), (2, 0, "b", 0), (3, 1, "a", 0)]
    assert {r[4] for r in seen if r[0] == 2} == {files["b"]}


def test_read_stream_from_a_timestamp(lake, tmp_path: Path) -> None:
    table = lake.catalog.create_table("db.t", SCHEMA)
    table.append(pa.table({"id": pa.array([1], pa.int64())}))
    second = table.append(pa.table({"id": pa.array([2], pa.int64())}))
    at = table.snapshot(second.snapshot_id).timestamp_ms

    got = read_stream(
        lake.spark, "lake.db.t", tmp_path / "checkpoint", **{"stream-from-timestamp": str(at)}
    )

    assert got == [2]


def test_a_delete_fails_the_stream_unless_it_is_told_to_skip_it(lake, tmp_path: Path) -> None:
    table = lake.catalog.create_table("db.t", SCHEMA)
    table.append(pa.table({"id": pa.array([1], pa.int64())}))
    table.append(pa.table({"id": pa.array([2, 20], pa.int64())}))
    table.delete("id = 1")  # drops a whole file: a "delete" snapshot
    table.delete("id = 20")  # rewrites a file: an "overwrite" snapshot
    assert [s.operation for s in table.snapshots()][2:] == ["delete", "overwrite"]
    table.append(pa.table({"id": pa.array([3], pa.int64())}))

    with pytest.raises(Exception, match="streaming-skip-delete-snapshots=true"):
        read_stream(lake.spark, "lake.db.t", tmp_path / "failing")
    skip = {"streaming-skip-delete-snapshots": "true", "streaming-skip-overwrite-snapshots": "true"}
    got = read_stream(lake.spark, "lake.db.t", tmp_path / "skipping", **skip)
    assert got == [1, 2, 3, 20]  # appended rows as appended (the deletes are not applied)


def test_read_stream_keeps_the_files_limit_under_a_processing_time_trigger(
    lake, tmp_path: Path
) -> None:
    table = lake.catalog.create_table("db.t", SCHEMA)
    for start in (0, 3, 6):  # three appends of one file each
        table.refresh().append(pa.table({"id": pa.array(range(start, start + 3), pa.int64())}))
    batches: dict[int, list[int]] = {}

    def collect(batch: Any, batch_id: int) -> None:
        batches[batch_id] = sorted(r.id for r in batch.collect())

    query = (
        lake.spark.readStream.option("streaming-max-files-per-micro-batch", "2")
        .table("lake.db.t")
        .writeStream.option("checkpointLocation", str(tmp_path / "checkpoint"))
        .foreachBatch(collect)
        .trigger(processingTime="100 milliseconds")
        .start()
    )
    try:
        query.processAllAvailable()
    finally:
        query.stop()

    assert [batches[b] for b in sorted(batches)] == [[0, 1, 2, 3, 4, 5], [6, 7, 8]]


def test_a_stream_whose_offset_left_the_history_names_the_lakecat_error(
    lake, tmp_path: Path
) -> None:
    table = lake.catalog.create_table("db.t", SCHEMA)
    first = table.append(pa.table({"id": pa.array([1], pa.int64())}))
    table.append(pa.table({"id": pa.array([2], pa.int64())}))
    checkpoint = tmp_path / "checkpoint"
    assert read_stream(lake.spark, "lake.db.t", checkpoint) == [1, 2]
    rollback_to_snapshot(table.refresh(), first.snapshot_id)
    table.refresh().append(pa.table({"id": pa.array([3], pa.int64())}))

    query = (
        lake.spark.readStream.table("lake.db.t")
        .writeStream.option("checkpointLocation", str(checkpoint))
        .foreachBatch(lambda batch, _: batch.collect())
        .trigger(availableNow=True)
        .start()
    )
    with pytest.raises(Exception) as raised:
        query.awaitTermination(120)

    first_line = str(raised.value).splitlines()[0]
    # the plugin's stream translates the Python reader's error, as batch reads do
    assert "lakecat ValidationError: db.t: the stream's last snapshot " in first_line
    assert "is not an ancestor of the current snapshot" in first_line
    error = lk.lakecat_error(raised.value)
    assert type(error) is ValidationError
    assert str(error).startswith("db.t: the stream's last snapshot ")
    assert str(error).endswith("start a new query with a new checkpoint")

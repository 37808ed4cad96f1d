"""The Structured Streaming sink: one commit per micro-batch, exactly once."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql.types import LongType, StructField, StructType

from lakecat.catalog import Catalog
from lakecat.metadata.errors import ConcurrentTransaction
from lakecat.spark_ext.settings import CatalogSettings
from lakecat.spark_ext.source.streaming import plan_stream

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64())])


def add_source_file(folder: Path, start: int) -> None:
    folder.mkdir(exist_ok=True)
    ids = pa.table({"id": pa.array(range(start, start + 5), pa.int64())})
    pq.write_table(ids, folder / f"part-{start:05d}.parquet")


def run_query(spark: Any, source: Path, checkpoint: Path) -> None:
    query = (
        spark.readStream.schema("id long")
        .option("maxFilesPerTrigger", 1)
        .parquet(str(source))
        .writeStream.format("lakecat")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start("db.t")
    )
    query.awaitTermination(120)
    assert query.exception() is None


def test_a_restarted_query_never_duplicates_a_batch(
    spark: Any, lake: Catalog, tmp_path: Path
) -> None:
    table = lake.create_table("db.t", SCHEMA)
    source, checkpoint = tmp_path / "source", tmp_path / "checkpoint"
    for start in (0, 5, 10):
        add_source_file(source, start)
    run_query(spark, source, checkpoint)
    table.refresh()
    assert sorted(table.to_arrow().column("id").to_pylist()) == list(range(15))
    assert len(table.snapshots()) == 3  # one commit per micro-batch
    app_ids = {s.summary["lakecat.app-id"] for s in table.snapshots()}
    assert len(app_ids) == 1 and app_ids.pop().startswith("spark-query:")

    # A crash after lakecat committed batch 2 but before Spark recorded it: on restart Spark
    # runs batch 2 again, and the sink finds it committed.
    for name in ("2", ".2.crc"):
        (checkpoint / "commits" / name).unlink(missing_ok=True)
    run_query(spark, source, checkpoint)
    assert (checkpoint / "commits" / "2").exists()  # Spark did run batch 2 again
    table.refresh()
    assert len(table.snapshots()) == 3
    assert table.to_arrow().num_rows == 15

    add_source_file(source, 15)  # the next batch after the restart lands once
    run_query(spark, source, checkpoint)
    table.refresh()
    assert sorted(table.to_arrow().column("id").to_pylist()) == list(range(20))
    assert [s.summary["lakecat.app-version"] for s in table.snapshots()] == ["0", "1", "2", "3"]


def test_a_stream_without_checkpoint_or_app_id_is_refused(lake: Catalog) -> None:
    with pytest.raises(ValueError, match="checkpointLocation"):
        plan_stream(
            CatalogSettings.of_catalog(lake), "db.t", {}, overwrite=False, spark_schema=SPARK
        )


SPARK = StructType([StructField("id", LongType())])


def test_two_writers_with_the_same_id_cannot_both_commit_a_batch(
    lake: Catalog, tmp_path: Path
) -> None:
    """Two queries sharing an id (the same checkpoint or app-id) run batch 0 at once: the
    second commit fails; a batch that was committed before it started is skipped."""
    table = lake.create_table("db.t", SCHEMA)
    settings = CatalogSettings.of_catalog(lake)
    options = {"app-id": "ingest"}

    def writer() -> Any:  # what Spark asks the data source for, per batch and per commit
        return plan_stream(settings, "db.t", options, overwrite=False, spark_schema=SPARK)

    rows = pa.record_batch([pa.array([1, 2], pa.int64())], names=["id"])
    first, second = writer(), writer()  # both batches start before either commits
    first_message = first.write(iter([rows]))
    second_message = second.write(iter([rows]))
    writer().commit([first_message], 0)
    with pytest.raises(ConcurrentTransaction, match="ingest"):
        writer().commit([second_message], 0)
    assert not any(
        os.path.exists(f.file_path.removeprefix("file://")) for f in second_message.files
    )

    replay = writer()  # starts after batch 0 landed: a restart replaying it
    replay_message = replay.write(iter([rows]))
    writer().commit([replay_message], 0)
    table.refresh()
    assert table.to_arrow().num_rows == 2
    assert len(table.snapshots()) == 1


def test_the_data_source_streams_the_appended_rows(
    spark: Any, lake: Catalog, tmp_path: Path
) -> None:
    table = lake.create_table("db.t", SCHEMA)
    table.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    seen: list[int] = []

    def run() -> None:
        query = (
            spark.readStream.format("lakecat")
            .load("db.t")
            .writeStream.option("checkpointLocation", str(tmp_path / "checkpoint"))
            .foreachBatch(lambda batch, _: seen.extend(r.id for r in batch.collect()))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(120)
        assert query.exception() is None

    run()
    table.refresh().append(pa.table({"id": pa.array([3], pa.int64())}))
    run()

    assert seen == [1, 2, 3]

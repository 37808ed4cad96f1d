"""Structured Streaming: the sink (one commit per micro-batch, exactly once) and the source
(the rows appended to a table, within the rate limits, resumable from any offset)."""

from __future__ import annotations

import collections
import dataclasses
import itertools
import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable
from pyspark.sql.types import LongType, StructField, StructType

import lakecat.spark_ext as lk
from lakecat.catalog import Catalog, Table
from lakecat.catalog.maintenance import rewrite_data_files
from lakecat.metadata.errors import ConcurrentTransaction, ValidationError
from lakecat.metadata.io.fileio import LocalFileIO
from lakecat.spark_ext.errors import error_class_name
from lakecat.spark_ext.settings import CatalogSettings
from lakecat.spark_ext.source.stream_read import LakecatStreamReader, StreamOffset
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


def test_a_stream_with_merge_schema_adds_its_new_columns_once(
    spark: Any, lake: Catalog, tmp_path: Path
) -> None:
    table = lake.create_table("db.t", SCHEMA)
    source = tmp_path / "source"
    for start in (0, 5):
        add_source_file(source, start)
    query = (
        spark.readStream.schema("id long")
        .option("maxFilesPerTrigger", 1)
        .parquet(str(source))
        .selectExpr("id", "id * 10 AS tens")
        .writeStream.format("lakecat")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .option("mergeSchema", "true")
        .trigger(availableNow=True)
        .start("db.t")
    )
    query.awaitTermination(120)
    assert query.exception() is None

    table.refresh()
    assert [f.name for f in table.schema().fields] == ["id", "tens"]
    assert len(table.metadata.schemas) == 2  # the first batch's schema commit only
    assert len(table.snapshots()) == 2
    assert sorted(table.to_arrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": i, "tens": i * 10} for i in range(10)
    ]


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


# ---- the source: rate limits and offsets ---------------------------------------------------

PARTED = pa.schema([("id", pa.int64()), ("part", pa.int64())])


def append_two_files(table: Table, first_id: int) -> None:
    """One append of two files (two partitions), two rows each: ids first_id .. first_id+3."""
    ids = list(range(first_id, first_id + 4))
    table.refresh().append(
        pa.table({"id": pa.array(ids, pa.int64()), "part": pa.array([i % 2 for i in ids])})
    )


def parted_table(lake: Catalog, appends: int) -> Table:
    table = lake.create_table("db.events", PARTED, partition_by=["part"])
    for n in range(appends):
        append_two_files(table, 4 * n)
    return table


def stream(spark: Any, checkpoint: Path, **options: str) -> dict[int, list[tuple[int, int]]]:
    """Stream db.events until it caught up (Trigger.AvailableNow): the rows of each batch
    (``(id, part)``, sorted), by batch id."""
    batches: dict[int, list[tuple[int, int]]] = {}

    def collect(batch: Any, batch_id: int) -> None:
        batches[batch_id] = sorted((r.id, r.part) for r in batch.collect())

    reader = spark.readStream.format("lakecat")
    for key, value in options.items():
        reader = reader.option(key, value)
    query = (
        reader.load("db.events")
        .writeStream.option("checkpointLocation", str(checkpoint))
        .foreachBatch(collect)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None, str(query.exception())
    return batches


def ids_of(batches: dict[int, list[tuple[int, int]]]) -> list[int]:
    return sorted(row[0] for rows in batches.values() for row in rows)


def source_offset(checkpoint: Path, batch_id: int) -> dict[str, int]:
    """The source's end offset of a batch, as Spark's offset log holds it."""
    lines = (checkpoint / "offsets" / str(batch_id)).read_text().splitlines()
    offset: dict[str, int] = json.loads(lines[-1])
    return offset


def forget_batch(checkpoint: Path, batch_id: int, *, planned: bool) -> None:
    """A crash before Spark recorded the batch as done (``planned``: after it logged its
    offsets, so a restart replays it; else before, so a restart plans it again)."""
    logs = ("commits",) if planned else ("commits", "offsets")
    for log in logs:
        for name in (str(batch_id), f".{batch_id}.crc"):
            (checkpoint / log / name).unlink(missing_ok=True)


def test_max_files_per_batch_reads_one_file_per_batch_in_commit_order(
    spark: Any, lake: Catalog, tmp_path: Path
) -> None:
    parted_table(lake, appends=3)

    batches = stream(spark, tmp_path / "cp", **{"streaming-max-files-per-micro-batch": "1"})

    assert sorted(batches) == list(range(6))
    for rows in batches.values():  # one file: two rows of one partition
        assert len(rows) == 2 and len({part for _, part in rows}) == 1
    assert ids_of(batches) == list(range(12))  # every row once
    firsts = [min(i for i, _ in batches[b]) for b in sorted(batches)]
    assert [f // 4 for f in firsts] == [0, 0, 1, 1, 2, 2]  # the appends in commit order


def test_a_file_with_more_rows_than_the_rows_limit_is_a_batch_of_its_own(
    spark: Any, lake: Catalog, tmp_path: Path
) -> None:
    parted_table(lake, appends=2)

    one_row = stream(spark, tmp_path / "one", **{"streaming-max-rows-per-micro-batch": "1"})
    three_rows = stream(spark, tmp_path / "three", **{"streaming-max-rows-per-micro-batch": "3"})

    assert [len(rows) for rows in one_row.values()] == [2, 2, 2, 2]  # the stream advances
    assert ids_of(one_row) == list(range(8))
    # whole files until the rows taken reach the limit: 2 + 2 rows, twice
    assert [len(rows) for rows in three_rows.values()] == [4, 4]
    assert ids_of(three_rows) == list(range(8))


def test_a_restart_inside_a_snapshot_continues_without_duplicates_or_gaps(
    spark: Any, lake: Catalog, tmp_path: Path
) -> None:
    table = parted_table(lake, appends=1)
    checkpoint, one_file = tmp_path / "cp", {"streaming-max-files-per-micro-batch": "1"}
    first_run = stream(spark, checkpoint, **one_file)
    assert sorted(first_run) == [0, 1]
    snapshot_id = table.refresh().snapshots()[0].snapshot_id
    assert source_offset(checkpoint, 0) == {"snapshot_id": snapshot_id, "position": 1}
    assert source_offset(checkpoint, 1) == {"snapshot_id": snapshot_id}

    # A crash after batch 1 was planned: the restart replays it, with the same file.
    forget_batch(checkpoint, 1, planned=True)
    assert stream(spark, checkpoint, **one_file) == {1: first_run[1]}

    # A crash before batch 1 was planned: the stream stands inside the snapshot.
    forget_batch(checkpoint, 1, planned=False)
    append_two_files(table, 4)
    second_run = stream(spark, checkpoint, **one_file)
    assert sorted(second_run) == [1, 2, 3]
    assert second_run[1] == first_run[1]
    assert ids_of({0: first_run[0], **second_run}) == list(range(8))


def test_an_offset_without_a_position_still_resumes(
    spark: Any, lake: Catalog, tmp_path: Path
) -> None:
    """Older lakecat versions wrote only ``{"snapshot_id": id}``; so does this one when a
    batch ends with a whole snapshot."""
    table = parted_table(lake, appends=1)
    checkpoint = tmp_path / "cp"
    assert ids_of(stream(spark, checkpoint)) == [0, 1, 2, 3]
    old_form = {"snapshot_id": table.refresh().snapshots()[0].snapshot_id}
    assert source_offset(checkpoint, 0) == old_form

    append_two_files(table, 4)
    append_two_files(table, 8)
    resumed = stream(spark, checkpoint, **{"streaming-max-files-per-micro-batch": "3"})

    assert [len(rows) for rows in resumed.values()] == [6, 2]
    assert ids_of(resumed) == list(range(4, 12))


def test_a_lakecat_error_opens_the_failed_querys_message(
    spark: Any, lake: Catalog, tmp_path: Path
) -> None:
    table = parted_table(lake, appends=1)
    table.refresh().delete("part = 0")  # drops whole files: a "delete" snapshot
    query = (
        spark.readStream.format("lakecat")
        .load("db.events")
        .writeStream.option("checkpointLocation", str(tmp_path / "cp"))
        .foreachBatch(lambda batch, _: batch.collect())
        .trigger(availableNow=True)
        .start()
    )
    with pytest.raises(Exception) as raised:
        query.awaitTermination(120)

    first_line = str(raised.value).splitlines()[0]
    expected = f"{error_class_name(ValidationError)}: db.events: snapshot "
    assert expected in first_line
    assert "is a 'delete', which a stream of appended rows cannot read" in first_line
    assert str(query.exception()).splitlines()[0].endswith(first_line.split(expected)[1])
    error = lk.lakecat_error(raised.value)
    assert type(error) is ValidationError
    assert str(error).startswith("db.events: snapshot ")
    assert str(error).endswith("set streaming-skip-delete-snapshots=true to skip such snapshots")


def test_offsets_step_through_snapshots_and_plan_the_same_files_again(catalog: Catalog) -> None:
    """The reader on its own: batches of three files over appends of two, across a compaction;
    each (start, end) plans the same files however often it is asked."""
    table = parted_table(catalog, appends=2)
    rewrite_data_files(table.refresh())  # replace snapshots between the appends
    append_two_files(table, 8)
    first, second, *_, third = (s.snapshot_id for s in table.refresh().snapshots())
    options = {"path": "db.events", "streaming-max-files-per-micro-batch": "3"}
    spark_schema = StructType([StructField("id", LongType()), StructField("part", LongType())])
    reader = LakecatStreamReader(CatalogSettings.of_catalog(catalog), options, spark_schema)

    offsets = [reader.initialOffset()]
    while (end := reader.latestOffset(offsets[-1], reader.getDefaultReadLimit())) != offsets[-1]:
        offsets.append(end)

    assert [StreamOffset.parse(o) for o in offsets] == [
        StreamOffset(-1),
        StreamOffset(second, 1),
        StreamOffset(third),  # the rest of `second`, the compaction, then `third`
    ]

    def paths(start: dict[str, int], end: dict[str, int]) -> list[str]:
        return sorted(f.file_path for p in reader.partitions(start, end) for f in p.files)

    batches = [paths(a, b) for a, b in itertools.pairwise(offsets)]
    assert [len(b) for b in batches] == [3, 3]
    assert batches == [paths(a, b) for a, b in itertools.pairwise(offsets)]
    assert len(set(batches[0] + batches[1])) == 6
    # an offset of the old form (a whole snapshot) starts after that snapshot
    assert len(paths({"snapshot_id": first}, {"snapshot_id": third})) == 4
    # all available: one batch to the head
    assert reader.latestOffset({"snapshot_id": first}, ReadAllAvailable()) == {"snapshot_id": third}


class ManifestReadsIO(LocalFileIO):
    """Local files; counts the reads of each manifest and manifest list (Avro) path."""

    def __init__(self) -> None:
        self.reads: collections.Counter[str] = collections.Counter()

    def read(self, location: str) -> bytes:
        if location.endswith(".avro"):
            self.reads[location] += 1
        return super().read(location)

    def open_input(self, location: str) -> Any:
        if location.endswith(".avro"):
            self.reads[location] += 1
        return super().open_input(location)


def test_each_snapshots_manifests_are_read_once_for_all_its_batches(catalog: Catalog) -> None:
    """Batches of one file over appends of two files each: every batch ends inside or at the
    end of a snapshot, and each offset is planned twice (its end, then its partitions); the
    reader decodes each snapshot's manifest list and manifests once for all of it."""
    table = parted_table(catalog, appends=3)
    io = ManifestReadsIO()
    settings = dataclasses.replace(CatalogSettings.of_catalog(catalog), io=io)
    options = {"path": "db.events", "streaming-max-files-per-micro-batch": "1"}
    spark_schema = StructType([StructField("id", LongType()), StructField("part", LongType())])
    reader = LakecatStreamReader(settings, options, spark_schema)

    offsets = [reader.initialOffset()]
    while (end := reader.latestOffset(offsets[-1], reader.getDefaultReadLimit())) != offsets[-1]:
        offsets.append(end)
    batches = [
        sorted(f.file_path for p in reader.partitions(a, b) for f in p.files)
        for a, b in itertools.pairwise(offsets)
    ]

    assert len(batches) == 6 and all(len(b) == 1 for b in batches)
    assert len({b[0] for b in batches}) == 6
    manifest_reads = {k: n for k, n in io.reads.items() if "/metadata/" in k}
    assert manifest_reads  # the snapshots' manifest lists and manifests were read ...
    assert set(manifest_reads.values()) == {1}  # ... once each
    assert [s.snapshot_id for s in table.refresh().snapshots()] == [
        StreamOffset.parse(o).snapshot_id for o in offsets[2::2]
    ]


def test_the_rate_limit_options_must_be_positive_integers(catalog: Catalog) -> None:
    settings = CatalogSettings.of_catalog(catalog)
    for bad in ("0", "-1", "many"):
        options = {"path": "db.t", "streaming-max-rows-per-micro-batch": bad}
        with pytest.raises(ValidationError, match="streaming-max-rows-per-micro-batch"):
            LakecatStreamReader(settings, options, SPARK)

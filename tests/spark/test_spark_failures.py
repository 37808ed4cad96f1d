"""Failed Spark jobs leave nothing behind: no commit, no data files."""

from __future__ import annotations

import time
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from lakecat.catalog import Catalog, Table

pytestmark = pytest.mark.spark


def leftovers(catalog: Catalog, table: Table) -> list[str]:
    """Data files and write journal entries under the table (metadata.json files and the
    marker an abort leaves for tasks still running aside)."""
    return [
        info.location
        for info in catalog.io.list_prefix(table.location)
        if info.location.endswith(".parquet")
        or ("/spark-jobs/" in info.location and not info.location.endswith("/_aborted"))
    ]


def eventually_no_leftovers(catalog: Catalog, table: Table) -> list[str]:
    """Leftovers after tasks killed by the failed job had time to notice the abort."""
    deadline = time.monotonic() + 15
    while (found := leftovers(catalog, table)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return found


@pytest.fixture
def small_files(lake: Catalog, spark: Any) -> Any:
    """A table whose writers flush every few rows, and Spark batches of 100 rows."""
    table = lake.create_table(
        "db.t",
        pa.schema([pa.field("id", pa.int64(), nullable=False), ("part", pa.int64())]),
        properties={"write.target-file-size-bytes": "100"},
    )
    previous = spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "100")
    yield table
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", previous)


def test_a_task_failing_in_the_writer_leaves_no_commit_and_no_files(
    spark: Any, lake: Catalog, small_files: Table
) -> None:
    # Task 1 writes several files, then meets a null in the required column.
    df = spark.range(0, 2000, numPartitions=2).select(
        F.when(F.col("id") == 1900, F.lit(None)).otherwise(F.col("id")).alias("id"),
        F.spark_partition_id().cast("long").alias("part"),
    )
    with pytest.raises(Exception, match="required columns contain nulls"):
        df.write.format("lakecat").mode("append").save("db.t")
    assert lake.load_table("db.t").current_snapshot() is None
    assert eventually_no_leftovers(lake, small_files) == []


def test_a_task_failing_upstream_of_the_writer_leaves_no_commit_and_no_files(
    failing_frame: Any, lake: Catalog, small_files: Table
) -> None:
    df = failing_frame
    with pytest.raises(Exception, match="injected failure"):
        df.write.format("lakecat").mode("append").save("db.t")
    assert lake.load_table("db.t").current_snapshot() is None
    assert eventually_no_leftovers(lake, small_files) == []


def test_a_successful_write_leaves_no_journal_behind(
    spark: Any, lake: Catalog, small_files: Table
) -> None:
    spark.range(0, 500, numPartitions=2).selectExpr("id", "0L as part").write.format(
        "lakecat"
    ).mode("append").save("db.t")
    table = lake.load_table("db.t")
    live = {f.file_path for f in table.scan().plan_files()}
    assert set(leftovers(lake, table)) == live


def test_a_task_that_records_after_the_abort_removes_its_own_journal_entry(tmp_path: Any) -> None:
    """The driver may list the journal before a late task's entry exists: the task itself
    must take the entry back when it then finds the abort marker."""
    from types import SimpleNamespace

    from lakecat.metadata.errors import CommitFailed
    from lakecat.metadata.io.fileio import LocalFileIO
    from lakecat.spark_ext.source.tasks import Journal

    journal = Journal(LocalFileIO(), f"file://{tmp_path}/spark-jobs/job")
    journal.abort()  # the driver: marker written, nothing recorded yet
    with pytest.raises(CommitFailed, match="aborted"):
        journal.record([SimpleNamespace(file_path="file:///x/1.parquet")])  # type: ignore[list-item]
    assert sorted(p.name for p in (tmp_path / "spark-jobs" / "job").iterdir()) == ["_aborted"]

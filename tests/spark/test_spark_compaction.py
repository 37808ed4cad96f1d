"""Compaction runs its rewrite on Spark and commits on the driver, as lakecat's compaction."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from lakecat.catalog import Catalog
from lakecat.catalog.maintenance import CompactionResult
from lakecat.metadata.errors import ConcurrentDeleteDelete, TooManyFailedCommits
from lakecat.spark_ext import compact
from lakecat.spark_ext.dml import compaction as spark_compaction

pytestmark = pytest.mark.spark


def test_small_files_are_rewritten_into_fewer_files_with_the_same_rows(
    spark: Any, lake: Catalog
) -> None:
    table = lake.create_table(
        "db.t", pa.schema([("id", pa.int64()), ("region", pa.string())]), partition_by=["region"]
    )
    for i in range(6):
        table.append(pa.table({"id": pa.array([i, i + 100], pa.int64()), "region": ["eu", "us"]}))
    before = table.to_arrow().sort_by("id")
    assert len(table.scan().plan_files()) == 12

    result = compact(spark, "db.t", min_input_files=3)
    table.refresh()
    assert (result.groups_total, result.groups_committed, result.files_removed) == (2, 2, 12)
    assert len(result.snapshot_ids) == 2  # partial progress: one replace per group
    assert len(table.scan().plan_files()) == 2  # one file per partition
    assert table.current_snapshot().operation == "replace"
    assert table.to_arrow().sort_by("id").equals(before)

    again = compact(spark, "db.t", min_input_files=3)  # nothing left worth rewriting
    assert again.groups_total == 0 and again.snapshot_ids == ()


def test_all_groups_can_commit_as_one_snapshot(spark: Any, lake: Catalog) -> None:
    table = lake.create_table(
        "db.t", pa.schema([("id", pa.int64()), ("region", pa.string())]), partition_by=["region"]
    )
    for i in range(3):
        table.append(pa.table({"id": pa.array([i, i + 100], pa.int64()), "region": ["eu", "us"]}))
    result = compact(spark, "db.t", partial_progress=False)
    table.refresh()
    assert len(result.snapshot_ids) == 1
    assert len(table.scan().plan_files()) == 2
    assert sorted(table.to_arrow().column("id").to_pylist()) == [0, 1, 2, 100, 101, 102]


def test_a_conflict_loses_its_batch_and_too_many_failed_commits_raise_after_the_rest(
    spark: Any, lake: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = lake.create_table(
        "db.t", pa.schema([("id", pa.int64()), ("region", pa.string())]), partition_by=["region"]
    )
    for i in range(3):
        table.append(pa.table({"id": pa.array([i, i + 100], pa.int64()), "region": ["eu", "us"]}))
    staged_write = spark_compaction.stage_write_by_task

    def delete_meanwhile(*args: Any, **kwargs: Any) -> Any:
        staged = staged_write(*args, **kwargs)  # written, not committed yet
        lake.load_table("db.t").delete("id = 101")  # copy-on-write: a us file goes
        return staged

    monkeypatch.setattr(spark_compaction, "stage_write_by_task", delete_meanwhile)
    with pytest.raises(TooManyFailedCommits, match="1 of the compaction's 2 commits") as raised:
        compact(spark, "db.t", partial_progress_max_failed_commits=0)

    result = raised.value.result
    assert isinstance(result, CompactionResult)
    assert result.groups_committed == 1 and result.files_failed == 3
    [(group, error)] = result.groups_failed
    assert "region=us" in group and isinstance(error, ConcurrentDeleteDelete)
    table.refresh()  # eu's compaction stays; us is as the delete left it
    assert table.current_snapshot().snapshot_id == result.snapshot_ids[0]
    files = [f.file_path for f in table.scan().plan_files()]
    # the delete dropped the file that held 101 alone
    assert sum("region=eu" in f for f in files) == 1 and sum("region=us" in f for f in files) == 2
    assert sorted(table.to_arrow().column("id").to_pylist()) == [0, 1, 2, 100, 102]

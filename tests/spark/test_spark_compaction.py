"""Compaction runs its rewrite on Spark and commits on the driver, as lakecat's compaction."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from lakecat.catalog import Catalog
from lakecat.spark_ext import compact

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

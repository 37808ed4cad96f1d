"""The positions of a merge-on-read change's rows, gathered by Spark (``file_positions``)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from pyspark.sql import functions as F

from lakecat.spark_ext.dml.positions import file_positions

pytestmark = pytest.mark.spark


def gathered(spark: Any, pairs: list[tuple[str, int]], partitions: int) -> dict[str, list[int]]:
    frame = spark.createDataFrame(pairs, "f string, p long").repartition(partitions)
    found = file_positions(frame, F.col("f"), F.col("p"))
    assert all(a.type.equals("int64") for a in found.values())
    return {path: a.to_pylist() for path, a in found.items()}


def test_each_files_positions_come_back_sorted_and_distinct_across_blocks_and_tasks(
    spark: Any,
) -> None:
    rng = random.Random(7)
    edges = [0, 1, 65_535, 65_536, 65_537, 131_071, 131_072, (1 << 33) + 5, (1 << 62) - 1]
    expected = {
        "s3://b/a.parquet": sorted(set(edges)),
        "file:/t/b.parquet": sorted({rng.randrange(300_000) for _ in range(5_000)}),
        "c": [42],
    }
    pairs = [(path, p) for path, ps in expected.items() for p in ps]
    pairs += [("c", 42), ("s3://b/a.parquet", 65_536)]  # the same row twice: once in the result
    rng.shuffle(pairs)
    assert gathered(spark, pairs, partitions=3) == expected


def test_no_rows_gather_no_files(spark: Any) -> None:
    assert gathered(spark, [], partitions=1) == {}

"""Filters Spark pushes down prune the files a read plans (asserted on the planned partitions)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from lakecat.catalog import Catalog
from lakecat.spark_ext import register

pytestmark = pytest.mark.spark


def batch(ids: range, region: str, name: str, note: str | None) -> pa.Table:
    n = len(ids)
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "region": pa.array([region] * n, pa.string()),
            "name": pa.array([f"{name}{i}" for i in ids], pa.string()),
            "note": pa.array([note] * n, pa.string()),
            "score": pa.array([float(i) for i in ids], pa.float64()),
        }
    )


@pytest.fixture
def four_files(lake: Catalog) -> Catalog:
    """Four data files: one per region, disjoint id ranges and name prefixes."""
    table = lake.create_table("db.t", batch(range(0), "", "", None).schema, partition_by=["region"])
    table.append(batch(range(0, 10), "eu", "alpha", "x"))
    table.append(batch(range(10, 20), "us", "beta", None))
    table.append(batch(range(20, 30), "ap", "gamma", "y"))
    table.append(batch(range(30, 40), "sa", "delta", "z"))
    return lake


def planned(spark: Any, where: str) -> tuple[int, list[int]]:
    """(Spark partitions planned, one per file with a tiny split size; matching ids)."""
    df = spark.read.format("lakecat").option("split-size", "1").load("db.t").where(where)
    partitions = df.rdd.getNumPartitions()
    ids = sorted(r.id for r in spark.read.format("lakecat").load("db.t").where(where).collect())
    return partitions, ids


@pytest.mark.parametrize(
    ("where", "files", "ids"),
    [
        ("region = 'eu'", 1, list(range(10))),  # partition values
        ("id >= 12 and id < 15", 1, [12, 13, 14]),  # column bounds
        ("region in ('us', 'sa') and id > 35", 1, [36, 37, 38, 39]),
        ("note is null", 1, list(range(10, 20))),  # null counts
        ("note is not null and region <> 'ap'", 2, list(range(10)) + list(range(30, 40))),
        ("name like 'gam%'", 1, list(range(20, 30))),  # string prefix
        ("id % 10 = 0", 4, [0, 10, 20, 30]),  # not pushed: every file
    ],
)
def test_pushed_filters_prune_the_files_planned(
    spark: Any, four_files: Catalog, where: str, files: int, ids: list[int]
) -> None:
    assert planned(spark, where) == (files, ids)


FLOAT_CONDITIONS = [
    "x > 1.5",
    "x >= CAST('NaN' AS DOUBLE)",
    "x < CAST('NaN' AS DOUBLE)",
    "x <= CAST('NaN' AS DOUBLE)",
    "x = 0.0",
    "x <> 1.5",
    "NOT (x < -0.0)",
    "x IN (CAST('NaN' AS DOUBLE), 2.5)",
    "x NOT IN (CAST('NaN' AS DOUBLE), 2.5)",
]


def test_float_comparisons_prune_and_filter_the_rows_spark_selects(
    spark: Any, lake: Catalog
) -> None:
    """The data source filters the rows of a pushed filter itself (Spark does not evaluate it
    again), so a float comparison must select what Spark's would: NaN above every number and
    equal to itself, -0.0 = 0.0."""
    values = [None, float("nan"), float("-inf"), -1.5, -0.0, 0.0, 1.5, 2.5, float("inf")]
    rows = pa.table({"id": list(range(len(values))), "x": pa.array(values, pa.float64())})
    table = lake.create_table("db.f", rows.schema)
    for i in range(len(values)):
        table.append(rows.slice(i, 1))
    plain = spark.createDataFrame(rows.to_pylist(), "id long, x double")

    for condition in FLOAT_CONDITIONS:
        read = spark.read.format("lakecat").option("split-size", "1").load("db.f")
        got = sorted(r.id for r in read.where(condition).collect())
        want = sorted(r.id for r in plain.where(condition).collect())
        assert got == want, condition
    read = spark.read.format("lakecat").option("split-size", "1").load("db.f")
    assert read.where("x > 1.5").rdd.getNumPartitions() == 3  # 2.5, inf and NaN of 9 files


def test_spark_4_reuses_a_dataframes_filtered_plan_for_its_next_unfiltered_query(
    spark: Any, four_files: Catalog
) -> None:
    """A known Spark 4 limitation (documented in docs/spark.md): the planned read of a
    DataFrame is cached with the filters pushed by its last filtered query, and a query that
    pushes no filter reuses it. When Spark fixes this, this test fails: update the docs."""
    df = spark.read.format("lakecat").load("db.t")
    assert df.where("region = 'eu'").count() == 10
    assert df.count() == 10  # should be 40: Spark reused the pruned, filtered plan
    assert spark.read.format("lakecat").load("db.t").count() == 40  # a new DataFrame is right


def test_the_default_registration_lets_a_dataframe_be_reused(
    spark: Any, four_files: Catalog
) -> None:
    register(spark, catalog=four_files, format_name="lakecat_nopush")  # no pushdown by default
    df = spark.read.format("lakecat_nopush").load("db.t")
    assert df.where("region = 'eu'").count() == 10
    assert df.count() == 40
    unpruned = spark.read.format("lakecat_nopush").option("split-size", "1").load("db.t")
    assert unpruned.where("region = 'eu'").rdd.getNumPartitions() == 4  # every file is read

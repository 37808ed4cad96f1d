"""lk.delete and lk.update find the rows they change with Spark's own Parquet reader: each
row's file and position from Spark's file metadata, the rows deletes already delete left out,
and the data source where the files or the condition do not qualify."""

from __future__ import annotations

import logging
from typing import Any

import pyarrow as pa
import pytest

from lakecat.catalog import Catalog, Table
from lakecat.spark_ext import delete, update

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.string()), ("score", pa.float64())])
FALLBACK = "through the data source"
NATIVE = "with Spark's Parquet reader"


def rows(ids: range, part: str) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "part": [part] * len(ids),
            "score": [float(i) for i in ids],
        },
        schema=SCHEMA,
    )


def table_with_parts(lake: Catalog, parts: list[str], mode: str, version: str = "2") -> Table:
    """One file of ten rows per part: ids 0-9 in the first, 10-19 in the second, ..."""
    table = lake.create_table(
        "db.t",
        SCHEMA,
        partition_by=["part"],
        properties={
            "format-version": version,
            "write.delete.mode": mode,
            "write.update.mode": mode,
        },
    )
    for i, part in enumerate(parts):
        table.append(rows(range(10 * i, 10 * i + 10), part))
    return table


def live(table: Table) -> dict[int, float]:
    return {r["id"]: r["score"] for r in table.refresh().to_arrow().to_pylist()}


def fell_back(caplog: pytest.LogCaptureFixture) -> bool:
    return any(FALLBACK in r.getMessage() for r in caplog.records)


def read_natively(caplog: pytest.LogCaptureFixture) -> bool:
    """Every search for rows since ``caplog`` started was Spark's reader's."""
    found = [r.getMessage() for r in caplog.records if "finding the rows" in r.getMessage()]
    return bool(found) and all(NATIVE in m for m in found)


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_files_named_with_escaped_characters_are_matched_by_spark_s_reader(
    spark: Any, lake: Catalog, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    # partition folders hold the values URL-escaped, and Spark names the files by URIs
    parts = ["a b", "50%", "x=y/z", "plain"]
    table = table_with_parts(lake, parts, mode)
    caplog.set_level(logging.DEBUG, logger="lakecat.spark")
    delete(spark, "db.t", "id % 10 = 3")
    update(spark, "db.t", "id % 10 = 5", {"score": "-score"})
    assert read_natively(caplog)
    expected = {i: (-float(i) if i % 10 == 5 else float(i)) for i in range(40) if i % 10 != 3}
    assert live(table) == expected


@pytest.mark.parametrize("version", ["2", "3"])
def test_rows_deletes_already_removed_are_not_matched_again(
    spark: Any, lake: Catalog, version: str, caplog: pytest.LogCaptureFixture
) -> None:
    table = table_with_parts(lake, ["a", "b"], "merge-on-read", version)
    delete(spark, "db.t", "id < 5 or id = 15")  # position deletes (v3: deletion vectors)
    caplog.set_level(logging.DEBUG, logger="lakecat.spark")
    # only rows that are gone match: nothing to change, in either mode
    assert delete(spark, "db.t", "id < 3 or id = 15").snapshot_id is None
    assert update(spark, "db.t", "id = 4", {"score": "0"}).snapshot_id is None
    table.set_properties({"write.delete.mode": "copy-on-write"})
    assert delete(spark, "db.t", "id < 2").snapshot_id is None
    # a live match among gone ones: only that file changes, and only by that row
    table.set_properties({"write.delete.mode": "merge-on-read"})
    result = delete(spark, "db.t", "id < 3 or id = 7")
    assert (result.files_removed, result.files_added) == (int(version == "3"), 1)
    table.set_properties({"write.delete.mode": "copy-on-write"})
    result = delete(spark, "db.t", "id < 3 or id = 8")
    assert (result.files_removed, result.files_added) == (1, 1)
    assert read_natively(caplog)
    assert sorted(live(table)) == [5, 6, 9, *range(10, 15), *range(16, 20)]


def test_a_condition_on_the_row_ids_finds_its_rows_through_the_data_source(
    spark: Any, lake: Catalog, caplog: pytest.LogCaptureFixture
) -> None:
    table = table_with_parts(lake, ["a", "b"], "merge-on-read")
    caplog.set_level(logging.DEBUG, logger="lakecat.spark")
    delete(spark, "db.t", "_pos = 0")
    assert fell_back(caplog)
    assert sorted(live(table)) == [*range(1, 10), *range(11, 20)]


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_nan_rows_match_as_spark_orders_them(
    spark: Any, lake: Catalog, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    # the files' statistics leave NaN out: a filter pushed into the reader skips them
    table = table_with_parts(lake, ["a"], mode)
    nan = float("nan")
    table.append(pa.table({"id": [10, 11], "part": ["a", "a"], "score": [0.0, nan]}, SCHEMA))
    table.append(pa.table({"id": [12], "part": ["a"], "score": [nan]}, SCHEMA))
    caplog.set_level(logging.DEBUG, logger="lakecat.spark")
    update(spark, "db.t", "score > 100", {"score": "-1"})
    assert read_natively(caplog)
    assert {i: s for i, s in live(table).items() if i >= 10} == {10: 0.0, 11: -1.0, 12: -1.0}


def test_a_column_named_metadata_finds_its_rows_through_the_data_source(
    spark: Any, lake: Catalog, caplog: pytest.LogCaptureFixture
) -> None:
    schema = pa.schema([("id", pa.int64()), ("_metadata", pa.string())])
    table = lake.create_table("db.m", schema, properties={"write.delete.mode": "merge-on-read"})
    table.append(pa.table({"id": [1, 2, 3], "_metadata": ["a", "b", "c"]}, schema=schema))
    caplog.set_level(logging.INFO, logger="lakecat.spark")
    delete(spark, "db.m", "id = 2 or _metadata = 'c'")
    assert fell_back(caplog)
    assert table.refresh().to_arrow().to_pylist() == [{"id": 1, "_metadata": "a"}]

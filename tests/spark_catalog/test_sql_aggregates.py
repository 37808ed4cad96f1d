"""Aggregates answered from the files' metrics (Spark's aggregate push-down): ``count(*)``,
``count(col)``, ``min`` and ``max`` without ``GROUP BY``, when no filter is left for Spark to
evaluate on the rows. Every answer is checked against Spark's own aggregation of the rows
(``spark.lakecat.aggregatePushDown=false``), and each case against whether it was answered
from metrics (a ``LocalTableScan`` instead of a read of the table)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from lakecat.metadata import StringType
from lakecat.spark_ext.native.write import session_conf

pytestmark = pytest.mark.spark

OFF = {"spark.lakecat.aggregatePushDown": "false"}


def answered(lake: Any, query: str) -> tuple[bool, list[tuple[Any, ...]]]:
    """Whether the query's aggregates come from metrics, and its rows, after checking that
    Spark's aggregation of the rows gives the same."""
    df = lake.spark.sql(query)
    plan = df._jdf.queryExecution().executedPlan().toString()
    rows = [tuple(r) for r in df.collect()]
    with session_conf(lake.spark, OFF):
        off = lake.spark.sql(query)
        assert "BatchScan" in off._jdf.queryExecution().executedPlan().toString()
        assert [tuple(r) for r in off.collect()] == rows
    from_metrics = "LocalTableScan" in plan and "BatchScan" not in plan
    return from_metrics, rows


@pytest.fixture
def typed(lake: Any) -> Any:
    """db.typed partitioned by part: three inserts (three files per part), nulls in some."""
    lake.sql(
        "CREATE TABLE lake.db.typed (id bigint, i int, part string, d date, ts timestamp, "
        "price decimal(10, 2), flag boolean, name string, x double) PARTITIONED BY (part)"
    )
    for start in (0, 100, 200):
        lake.sql(
            "INSERT INTO lake.db.typed SELECT id, IF(id % 7 = 0, NULL, CAST(id * 3 AS INT)), "
            "IF(id % 2 = 0, 'a', 'b'), date_add(DATE '2024-01-01', CAST(id AS INT)), "
            "TIMESTAMP '2024-01-01 00:00:00' + make_interval(0, 0, 0, 0, CAST(id AS INT)), "
            "CAST(id AS DECIMAL(10, 2)) / 4, id % 3 = 0, concat('n', id), id * 0.5 "
            f"FROM range({start}, {start + 50})"
        )
    return lake.catalog.load_table("db.typed")


ALL = (
    "SELECT count(*), count(i), min(id), max(id), min(i), max(i), min(d), max(d), "
    "min(ts), max(ts), min(price), max(price), min(flag), max(flag), count(name) "
    "FROM lake.db.typed"
)


def test_counts_and_bounds_come_from_the_metrics(lake: Any, typed: Any) -> None:
    from_metrics, [row] = answered(lake, ALL)

    ids = [*range(0, 50), *range(100, 150), *range(200, 250)]
    i = [x * 3 for x in ids if x % 7]
    assert from_metrics
    assert row == (
        150, len(i), 0, 249, min(i), max(i),
        dt.date(2024, 1, 1), dt.date(2024, 1, 1) + dt.timedelta(days=249),
        row[8], row[9], Decimal("0.00"), Decimal("62.25"), False, True, 150,
    )  # fmt: skip
    assert row[9] - row[8] == dt.timedelta(hours=249)


def test_a_filter_the_partitions_decide_keeps_the_answer_from_metrics(lake: Any, typed) -> None:
    from_metrics, [(count, low, high)] = answered(
        lake, "SELECT count(*), min(id), max(id) FROM lake.db.typed WHERE part = 'b'"
    )

    assert from_metrics and (count, low, high) == (75, 1, 249)


@pytest.mark.parametrize(
    "query",
    [
        "SELECT count(*) FROM lake.db.typed WHERE id > 10",  # evaluated on the rows
        "SELECT part, count(*) FROM lake.db.typed GROUP BY part",
        "SELECT min(name), max(name) FROM lake.db.typed",  # string bounds may be truncated
        "SELECT max(x) FROM lake.db.typed",  # float bounds leave NaN out
        "SELECT sum(id), avg(i) FROM lake.db.typed",
        "SELECT count(DISTINCT part) FROM lake.db.typed",
        "SELECT max(id + 1) FROM lake.db.typed",
    ],
)
def test_what_the_metrics_do_not_decide_is_read_from_the_rows(
    lake: Any, typed: Any, query: str
) -> None:
    from_metrics, _ = answered(lake, query)

    assert not from_metrics


def test_rows_deleted_by_delete_files_are_read_from_the_rows(lake: Any, typed: Any) -> None:
    typed.set_properties({"write.delete.mode": "merge-on-read"})
    lake.sql("DELETE FROM lake.db.typed WHERE id % 10 = 1")

    from_metrics, [(count,)] = answered(lake, "SELECT count(*) FROM lake.db.typed")

    assert not from_metrics and count == 150 - 15


def test_time_travel_and_an_empty_table_are_answered_from_metrics(lake: Any, typed: Any) -> None:
    first = typed.snapshots()[0].snapshot_id
    lake.sql("CREATE TABLE lake.db.empty (id bigint)")

    old, [(count, high)] = answered(
        lake, f"SELECT count(*), max(id) FROM lake.db.typed VERSION AS OF {first}"
    )
    empty, [row] = answered(lake, "SELECT count(*), min(id), count(id) FROM lake.db.empty")

    assert old and (count, high) == (50, 49)
    assert empty and row == (0, None, 0)


def test_a_file_without_a_column_s_metrics_is_read_from_the_rows(lake: Any, typed: Any) -> None:
    with typed.update_schema() as update:
        update.add_column("note", StringType())
    lake.sql("INSERT INTO lake.db.typed (id, part, note) VALUES (1000, 'a', 'x')")

    counted, [(count,)] = answered(lake, "SELECT count(note) FROM lake.db.typed")
    stars, [(rows,)] = answered(lake, "SELECT count(*) FROM lake.db.typed")

    assert not counted and count == 1
    assert stars and rows == 151


def test_metrics_mode_none_or_counts_is_honoured(lake: Any, typed: Any) -> None:
    typed.set_properties(
        {"write.metadata.metrics.column.i": "none", "write.metadata.metrics.column.id": "counts"}
    )

    assert not answered(lake, "SELECT count(i) FROM lake.db.typed")[0]
    assert not answered(lake, "SELECT max(id) FROM lake.db.typed")[0]
    assert answered(lake, "SELECT count(id) FROM lake.db.typed") == (True, [(150,)])


def test_a_table_pyiceberg_wrote_is_answered_as_spark_reads_it(lake: Any) -> None:
    py = lake.pyiceberg()
    try:
        schema = pa.schema([("id", pa.int64()), ("v", pa.int32())])
        table = py.create_table("db.foreign", schema=schema)
        table.append(pa.table({"id": [5, 1, 9], "v": [None, 2, 3]}, schema=schema))
        table.append(pa.table({"id": [-4], "v": [None]}, schema=schema))
    finally:
        py.engine.dispose()

    from_metrics, [row] = answered(
        lake, "SELECT count(*), count(v), min(id), max(id), min(v), max(v) FROM lake.db.foreign"
    )

    assert from_metrics and row == (4, 2, -4, 9, 2, 3)


def test_bounds_written_before_a_type_promotion_are_read_in_the_new_type(
    lake: Any, typed: Any
) -> None:
    lake.sql("ALTER TABLE lake.db.typed ALTER COLUMN i TYPE bigint")
    lake.sql("INSERT INTO lake.db.typed (id, i, part) VALUES (1000, 5000000000, 'a')")

    from_metrics, [row] = answered(lake, "SELECT min(i), max(i), count(i) FROM lake.db.typed")

    assert from_metrics and row[1] == 5_000_000_000

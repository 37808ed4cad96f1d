"""Comparisons of float and double columns through the SQL catalog: they prune files, run a
DELETE on the driver and overwrite by condition, selecting exactly the rows Spark selects.

Spark orders NaN above every number and takes ``NaN = NaN`` as true; lakecat's expressions
compare as IEEE 754, so the conversion (``spark_ext/source/filters.py``) adds ``IS NAN`` /
``IS NOT NAN`` where Spark's order differs. The oracle is Spark itself: the same predicates
over the same rows in a plain DataFrame.
"""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa
import pytest

INF, NAN = math.inf, math.nan
# one row per value, each in a file of its own (its metrics describe that value alone), and
# the same values again (ids 100 and up) together in one file
VALUES = [None, NAN, -INF, -1.5, -0.0, 0.0, 0.1, 1.5, 2.5, INF]
SCHEMA = pa.schema([("id", pa.int64()), ("x", pa.float64()), ("f", pa.float32())])
LITERALS = ["NaN", "-0.0", "0.0", "1.5", "Infinity"]
OPERATORS = ["=", "<=>", "<", "<=", ">", ">=", "<>"]


def predicates(column: str, cast: str) -> list[str]:
    """Every comparison of ``column`` with every literal, plain and negated, and IN lists."""
    out = []
    for text in LITERALS:
        value = f"CAST('{text}' AS {cast})"
        for op in OPERATORS:
            out += [f"{column} {op} {value}", f"NOT ({column} {op} {value})"]
    lists = ["'NaN', '1.5'", "'0.0'", "'-0.0', '2.5'", "'NaN'", "'1.5', NULL"]
    for items in lists:
        values = ", ".join(
            "NULL" if v.strip() == "NULL" else f"CAST({v.strip()} AS {cast})"
            for v in items.split(",")
        )
        out += [f"{column} IN ({values})"]
        if "NULL" not in items:
            out += [f"{column} NOT IN ({values})"]
    return out


def rows() -> pa.Table:
    ids = [*range(len(VALUES)), *range(100, 100 + len(VALUES))]
    return pa.table({"id": ids, "x": VALUES * 2, "f": VALUES * 2}, schema=SCHEMA)


def build(lake: Any, name: str, partition_by: list[str] | None = None) -> Any:
    table = lake.catalog.create_table(name, SCHEMA, partition_by=partition_by or [])
    everything = rows()
    for i in range(len(VALUES)):
        table.append(everything.slice(i, 1))
    table.append(everything.slice(len(VALUES)))
    return table


@pytest.fixture
def plain(spark: Any) -> str:
    """The rows as a plain DataFrame (Spark's semantics, no lakecat), as a temporary view."""
    frame = spark.createDataFrame(rows().to_pylist(), "id long, x double, f float")
    frame.createOrReplaceTempView("plain_floats")
    yield "plain_floats"
    spark.catalog.dropTempView("plain_floats")


def selected(spark: Any, relation: str, conditions: list[str]) -> dict[str, list[int]]:
    """The ids each condition selects from ``relation``, in one query (a scan per condition,
    each with its own pushed filters)."""
    query = " UNION ALL ".join(
        f"SELECT {i} AS k, id FROM {relation} WHERE {c}" for i, c in enumerate(conditions)
    )
    out: dict[str, list[int]] = {c: [] for c in conditions}
    for k, row_id in spark.sql(query).collect():
        out[conditions[k]].append(row_id)
    return {c: sorted(ids) for c, ids in out.items()}


def mismatches(got: dict[str, list[int]], want: dict[str, list[int]]) -> list[str]:
    return [f"{c}: lakecat {got[c]}, Spark {want[c]}" for c in want if got[c] != want[c]]


@pytest.mark.parametrize(
    ("partition_by", "column", "cast"),
    [(None, "x", "DOUBLE"), (["x"], "x", "DOUBLE"), (["f"], "f", "FLOAT")],
    ids=["double-files", "double-identity-partitions", "float-identity-partitions"],
)
def test_float_comparisons_select_the_rows_spark_selects(
    lake: Any, plain: str, partition_by: list[str] | None, column: str, cast: str
) -> None:
    build(lake, "db.floats", partition_by)
    conditions = predicates(column, cast)
    if cast == "FLOAT":  # double literals: Spark widens the column, or narrows the literal
        conditions += [
            f"f {op} {value}"
            for op in OPERATORS
            for value in ("0.1", "0.1D", "1.5D", "3.4e39D", "CAST('NaN' AS DOUBLE)")
        ]

    want = selected(lake.spark, plain, conditions)
    got = selected(lake.spark, "lake.db.floats", conditions)

    assert mismatches(got, want) == []
    assert want["x > CAST('1.5' AS DOUBLE)" if column == "x" else "f > CAST('1.5' AS FLOAT)"] == [
        1, 8, 9, 101, 108, 109,
    ]  # fmt: skip # NaN is above every number


def test_a_float_comparison_prunes_the_files_that_hold_no_match(lake: Any) -> None:
    build(lake, "db.floats")

    line = lake.scan_line("SELECT id FROM lake.db.floats WHERE x > 1.5")

    assert "lakecat-filter=x IS NOT NULL AND (x > 1.5 OR x IS NAN)" in line
    assert "files=4]" in line  # 2.5, inf, NaN and the file of every value, of 11
    assert "files=3]" in lake.scan_line("SELECT id FROM lake.db.floats WHERE x < -1.0")
    # -0.0 = 0.0: a file holding only 0.0 may match x <= -0.0, and one of -0.0 x >= 0.0
    assert "files=5]" in lake.scan_line("SELECT id FROM lake.db.floats WHERE x <= -0.0")
    assert "files=8]" in lake.scan_line("SELECT id FROM lake.db.floats WHERE x >= 0.0")


DELETES = [
    "x > 1.5",
    "x >= CAST('NaN' AS DOUBLE)",
    "x < CAST('NaN' AS DOUBLE)",
    "x = 0.0",
    "x <> 1.5",
    "NOT (x < 0.0)",
    "f IN (CAST('NaN' AS FLOAT), CAST('-1.5' AS FLOAT))",
]


@pytest.mark.parametrize("condition", DELETES)
def test_a_delete_by_a_float_comparison_runs_on_the_driver_and_keeps_what_spark_keeps(
    lake: Any, plain: str, condition: str
) -> None:
    table = build(lake, "db.floats")
    statement = f"DELETE FROM lake.db.floats WHERE {condition}"
    plan = lake.sql(f"EXPLAIN {statement}")[0][0]
    assert "DeleteFromTable" in plan  # lakecat's delete, on the driver

    lake.sql(statement)

    kept = selected(lake.spark, plain, [f"NOT ({condition}) OR ({condition}) IS NULL"])
    assert [i for (i,) in lake.rows("db.floats", "id")] == next(iter(kept.values()))
    assert table.refresh().current_snapshot().operation in ("delete", "overwrite")


@pytest.mark.parametrize("condition", ["x > 1.5", "x <= CAST('NaN' AS DOUBLE)", "x >= -0.0"])
def test_an_overwrite_by_a_float_condition_replaces_the_rows_spark_matches(
    lake: Any, plain: str, condition: str
) -> None:
    build(lake, "db.floats")

    lake.sql(f"INSERT INTO lake.db.floats REPLACE WHERE {condition} SELECT 1000L, 2.0D, 2.0F")

    kept = selected(lake.spark, plain, [f"NOT ({condition}) OR ({condition}) IS NULL"])
    assert [i for (i,) in lake.rows("db.floats", "id")] == [*next(iter(kept.values())), 1000]


def test_files_a_sql_insert_writes_count_their_nan_so_a_comparison_prunes_them(lake: Any) -> None:
    """Spark's Parquet writer records no NaN counts; the catalog plugin's format, which writes
    the SQL catalog's inserts, puts them in the footer. Without them, x > 5 (which holds for
    NaN in Spark) could prune no file of the column."""
    lake.sql("CREATE TABLE lake.db.scores (id bigint, x double)")
    lake.sql("INSERT INTO lake.db.scores VALUES (1, 1.0), (2, 2.0)")
    lake.sql("INSERT INTO lake.db.scores VALUES (3, CAST('NaN' AS DOUBLE))")
    lake.sql("INSERT INTO lake.db.scores VALUES (4, 10.0)")
    table = lake.catalog.load_table("db.scores")
    x = table.schema().find_field("x").field_id
    assert sorted(f.nan_value_counts[x] for f in table.scan().plan_files())[-1] == 1
    assert sum(f.nan_value_counts[x] for f in table.scan().plan_files()) == 1

    assert "files=2]" in lake.scan_line("SELECT id FROM lake.db.scores WHERE x > 5")
    assert "files=1]" in lake.scan_line("SELECT id FROM lake.db.scores WHERE x > 20")
    assert sorted(r[0] for r in lake.sql("SELECT id FROM lake.db.scores WHERE x > 5")) == [3, 4]
    # pyiceberg skips a file whose NaN count is 0 for IS NAN, and reads the counts as they are
    assert lake.iceberg_rows("db.scores", "id", row_filter="x IS NAN") == [(3,)]
    assert lake.iceberg_rows("db.scores", "id", row_filter="x IS NOT NAN") == [(1,), (2,), (4,)]

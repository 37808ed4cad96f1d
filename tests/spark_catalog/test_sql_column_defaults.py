"""Column defaults of format v3 tables through the SQL catalog: Spark sees each column's
``write-default`` as its default and ``initial-default`` as its existence default (as
Iceberg's Spark runtime reports them), so an ``INSERT`` that leaves a column out, or names it
``DEFAULT``, writes the table's write default."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest
from sql_lake import Lake

from lakecat.metadata.schema import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    NestedField,
    Schema,
    StringType,
    TimestampType,
)

pytestmark = pytest.mark.spark

V3 = {"format-version": "3"}

# (type, write-default in the spec's JSON form, the value Spark reads back)
DEFAULTS: list[tuple[Any, Any, Any]] = [
    (BooleanType(), True, True),
    (IntegerType(), 42, 42),
    (LongType(), 10_000_000_000, 10_000_000_000),
    (FloatType(), 1.5, 1.5),
    (DoubleType(), -2.5e-300, -2.5e-300),
    (DecimalType(9, 2), "-14.20", Decimal("-14.20")),
    (DateType(), "2024-02-29", dt.date(2024, 2, 29)),
    (TimestampType(), "2024-02-29T10:15:30.000001", dt.datetime(2024, 2, 29, 10, 15, 30, 1)),
    (StringType(), "it's a \\ quote", "it's a \\ quote"),
    (BinaryType(), "00ff10", b"\x00\xff\x10"),
]


def create(lake: Lake, *fields: NestedField) -> None:
    schema = Schema.of(NestedField(1, "id", LongType(), required=True), *fields)
    lake.catalog.create_table("db.t", schema, properties=V3)


def test_an_insert_fills_the_columns_it_leaves_out_with_their_write_defaults(lake: Lake) -> None:
    create(
        lake,
        *(
            NestedField(i + 2, f"c{i}", t, write_default=value)
            for i, (t, value, _) in enumerate(DEFAULTS)
        ),
    )
    lake.sql("INSERT INTO lake.db.t (id) VALUES (1)")
    lake.sql(f"INSERT INTO lake.db.t VALUES (2, {', '.join('DEFAULT' for _ in DEFAULTS)})")

    rows = lake.spark.sql("SELECT * FROM lake.db.t ORDER BY id").collect()
    for row in rows:
        for i, (_, _, want) in enumerate(DEFAULTS):
            assert row[f"c{i}"] == want, f"c{i}"
    assert [r[0] for r in lake.rows("db.t", "id")] == [1, 2]


def test_describe_and_show_create_table_show_the_defaults(lake: Lake) -> None:
    create(
        lake,
        NestedField(2, "region", StringType(), write_default="eu", initial_default="us"),
        NestedField(3, "score", IntegerType(), write_default=7),
    )
    shown = lake.spark.sql("SHOW CREATE TABLE lake.db.t").collect()[0][0]
    assert "DEFAULT 'eu'" in shown.split("region", 1)[1].split(",", 1)[0]
    assert "score INT DEFAULT 7" in shown
    schema = lake.spark.table("lake.db.t").schema
    assert schema["region"].metadata == {"CURRENT_DEFAULT": "'eu'", "EXISTS_DEFAULT": "'us'"}


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_update_and_merge_write_the_defaults_they_name_or_leave_out(lake: Lake, mode: str) -> None:
    create(
        lake,
        NestedField(2, "region", StringType(), write_default="eu"),
        NestedField(3, "score", IntegerType(), write_default=7),
    )
    lake.sql(
        f"ALTER TABLE lake.db.t SET TBLPROPERTIES ('write.update.mode' = '{mode}', "
        f"'write.merge.mode' = '{mode}')"
    )
    lake.sql("INSERT INTO lake.db.t VALUES (1, 'us', 1), (2, 'us', 2)")
    lake.sql("UPDATE lake.db.t SET region = DEFAULT WHERE id = 1")
    lake.spark.range(2, 4).createOrReplaceTempView("src")
    lake.sql(
        "MERGE INTO lake.db.t t USING src s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET score = DEFAULT "
        "WHEN NOT MATCHED THEN INSERT (id) VALUES (s.id)"
    )

    assert lake.rows("db.t") == [(1, "eu", 1), (2, "us", 7), (3, "eu", 7)]


def test_alter_table_adds_a_column_with_a_default_that_older_rows_read(lake: Lake) -> None:
    lake.sql("CREATE TABLE lake.db.t (id bigint) TBLPROPERTIES ('format-version' = '3')")
    lake.sql("INSERT INTO lake.db.t VALUES (1)")
    lake.sql("ALTER TABLE lake.db.t ADD COLUMN region string DEFAULT concat('e', 'u')")
    lake.sql("ALTER TABLE lake.db.t ADD COLUMN since date DEFAULT DATE '2024-02-29'")
    lake.sql("INSERT INTO lake.db.t (id) VALUES (2)")
    lake.sql("ALTER TABLE lake.db.t ALTER COLUMN region SET DEFAULT 'us'")
    lake.sql("INSERT INTO lake.db.t (id) VALUES (3)")
    lake.sql("ALTER TABLE lake.db.t ALTER COLUMN since DROP DEFAULT")
    lake.sql("INSERT INTO lake.db.t (id) VALUES (4)")

    day = dt.date(2024, 2, 29)
    want = [(1, "eu", day), (2, "eu", day), (3, "us", day), (4, "us", None)]
    assert lake.rows("db.t") == want  # row 1 reads the initial defaults
    got = lake.spark.sql("SELECT * FROM lake.db.t").collect()
    assert sorted(tuple(r) for r in got) == want
    region = lake.catalog.load_table("db.t").schema().find_field("region")
    assert (region.initial_default, region.write_default) == ("eu", "us")


def test_defaults_are_refused_before_format_version_3_and_for_bad_values(lake: Lake) -> None:
    lake.sql("CREATE TABLE lake.db.t (id bigint, n int) TBLPROPERTIES ('format-version' = '2')")
    before = lake.catalog.load_table("db.t").metadata_location
    with pytest.raises(Exception, match="format version 3"):
        lake.sql("ALTER TABLE lake.db.t ADD COLUMN region string DEFAULT 'eu'")
    with pytest.raises(Exception, match="format version 3"):
        lake.sql("ALTER TABLE lake.db.t ALTER COLUMN n SET DEFAULT 1")
    assert lake.catalog.load_table("db.t").metadata_location == before
    with pytest.raises(Exception, match="does not support column default value"):
        lake.sql("CREATE TABLE lake.db.u (id bigint DEFAULT 1)")  # Spark's refusal, as Iceberg's

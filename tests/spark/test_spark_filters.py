"""Which filters Spark pushes down become lakecat expressions (no Spark session needed)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from pyspark.sql import datasource as ds

from lakecat.metadata.expressions.expressions import bind, referenced_field_ids
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import (
    DateType,
    DecimalType,
    DoubleType,
    ListType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestamptzType,
    UUIDType,
)
from lakecat.spark_ext.source.filters import to_expression

pytestmark = pytest.mark.spark

SCHEMA = Schema(
    (
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "name", StringType()),
        NestedField(3, "score", DoubleType()),
        NestedField(4, "day", DateType()),
        NestedField(5, "ts", TimestamptzType()),
        NestedField(6, "price", DecimalType(10, 2)),
        NestedField(7, "key", UUIDType()),
        NestedField(8, "point", StructType((NestedField(9, "x", LongType()),))),
        NestedField(10, "tags", ListType(11, StringType())),
    )
)


def converted(f: ds.Filter) -> str | None:
    expression = to_expression(f, SCHEMA)
    return None if expression is None else str(expression)


@pytest.mark.parametrize(
    ("pushed", "expected"),
    [
        (ds.EqualTo(("id",), 5), "id = 5"),
        (ds.GreaterThan(("id",), 5), "id > 5"),
        (ds.LessThanOrEqual(("day",), dt.date(2024, 1, 2)), "day <= DATE '2024-01-02'"),
        (ds.In(("name",), ("a", "b")), "name IN ('a', 'b')"),
        (ds.In(("name",), ("a", None)), "name IN ('a')"),  # NULL never matches IN
        (ds.IsNull(("name",)), "name IS NULL"),
        (ds.IsNotNull(("key",)), "key IS NOT NULL"),
        (ds.StringStartsWith(("name",), "ab"), "name LIKE 'ab%'"),
        (ds.EqualNullSafe(("name",), "x"), "name = 'x'"),
        (ds.EqualNullSafe(("name",), None), "name IS NULL"),
        (ds.Not(ds.EqualTo(("id",), 5)), "NOT (id = 5)"),
        (ds.EqualTo(("price",), Decimal("1.50")), "price = 1.50"),
        (ds.EqualTo(("point", "x"), 3), "point.x = 3"),
    ],
)
def test_filters_lakecat_evaluates_as_spark_does_are_converted(
    pushed: ds.Filter, expected: str
) -> None:
    assert converted(pushed) == expected


NAN = float("nan")


@pytest.mark.parametrize(
    ("pushed", "expected"),
    [
        (ds.EqualTo(("score",), 1.5), "score = 1.5"),
        (ds.EqualTo(("score",), NAN), "score IS NAN"),
        (ds.EqualNullSafe(("score",), None), "score IS NULL"),
        (ds.GreaterThan(("score",), 1.5), "score > 1.5 OR score IS NAN"),
        (ds.GreaterThanOrEqual(("score",), -0.0), "score >= -0.0 OR score IS NAN"),
        (ds.GreaterThan(("score",), NAN), "false"),
        (ds.LessThan(("score",), 1.5), "score < 1.5"),
        (ds.LessThan(("score",), NAN), "score IS NOT NAN"),
        (ds.LessThanOrEqual(("score",), NAN), "score IS NOT NULL"),
        (ds.In(("score",), (1.5, NAN, None)), "score IN (1.5) OR score IS NAN"),
        (ds.In(("score",), (NAN,)), "score IS NAN"),
        (ds.Not(ds.EqualTo(("score",), 1.5)), "score != 1.5"),
        (ds.Not(ds.EqualTo(("score",), NAN)), "score IS NOT NAN"),
        (ds.Not(ds.LessThan(("score",), 1.5)), "score >= 1.5 OR score IS NAN"),
        (ds.Not(ds.GreaterThan(("score",), 1.5)), "score <= 1.5"),
        (ds.Not(ds.In(("score",), (1.5, NAN))), "score NOT IN (1.5) AND score IS NOT NAN"),
        (ds.Not(ds.IsNull(("score",))), "score IS NOT NULL"),
        (ds.Not(ds.Not(ds.GreaterThan(("score",), 1.5))), "score > 1.5 OR score IS NAN"),
    ],
)
def test_float_comparisons_convert_to_what_spark_means_by_them(
    pushed: ds.Filter, expected: str
) -> None:
    """Spark orders NaN above every number and takes NaN = NaN as true; lakecat compares as
    IEEE 754, so the conversion adds or removes the NaN rows with IS NAN / IS NOT NAN."""
    assert converted(pushed) == expected


HOSTILE = Schema(
    (
        NestedField(1, "a.b", StringType()),
        NestedField(2, "s", StructType((NestedField(3, "x.y", LongType()),))),
        NestedField(4, "with space", StringType()),
        NestedField(5, "l", ListType(6, StructType((NestedField(7, "k.v", LongType()),)))),
    )
)


@pytest.mark.parametrize(
    ("pushed", "expected", "field_id"),
    [
        (ds.EqualTo(("a.b",), "x"), "a.b = 'x'", 1),
        (ds.GreaterThan(("s", "x.y"), 3), "s.x.y > 3", 3),
        (ds.IsNull(("with space",)), "`with space` IS NULL", 4),
        (ds.Not(ds.EqualNullSafe(("a.b",), None)), "a.b IS NOT NULL", 1),
    ],
)
def test_filters_on_columns_with_dots_in_their_names_are_converted(
    pushed: ds.Filter, expected: str, field_id: int
) -> None:
    """Spark names the column one name per level; the lakecat filter names its full name,
    which binds back to the very field."""
    expression = to_expression(pushed, HOSTILE)
    assert expression is not None and str(expression) == expected
    assert referenced_field_ids(bind(HOSTILE, expression)) == {field_id}


@pytest.mark.parametrize(
    "pushed",
    [
        ds.EqualTo(("a", "b"), "x"),  # no struct a
        ds.EqualTo(("s.x.y",), 1),  # no top-level "s.x.y"
        ds.EqualTo(("l", "element", "k.v"), 1),  # inside a list
    ],
)
def test_filters_on_paths_that_name_no_single_value_are_left_to_spark(pushed: ds.Filter) -> None:
    assert to_expression(pushed, HOSTILE) is None


def test_zoned_timestamps_convert_as_the_instant_spark_passes() -> None:
    instant = dt.datetime(2024, 1, 1, 15, tzinfo=dt.UTC)
    assert converted(ds.GreaterThan(("ts",), instant)) is not None


@pytest.mark.parametrize(
    "pushed",
    [
        ds.Not(ds.EqualNullSafe(("score",), 1.0)),  # true for nulls in SQL
        ds.Not(ds.In(("score",), (1.0, None))),  # never true in SQL
        ds.GreaterThan(("score",), "1.0"),
        ds.EqualTo(("key",), "00000000-0000-0000-0000-000000000001"),  # text vs bytes
        ds.Not(ds.In(("name",), ("a", None))),  # never true in SQL
        ds.Not(ds.EqualNullSafe(("name",), "x")),  # true for nulls in SQL
        ds.StringEndsWith(("name",), "z"),
        ds.StringContains(("name",), "z"),
        ds.EqualTo(("tags",), ["a"]),
        ds.EqualTo(("missing",), 1),
        ds.EqualTo(("id",), "not a number"),
        ds.EqualTo(("a.b",), 1),
    ],
)
def test_filters_spark_must_evaluate_are_left_to_spark(pushed: ds.Filter) -> None:
    assert converted(pushed) is None

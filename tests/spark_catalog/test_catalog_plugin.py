"""The catalog plugin's pieces that need no Spark session: turning Spark's transforms and
predicates into lakecat's terms (its jar: test_catalog_jar.py)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest

pytest.importorskip("pyspark")

from lakecat.metadata import (
    DoubleType,
    LongType,
    NestedField,
    Schema,
    StringType,
    TimestamptzType,
)
from lakecat.metadata.expressions.parser import parse
from lakecat.spark_ext.sql.convert import (
    UnsupportedByCatalog,
    literal,
    partition_by,
    predicates_expression,
    spark_transforms,
)

SCHEMA = Schema.of(
    NestedField(1, "id", LongType()),
    NestedField(2, "region", StringType()),
    NestedField(3, "ts", TimestamptzType()),
    NestedField(4, "amount", DoubleType()),
)


def ref(name: str) -> dict:
    return {"ref": [name]}


def lit(value: str, type_name: str) -> dict:
    return {"literal": value, "type": type_name}


def op(name: str, *children: dict) -> dict:
    return {"op": name, "children": list(children)}


def test_spark_partition_transforms_become_lakecat_partition_fields() -> None:
    transforms = [
        {"name": "days", "args": [ref("ts")]},
        {"name": "identity", "args": [ref("region")]},
        {"name": "bucket", "args": [{"literal": "16"}, ref("id")]},
        {"name": "truncate", "args": [{"literal": "4"}, ref("region")]},
        {"name": "hours", "args": [ref("ts")]},
    ]

    assert partition_by(transforms) == [
        ("ts", "day"),
        "region",
        ("id", "bucket[16]"),
        ("region", "truncate[4]"),
        ("ts", "hour"),
    ]
    with pytest.raises(UnsupportedByCatalog, match="unsupported partition transform zorder"):
        partition_by([{"name": "zorder", "args": [ref("id")]}])


def test_partition_transforms_name_dotted_columns_one_name_per_level(tmp_path) -> None:
    """A top-level ``"a.b"`` is the one-name reference ``["a.b"]`` (Spark prints
    ``identity(`a.b`)``), field ``"x.y"`` of struct ``s`` is ``["s", "x.y"]``; and back."""
    import pyarrow as pa

    from lakecat.catalog import Catalog

    schema = pa.schema(
        [
            ("a.b", pa.string()),
            ("s", pa.struct([("x.y", pa.int64())])),
            ("s.x", pa.string()),
        ]
    )
    catalog = Catalog(f"sqlite:///{tmp_path / 'c.db'}", warehouse=str(tmp_path / "wh"))
    try:
        catalog.create_namespace("db")
        items = partition_by(
            [
                {"name": "identity", "args": [ref("a.b")]},
                {"name": "bucket", "args": [{"literal": "4"}, {"ref": ["s", "x.y"]}]},
                {"name": "truncate", "args": [{"literal": "2"}, ref("s.x")]},
            ]
        )
        assert items == ["a.b", ("s.x.y", "bucket[4]"), ("s.x", "truncate[2]")]
        table = catalog.create_table("db.t", schema, partition_by=items)
        assert spark_transforms(table) == [
            {"name": "identity", "args": [{"ref": ["a.b"]}]},
            {"name": "bucket", "args": [{"literal": 4}, {"ref": ["s", "x.y"]}]},
            {"name": "truncate", "args": [{"literal": 2}, {"ref": ["s.x"]}]},
        ]
    finally:
        catalog.close()


def test_predicates_become_the_lakecat_filter_spark_means() -> None:
    micros = str(int(dt.datetime(2024, 1, 2, tzinfo=dt.UTC).timestamp() * 1_000_000))
    predicates = [
        op(
            "OR",
            op("=", ref("region"), lit("eu", "string")),
            op("IN", ref("id"), lit("1", "long"), lit("2", "long")),
        ),
        op(">=", lit(micros, "timestamp"), ref("ts")),  # literal first: flipped
        op("NOT", op("IS_NULL", ref("region"))),
    ]

    expression = predicates_expression(predicates, SCHEMA)

    assert expression == parse(
        "(region = 'eu' OR id IN (1, 2)) AND ts <= TIMESTAMP '2024-01-02T00:00:00+00:00' "
        "AND NOT (region IS NULL)"
    )


def test_float_predicates_become_what_spark_means_with_its_nan_order() -> None:
    def converted(predicate: dict[str, Any]) -> str:
        return str(predicates_expression([predicate], SCHEMA))

    assert converted(op(">", ref("amount"), lit("2.5", "double"))) == (
        "amount > 2.5 OR amount IS NAN"
    )
    assert converted(op("=", ref("amount"), lit("NaN", "double"))) == "amount IS NAN"
    assert converted(op("<", lit("-Infinity", "double"), ref("amount"))) == (
        "amount > '-inf' OR amount IS NAN"
    )
    assert converted(op("NOT", op("<=", ref("amount"), lit("-0.0", "double")))) == (
        "amount > -0.0 OR amount IS NAN"
    )


def test_predicates_lakecat_would_evaluate_differently_are_refused() -> None:
    with pytest.raises(UnsupportedByCatalog, match="exactly as Spark does"):
        predicates_expression(
            [op("=", op("%", ref("id"), lit("2", "integer")), lit("0", "integer"))], SCHEMA
        )


def test_literals_arrive_in_catalysts_internal_form() -> None:
    assert literal(lit("19724", "date")) == dt.date(2024, 1, 2)
    assert literal(lit("0", "timestamp_ntz")) == dt.datetime(1970, 1, 1)
    assert literal(lit("12.50", "decimal")) == Decimal("12.50")
    assert literal(lit("true", "boolean")) is True
    assert literal({"literal": None, "type": "string"}) is None


def test_the_plugins_positions_file_is_read_as_bitmaps_per_data_file(tmp_path) -> None:
    """Each task's deleted positions of a data file arrive as a portable 64-bit Roaring bitmap
    (a file split over two tasks has two); a file's positions come back sorted and distinct,
    its bitmaps united."""
    from pyroaring import BitMap64

    from lakecat.metadata.errors import CorruptMetadata, ValidationError
    from lakecat.spark_ext.sql.bridge import read_positions

    a, b1, b2 = (
        BitMap64([7, 3, 9]).serialize(),
        BitMap64([0, 1 << 40]).serialize(),
        BitMap64([5, 0]).serialize(),
    )
    path = tmp_path / "positions.bin"
    path.write_bytes(a + b1 + b2)
    runs = {
        "a.parquet": [[0, len(a)]],
        "b.parquet": [[len(a), len(b1)], [len(a) + len(b1), len(b2)]],
        "empty.parquet": [],
    }
    positions = read_positions(str(path), runs)
    assert {k: v.to_pylist() for k, v in positions.items()} == {
        "a.parquet": [3, 7, 9],
        "b.parquet": [0, 5, 1 << 40],
        "empty.parquet": [],
    }
    with pytest.raises(ValidationError, match="outside"):
        read_positions(str(path), {"a.parquet": [[len(a), len(a) + len(b1) + len(b2)]]})
    with pytest.raises(CorruptMetadata):
        read_positions(str(path), {"a.parquet": [[1, len(a) - 1]]})


@pytest.mark.parametrize(
    ("mode", "failure"),
    [
        ("copy-on-write", "table dropped"),
        ("merge-on-read", "table dropped"),
        ("merge-on-read", "positions file missing"),
    ],
)
def test_a_row_level_commit_failing_before_it_commits_deletes_the_staged_files(
    tmp_path, mode: str, failure: str
) -> None:
    """The plugin hands the staged files to the commit call: whatever fails in that call,
    even before the commit itself starts, deletes them (and the hand-over)."""
    import os

    import pyarrow as pa

    from lakecat.catalog import Catalog
    from lakecat.catalog.write.writer import conform, write_files
    from lakecat.metadata.errors import LakecatError
    from lakecat.spark_ext.source.planning import METADATA_LOCATION
    from lakecat.spark_ext.source.staging import StagedTask, write_handoff
    from lakecat.spark_ext.sql.bridge import CatalogBridge

    catalog = Catalog.embedded(tmp_path / "lake")
    try:
        catalog.create_namespace("db")
        table = catalog.create_table("db.t", pa.schema([("id", pa.int64())]))
        table.append(pa.table({"id": [1, 2, 3]}))
        table = catalog.load_table("db.t")
        bridge = CatalogBridge(catalog, name="lake", data_format="lakecat", metadata_format="x")
        options = {METADATA_LOCATION: table.metadata_location}
        stage_to = bridge.begin_row_level(["db"], "t", options)["stage_to"]
        rows = conform(table.metadata, pa.table({"id": [4, 5]}))
        staged = write_files(table.io, table.metadata, rows)
        write_handoff(table.io, stage_to, [StagedTask(0, tuple(staged))])
        name = "gone" if failure == "table dropped" else "t"
        args = (["db"], name, "update", "true", stage_to, [], options)
        with pytest.raises((LakecatError, OSError)):
            if mode == "copy-on-write":
                bridge.commit_row_level(*args)
            else:
                bridge.commit_merge_on_read(*args, str(tmp_path / "no-such.bin"), {"x": [0, 1]})
        assert [os.path.exists(f.file_path.removeprefix("file://")) for f in staged] == [False]
        assert not table.io.exists(stage_to)
        assert catalog.load_table("db.t").metadata_location == table.metadata_location
    finally:
        catalog.close()

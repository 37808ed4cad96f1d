"""lk.read: lakecat plans the files, Spark's own Parquet reader reads them; reads that would
differ from lakecat's by-field-id reading go through the data source."""

from __future__ import annotations

import datetime as dt
import importlib
import os
import urllib.parse
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

import lakecat.spark_ext as lk
from lakecat.catalog import Catalog, Table
from lakecat.metadata.io import local_path
from lakecat.metadata.schema.types import LongType

pytestmark = pytest.mark.spark


def events(lake: Catalog) -> Table:
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            ("region", pa.string()),
            ("ts", pa.timestamp("us", tz="UTC")),
            ("local", pa.timestamp("us")),
            ("price", pa.decimal128(12, 3)),
            ("tags", pa.list_(pa.string())),
            ("attrs", pa.map_(pa.string(), pa.int64())),
            ("point", pa.struct([("x", pa.float64()), ("y", pa.float64())])),
            ("digest", pa.binary(4)),
        ]
    )
    table = lake.create_table("db.events", schema, partition_by=["region", ("ts", "day")])
    for start in (0, 20):
        rows = range(start, start + 20)
        table.append(
            pa.table(
                {
                    "id": pa.array(rows, pa.int64()),
                    "region": [["eu", "us", None][i % 3] for i in rows],
                    "ts": [dt.datetime(2024, 3, 1 + i % 4, 5, tzinfo=dt.UTC) for i in rows],
                    "local": [dt.datetime(1000 + i, 1, 1) for i in rows],
                    "price": [Decimal(i) / 8 for i in rows],
                    "tags": [[str(i)] * (i % 3) for i in rows],
                    "attrs": [[("k", i)] if i % 2 else None for i in rows],
                    "point": [{"x": float(i), "y": float("nan")} for i in rows],
                    "digest": [i.to_bytes(4, "big") for i in rows],
                },
                schema=schema,
            )
        )
    return table


def rows(df: Any) -> list[Any]:
    return sorted((tuple(r) for r in df.collect()), key=lambda r: r[0])


def same_rows(a: Any, b: Any) -> bool:
    """The same rows, NaN equal to NaN."""
    return repr(rows(a)) == repr(rows(b))


def source(spark: Any, table: str, **options: Any) -> Any:
    return spark.read.format("lakecat").options(**options).load(table)


def test_a_native_read_gives_the_rows_of_the_data_source(spark: Any, lake: Catalog) -> None:
    events(lake)
    assert lk.native_read_support(spark, "db.events").native
    native = lk.read(spark, "db.events")
    assert native.columns == source(spark, "db.events").columns
    # Spark's file sources make every column nullable; the data source keeps required ones.
    assert all(f.nullable for f in native.schema.fields)
    assert not source(spark, "db.events").schema["id"].nullable
    assert len(rows(native)) == 40
    assert same_rows(native, source(spark, "db.events"))
    plan = native._jdf.queryExecution().executedPlan().toString()
    assert "FileScan parquet" in plan and "PythonScan" not in plan


def test_the_filter_option_prunes_files_and_filters_rows(spark: Any, lake: Catalog) -> None:
    events(lake)
    condition = "region = 'eu' and ts >= '2024-03-03T00:00:00+00:00' and id not in (3, 6)"
    native = lk.read(spark, "db.events", filter=condition)
    assert lk.native_read_support(spark, "db.events", filter=condition).native
    assert same_rows(native, source(spark, "db.events", filter=condition))
    expected = {i for i in range(40) if i % 3 == 0 and i % 4 >= 2} - {3, 6}
    assert {r[0] for r in rows(native)} == expected
    assert len(native.inputFiles()) == 4  # eu on 03-03 and 03-04, from each of two appends
    assert lk.native_read_support(spark, "db.events", filter="point.x > 3").native
    assert rows(lk.read(spark, "db.events", filter="point.x > 35"))[0][0] == 36


FLOAT_FILTERS = [
    "score > 1.5",
    "score >= 1.5",
    "score != 1.5",
    "score < 1.5",
    "score <= 0",
    "score = 0",
    "score = -0.0",
    "score IN (1.5, 0)",
    "score NOT IN (1.5)",
    "NOT (score < 1.5)",
    "score > 1.5 OR score IS NAN",
]


def test_the_filter_option_compares_floats_as_lakecat_does_in_a_native_read(
    spark: Any, lake: Catalog
) -> None:
    """lakecat compares as IEEE 754 (NaN matches only !=), Spark orders NaN above every
    number: the native read's condition says which NaN rows it means, and keeps the float
    comparisons out of Parquet's row-group pruning (the footers' statistics leave NaN out:
    a pushed score != 1.5 would skip the file of 1.5 and NaN)."""
    nan, inf = float("nan"), float("inf")
    schema = pa.schema([("id", pa.int64()), ("score", pa.float64())])
    table = lake.create_table("db.floats", schema)
    for ids, scores in (([1, 2], [1.5, nan]), ([3], [nan]), ([4, 5], [-0.0, 0.0]), ([6], [inf])):
        table.append(pa.table({"id": ids, "score": scores}, schema=schema))
    table.append(pa.table({"id": [7], "score": [None]}, schema=schema))

    for condition in FLOAT_FILTERS:
        assert lk.native_read_support(spark, "db.floats", filter=condition).native, condition
        native = lk.read(spark, "db.floats", filter=condition)
        assert same_rows(native, source(spark, "db.floats", filter=condition)), condition
    assert [r[0] for r in rows(lk.read(spark, "db.floats", filter="score != 1.5"))] == [
        2, 3, 4, 5, 6,
    ]  # fmt: skip
    assert [r[0] for r in rows(lk.read(spark, "db.floats", filter="score > 1.5"))] == [6]


def test_filters_on_floats_after_a_native_read_keep_the_nan_rows_spark_matches(
    spark: Any, lake: Catalog
) -> None:
    # Parquet statistics leave NaN out, and Spark holds NaN > 5: a filter pushed into Spark's
    # reader skipped the row group [0.0, NaN] for "score > 5", and a struct's too
    nan = float("nan")
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("score", pa.float64()),
            ("p", pa.struct([("x", pa.float32()), ("q", pa.struct([("y", pa.float64())]))])),
        ]
    )
    table = lake.create_table("db.scores", schema)
    points = [{"x": 0.0, "q": {"y": 0.0}}, {"x": nan, "q": {"y": nan}}]
    table.append(pa.table({"id": [1, 2], "score": [0.0, nan], "p": points}, schema=schema))
    table.append(pa.table({"id": [3], "score": [1.0], "p": [None]}, schema=schema))
    assert lk.native_read_support(spark, "db.scores").native
    native = lk.read(spark, "db.scores")
    assert same_rows(native, source(spark, "db.scores"))  # NaN stays NaN, null stays null
    expected = {
        "score > 5": [2],
        "score != 0": [2, 3],
        "p.x > 5": [2],
        "p.q.y != 0": [2],
        "p.q.y > 5": [2],
        "id > 1": [2, 3],
    }
    for condition, ids in expected.items():
        assert [r[0] for r in rows(native.where(condition))] == ids, condition


def test_a_column_named_metadata_sends_a_read_with_deletes_to_the_data_source(
    spark: Any, lake: Catalog
) -> None:
    # the native read drops deleted rows by Spark's _metadata column, which the table's hides
    schema = pa.schema([("id", pa.int64()), ("_metadata", pa.string())])
    table = lake.create_table("db.m", schema, properties={"write.delete.mode": "merge-on-read"})
    table.append(pa.table({"id": [1, 2, 3], "_metadata": ["a", "b", "c"]}, schema=schema))
    assert lk.native_read_support(spark, "db.m").native  # no deletes: nothing to hide
    table.delete("id = 2")
    support = lk.native_read_support(spark, "db.m")
    assert "_metadata" in (support.reason or "")
    assert rows(lk.read(spark, "db.m")) == [(1, "a"), (3, "c")]


def test_files_an_older_lakecat_wrote_under_unescaped_names_are_read_by_the_data_source(
    spark: Any, lake: Catalog
) -> None:
    # lakecat before 2026-11-21 wrote partition "a/b" to region=a/b while the manifest says
    # region=a%2Fb; its FileIO finds such files, Spark's reader (taking the path as it is)
    # would not
    schema = pa.schema([("id", pa.int64()), ("region", pa.string())])
    props = {"write.delete.mode": "merge-on-read"}
    table = lake.create_table("db.legacy", schema, partition_by=["region"], properties=props)
    table.append(pa.table({"id": [1, 2, 3], "region": ["a/b", "a/b", "50%"]}, schema=schema))
    table.append(pa.table({"id": [4], "region": ["plain"]}, schema=schema))
    moved = 0
    for f in table.scan().plan_files():
        literal = local_path(f.file_path)
        assert literal is not None
        legacy = urllib.parse.unquote(literal)
        if legacy != literal:
            os.makedirs(os.path.dirname(legacy), exist_ok=True)
            os.rename(literal, legacy)
            moved += 1
    assert moved == 2
    support = lk.native_read_support(spark, "db.legacy")
    assert "another form of its name" in (support.reason or "")
    assert rows(lk.read(spark, "db.legacy")) == [(1, "a/b"), (2, "a/b"), (3, "50%"), (4, "plain")]
    lk.delete(spark, "db.legacy", "id % 2 = 0")
    assert rows(lk.read(spark, "db.legacy")) == [(1, "a/b"), (3, "50%")]
    # the untouched partition alone still reads natively
    assert lk.native_read_support(spark, "db.legacy", filter="region = 'plain'").native


@pytest.mark.parametrize("version", ["2", "3"])
def test_deletes_on_files_with_escaped_names_are_applied_to_a_native_read(
    spark: Any, lake: Catalog, version: str
) -> None:
    # partition folders hold the values URL-escaped, and Spark names the files by URIs
    schema = pa.schema([("id", pa.int64()), ("part", pa.string())])
    props = {"format-version": version, "write.delete.mode": "merge-on-read"}
    table = lake.create_table("db.e", schema, partition_by=["part"], properties=props)
    parts = ["a b", "50%", "x=y/z", "plus+ü", "plain"]
    for i, part in enumerate(parts):
        ids = list(range(10 * i, 10 * i + 10))
        table.append(pa.table({"id": ids, "part": [part] * 10}, schema=schema))
    table.delete("id IN (3, 13, 23, 33, 43, 44)")  # position deletes (v3: deletion vectors)
    assert lk.native_read_support(spark, "db.e").native
    expected = [(i, parts[i // 10]) for i in range(50) if i % 10 != 3 and i != 44]
    assert rows(lk.read(spark, "db.e")) == expected
    assert rows(lk.read(spark, "db.e", filter="part = 'a b'")) == expected[:9]


def test_too_many_deleted_positions_send_the_read_to_the_data_source(
    spark: Any, lake: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the native read holds every deleted position on the driver and ships them; past the
    # bound the data source applies the delete files in its tasks
    schema = pa.schema([("id", pa.int64()), ("part", pa.string())])
    props = {"write.delete.mode": "merge-on-read"}
    table = lake.create_table("db.many", schema, partition_by=["part"], properties=props)
    table.append(pa.table({"id": range(20), "part": ["a"] * 10 + ["b"] * 10}, schema=schema))
    table.delete("id IN (1, 2, 11)")
    native_read = importlib.import_module("lakecat.spark_ext.native.read")
    monkeypatch.setattr(native_read, "MAX_NATIVE_DELETED_POSITIONS", 2)
    support = lk.native_read_support(spark, "db.many")
    assert "more than 2 deleted positions" in (support.reason or "")
    expected = [(i, "a" if i < 10 else "b") for i in range(20) if i not in (1, 2, 11)]
    assert rows(lk.read(spark, "db.many")) == expected
    # one partition's files are under the bound
    assert lk.native_read_support(spark, "db.many", filter="part = 'b'").native
    monkeypatch.setattr(native_read, "MAX_NATIVE_DELETED_POSITIONS", 3)
    assert lk.native_read_support(spark, "db.many").native


def test_a_row_spark_names_an_unplanned_file_fails_the_native_read(
    spark: Any, lake: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Spark's names of the files are predicted on the driver; a row that none names must
    # fail the read, never keep a deleted row
    schema = pa.schema([("id", pa.int64())])
    props = {"write.delete.mode": "merge-on-read"}
    table = lake.create_table("db.k", schema, properties=props)
    table.append(pa.table({"id": [1, 2, 3]}, schema=schema))
    table.delete("id = 2")
    native_read = importlib.import_module("lakecat.spark_ext.native.read")
    real = native_read.spark_file_keys

    def misnamed(df: Any, paths: Any) -> dict[str, str]:
        return {path: key + ".elsewhere" for path, key in real(df, paths).items()}

    monkeypatch.setattr(native_read, "spark_file_keys", misnamed)
    with pytest.raises(Exception, match="Spark read a file that was not planned"):
        lk.read(spark, "db.k").collect()


def test_a_renamed_column_is_read_by_the_data_source(spark: Any, lake: Catalog) -> None:
    table = events(lake)
    with table.update_schema() as update:
        update.rename_column("region", "area")
    support = lk.native_read_support(spark, "db.events")
    assert not support.native and "region" in (support.reason or "")
    df = lk.read(spark, "db.events")
    assert "area" in df.columns
    assert same_rows(df, source(spark, "db.events"))
    assert sorted({r.area for r in df.collect()}, key=str) == [None, "eu", "us"]


def test_a_column_dropped_and_added_back_under_its_name_is_read_by_the_data_source(
    spark: Any, lake: Catalog
) -> None:
    table = lake.create_table("db.t", pa.schema([("id", pa.int64()), ("v", pa.int64())]))
    table.append(pa.table({"id": pa.array([1], pa.int64()), "v": pa.array([10], pa.int64())}))
    with table.update_schema() as update:
        update.delete_column("v")
    with table.update_schema() as update:
        update.add_column("v", LongType())
    assert "another column" in (lk.native_read_support(spark, "db.t").reason or "")
    assert lk.read(spark, "db.t").collect()[0].v is None  # not the old column's 10


def test_time_travel_reads_natively(spark: Any, lake: Catalog) -> None:
    table = events(lake)
    first, second = table.snapshots()
    old = lk.read(spark, "db.events", **{"snapshot-id": first.snapshot_id})
    assert [r[0] for r in rows(old)] == list(range(20))
    assert same_rows(old, source(spark, "db.events", **{"snapshot-id": first.snapshot_id}))
    as_of = {"as-of-timestamp": str(first.timestamp_ms)}
    assert lk.native_read_support(spark, "db.events", **as_of).native
    assert len(rows(lk.read(spark, "db.events", **as_of))) == 20
    appended = {"start-snapshot-id": first.snapshot_id, "end-snapshot-id": second.snapshot_id}
    assert [r[0] for r in rows(lk.read(spark, "db.events", **appended))] == list(range(20, 40))


def test_an_empty_table_reads_as_an_empty_dataframe_with_its_schema(
    spark: Any, lake: Catalog
) -> None:
    lake.create_table("db.t", pa.schema([("id", pa.int64()), ("name", pa.string())]))
    df = lk.read(spark, "db.t")
    assert df.columns == ["id", "name"] and df.count() == 0


def test_what_the_native_writer_wrote_reads_natively_and_a_uuid_table_falls_back(
    spark: Any, lake: Catalog
) -> None:
    df = spark.createDataFrame(
        [(i, ["", "a/b", None, "ü"][i % 4], dt.date(2024, 1, 1 + i)) for i in range(12)],
        "id long, s string, d date",
    )
    assert lk.write(df, "db.t", **{"partition-by": "s, d:month"}).native
    assert rows(lk.read(spark, "db.t")) == rows(df)
    lake.create_table("db.u", pa.schema([("id", pa.int64()), ("u", pa.uuid())]))
    assert "uuid" in (lk.native_read_support(spark, "db.u").reason or "")
    assert lk.read(spark, "db.u").count() == 0

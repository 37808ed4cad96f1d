"""lk.write: Spark's own Parquet writer writes the files, lakecat plans and commits; tables
that do not qualify go through the data source."""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.expressions import And, EqualTo, IsNull
from pyspark.sql import functions as F
from pyspark.sql.types import LongType

import lakecat.spark_ext as lk
from lakecat.catalog import Catalog, Table
from lakecat.metadata.errors import ConcurrentDeleteDelete, ValidationError
from lakecat.metadata.io.fileio import local_path
from lakecat.metadata.schema.conversions import from_bytes
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.table.sorting import SortField, SortOrder
from lakecat.spark_ext import attach_catalog
from lakecat.spark_ext.native.local_files import LOCAL_FILE_SYSTEM_CONF, LOCAL_FILES_CLASS
from lakecat.spark_ext.native.write import WRITE_CONFS
from lakecat.spark_ext.settings import plugin_catalogs

pytestmark = pytest.mark.spark

UTC = dt.UTC
SPARK_SCHEMA = (
    "id long, flag boolean, small int, amount double, ratio float, price decimal(9,2), "
    "big decimal(30,5), day date, ts timestamp, local timestamp_ntz, name string, raw binary, "
    "info struct<code: int, label: string, inner: struct<x: double>>"
)


def sample_rows() -> list[tuple[Any, ...]]:
    return [
        (
            1,
            True,
            7,
            1.5,
            0.25,
            Decimal("12.34"),
            Decimal("123456789012345678901.12345"),
            dt.date(2024, 2, 29),
            dt.datetime(2024, 3, 10, 10, 30, 0, 123456, tzinfo=UTC),
            dt.datetime(2024, 3, 10, 2, 30),
            "ü€😀",
            b"\x00\x01",
            (3, "a", (2.5,)),
        ),
        (2, None, None, float("nan"), None, None, None, None, None, None, "", None, None),
        (
            3,
            False,
            -5,
            -0.0,
            float("inf"),
            Decimal("-0.01"),
            Decimal("-1.00000"),
            dt.date(1000, 1, 1),
            dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
            dt.datetime(1, 1, 1),
            "x" * 40,
            b"",
            (None, None, None),
        ),
    ]


def data_files(table: Table) -> list[Any]:
    return sorted(table.refresh().scan().plan_files(), key=lambda f: f.file_path)


def parquet_files_under(table: Table) -> list[str]:
    root = local_path(table.location)
    assert root is not None
    return sorted(str(p) for p in Path(root, "data").rglob("*") if p.is_file())


def folders_under(table: Table) -> list[str]:
    root = local_path(table.location)
    assert root is not None
    return sorted(str(p) for p in Path(root, "data").rglob("*") if p.is_dir())


def rows_by_id(table: pa.Table) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda r: r["id"])


def same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


def test_a_native_write_round_trips_every_supported_type_in_lakecat_and_pyiceberg(
    spark: Any, lake: Catalog
) -> None:
    df = spark.createDataFrame(sample_rows(), SPARK_SCHEMA)
    assert lk.native_write_support(df, "db.t").native
    assert lk.write(df, "db.t").native

    table = lake.load_table("db.t")
    ours = rows_by_id(table.to_arrow())
    pyiceberg = SqlCatalog(lake.name, uri=lake.uri, warehouse=lake.warehouse)
    theirs = rows_by_id(pyiceberg.load_table("db.t").scan().to_arrow())
    assert len(ours) == len(theirs) == 3
    assert all(same(a, b) for a, b in zip(ours, theirs, strict=True))
    first = ours[0]
    assert first["local"] == dt.datetime(2024, 3, 10, 2, 30)
    assert first["ts"] == dt.datetime(2024, 3, 10, 10, 30, 0, 123456, tzinfo=UTC)
    assert first["big"] == Decimal("123456789012345678901.12345")
    assert first["info"] == {"code": 3, "label": "a", "inner": {"x": 2.5}}
    assert ours[2]["day"] == dt.date(1000, 1, 1) and ours[2]["local"] == dt.datetime(1, 1, 1)
    assert ours[1]["name"] == "" and math.isnan(ours[1]["amount"])


def test_a_native_write_with_merge_schema_writes_the_new_columns_it_added(
    spark: Any, lake: Catalog
) -> None:
    table = lake.create_table("db.t", pa.schema([("id", pa.int64()), ("s", pa.string())]))
    df = spark.createDataFrame([(1, 2.5)], "id long, score double")  # no s, a new score

    assert lk.write(df, "db.t", mergeSchema="true").native

    table.refresh()
    assert [(f.name, f.field_id) for f in table.schema().fields] == [
        ("id", 1),
        ("s", 2),
        ("score", 3),
    ]
    assert table.to_arrow().to_pylist() == [{"id": 1, "s": None, "score": 2.5}]


def test_native_files_carry_iceberg_field_ids_and_microsecond_timestamps(
    spark: Any, lake: Catalog
) -> None:
    lk.write(spark.createDataFrame(sample_rows(), SPARK_SCHEMA).coalesce(1), "db.t")
    table = lake.load_table("db.t")
    (f,) = data_files(table)
    path = local_path(f.file_path)
    assert path is not None and "/data/" in path
    parquet = pq.ParquetFile(path).schema
    arrow_schema = pq.read_schema(path)

    def field_ids(fields: Any, prefix: str = "") -> dict[str, int]:
        out: dict[str, int] = {}
        for field in fields:
            out[prefix + field.name] = int(field.metadata[b"PARQUET:field_id"])
            if pa.types.is_struct(field.type):
                out.update(field_ids(field.type, prefix + field.name + "."))
        return out

    schema: Schema = table.schema()
    expected = {schema.column_name(fid): fid for fid in schema.field_ids()}
    assert field_ids(arrow_schema) == expected
    physical = {
        parquet.column(i).path: parquet.column(i).physical_type for i in range(len(parquet))
    }
    assert physical["ts"] == physical["local"] == "INT64"  # never INT96
    assert str(arrow_schema.field("ts").type) == "timestamp[us, tz=UTC]"
    assert str(arrow_schema.field("local").type) == "timestamp[us]"
    assert pq.ParquetFile(path).metadata.row_group(0).column(0).compression == "ZSTD"


@pytest.mark.parametrize("sql_catalog", [True, False], ids=["sql-catalog", "no-sql-catalog"])
def test_native_metrics_are_those_of_lakecats_own_writer(
    spark: Any, lake: Catalog, sql_catalog: bool
) -> None:
    """Counts and bounds from the footer; the NaN counts, which Parquet's statistics lack,
    from the footer entry the catalog plugin's Parquet format writes (a session with a lakecat
    SQL catalog), else none."""
    df = spark.createDataFrame(sample_rows(), SPARK_SCHEMA).coalesce(1)
    if sql_catalog:
        attach_catalog(spark, "lake", catalog=lake)
        lk.write(df, "db.native")
    else:
        with without_sql_catalogs(spark):
            lk.write(df, "db.native")
    native = lake.load_table("db.native")
    python = lake.create_table("db.python", native.schema())
    python.append(native.to_arrow())
    (ours,) = data_files(native)
    (theirs,) = data_files(python)

    assert ours.record_count == theirs.record_count == 3
    assert ours.value_counts == theirs.value_counts
    assert ours.null_value_counts == theirs.null_value_counts
    assert ours.nan_value_counts == (theirs.nan_value_counts if sql_catalog else {})
    assert sum(theirs.nan_value_counts.values()) == 1  # amount's NaN; 0 for ratio, info.inner.x
    schema = native.schema()
    # parquet-java records NaN as the max of a float column holding NaN: no bounds for it.
    amount = schema.find_field("amount").field_id
    assert amount in theirs.lower_bounds
    assert amount not in ours.lower_bounds and amount not in ours.upper_bounds
    assert {**ours.lower_bounds, amount: theirs.lower_bounds[amount]} == theirs.lower_bounds
    assert {**ours.upper_bounds, amount: theirs.upper_bounds[amount]} == theirs.upper_bounds
    name = schema.find_field("name")
    assert from_bytes(name.field_type, ours.lower_bounds[name.field_id]) == ""
    assert from_bytes(name.field_type, ours.upper_bounds[name.field_id]) == "ü€😀"
    assert (
        ours.split_offsets
        and ours.file_size_in_bytes == Path(local_path(ours.file_path) or "").stat().st_size
    )


def partitions_and_ids(table: Table) -> dict[tuple[Any, ...], list[int]]:
    """Each partition of the table's files with the ids of its rows."""
    out: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for f in data_files(table):
        path = local_path(f.file_path)
        assert path is not None
        out[f.partition].extend(pq.read_table(path, columns=["id"]).column("id").to_pylist())
    return {k: sorted(v) for k, v in out.items()}


def assert_partitions_as_lakecats_writer(lake: Catalog, native: Table) -> None:
    twin = f"db.{native.name.split('.')[-1]}_py"
    python = lake.create_table(twin, native.schema(), partition_by=native.spec())
    python.append(native.to_arrow())
    assert partitions_and_ids(native) == partitions_and_ids(python.refresh())


AWKWARD = ["", "/", "=", "%", "%25", "a b", "a+b", "ü€😀", "~", "~x", "__HIVE_DEFAULT_PARTITION__"]
AWKWARD += [None, ".", "..", "null", "#?:*\\\"'<>|{}[]^`\t\n\x01", "🙂" * 3 + "end"]


def test_native_string_partitions_survive_awkward_values(spark: Any, lake: Catalog) -> None:
    df = spark.createDataFrame(list(enumerate(AWKWARD)), "id long, s string")
    options = {"partition-by": "s, s:truncate[2]"}
    assert lk.write(df, "db.strings", **options).native
    table = lake.load_table("db.strings")
    assert sorted(table.to_arrow().column("s").to_pylist(), key=str) == sorted(AWKWARD, key=str)
    by_partition = partitions_and_ids(table)
    assert by_partition[(None, None)] == [AWKWARD.index(None)]
    assert by_partition[("", "")] == [0]
    assert by_partition[("~x", "~x")] == [AWKWARD.index("~x")]
    assert by_partition[("ü€😀", "ü€")] == [AWKWARD.index("ü€😀")]
    assert_partitions_as_lakecats_writer(lake, table)


def test_native_temporal_partitions_are_the_iceberg_transforms_in_any_session_zone(
    spark: Any, lake: Catalog
) -> None:
    instants = [
        dt.datetime(2024, 3, 10, 9, 59, 59, 999999, tzinfo=UTC),
        dt.datetime(2024, 3, 10, 10, 0, tzinfo=UTC),
        dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        dt.datetime(1970, 1, 1, tzinfo=UTC),
        dt.datetime(1899, 12, 31, 23, 30, tzinfo=UTC),
        dt.datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC),
    ]
    rows = [
        (i, t, t, t.replace(tzinfo=None), t.replace(tzinfo=None), t.date(), t.date())
        for i, t in enumerate(instants)
    ]
    rows.append((len(rows), None, None, None, None, None, None))
    schema = "id long, a timestamp, b timestamp, c timestamp_ntz, d timestamp_ntz, e date, f date"
    previous = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        df = spark.createDataFrame(rows, schema)
        options = {"partition-by": "a:hour, b:month, c:day, d:year, e:year, f:month"}
        assert lk.write(df, "db.times", **options).native
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)
    table = lake.load_table("db.times")
    assert len(partitions_and_ids(table)) == len(rows)
    assert_partitions_as_lakecats_writer(lake, table)


def test_native_identity_and_truncate_partitions_of_numbers_dates_and_timestamps(
    spark: Any, lake: Catalog
) -> None:
    rows = [
        (0, -7, -7, True, Decimal("-0.50"), dt.date(1969, 12, 31), dt.datetime(2024, 1, 1, 1)),
        (1, 7, 2**40 + 3, False, Decimal("0.00"), dt.date(2024, 2, 29), dt.datetime(1, 1, 1)),
        (2, None, None, None, None, None, None),
        (3, -2147483645, -(2**40), True, Decimal("99999.99"), dt.date(1, 1, 1), None),
    ]
    df = spark.createDataFrame(
        [(*r, r[6].replace(tzinfo=UTC) if r[6] else None) for r in rows],
        "id long, i int, l long, b boolean, d decimal(7,2), day date, ntz timestamp_ntz, "
        "tz timestamp",
    )
    options = {"partition-by": "i:truncate[3], l:truncate[10], b, d, day, ntz, tz, id"}
    assert lk.write(df, "db.numbers", **options).native
    table = lake.load_table("db.numbers")
    by_partition = partitions_and_ids(table)
    assert (-9, -10, True, Decimal("-0.50"), -1, 1704070800000000, 1704070800000000, 0) in (
        by_partition
    )
    assert_partitions_as_lakecats_writer(lake, table)


def test_native_truncate_partitions_of_decimals_are_lakecats(spark: Any, lake: Catalog) -> None:
    """truncate[W] floors a decimal's unscaled value to a multiple of W (negative values
    down, away from zero), at every precision up to 37: the files hold the rows of the
    partitions lakecat's own writer gives them."""
    small = ["-0.55", "-0.50", "0.00", "0.09", "99999.99", "-99999.90", "1.05", "-1.05"]
    big = ["-123456789012345.6789", "0.0001", "-0.0001", "999999999999999.9999", "7.0000"]
    rows = [
        (i, Decimal(small[i % len(small)]), Decimal(big[i % len(big)]) if i % 4 else None)
        for i in range(20)
    ]
    df = spark.createDataFrame(rows, "id long, d decimal(7,2), big decimal(37,4)")
    options = {"partition-by": "d:truncate[10], big:truncate[100000]"}

    assert lk.write(df, "db.decimals", **options).native

    table = lake.load_table("db.decimals")
    by_partition = partitions_and_ids(table)
    assert len(by_partition) > 8
    assert (Decimal("-0.60"), None) in by_partition  # -55 floored to -60
    assert_partitions_as_lakecats_writer(lake, table)


def test_native_truncate_partitions_of_binaries_are_lakecats(spark: Any, lake: Catalog) -> None:
    """truncate[W] of a binary goes into its folder as hexadecimal (the empty binary as
    ``~``, null as Spark's default partition): each file holds the rows of the partition
    lakecat's own writer gives them, and pyiceberg, pruning by its own transform, finds every
    row. Identity of a binary, and truncate past W = 64, would make folder names longer than
    a local file system allows: those writes go to the data source."""
    values = [b"", b"\x00", b"\x00\x01\xff", None, b"ab", b"abc", bytes(range(256)), b"%*/="]
    rows = [(i, values[i % len(values)]) for i in range(24)]
    df = spark.createDataFrame(rows, "id long, raw binary")

    assert lk.write(df, "db.raws", **{"partition-by": "raw:truncate[2]"}).native

    table = lake.load_table("db.raws")
    by_partition = partitions_and_ids(table)
    assert {(b"ab",), (b"",), (b"\x00\x01",), (None,), (b"%*",)} <= set(by_partition)
    assert_partitions_as_lakecats_writer(lake, table)
    theirs = SqlCatalog(lake.name, uri=lake.uri, warehouse=lake.warehouse).load_table("db.raws")
    for value in values:
        expected = [i for i, v in rows if v == value]
        term = IsNull("raw") if value is None else EqualTo("raw", value)
        found = theirs.scan(row_filter=term).to_arrow().column("id").to_pylist()
        assert sorted(found) == expected, value
    short = df.where("raw IS NULL OR length(raw) < 100")  # lakecat's writer names folders too
    for spec in ("raw", "raw:truncate[65]"):
        written = lk.write(short, f"db.raws_{len(spec)}", **{"partition-by": spec})
        assert not written.native and "binary) is not computed" in (written.reason or "")
        assert lake.load_table(f"db.raws_{len(spec)}").to_arrow().num_rows == short.count()


def test_a_decimal_truncate_past_the_precision_fails_the_native_write(
    spark: Any, lake: Catalog
) -> None:
    """truncate[10] of -99999.99 in a decimal(7,2) is -100000.00, eight digits: lakecat's
    writer refuses it, and so does the native write, leaving nothing behind."""
    decimals = pa.schema([("id", pa.int64()), ("d", pa.decimal128(7, 2))])
    lake.create_table("db.t", decimals, partition_by=[("d", "truncate[10]")])
    df = spark.createDataFrame([(1, Decimal("-99999.99"))], "id long, d decimal(7,2)")
    with pytest.raises(Exception, match="truncate\\[10\\] overflows"):
        lk.write(df, "db.t")
    table = lake.load_table("db.t")
    assert table.current_snapshot() is None
    assert parquet_files_under(table) == [] and folders_under(table) == []
    with pytest.raises(ValidationError, match="overflows"):
        table.append(pa.table({"id": [1], "d": [Decimal("-99999.99")]}, schema=decimals))


def test_a_truncate_of_a_decimal_of_precision_38_is_written_by_the_data_source(
    spark: Any, lake: Catalog
) -> None:
    df = spark.createDataFrame([(1, Decimal("1.5"))], "id long, d decimal(38,1)")
    written = lk.write(df, "db.widest", **{"partition-by": "d:truncate[10]"})
    assert not written.native and "truncate[10] of decimal(38, 1)" in (written.reason or "")
    assert lake.load_table("db.widest").to_arrow().column("d").to_pylist() == [Decimal("1.5")]


def test_native_bucket_partitions_are_the_spec_hash_of_every_source_type(
    spark: Any, lake: Catalog
) -> None:
    """With a lakecat SQL catalog in the session, a bucket field is computed by its bucket
    function in the write (not by the data source): each file holds the rows of one bucket,
    the bucket lakecat's own writer puts them in, for every type a bucket takes."""
    attach_catalog(spark, "lake", catalog=lake)
    texts = [s for s in AWKWARD if s is not None]
    rows = [
        (
            i,
            i * 7919 - 2**31 if i % 5 else None,
            f"{i}-{texts[i % len(texts)]}",
            Decimal(i * 37 - 500).scaleb(-2),
            Decimal(i * 10**20 - 3).scaleb(-5),
            dt.date(1969, 12, 20) + dt.timedelta(days=i * 3),
            dt.datetime(1969, 12, 31, 23) + dt.timedelta(minutes=i * 97),
            dt.datetime(2024, 2, 29, tzinfo=UTC) + dt.timedelta(seconds=i * 7777),
            bytes(range(i % 9)),
        )
        for i in range(40)
    ]
    df = spark.createDataFrame(
        rows,
        "id long, i int, s string, d decimal(7,2), big decimal(30,5), day date, "
        "ntz timestamp_ntz, tz timestamp, raw binary",
    )
    fields = ["id:bucket[3]", "i:bucket[2]", "s:bucket[3]", "d:bucket[2]", "big:bucket[2]"]
    fields += ["day:bucket[2]", "ntz:bucket[2]", "tz:bucket[2]", "raw:bucket[2]"]
    options = {"partition-by": ", ".join(fields)}

    assert lk.native_write_support(df, "db.buckets", **options).native
    assert lk.write(df, "db.buckets", **options).native

    table = lake.load_table("db.buckets")
    by_partition = partitions_and_ids(table)
    assert len(by_partition) > 10 and sum(map(len, by_partition.values())) == len(rows)
    assert_partitions_as_lakecats_writer(lake, table)
    # pyiceberg prunes by its own bucket hash: a row in a file of the wrong bucket is lost
    theirs = SqlCatalog(lake.name, uri=lake.uri, warehouse=lake.warehouse).load_table("db.buckets")
    assert sorted(theirs.scan().to_arrow().column("id").to_pylist()) == list(range(40))
    names = ["id", "i", "s", "d", "big", "day", "ntz", "tz", "raw"]
    for row in rows[1:40:3]:
        values = dict(zip(names, row, strict=True))
        values["ntz"], values["tz"] = values["ntz"].isoformat(), values["tz"].isoformat()
        terms = [EqualTo(n, v) if v is not None else IsNull(n) for n, v in values.items()]
        found = theirs.scan(row_filter=And(*terms)).to_arrow().column("id").to_pylist()
        assert found == [row[0]], values


def test_a_truncate_that_overflows_fails_the_native_write(spark: Any, lake: Catalog) -> None:
    lake.create_table("db.t", pa.schema([("i", pa.int32())]), partition_by=[("i", "truncate[10]")])
    df = spark.createDataFrame([(-2147483648,)], "i int")
    with pytest.raises(Exception, match="overflows"):
        lk.write(df, "db.t")
    table = lake.load_table("db.t")
    assert table.current_snapshot() is None
    assert parquet_files_under(table) == [] and folders_under(table) == []


@contextmanager
def without_sql_catalogs(spark: Any) -> Iterator[None]:
    """The shared session without the lakecat SQL catalogs other tests attached to it (their
    settings restored afterwards)."""
    keys = [f"spark.sql.catalog.{name}" for name in plugin_catalogs(spark)]
    saved = {key: spark.conf.get(key) for key in keys}
    for key in keys:
        spark.conf.unset(key)
    try:
        yield
    finally:
        for key, value in saved.items():
            spark.conf.set(key, value)


def test_tables_the_native_writer_cannot_serve_fall_back_to_the_data_source(
    spark: Any, lake: Catalog
) -> None:
    lake.create_table(
        "db.bucketed", pa.schema([("id", pa.int64())]), partition_by=[("id", "bucket[4]")]
    )
    lake.create_table("db.lists", pa.schema([("id", pa.int64()), ("tags", pa.list_(pa.string()))]))
    bucketed = spark.range(10)
    lists = spark.createDataFrame([(1, ["a"]), (2, None)], "id long, tags array<string>")

    # a bucket field, without a lakecat SQL catalog whose function would compute it
    with without_sql_catalogs(spark):
        support = lk.native_write_support(bucketed, "db.bucketed")
        assert not support.native and "bucket[4]" in (support.reason or "")
        assert "no lakecat catalog" in (support.reason or "")
        assert lk.write(bucketed, "db.bucketed").reason == support.reason
    assert sorted(lake.load_table("db.bucketed").to_arrow().column("id").to_pylist()) == list(
        range(10)
    )
    # a list, without a lakecat SQL catalog whose plugin writes its element's id
    with without_sql_catalogs(spark):
        assert "no lakecat SQL catalog" in (lk.write(lists, "db.lists").reason or "")
    assert rows_by_id(lake.load_table("db.lists").to_arrow()) == [
        {"id": 1, "tags": ["a"]},
        {"id": 2, "tags": None},
    ]
    # A type that only converts lossily, and an overwrite by filter, go through the source too.
    lake.create_table("db.longs", pa.schema([("id", pa.int64())]))
    narrowing = spark.range(3).selectExpr("cast(id as double) as id")
    assert "double" in (lk.native_write_support(narrowing, "db.longs").reason or "")
    by_filter = lk.native_write_support(
        spark.range(3), "db.bucketed", mode="overwrite", **{"overwrite-filter": "id < 5"}
    )
    assert "overwrite-filter" in (by_filter.reason or "")
    # A table the write would create is judged as it would be created, and not created.
    with without_sql_catalogs(spark):
        missing = lk.native_write_support(
            spark.range(3), "db.new", **{"partition-by": "id:bucket[2]"}
        )
    assert "bucket[2]" in (missing.reason or "")
    assert lk.native_write_support(spark.range(3), "db.new", **{"partition-by": "id"}).native
    assert not lake.table_exists("db.new")


NESTED = pa.schema(
    [
        pa.field("id", pa.int64()),
        pa.field("tags", pa.list_(pa.string())),
        pa.field("counts", pa.list_(pa.field("element", pa.int64(), nullable=False))),
        pa.field("m", pa.map_(pa.string(), pa.list_(pa.int32()))),
        pa.field(
            "s",
            pa.struct(
                [
                    ("a", pa.int32()),
                    (
                        "l",
                        pa.list_(
                            pa.struct(
                                [("x", pa.float64()), ("y", pa.map_(pa.int32(), pa.string()))]
                            )
                        ),
                    ),
                ]
            ),
        ),
        pa.field("ll", pa.list_(pa.list_(pa.int64()))),
    ]
)
NESTED_SPARK = (
    "id long, tags array<string>, counts array<long>, m map<string, array<int>>, "
    "s struct<a: int, l: array<struct<x: double, y: map<int, string>>>>, ll array<array<long>>"
)
NESTED_ROWS = [
    (1, ["a", None], [1, 2], {"k": [1, None]}, (3, [(1.5, {7: "z"}), None]), [[5], None, []]),
    (2, None, None, None, None, None),
    (3, [], [], {}, (None, []), [[]]),
]


def parquet_field_ids(fields: Any, prefix: str = "") -> dict[str, int]:
    """Each field's Parquet field id by its dotted name, list elements and map keys and values
    (``element``, ``key``, ``value``) included."""
    out: dict[str, int] = {}
    for field in fields:
        name = prefix + field.name
        out[name] = int(field.metadata[b"PARQUET:field_id"])
        t = field.type
        if pa.types.is_struct(t):
            out.update(parquet_field_ids(t, name + "."))
        elif pa.types.is_map(t):
            key, value = t.key_field, t.item_field.with_name("value")
            out.update(parquet_field_ids([key, value], name + "."))
        elif pa.types.is_list(t):
            out.update(parquet_field_ids([t.value_field], name + "."))
    return out


def test_list_and_map_columns_are_written_natively_with_their_element_key_and_value_ids(
    spark: Any, lake: Catalog
) -> None:
    attach_catalog(spark, "lake", catalog=lake)  # its plugin's Parquet format writes the ids
    lake.create_table("db.nested", NESTED, partition_by=[("id", "bucket[2]")])
    df = spark.createDataFrame(NESTED_ROWS, NESTED_SPARK)
    # `counts` holds required elements: a DataFrame whose elements may be null is not written
    # natively (the data source checks every row) ...
    support = lk.native_write_support(df, "db.nested")
    assert "null elements in the required elements of 'counts'" in (support.reason or "")
    # ... one whose elements cannot be null is
    df = df.withColumn("counts", F.array_compact("counts")).coalesce(1)  # a file a partition
    assert lk.write(df, "db.nested").native

    native = lake.load_table("db.nested")
    schema = native.schema()
    expected = {schema.column_name(fid): fid for fid in schema.field_ids()}
    files = data_files(native)
    assert files
    for f in files:
        assert parquet_field_ids(pq.read_schema(local_path(f.file_path))) == expected
    rows = [  # NESTED_ROWS as Arrow gives them (maps as lists of pairs)
        {
            "id": 1,
            "tags": ["a", None],
            "counts": [1, 2],
            "m": [("k", [1, None])],
            "s": {"a": 3, "l": [{"x": 1.5, "y": [(7, "z")]}, None]},
            "ll": [[5], None, []],
        },
        {"id": 2, "tags": None, "counts": None, "m": None, "s": None, "ll": None},
        {"id": 3, "tags": [], "counts": [], "m": [], "s": {"a": None, "l": []}, "ll": [[]]},
    ]
    assert rows_by_id(native.to_arrow()) == rows
    pyiceberg = SqlCatalog(lake.name, uri=lake.uri, warehouse=lake.warehouse)
    assert rows_by_id(pyiceberg.load_table("db.nested").scan().to_arrow()) == rows
    # the metrics are those lakecat's own writer records for the same rows
    python = lake.create_table("db.nested_py", schema, partition_by=native.spec())
    python.append(native.to_arrow())
    ours = {f.partition: f for f in files}
    theirs = {f.partition: f for f in data_files(python)}
    for key, f in ours.items():
        assert f.value_counts == theirs[key].value_counts
        assert f.null_value_counts == theirs[key].null_value_counts
        assert f.nan_value_counts == theirs[key].nan_value_counts  # of s.l.element.x
        assert f.lower_bounds == theirs[key].lower_bounds
        assert f.upper_bounds == theirs[key].upper_bounds


def test_nan_counts_of_floats_in_lists_maps_and_structs_are_lakecats(
    spark: Any, lake: Catalog
) -> None:
    """The plugin's Parquet format counts NaN per Parquet column wherever the float is: in a
    list's elements, a map's keys and values, a struct in a list; nulls and values under a null
    list or struct are not NaN."""
    attach_catalog(spark, "lake", catalog=lake)
    nan = float("nan")
    rows = [
        (1, [nan, 1.0, None, nan], {1.5: nan, nan: 2.0}, [(nan,), None, (0.5,)], nan),
        (2, None, None, None, None),
        (3, [nan], {0.0: None}, [], 1.0),
    ]
    df = spark.createDataFrame(
        rows,
        "id long, xs array<double>, m map<float, double>, ps array<struct<v: double>>, f float",
    ).coalesce(1)

    assert lk.write(df, "db.nans").native

    native = lake.load_table("db.nans")
    python = lake.create_table("db.nans_py", native.schema())
    python.append(native.to_arrow())
    (ours,) = data_files(native)
    (theirs,) = data_files(python)
    assert ours.nan_value_counts == theirs.nan_value_counts
    assert sorted(ours.nan_value_counts.values()) == [1, 1, 1, 1, 3]  # m.key, m.value, v, f; xs


def test_lists_and_maps_that_do_not_convert_with_one_cast_go_to_the_data_source(
    spark: Any, lake: Catalog
) -> None:
    attach_catalog(spark, "lake", catalog=lake)
    lake.create_table(
        "db.points",
        pa.schema(
            [
                ("id", pa.int64()),
                ("l", pa.list_(pa.struct([("x", pa.int64()), ("y", pa.string())]))),
            ]
        ),
    )
    # struct fields inside a list in another order (a cast would match them by position)
    swapped = spark.createDataFrame(
        [(1, [("a", 2)])], "id long, l array<struct<y: string, x: long>>"
    )
    support = lk.native_write_support(swapped, "db.points")
    assert "the struct 'l.element' inside a list or map" in (support.reason or "")
    # a narrowing inside the list
    narrowing = spark.createDataFrame(
        [(1, [(2.5, "b")])], "id long, l array<struct<x: double, y: string>>"
    )
    assert "does not convert exactly" in (
        lk.native_write_support(narrowing, "db.points").reason or ""
    )
    # widening converts with one cast
    widening = spark.createDataFrame(
        [(3, [(4, "c")])], "id long, l array<struct<x: int, y: string>>"
    )
    assert lk.write(widening, "db.points").native
    assert lk.write(swapped, "db.points").reason == support.reason
    assert rows_by_id(lake.load_table("db.points").to_arrow()) == [
        {"id": 1, "l": [{"x": 2, "y": "a"}]},
        {"id": 3, "l": [{"x": 4, "y": "c"}]},
    ]


def test_a_native_write_sorts_each_file_by_the_table_sort_order(spark: Any, lake: Catalog) -> None:
    schema = pa.schema([("id", pa.int64()), ("region", pa.string()), ("v", pa.int64())])
    table = lake.create_table(
        "db.sorted", schema, partition_by=["region"], sort_by=[("v", "desc"), "id"]
    )
    frame = spark.createDataFrame(
        [(i, "eu" if i % 3 else "us", (i * 37) % 11 if i % 5 else None) for i in range(60)],
        "id long, region string, v long",
    ).repartition(3)
    assert lk.write(frame, "db.sorted").native
    files = data_files(table)
    assert files and all(f.sort_order_id == table.sort_order().order_id for f in files)
    for f in files:
        stored = pq.read_table(local_path(f.file_path)).to_pylist()
        # v descending, nulls last (the default for desc), then id ascending
        keys = [(r["v"] is None, -(r["v"] or 0), r["id"]) for r in stored]
        assert keys == sorted(keys)
        assert len({r["region"] for r in stored}) == 1
    assert table.refresh().scan().count() == 60

    # a sort order by a transform goes through the data source, which sorts by it too
    lake.create_table("db.bucket_sorted", schema)
    bucket_sorted = lake.load_table("db.bucket_sorted")
    v = bucket_sorted.metadata.schema().find_field("v").field_id
    bucket_sorted.replace_sort_order(SortOrder(1, (SortField(v, "truncate[10]", "asc"),)))
    support = lk.write(frame, "db.bucket_sorted")
    assert not support.native and "sort order" in (support.reason or "")
    for f in data_files(bucket_sorted):
        stored = pq.read_table(local_path(f.file_path)).column("v").to_pylist()
        keys = [(x is not None, (x or 0) // 10) for x in stored]  # nulls first
        assert keys == sorted(keys)


def test_native_append_overwrite_and_dynamic_overwrite(spark: Any, lake: Catalog) -> None:
    def frame(rows: list[tuple[int, str]]) -> Any:
        return spark.createDataFrame(rows, "id long, region string")

    options = {"partition-by": "region"}
    assert lk.write(frame([(1, "eu"), (2, "us")]), "db.t", **options).native
    assert lk.write(frame([(3, "eu")]), "db.t").native
    table = lake.load_table("db.t")
    assert sorted(table.to_arrow().column("id").to_pylist()) == [1, 2, 3]

    dynamic = {"overwrite-mode": "dynamic"}
    assert lk.write(frame([(4, "eu")]), "db.t", mode="overwrite", **dynamic).native
    assert rows_by_id(table.refresh().to_arrow()) == [
        {"id": 2, "region": "us"},
        {"id": 4, "region": "eu"},
    ]
    assert lk.write(frame([(5, "ap")]), "db.t", mode="overwrite").native
    assert table.refresh().to_arrow().to_pylist() == [{"id": 5, "region": "ap"}]
    assert [s.operation for s in table.snapshots()] == [
        "append",
        "append",
        "overwrite",
        "overwrite",
    ]


def test_a_native_append_with_an_app_id_lands_once(spark: Any, lake: Catalog) -> None:
    df = spark.range(5)
    options = {"app-id": "nightly", "app-version": 7, "snapshot-property.source": "test"}
    assert lk.write(df, "db.t", **options).native
    assert lk.write(df, "db.t", **options).native  # the same version again: skipped
    table = lake.load_table("db.t")
    assert len(table.snapshots()) == 1
    assert table.current_snapshot().summary["source"] == "test"
    assert sorted(table.to_arrow().column("id").to_pylist()) == list(range(5))
    live = sorted(local_path(f.file_path) or "" for f in data_files(table))
    assert parquet_files_under(table) == live  # the skipped write's files are gone


def test_a_failing_spark_task_leaves_no_commit_and_no_files(
    failing_frame: Any, lake: Catalog
) -> None:
    table = lake.create_table("db.t", pa.schema([("id", pa.int64()), ("part", pa.int64())]))

    df = failing_frame
    with pytest.raises(Exception, match="injected failure"):
        lk.write(df, "db.t")
    assert table.refresh().current_snapshot() is None
    assert parquet_files_under(table) == [] and folders_under(table) == []


def test_a_null_in_a_required_column_fails_the_native_write(spark: Any, lake: Catalog) -> None:
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("s", pa.struct([pa.field("x", pa.int64(), nullable=False)])),
        ]
    )
    table = lake.create_table("db.t", schema)
    ok = spark.createDataFrame([(1, (1,)), (2, None)], "id long, s struct<x: long>")
    assert lk.write(ok, "db.t").native  # nullable in Spark, no nulls: checked, written
    pyiceberg = SqlCatalog(lake.name, uri=lake.uri, warehouse=lake.warehouse)
    assert pyiceberg.load_table("db.t").scan().to_arrow().num_rows == 2
    for bad in ([(3, (1,)), (None, (2,))], [(4, (None,))]):
        with pytest.raises(Exception, match="null in the required column"):
            lk.write(spark.createDataFrame(bad, "id long, s struct<x: long>"), "db.t")
    assert len(table.refresh().snapshots()) == 1
    assert parquet_files_under(table) == [local_path(f.file_path) for f in data_files(table)]


def test_a_native_write_that_loses_a_conflict_deletes_its_files(
    spark: Any, lake: Catalog, tmp_path: Path
) -> None:
    table = lake.create_table(
        "db.t", pa.schema([("id", pa.int64()), ("p", pa.int64())]), partition_by=["p"]
    )
    table.append(pa.table({"id": pa.array([0], pa.int64()), "p": pa.array([1], pa.int64())}))
    before = parquet_files_under(table)
    uri, warehouse, marker = lake.uri, lake.warehouse, str(tmp_path / "deleted")

    @F.udf(LongType(), useArrow=False)
    def delete_meanwhile(value: int) -> int:
        # While the job writes, another writer deletes the file the overwrite replaces.
        import pathlib

        from lakecat.catalog import Catalog as WorkerCatalog

        if not pathlib.Path(marker).exists():
            pathlib.Path(marker).touch()
            with WorkerCatalog(uri, warehouse=warehouse) as other:
                other.load_table("db.t").delete("p = 1")
        return value

    df = spark.range(1, 4, numPartitions=1).select(
        delete_meanwhile("id").alias("id"), F.lit(1).cast("long").alias("p")
    )
    with pytest.raises(ConcurrentDeleteDelete):
        lk.write(df, "db.t", mode="overwrite", **{"overwrite-mode": "dynamic"})
    table.refresh()
    assert [s.operation for s in table.snapshots()] == ["append", "delete"]
    assert parquet_files_under(table) == before  # the deleted file stays until expiry
    assert all("/data/p=" in f for f in folders_under(table))  # the job folder is gone


def test_a_native_write_and_a_python_append_at_the_same_time_both_land(
    spark: Any, lake: Catalog, tmp_path: Path
) -> None:
    table = lake.create_table("db.t", pa.schema([("id", pa.int64())]))
    uri, warehouse, marker = lake.uri, lake.warehouse, str(tmp_path / "appended")

    @F.udf(LongType(), useArrow=False)
    def append_meanwhile(value: int) -> int:
        import pathlib

        import pyarrow

        from lakecat.catalog import Catalog as WorkerCatalog

        if not pathlib.Path(marker).exists():
            pathlib.Path(marker).touch()
            with WorkerCatalog(uri, warehouse=warehouse) as other:
                rows = pyarrow.array(range(1000, 1005), pyarrow.int64())
                other.load_table("db.t").append(pyarrow.table({"id": rows}))
        return value

    df = spark.range(0, 100, numPartitions=1).select(append_meanwhile("id").alias("id"))
    assert lk.write(df, "db.t").native
    table.refresh()
    assert sorted(table.to_arrow().column("id").to_pylist()) == [*range(100), *range(1000, 1005)]
    assert [s.operation for s in table.snapshots()] == ["append", "append"]


def test_a_native_write_restores_the_session_parquet_settings(spark: Any, lake: Catalog) -> None:
    spark.conf.set("spark.sql.parquet.outputTimestampType", "INT96")
    spark.conf.unset("spark.sql.parquet.writeLegacyFormat")
    try:
        assert lk.write(spark.range(3), "db.t").native
        assert spark.conf.get("spark.sql.parquet.outputTimestampType") == "INT96"
        assert spark.conf.get("spark.sql.parquet.writeLegacyFormat", None) is None
    finally:
        spark.conf.unset("spark.sql.parquet.outputTimestampType")
    assert set(WRITE_CONFS) >= {"spark.sql.parquet.outputTimestampType"}


def _written_by_local_files(spark: Any) -> int:
    """The bytes lakecat's local file system (``lakecat.spark.LocalFiles``) wrote so far."""
    jvm = spark.sparkContext._jvm
    cls = jvm.java.lang.Class.forName(LOCAL_FILES_CLASS)
    return int(jvm.org.apache.hadoop.fs.FileSystem.getStatistics("file", cls).getBytesWritten())


def test_a_native_write_into_a_local_table_sets_permissions_without_hadoops_chmod(
    spark: Any, lake: Catalog
) -> None:
    before = _written_by_local_files(spark)
    spark.conf.set("fs.permissions.umask-mode", "027")  # reaches the write's Hadoop conf
    try:
        df = spark.createDataFrame([(1, "eu"), (2, "us"), (3, "eu")], "id long, region string")
        assert lk.write(df, "db.t", **{"partition-by": "region"}).native
    finally:
        spark.conf.unset("fs.permissions.umask-mode")
    table = lake.load_table("db.t")
    assert sorted(table.to_arrow().column("id").to_pylist()) == [1, 2, 3]
    assert _written_by_local_files(spark) > before  # the data files went through LocalFiles
    files = parquet_files_under(table)
    assert files == sorted(local_path(f.file_path) for f in data_files(table))
    # the permissions Hadoop's own file system gives (0666 / 0777 less the umask), set by NIO
    assert {oct(Path(f).stat().st_mode & 0o777) for f in files} == {oct(0o640)}
    job_folders = [d for d in folders_under(table) if Path(d).parent.name == "data"]
    assert {oct(Path(d).stat().st_mode & 0o777) for d in job_folders} == {oct(0o750)}


def test_a_session_can_keep_hadoops_local_file_system_for_native_writes(
    spark: Any, lake: Catalog
) -> None:
    before = _written_by_local_files(spark)
    spark.conf.set(LOCAL_FILE_SYSTEM_CONF, "hadoop")
    try:
        assert lk.write(spark.range(3), "db.t").native
    finally:
        spark.conf.unset(LOCAL_FILE_SYSTEM_CONF)
    assert _written_by_local_files(spark) == before
    table = lake.load_table("db.t")
    assert sorted(table.to_arrow().column("id").to_pylist()) == [0, 1, 2]
    assert parquet_files_under(table) == sorted(local_path(f.file_path) for f in data_files(table))

    spark.conf.set(LOCAL_FILE_SYSTEM_CONF, "nio")
    try:
        with pytest.raises(ValidationError, match=r"spark\.lakecat\.localFileSystem is 'nio'"):
            lk.write(spark.range(5), "db.t")
    finally:
        spark.conf.unset(LOCAL_FILE_SYSTEM_CONF)
    assert len(table.refresh().snapshots()) == 1
    assert parquet_files_under(table) == sorted(local_path(f.file_path) for f in data_files(table))

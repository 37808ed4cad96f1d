"""Parquet data files: metrics, field ids, partitioning and reading by field id."""

from __future__ import annotations

import datetime as dt
import json
import math
import uuid
from collections import defaultdict
from decimal import Decimal

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from lakecat.metadata.errors import CorruptMetadata, SchemaMismatch, StorageError, ValidationError
from lakecat.metadata.io.fileio import FileNotFoundStorageError, LocalFileIO
from lakecat.metadata.io.parquet import (
    ARROW_TO_PARQUET_RATIO,
    iter_data_file_batches,
    partition_and_split,
    partition_path,
    read_data_file,
    source_column,
    write_data_file,
)
from lakecat.metadata.manifests.datafile import DataFile
from lakecat.metadata.partitioning.spec import UNPARTITIONED, PartitionField, PartitionSpec
from lakecat.metadata.partitioning.transforms import parse_transform
from lakecat.metadata.schema.arrow import conform_to_schema, schema_to_arrow
from lakecat.metadata.schema.conversions import from_bytes
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

IO = LocalFileIO()
NAN = float("nan")
U_LOW, U_HIGH = uuid.UUID(int=5), uuid.UUID(int=2**127 + 3)

# Ids in the order Iceberg's assignFreshIds gives them, so pyiceberg's new_table_metadata
# keeps them unchanged.
ALL_TYPES = Schema.of(
    NestedField(1, "b", BooleanType()),
    NestedField(2, "i", IntegerType()),
    NestedField(3, "l", LongType(), required=True),
    NestedField(4, "f", FloatType()),
    NestedField(5, "d", DoubleType()),
    NestedField(6, "dec_small", DecimalType(9, 2)),
    NestedField(7, "dec_mid", DecimalType(18, 4)),
    NestedField(8, "dec_big", DecimalType(30, 3)),
    NestedField(9, "date", DateType()),
    NestedField(10, "time", TimeType()),
    NestedField(11, "ts", TimestampType()),
    NestedField(12, "tstz", TimestamptzType()),
    NestedField(13, "s", StringType()),
    NestedField(14, "u", UUIDType()),
    NestedField(15, "fx", FixedType(3)),
    NestedField(16, "bin", BinaryType()),
    NestedField(17, "st", StructType((NestedField(19, "x", IntegerType()),))),
    NestedField(18, "li", ListType(20, DoubleType())),
)


def all_types_table() -> pa.Table:
    data = pa.table(
        {
            "b": [True, None, False, True],
            "i": [1, None, -5, 7],
            "l": [2**40, 0, -3, 9],
            "f": pa.array([NAN, 1.5, None, -0.5], pa.float32()),
            "d": [NAN, NAN, 2.0, None],
            "dec_small": pa.array(
                [Decimal("1.23"), None, Decimal("-9.99"), Decimal("0")], pa.decimal128(9, 2)
            ),
            "dec_mid": pa.array(
                [Decimal("12345678901234.5678"), None, Decimal("-1"), Decimal("0")],
                pa.decimal128(18, 4),
            ),
            "dec_big": pa.array(
                [Decimal("1.234"), None, Decimal("-99999999999999999999999999.999"), None],
                pa.decimal128(30, 3),
            ),
            "date": [dt.date(2020, 1, 1), None, dt.date(1960, 5, 5), dt.date(1970, 1, 1)],
            "time": [dt.time(1, 2, 3), None, dt.time(23, 59, 59, 999999), dt.time(0)],
            "ts": [
                dt.datetime(2020, 1, 1, 5),
                None,
                dt.datetime(1900, 1, 1),
                dt.datetime(2000, 2, 29),
            ],
            "tstz": pa.array(
                [
                    dt.datetime(2020, 1, 1, 5),
                    None,
                    dt.datetime(1900, 1, 1),
                    dt.datetime(2000, 1, 1),
                ],
                pa.timestamp("us", tz="UTC"),
            ),
            "s": ["a" * 20, None, "abc", "zzzz" * 6],
            "u": pa.array(
                [U_LOW.bytes, None, U_HIGH.bytes, uuid.UUID(int=77).bytes], pa.binary(16)
            ),
            "fx": pa.array([b"abc", None, b"\xff\x00\x01", b"abd"], pa.binary(3)),
            "bin": [b"\x00" * 30, None, b"\x01\x02", b"\xfe" * 20],
            "st": [{"x": 1}, None, {"x": 7}, {"x": None}],
            "li": [[1.0, NAN], None, [], [None]],
        }
    )
    return conform_to_schema(data, ALL_TYPES)


def write(tmp_path, data, schema, name="f.parquet", properties=None, **kwargs) -> DataFile:
    return write_data_file(
        IO,
        str(tmp_path / name),
        data,
        schema=schema,
        spec=kwargs.pop("spec", UNPARTITIONED),
        partition=kwargs.pop("partition", ()),
        properties=properties or {},
        **kwargs,
    )


def decoded(schema: Schema, bounds) -> dict[str, object]:
    return {schema.column_name(k): from_bytes(schema.find_type(k), v) for k, v in bounds.items()}


# ---- metrics ---------------------------------------------------------------------------------


def test_metrics_of_every_primitive_type_follow_the_spec(tmp_path):
    df = write(tmp_path, all_types_table(), ALL_TYPES)
    assert df.record_count == 4
    assert df.file_format == "PARQUET"
    assert df.file_size_in_bytes == (tmp_path / "f.parquet").stat().st_size
    assert df.value_counts == {i: 4 for i in range(1, 17)} | {19: 4, 20: 5}
    nulls = {i: 1 for i in range(1, 17)} | {3: 0, 4: 1, 5: 1, 8: 2, 19: 2}
    assert {k: v for k, v in df.null_value_counts.items() if k != 20} == nulls
    assert df.nan_value_counts == {4: 1, 5: 2, 20: 1}
    assert set(df.column_sizes) == set(range(1, 17)) | {19, 20}
    assert decoded(ALL_TYPES, df.lower_bounds) == {
        "b": False,
        "i": -5,
        "l": -3,
        "f": -0.5,  # NaN is never a bound
        "d": 2.0,
        "dec_small": Decimal("-9.99"),
        "dec_mid": Decimal("-1.0000"),
        "dec_big": Decimal("-99999999999999999999999999.999"),
        "date": -3528,
        "time": 0,
        "ts": -2208988800000000,
        "tstz": -2208988800000000,
        "s": "a" * 16,  # truncate(16)
        "u": U_LOW,
        "fx": b"abc",
        "bin": b"\x00" * 16,
        "st.x": 1,  # struct fields keep bounds; list elements do not
    }
    assert decoded(ALL_TYPES, df.upper_bounds) == {
        "b": True,
        "i": 7,
        "l": 2**40,
        "f": 1.5,
        "d": 2.0,
        "dec_small": Decimal("1.23"),
        "dec_mid": Decimal("12345678901234.5678"),
        "dec_big": Decimal("1.234"),
        "date": 18262,
        "time": 86399999999,
        "ts": 1577854800000000,
        "tstz": 1577854800000000,
        "s": "z" * 15 + "{",  # 24 chars cut to 16, the last one rounded up
        "u": U_HIGH,
        "fx": b"\xff\x00\x01",
        "bin": b"\xfe" * 15 + b"\xff",
        "st.x": 7,
    }


def test_metrics_match_pyiceberg_for_every_top_level_primitive_column(tmp_path):
    from pyiceberg.io.pyarrow import (
        compute_statistics_plan,
        data_file_statistics_from_parquet_metadata,
        parquet_path_to_id_mapping,
    )
    from pyiceberg.schema import Schema as PySchema

    df = write(tmp_path, all_types_table(), ALL_TYPES)
    py_schema = PySchema.model_validate_json(json.dumps(ALL_TYPES.to_json()))
    stats = data_file_statistics_from_parquet_metadata(
        pq.ParquetFile(tmp_path / "f.parquet").metadata,
        compute_statistics_plan(py_schema, {}),
        parquet_path_to_id_mapping(py_schema),
    ).to_serialized_dict()
    assert df.column_sizes == stats["column_sizes"]
    assert df.value_counts == stats["value_counts"]
    assert df.null_value_counts == stats["null_value_counts"]
    assert list(df.split_offsets) == stats["split_offsets"]
    # pyiceberg keeps no bounds for fields inside structs (Java and lakecat do: 19 = st.x)
    # and counts no NaNs (Java and lakecat do).
    assert {k: v for k, v in df.lower_bounds.items() if k != 19} == stats["lower_bounds"]
    assert {k: v for k, v in df.upper_bounds.items() if k != 19} == stats["upper_bounds"]


def test_upper_bound_of_a_truncated_string_drops_what_follows_the_incremented_char(tmp_path):
    # Java's UnicodeUtil.truncateStringMax; pyiceberg 0.12 keeps the trailing U+10FFFF.
    schema = Schema.of(NestedField(1, "s", StringType()))
    value = ("zzz" + chr(0x10FFFF)) * 10
    df = write(tmp_path, conform_to_schema(pa.table({"s": [value]}), schema), schema)
    upper = from_bytes(StringType(), df.upper_bounds[1])
    assert upper == ("zzz" + chr(0x10FFFF)) * 3 + "zz{"


def test_bounds_of_values_too_long_for_parquet_statistics_come_from_the_data(tmp_path):
    schema = Schema.of(NestedField(1, "s", StringType()), NestedField(2, "b", BinaryType()))
    data = pa.table({"s": ["b" * 10_000, "a" * 5_000, None], "b": [b"\x01" * 9_000, None, b"\x00"]})
    df = write(tmp_path, conform_to_schema(data, schema), schema)
    column = pq.ParquetFile(tmp_path / "f.parquet").metadata.row_group(0).column(0)
    assert not column.statistics.has_min_max  # the case being tested
    assert decoded(schema, df.lower_bounds) == {"s": "a" * 16, "b": b"\x00"}
    assert decoded(schema, df.upper_bounds) == {"s": "b" * 15 + "c", "b": b"\x01" * 15 + b"\x02"}
    assert df.null_value_counts == {1: 1, 2: 1}


def test_metrics_modes_from_table_properties(tmp_path):
    properties = {
        "write.metadata.metrics.default": "counts",
        "write.metadata.metrics.column.s": "truncate(4)",
        "write.metadata.metrics.column.bin": "full",
        "write.metadata.metrics.column.i": "none",
        "write.metadata.metrics.column.l": "truncate(2)",  # means full for non-strings
        "write.metadata.metrics.column.li.element": "full",  # no bounds inside lists
    }
    df = write(tmp_path, all_types_table(), ALL_TYPES, properties=properties)
    assert 2 not in df.value_counts and 2 not in df.null_value_counts
    assert 2 in df.column_sizes
    assert set(df.lower_bounds) == {3, 13, 16}
    assert set(df.upper_bounds) == {3, 13, 16}
    assert decoded(ALL_TYPES, df.lower_bounds)["s"] == "aaaa"
    assert decoded(ALL_TYPES, df.upper_bounds)["s"] == "zzz{"
    assert decoded(ALL_TYPES, df.upper_bounds)["bin"] == b"\xfe" * 20
    assert df.nan_value_counts == {4: 1, 5: 2, 20: 1}


def test_malformed_metrics_mode_is_refused(tmp_path):
    from lakecat.metadata.errors import ValidationError

    with pytest.raises(ValidationError, match="truncate"):
        write(
            tmp_path,
            all_types_table(),
            ALL_TYPES,
            properties={"write.metadata.metrics.default": "truncate(0)"},
        )


# ---- the Parquet file itself ----------------------------------------------------------------


def test_written_parquet_schema_carries_the_iceberg_field_ids(tmp_path):
    write(tmp_path, all_types_table(), ALL_TYPES)
    query = "SELECT name, field_id FROM parquet_schema(?) WHERE field_id IS NOT NULL"
    rows = duckdb.execute(query, [str(tmp_path / "f.parquet")]).fetchall()
    ids = dict(rows)
    expected = {f.name: f.field_id for f in ALL_TYPES.fields} | {"x": 19, "element": 20}
    assert ids == expected


def test_compression_row_groups_and_split_offsets_follow_table_properties(tmp_path):
    schema = Schema.of(NestedField(1, "n", LongType()))
    data = conform_to_schema(pa.table({"n": pa.array(range(10_000), pa.int64())}), schema)
    properties = {
        "write.parquet.compression-codec": "snappy",
        "write.parquet.row-group-limit": "3000",
    }
    df = write(tmp_path, data, schema, properties=properties, sort_order_id=1)
    metadata = pq.ParquetFile(tmp_path / "f.parquet").metadata
    assert metadata.num_row_groups == 4
    assert metadata.row_group(0).column(0).compression == "SNAPPY"
    assert len(df.split_offsets) == 4 and list(df.split_offsets) == sorted(df.split_offsets)
    assert df.split_offsets[0] == 4  # right after the "PAR1" magic
    assert df.sort_order_id == 1
    assert decoded(schema, df.lower_bounds) == {"n": 0}
    assert decoded(schema, df.upper_bounds) == {"n": 9_999}


def test_default_compression_is_zstd(tmp_path):
    schema = Schema.of(NestedField(1, "n", LongType()))
    write(tmp_path, conform_to_schema(pa.table({"n": [1]}), schema), schema)
    assert (
        pq.ParquetFile(tmp_path / "f.parquet").metadata.row_group(0).column(0).compression == "ZSTD"
    )


def test_write_refuses_data_that_was_not_conformed(tmp_path):
    schema = Schema.of(NestedField(1, "n", LongType()))
    with pytest.raises(SchemaMismatch, match="conform_to_schema"):
        write(tmp_path, pa.table({"n": [1]}), schema)
    assert not (tmp_path / "f.parquet").exists()


def dictionary_encoded(data: pa.Table, name: str) -> pa.Table:
    i = data.schema.get_field_index(name)
    column = pc.dictionary_encode(data.column(name))
    return data.set_column(i, data.schema.field(i).with_type(column.type), column)


def test_a_dictionary_encoded_column_writes_the_file_and_metrics_of_the_plain_one(tmp_path):
    schema = Schema.of(NestedField(1, "s", StringType()), NestedField(2, "n", LongType()))
    data = conform_to_schema(
        pa.table({"s": ["b", None, "a", "b", "c" * 5_000], "n": [1, 2, 3, 4, 5]}), schema
    )
    plain = write(tmp_path, data, schema, name="plain.parquet")
    encoded = write(tmp_path, dictionary_encoded(data, "s"), schema, name="encoded.parquet")
    assert pq.ParquetFile(tmp_path / "encoded.parquet").schema == (
        pq.ParquetFile(tmp_path / "plain.parquet").schema
    )
    # no Arrow schema is stored: every reader, pyarrow too, reads the column as a string
    assert pq.read_table(tmp_path / "encoded.parquet").equals(data)
    for field in ("record_count", "value_counts", "null_value_counts"):
        assert getattr(encoded, field) == getattr(plain, field)
    # the long value has no footer bounds: they come from the dictionary's values in use
    assert decoded(schema, encoded.lower_bounds) == {"s": "a", "n": 1}
    assert encoded.lower_bounds == plain.lower_bounds
    assert encoded.upper_bounds == plain.upper_bounds


def test_a_dictionary_of_another_value_type_is_refused(tmp_path):
    schema = Schema.of(NestedField(1, "s", StringType()))
    data = conform_to_schema(pa.table({"s": ["a"]}), schema)
    wrong = pa.table(
        {"s": pc.dictionary_encode(pa.array([b"a"]))},
        schema=pa.schema([data.schema.field(0).with_type(pa.dictionary(pa.int32(), pa.binary()))]),
    )
    with pytest.raises(SchemaMismatch, match="conform_to_schema"):
        write(tmp_path, wrong, schema)
    assert not (tmp_path / "f.parquet").exists()


def test_write_never_overwrites_an_existing_file(tmp_path):
    schema = Schema.of(NestedField(1, "n", LongType()))
    data = conform_to_schema(pa.table({"n": [1]}), schema)
    write(tmp_path, data, schema)
    before = (tmp_path / "f.parquet").read_bytes()
    with pytest.raises(StorageError):
        write(tmp_path, data, schema)
    assert (tmp_path / "f.parquet").read_bytes() == before


def test_pyiceberg_reads_what_lakecat_writes(tmp_path):
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.io.pyarrow import ArrowScan, PyArrowFileIO
    from pyiceberg.manifest import DataFile as PyDataFile
    from pyiceberg.manifest import DataFileContent, FileFormat
    from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
    from pyiceberg.schema import Schema as PySchema
    from pyiceberg.table import FileScanTask
    from pyiceberg.table.metadata import new_table_metadata
    from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
    from pyiceberg.typedef import Record

    data = all_types_table()
    df = write(tmp_path, data, ALL_TYPES)
    py_schema = PySchema.model_validate_json(json.dumps(ALL_TYPES.to_json()))
    metadata = new_table_metadata(
        py_schema, UNPARTITIONED_PARTITION_SPEC, UNSORTED_SORT_ORDER, str(tmp_path)
    )
    assert metadata.schema() == py_schema
    py_file = PyDataFile.from_args(
        content=DataFileContent.DATA,
        file_path=df.file_path,
        file_format=FileFormat.PARQUET,
        partition=Record(),
        record_count=df.record_count,
        file_size_in_bytes=df.file_size_in_bytes,
    )
    py_file.spec_id = 0
    scan = ArrowScan(metadata, PyArrowFileIO(), py_schema, AlwaysTrue())
    theirs = scan.to_table([FileScanTask(py_file)])
    assert_same_rows(theirs.to_pylist(), data.to_pylist())


def assert_same_rows(actual, expected):
    # NaN != NaN, so compare a NaN-free rendering.
    def clean(value):
        if isinstance(value, float) and math.isnan(value):
            return "NaN"
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    assert clean(actual) == clean(expected)


# ---- reading by field id -------------------------------------------------------------------

V1 = Schema.of(
    NestedField(1, "a", IntegerType(), required=True),
    NestedField(2, "b", StringType()),
    NestedField(3, "c", DoubleType()),
    NestedField(
        4, "s", StructType((NestedField(5, "x", IntegerType()), NestedField(6, "y", StringType())))
    ),
    NestedField(7, "f", FloatType()),
    NestedField(8, "dec", DecimalType(5, 2)),
    NestedField(9, "m", MapType(10, StringType(), 11, IntegerType())),
    NestedField(12, "tags", ListType(13, IntegerType())),
)

V1_ROWS = [
    {
        "a": 1,
        "b": "one",
        "c": 1.5,
        "s": {"x": 10, "y": "p"},
        "f": 0.5,
        "dec": Decimal("1.25"),
        "m": [("k", 1)],
        "tags": [1, 2],
    },
    {"a": 2, "b": None, "c": None, "s": None, "f": None, "dec": None, "m": None, "tags": None},
    {
        "a": 3,
        "b": "three",
        "c": -2.0,
        "s": {"x": None, "y": "r"},
        "f": 2.0,
        "dec": Decimal("-3.00"),
        "m": [],
        "tags": [],
    },
]

# Renamed b, dropped c, added optional and defaulted columns, promoted a/f/dec/map value/list
# element, reordered, and inside the struct: dropped x, renamed y, added z.
V2 = Schema.of(
    NestedField(
        4, "s", StructType((NestedField(6, "why", StringType()), NestedField(14, "z", LongType())))
    ),
    NestedField(2, "b_renamed", StringType()),
    NestedField(1, "a", LongType(), required=True),
    NestedField(15, "added", StringType()),
    NestedField(16, "with_default", DateType(), required=True, initial_default="2024-02-29"),
    NestedField(7, "f", DoubleType()),
    NestedField(8, "dec", DecimalType(10, 2)),
    NestedField(9, "m", MapType(10, StringType(), 11, LongType())),
    NestedField(12, "tags", ListType(13, LongType())),
)


@pytest.fixture
def v1_file(tmp_path) -> DataFile:
    return write(
        tmp_path,
        conform_to_schema(pa.Table.from_pylist(V1_ROWS, schema=schema_to_arrow(V1)), V1),
        V1,
    )


def test_reading_with_an_evolved_schema_resolves_columns_by_id(v1_file):
    out = read_data_file(IO, v1_file, projected=V2)
    assert out.schema.equals(schema_to_arrow(V2), check_metadata=True)
    default = dt.date(2024, 2, 29)
    assert out.column("with_default").to_pylist() == [default] * 3
    assert out.drop_columns(["with_default"]).to_pylist() == [
        {"s": {"why": "p", "z": None}, "b_renamed": "one", "a": 1, "added": None, "f": 0.5,
         "dec": Decimal("1.25"), "m": [("k", 1)], "tags": [1, 2]},
        {"s": None, "b_renamed": None, "a": 2, "added": None, "f": None,
         "dec": None, "m": None, "tags": None},
        {"s": {"why": "r", "z": None}, "b_renamed": "three", "a": 3, "added": None, "f": 2.0,
         "dec": Decimal("-3.00"), "m": [], "tags": []},
    ]  # fmt: skip


def test_reading_a_required_column_the_file_lacks_without_default_is_refused(v1_file):
    schema = Schema.of(NestedField(99, "new", LongType(), required=True))
    with pytest.raises(SchemaMismatch, match=r"no column 'new' \(id 99\)"):
        read_data_file(IO, v1_file, projected=schema)


def test_reading_only_some_columns_returns_just_those(v1_file):
    projected = Schema.of(V2.find_field("b_renamed"))
    assert read_data_file(IO, v1_file, projected=projected).to_pylist() == [
        {"b_renamed": "one"},
        {"b_renamed": None},
        {"b_renamed": "three"},
    ]


def test_reading_no_column_still_counts_the_rows_filtered_or_not(v1_file):
    none = Schema((), V1.schema_id)
    batches = list(iter_data_file_batches(IO, v1_file, projected=none, batch_size=2))
    assert [(b.num_columns, b.num_rows) for b in batches] == [(0, 2), (0, 1)]
    filtered = read_data_file(
        IO, v1_file, projected=none, row_filter=pc.field("a") > 1, filter_schema=V1
    )
    assert (filtered.num_columns, filtered.num_rows) == (0, 2)


def test_row_filter_is_pushed_down_when_names_and_types_match(v1_file):
    out = read_data_file(
        IO, v1_file, projected=V1.select(["a", "b"]), row_filter=pc.field("c") > 0, filter_schema=V1
    )
    assert out.to_pylist() == [{"a": 1, "b": "one"}]


def test_row_filter_on_a_renamed_and_promoted_column_uses_the_table_names(v1_file):
    projected = Schema.of(V2.find_field("a"))
    out = read_data_file(
        IO,
        v1_file,
        projected=projected,
        row_filter=pc.field("b_renamed") == "three",
        filter_schema=V2,
    )
    assert out.to_pylist() == [{"a": 3}]
    out = read_data_file(IO, v1_file, projected=projected, row_filter=pc.field("a") >= 2)
    assert out.to_pylist() == [{"a": 2}, {"a": 3}]


def test_row_filter_on_a_column_the_file_lacks_sees_nulls(v1_file):
    out = read_data_file(IO, v1_file, projected=V2, row_filter=pc.field("added").is_null())
    assert out.num_rows == 3


def test_a_row_filter_on_an_unknown_column_is_refused(v1_file):
    from lakecat.metadata.errors import ValidationError

    with pytest.raises(ValidationError, match="row filter"):
        read_data_file(IO, v1_file, projected=V1, row_filter=pc.field("nope") > 1)


def test_iterating_batches_honours_the_batch_size(v1_file):
    batches = list(iter_data_file_batches(IO, v1_file, projected=V2, batch_size=1))
    assert [b.num_rows for b in batches] == [1, 1, 1]
    assert all(b.schema.equals(schema_to_arrow(V2), check_metadata=True) for b in batches)


def test_files_without_field_ids_are_resolved_by_name(tmp_path):
    path = tmp_path / "plain.parquet"
    pq.write_table(pa.table({"b": ["x"], "a": pa.array([7], pa.int32()), "junk": [0]}), path)
    plain = DataFile(str(path), "PARQUET", (), 1, path.stat().st_size)
    out = read_data_file(IO, plain, projected=V1.select(["a", "b", "c"]))
    assert out.to_pylist() == [{"a": 7, "b": "x", "c": None}]


def test_identity_partition_columns_missing_from_a_file_come_from_its_partition(tmp_path):
    schema = Schema.of(NestedField(1, "id", LongType()), NestedField(2, "day", DateType()))
    spec = PartitionSpec(3, (PartitionField(2, 1000, "identity", "day"),))
    file_schema = Schema.of(schema.fields[0])
    data = conform_to_schema(pa.table({"id": [1, 2]}), file_schema)
    df = write(tmp_path, data, file_schema, spec=spec, partition=(19_000,))
    out = read_data_file(IO, df, projected=schema, spec=spec)
    assert out.column("day").to_pylist() == [dt.date(2022, 1, 8)] * 2


def test_a_missing_file_raises_file_not_found(tmp_path):
    missing = DataFile(str(tmp_path / "nope.parquet"), "PARQUET", (), 1, 10)
    with pytest.raises(FileNotFoundStorageError):
        read_data_file(IO, missing, projected=V1)


@pytest.mark.parametrize("content", [b"", b"not parquet at all", b"PAR1" + b"\x00" * 64 + b"PAR1"])
def test_an_undecodable_file_raises_corrupt_metadata_naming_it(tmp_path, content):
    path = tmp_path / "bad.parquet"
    path.write_bytes(content)
    bad = DataFile(str(path), "PARQUET", (), 1, len(content))
    with pytest.raises(CorruptMetadata, match=r"bad\.parquet"):
        read_data_file(IO, bad, projected=V1)


def test_a_file_whose_column_type_does_not_fit_the_schema_is_corrupt(v1_file):
    projected = Schema.of(NestedField(2, "b", LongType()))
    with pytest.raises(CorruptMetadata, match=r"'b' has type string"):
        read_data_file(IO, v1_file, projected=projected)


# ---- partitioning ----------------------------------------------------------------------------

EVENTS = Schema.of(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "ts", TimestamptzType()),
    NestedField(3, "cat", StringType()),
)
SPEC = PartitionSpec(
    1,
    (
        PartitionField(3, 1000, "identity", "cat"),
        PartitionField(2, 1001, "day", "ts_day"),
        PartitionField(1, 1002, "bucket[8]", "id_bucket"),
    ),
)


def events(n: int) -> pa.Table:
    base = 1_700_000_000_000_000
    data = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "ts": pa.array(
                [None if i % 17 == 0 else base + i * 7_919_000_000 for i in range(n)],
                pa.timestamp("us", tz="UTC"),
            ),
            "cat": [["a", "b/c", None][i % 3] for i in range(n)],
        }
    )
    return conform_to_schema(data, EVENTS)


def test_partitioning_groups_rows_like_the_row_wise_transforms():
    data = events(2_000)
    groups = partition_and_split(data, schema=EVENTS, spec=SPEC, target_file_size_bytes=1 << 30)
    got = {partition: table.column("id").to_pylist() for partition, table in groups}
    assert len(got) == len(groups)  # one chunk per partition at this target size

    expected: dict[tuple, list[int]] = defaultdict(list)
    transforms = [parse_transform(f.transform) for f in SPEC.fields]
    rows = zip(
        data.column("id").to_pylist(),
        data.column("ts").cast(pa.int64()).to_pylist(),
        data.column("cat").to_pylist(),
        strict=True,
    )
    for row_id, ts, cat in rows:
        key = (
            transforms[0].apply(StringType(), cat),
            transforms[1].apply(TimestamptzType(), ts),
            transforms[2].apply(LongType(), row_id),
        )
        expected[key].append(row_id)
    assert got == dict(expected)


def test_partitioning_splits_a_large_partition_into_chunks_near_the_target_size():
    data = events(60_000)
    spec = PartitionSpec(1, (PartitionField(3, 1000, "identity", "cat"),))
    one_third = data.nbytes / 3 / ARROW_TO_PARQUET_RATIO
    target = int(one_third / 4)  # about 4 chunks per partition
    groups = partition_and_split(data, schema=EVENTS, spec=spec, target_file_size_bytes=target)
    by_partition: dict[tuple, list[pa.Table]] = defaultdict(list)
    for partition, table in groups:
        by_partition[partition].append(table)
    assert set(by_partition) == {("a",), ("b/c",), (None,)}
    for chunks in by_partition.values():
        assert 4 <= len(chunks) <= 5
        for chunk in chunks:
            assert chunk.nbytes / ARROW_TO_PARQUET_RATIO <= target * 1.05
    assert sum(t.num_rows for _, t in groups) == 60_000


def test_an_unpartitioned_spec_gives_one_group_with_an_empty_tuple():
    data = events(10)
    assert [
        (p, t.num_rows)
        for p, t in partition_and_split(
            data, schema=EVENTS, spec=UNPARTITIONED, target_file_size_bytes=1 << 20
        )
    ] == [((), 10)]


HOSTILE = Schema.of(
    NestedField(1, "a.b", StringType()),
    NestedField(
        2, "s", StructType((NestedField(3, "x.y", LongType()), NestedField(4, "n", LongType())))
    ),
    NestedField(5, "s.x", StringType()),
    NestedField(6, "l", ListType(7, StructType((NestedField(8, "v", LongType()),)))),
)


def hostile_rows() -> pa.Table:
    return conform_to_schema(
        pa.table(
            {
                "a.b": ["p", "q", "p", None],
                "s": [{"x.y": 1, "n": 10}, None, {"x.y": 3, "n": 30}, {"x.y": 1, "n": 40}],
                "s.x": ["u", "v", "w", "x"],
                "l": [[{"v": 1}], [], None, [{"v": 2}]],
            }
        ),
        HOSTILE,
    )


def test_source_columns_are_found_by_id_through_names_with_dots():
    data = hostile_rows()
    assert source_column(data, HOSTILE, 1).to_pylist() == ["p", "q", "p", None]
    assert source_column(data, HOSTILE, 3).to_pylist() == [1, None, 3, 1]  # null parent
    assert source_column(data, HOSTILE, 5).to_pylist() == ["u", "v", "w", "x"]
    with pytest.raises(ValidationError, match="inside a list or map"):
        source_column(data, HOSTILE, 8)
    with pytest.raises(SchemaMismatch, match="no single column"):
        source_column(data.drop_columns(["a.b"]), HOSTILE, 1)


def test_partitioning_by_dotted_names_groups_by_the_named_fields():
    spec = PartitionSpec(
        0,
        (
            PartitionField(1, 1000, "identity", "a.b"),
            PartitionField(3, 1001, "identity", "s.x.y"),
            PartitionField(5, 1002, "identity", "s.x"),
        ),
    )
    groups = partition_and_split(
        hostile_rows(), schema=HOSTILE, spec=spec, target_file_size_bytes=1 << 30
    )
    got = [(p, t.column("s.x").to_pylist()) for p, t in groups]
    assert got == [
        (("p", 1, "u"), ["u"]),
        (("q", None, "v"), ["v"]),
        (("p", 3, "w"), ["w"]),
        ((None, 1, "x"), ["x"]),
    ]
    assert partition_path(spec, HOSTILE, ("p", 1, "u")) == "a.b=p/s.x.y=1/s.x=u"


def test_partition_path_escapes_like_java():
    path = partition_path(SPEC, EVENTS, ("a b/c~*é", 19_000, 3))
    assert path == "cat=a+b%2Fc%7E*%C3%A9/ts_day=2022-01-08/id_bucket=3"
    assert partition_path(SPEC, EVENTS, (None, None, None)) == "cat=null/ts_day=null/id_bucket=null"
    assert partition_path(UNPARTITIONED, EVENTS, ()) == ""


def test_files_share_a_layout_only_when_their_footers_make_the_same_arrow_schema(tmp_path):
    """The scan engine finds a file's column layout by its footer (Parquet schema, key-value
    metadata) without converting it to an Arrow schema: files that pyarrow reads as different
    Arrow schemas (string / large_string behind one Parquet schema; other field ids) get their
    own layouts and read right, files read as the same Arrow schema share one."""
    from lakecat.metadata.io.parquet import DataFileReads

    def write(name: str, arrow_type: pa.DataType, *, field_id: int = 1, store: bool = True):
        field = pa.field("s", arrow_type, metadata={b"PARQUET:field_id": str(field_id).encode()})
        table = pa.table({"s": pa.array(["a", None, name], arrow_type)}, pa.schema([field]))
        path = str(tmp_path / f"{name}.parquet")
        pq.write_table(table, path, store_schema=store)
        return DataFile(path, "PARQUET", (), 3, len(open(path, "rb").read()))

    schema = Schema((NestedField(1, "s", StringType(), required=False),), 0)
    reads = DataFileReads(projected=schema)
    files = {
        "small": write("small", pa.string()),
        "small_again": write("small_again", pa.string()),
        "large": write("large", pa.large_string()),
        "no_arrow_schema": write("no_arrow_schema", pa.string(), store=False),
        "other_id": write("other_id", pa.string(), field_id=2),
    }
    layouts = {}
    for name, f in files.items():
        with reads.open(IO, f, None, whole=True) as opened:
            layouts[name] = opened.layout
            got = opened.resolve(opened.read_raw().combine_chunks().to_batches()[0])
        expected = [None] * 3 if name == "other_id" else ["a", None, name]
        assert got.column(0).to_pylist() == expected
        assert got.schema == schema_to_arrow(schema)
    assert layouts["small"] is layouts["small_again"]
    # found by another footer, and the same Arrow schema: the same layout
    assert layouts["no_arrow_schema"] is layouts["small"]
    distinct = {id(layouts[n]) for n in ("small", "large", "other_id")}
    assert len(distinct) == 3
    assert layouts["large"].file_schema.field("s").type == pa.large_string()


def test_local_whole_file_reads_return_every_byte(tmp_path, monkeypatch):
    """LocalFileIO.read (the scan engine's one read of a small data file) returns the whole
    file: empty, small, and when the OS hands it over in pieces."""
    import os

    from lakecat.metadata.io import fileio

    sizes = {"empty": 0, "small": 1_000, "larger": 300_000}
    for name, size in sizes.items():
        (tmp_path / name).write_bytes(os.urandom(size))
    for name in sizes:
        assert IO.read(f"file://{tmp_path / name}") == (tmp_path / name).read_bytes()
    real_read = os.read
    monkeypatch.setattr(fileio.os, "read", lambda fd, n: real_read(fd, min(n, 4096)))
    assert IO.read(str(tmp_path / "larger")) == (tmp_path / "larger").read_bytes()
    with pytest.raises(FileNotFoundStorageError):
        IO.read(str(tmp_path / "missing"))

"""Iceberg <-> Arrow schema conversion and conform_to_schema."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from decimal import Decimal

import pyarrow as pa
import pytest

from lakecat.metadata.errors import NullInRequiredColumn, SchemaMismatch
from lakecat.metadata.schema.arrow import (
    FIELD_ID_KEY,
    arrow_to_schema,
    conform_batches,
    conform_to_schema,
    schema_to_arrow,
)
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


def fid(f: pa.Field) -> int:
    return int(f.metadata[FIELD_ID_KEY])


NESTED = Schema.of(
    NestedField(1, "id", LongType(), required=True),
    NestedField(
        2,
        "point",
        StructType((NestedField(5, "x", DoubleType(), True), NestedField(6, "y", DoubleType()))),
    ),
    NestedField(3, "tags", ListType(7, StringType(), element_required=True)),
    NestedField(4, "attrs", MapType(8, StringType(), 9, IntegerType(), value_required=False)),
)


# ---- schema_to_arrow -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("iceberg", "arrow"),
    [
        (BooleanType(), pa.bool_()),
        (IntegerType(), pa.int32()),
        (LongType(), pa.int64()),
        (FloatType(), pa.float32()),
        (DoubleType(), pa.float64()),
        (DecimalType(9, 2), pa.decimal128(9, 2)),
        (DateType(), pa.date32()),
        (TimeType(), pa.time64("us")),
        (TimestampType(), pa.timestamp("us")),
        (TimestamptzType(), pa.timestamp("us", tz="UTC")),
        (StringType(), pa.string()),
        (BinaryType(), pa.binary()),
        (UUIDType(), pa.uuid()),
        (FixedType(7), pa.binary(7)),
    ],
)
def test_primitive_types_map_to_documented_arrow_types(iceberg, arrow):
    schema = Schema.of(NestedField(1, "c", iceberg, required=True))
    field = schema_to_arrow(schema).field("c")
    assert field.type == arrow
    assert not field.nullable
    assert fid(field) == 1


def test_nested_fields_carry_ids_and_nullability_at_every_level():
    arrow = schema_to_arrow(NESTED)
    assert [fid(f) for f in arrow] == [1, 2, 3, 4]
    assert [f.nullable for f in arrow] == [False, True, True, True]
    point = arrow.field("point").type
    assert [fid(point.field(i)) for i in range(2)] == [5, 6]
    assert not point.field(0).nullable and point.field(1).nullable
    element = arrow.field("tags").type.value_field
    assert fid(element) == 7 and not element.nullable
    attrs = arrow.field("attrs").type
    assert (fid(attrs.key_field), fid(attrs.item_field)) == (8, 9)
    assert attrs.item_field.nullable


def test_arrow_schema_round_trips_with_ids():
    assert arrow_to_schema(schema_to_arrow(NESTED), fresh_ids=False) == NESTED


def test_field_docs_survive_the_round_trip():
    schema = Schema.of(NestedField(1, "a", IntegerType(), doc="the a"))
    assert arrow_to_schema(schema_to_arrow(schema), fresh_ids=False) == schema


# ---- arrow_to_schema -------------------------------------------------------------------------


def test_fresh_ids_number_struct_fields_before_their_children_like_pyiceberg():
    from pyiceberg.schema import Schema as PySchema
    from pyiceberg.schema import assign_fresh_schema_ids

    arrow = pa.schema(
        [
            pa.field("a", pa.struct([("x", pa.int32()), ("y", pa.list_(pa.int64()))])),
            pa.field("b", pa.map_(pa.string(), pa.struct([("k", pa.bool_())]))),
            pa.field("c", pa.string(), nullable=False),
        ]
    )
    ours = arrow_to_schema(arrow)
    # The same structure numbered by pyiceberg's (and Java's) assignFreshIds.
    theirs = assign_fresh_schema_ids(PySchema.model_validate_json(json.dumps(ours.to_json())))
    assert json.loads(theirs.model_dump_json())["fields"] == ours.to_json()["fields"]
    assert [f.field_id for f in ours.fields] == [1, 2, 3]
    assert ours.find_field("a.x").field_id == 4
    assert ours.find_field("c").required


def test_arrow_to_schema_reads_ids_from_metadata():
    arrow = pa.schema([pa.field("a", pa.int32(), metadata={FIELD_ID_KEY: b"42"})])
    assert arrow_to_schema(arrow, fresh_ids=False).find_field("a").field_id == 42


def test_arrow_to_schema_without_ids_in_metadata_names_the_field():
    arrow = pa.schema([pa.field("a", pa.list_(pa.int32()), metadata={FIELD_ID_KEY: b"1"})])
    with pytest.raises(SchemaMismatch, match=r"a\.element"):
        arrow_to_schema(arrow, fresh_ids=False)


@pytest.mark.parametrize(
    ("arrow", "iceberg"),
    [
        (pa.large_string(), StringType()),
        (pa.string_view(), StringType()),
        (pa.large_binary(), BinaryType()),
        (pa.dictionary(pa.int8(), pa.string()), StringType()),
        (pa.int8(), IntegerType()),
        (pa.uint8(), IntegerType()),
        (pa.uint16(), IntegerType()),
        (pa.uint32(), LongType()),
        (pa.float16(), FloatType()),
        (pa.date64(), DateType()),
        (pa.time32("ms"), TimeType()),
        (pa.timestamp("s"), TimestampType()),
        (pa.timestamp("ms"), TimestampType()),
        (pa.timestamp("ns"), TimestampType()),
        (pa.timestamp("ns", tz="Europe/Paris"), TimestamptzType()),
        (pa.decimal256(38, 10), DecimalType(38, 10)),
        (pa.binary(16), FixedType(16)),
        (pa.uuid(), UUIDType()),
    ],
)
def test_arrow_to_schema_accepts_wider_arrow_forms(arrow, iceberg):
    schema = arrow_to_schema(pa.schema([pa.field("c", arrow)]))
    assert schema.find_type("c") == iceberg


@pytest.mark.parametrize(
    ("arrow", "message"),
    [
        (pa.uint64(), "uint64"),
        (pa.duration("us"), "duration"),
        (pa.null(), "null"),
        (pa.decimal256(40, 2), "38 digits"),
    ],
)
def test_arrow_to_schema_refuses_types_iceberg_cannot_store(arrow, message):
    with pytest.raises(SchemaMismatch, match=message):
        arrow_to_schema(pa.schema([pa.field("c", arrow)]))


# ---- conform_to_schema: fitting data --------------------------------------------------------

FLAT = Schema.of(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "score", DoubleType()),
    NestedField(3, "name", StringType()),
    NestedField(4, "at", TimestampType()),
    NestedField(5, "small", IntegerType()),
)


def test_conform_reorders_casts_losslessly_and_fills_missing_optional_columns():
    data = pa.table(
        {
            "name": pa.array(["a", "b"], pa.large_string()),
            "at": pa.array([1, 2], pa.timestamp("ms")),
            "score": pa.array([1.5, None], pa.float32()),
            "id": pa.array([1, 2], pa.int32()),
        }
    )
    out = conform_to_schema(data, FLAT)
    assert out.schema.equals(schema_to_arrow(FLAT), check_metadata=True)
    assert out.to_pylist() == [
        {
            "id": 1,
            "score": 1.5,
            "name": "a",
            "at": dt.datetime(1970, 1, 1, 0, 0, 0, 1000),
            "small": None,
        },
        {
            "id": 2,
            "score": None,
            "name": "b",
            "at": dt.datetime(1970, 1, 1, 0, 0, 0, 2000),
            "small": None,
        },
    ]


def test_conform_accepts_narrowing_when_every_value_fits():
    data = pa.table({"id": pa.array([1], pa.int64()), "small": pa.array([2**31 - 1], pa.int64())})
    assert conform_to_schema(data, FLAT).column("small").to_pylist() == [2**31 - 1]


def test_conform_accepts_lossless_nanosecond_timestamps():
    data = pa.table({"id": [1], "at": pa.array([5_000], pa.timestamp("ns"))})
    assert conform_to_schema(data, FLAT).column("at").cast(pa.int64()).to_pylist() == [5]


def test_conform_decodes_dictionaries_and_accepts_all_null_columns():
    data = pa.table(
        {
            "id": [1, 2],
            "name": pa.array(["x", "x"]).dictionary_encode(),
            "score": pa.nulls(2),
        }
    )
    out = conform_to_schema(data, FLAT)
    assert out.column("name").to_pylist() == ["x", "x"]
    assert out.column("score").type == pa.float64()


def test_conform_turns_sixteen_byte_fixed_binary_into_uuid():
    schema = Schema.of(NestedField(1, "u", UUIDType()))
    value = uuid.uuid4()
    out = conform_to_schema(pa.table({"u": pa.array([value.bytes], pa.binary(16))}), schema)
    assert out.column("u").to_pylist() == [value]


def test_conform_converts_zoned_timestamps_to_utc_for_timestamptz():
    schema = Schema.of(NestedField(1, "t", TimestamptzType()))
    data = pa.table({"t": pa.array([0], pa.timestamp("s", tz="Asia/Tokyo"))})
    out = conform_to_schema(data, schema)
    assert out.schema.field("t").type == pa.timestamp("us", tz="UTC")
    assert out.column("t").cast(pa.int64()).to_pylist() == [0]


def test_conform_rebuilds_nested_data_with_ids_from_sliced_input():
    data = pa.table(
        {
            "attrs": pa.array(
                [[("k", 1)], None, [("j", None)]], pa.map_(pa.large_string(), pa.int64())
            ),
            "id": pa.array([0, 1, 2], pa.int32()),
            "point": pa.array([{"x": 1.0, "y": None}, None, {"x": 2.0, "y": 3.0}]),
            "tags": pa.array([["a"], None, []], pa.large_list(pa.large_string())),
        }
    ).slice(1)
    out = conform_to_schema(data, NESTED)
    out.validate(full=True)
    assert out.schema.equals(schema_to_arrow(NESTED), check_metadata=True)
    assert out.to_pylist() == [
        {"id": 1, "point": None, "tags": None, "attrs": None},
        {"id": 2, "point": {"x": 2.0, "y": 3.0}, "tags": [], "attrs": [("j", None)]},
    ]


def test_conform_batches_conforms_each_batch_of_a_stream():
    batch = pa.record_batch({"id": pa.array([1], pa.int32())})
    reader = pa.RecordBatchReader.from_batches(batch.schema, [batch, batch])
    out = list(conform_batches(reader, FLAT))
    assert len(out) == 2
    assert all(b.schema.equals(schema_to_arrow(FLAT), check_metadata=True) for b in out)


# ---- conform_to_schema: errors ----------------------------------------------------------------


def test_conform_refuses_a_missing_required_column():
    with pytest.raises(SchemaMismatch, match=r"required column 'id'"):
        conform_to_schema(pa.table({"score": [1.0]}), FLAT)


def test_conform_names_every_extra_column():
    data = pa.table({"id": [1], "extra": [1], "other": ["x"]})
    with pytest.raises(SchemaMismatch, match=r"'extra', 'other'"):
        conform_to_schema(data, FLAT)


def test_conform_names_an_extra_nested_field():
    data = pa.table({"id": [1], "point": [{"x": 1.0, "z": 2.0}]})
    with pytest.raises(SchemaMismatch, match=r"'point\.z'"):
        conform_to_schema(data, NESTED)


@pytest.mark.parametrize(
    ("column", "values", "arrow", "message"),
    [
        ("small", ["1"], pa.string(), r"'small' has Arrow type string.*int"),
        ("small", [1.0], pa.float64(), r"'small' has Arrow type double.*int"),
        ("small", [2**40], pa.int64(), r"'small': cannot convert int64 to int"),
        ("score", [True], pa.bool_(), r"'score' has Arrow type bool.*double"),
        ("at", [1_001], pa.timestamp("ns"), r"'at': cannot convert timestamp\[ns\]"),
        ("name", [b"x"], pa.binary(), r"'name' has Arrow type binary.*string"),
    ],
)
def test_conform_refuses_unsafe_casts_naming_column_and_types(column, values, arrow, message):
    data = pa.table({"id": [1], column: pa.array(values, arrow)})
    with pytest.raises(SchemaMismatch, match=message):
        conform_to_schema(data, FLAT)


def test_conform_refuses_double_into_float_because_it_rounds():
    schema = Schema.of(NestedField(1, "f", FloatType()))
    with pytest.raises(SchemaMismatch, match=r"double.*float"):
        conform_to_schema(pa.table({"f": pa.array([0.1], pa.float64())}), schema)


def test_conform_refuses_zoned_timestamps_for_timestamp_without_zone():
    data = pa.table({"id": [1], "at": pa.array([1], pa.timestamp("us", tz="UTC"))})
    with pytest.raises(SchemaMismatch, match=r"'at' is a timestamp without time zone"):
        conform_to_schema(data, FLAT)


def test_conform_refuses_naive_timestamps_for_timestamptz():
    schema = Schema.of(NestedField(1, "t", TimestamptzType()))
    with pytest.raises(SchemaMismatch, match=r"'t' is timestamptz but the data has naive"):
        conform_to_schema(pa.table({"t": pa.array([1], pa.timestamp("us"))}), schema)


def test_conform_counts_nulls_in_a_required_column_over_all_chunks():
    column = pa.chunked_array([pa.array([1, None]), pa.array([None, None, 5])])
    with pytest.raises(NullInRequiredColumn, match=r"'id' \(3 nulls\)"):
        conform_to_schema(pa.table({"id": column}), FLAT)


def test_conform_counts_nulls_in_required_struct_fields_only_where_the_struct_is_set():
    data = pa.table(
        {
            "id": [1, 2, 3],
            "point": pa.array(
                [{"x": None, "y": 1.0}, None, {"x": 2.0, "y": None}],
                pa.struct([("x", pa.float64()), ("y", pa.float64())]),
            ),
        }
    )
    with pytest.raises(NullInRequiredColumn, match=r"'point\.x' \(1 null\)"):
        conform_to_schema(data, NESTED)


def test_conform_counts_nulls_in_required_list_elements():
    data = pa.table({"id": [1, 2], "tags": pa.array([["a", None], [None]])})
    with pytest.raises(NullInRequiredColumn, match=r"'tags\.element' \(2 nulls\)"):
        conform_to_schema(data, NESTED)


def test_conform_counts_nulls_in_required_map_values():
    schema = Schema.of(NestedField(1, "m", MapType(2, StringType(), 3, LongType(), True)))
    data = pa.table({"m": pa.array([[("a", None)], None], pa.map_(pa.string(), pa.int64()))})
    with pytest.raises(NullInRequiredColumn, match=r"'m\.value' \(1 null\)"):
        conform_to_schema(data, schema)


def test_conform_refuses_a_scalar_for_a_struct_column():
    data = pa.table({"id": [1], "point": [1.0]})
    with pytest.raises(SchemaMismatch, match=r"'point' has Arrow type double.*struct"):
        conform_to_schema(data, NESTED)


def test_conform_keeps_decimal_values_and_checks_precision():
    schema = Schema.of(NestedField(1, "d", DecimalType(5, 2)))
    ok = pa.table({"d": pa.array([Decimal("123.45")], pa.decimal128(10, 2))})
    assert conform_to_schema(ok, schema).column("d").to_pylist() == [Decimal("123.45")]
    too_big = pa.table({"d": pa.array([Decimal("12345.67")], pa.decimal128(10, 2))})
    with pytest.raises(SchemaMismatch, match=r"'d': cannot convert decimal128\(10, 2\)"):
        conform_to_schema(too_big, schema)

"""Partition transforms: spec examples, pyiceberg as an oracle, and arrow == scalar."""

from __future__ import annotations

import datetime as dt
import time
import uuid
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyiceberg.transforms as pyi_transforms
import pyiceberg.types as pyi_types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakecat.metadata.errors import ValidationError
from lakecat.metadata.partitioning.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    UnknownTransform,
    VoidTransform,
    YearTransform,
    default_partition_field_name,
    hash_value,
    parse_transform,
)
from lakecat.metadata.schema.conversions import (
    INT_MAX,
    INT_MIN,
    LONG_MAX,
    LONG_MIN,
    MICROS_PER_DAY,
    decimal_to_unscaled,
    from_python,
    unscaled_to_decimal,
)
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
    PrimitiveType,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

# ---------------------------------------------------------------------------------------------
# Types, values and their arrow / pyiceberg counterparts.

# Days and micros inside Python's datetime range (years 1..9999), so arrow and pyiceberg can
# turn them into Python objects; pre-epoch values are included on purpose.
MIN_DAY = dt.date(1, 1, 1).toordinal() - dt.date(1970, 1, 1).toordinal()
MAX_DAY = dt.date(9999, 12, 31).toordinal() - dt.date(1970, 1, 1).toordinal()

BUCKETABLE: list[PrimitiveType] = [
    IntegerType(),
    LongType(),
    DecimalType(9, 2),
    DecimalType(38, 10),
    DateType(),
    TimeType(),
    TimestampType(),
    TimestamptzType(),
    StringType(),
    UUIDType(),
    FixedType(3),
    BinaryType(),
]
TRUNCATABLE: list[PrimitiveType] = [
    IntegerType(),
    LongType(),
    DecimalType(9, 2),
    DecimalType(38, 10),
    StringType(),
    BinaryType(),
]
ALL_PRIMITIVES: list[PrimitiveType] = [
    BooleanType(),
    FloatType(),
    DoubleType(),
    *BUCKETABLE,
]
TEMPORAL: list[PrimitiveType] = [DateType(), TimestampType(), TimestamptzType()]


def values_of(t: PrimitiveType) -> st.SearchStrategy[Any]:
    """In-memory values of ``t``; temporal ones within Python's datetime range."""
    if isinstance(t, BooleanType):
        return st.booleans()
    if isinstance(t, IntegerType):
        return st.integers(INT_MIN, INT_MAX)
    if isinstance(t, LongType):
        return st.integers(LONG_MIN, LONG_MAX)
    if isinstance(t, FloatType):
        return st.floats(width=32, allow_nan=False)
    if isinstance(t, DoubleType):
        return st.floats(allow_nan=False)
    if isinstance(t, DecimalType):
        bound = 10**t.precision - 1
        return st.integers(-bound, bound).map(lambda u: unscaled_to_decimal(u, t.scale))
    if isinstance(t, DateType):
        return st.integers(MIN_DAY, MAX_DAY)
    if isinstance(t, TimeType):
        return st.integers(0, MICROS_PER_DAY - 1)
    if isinstance(t, (TimestampType, TimestamptzType)):
        return st.integers(MIN_DAY * MICROS_PER_DAY, (MAX_DAY + 1) * MICROS_PER_DAY - 1)
    if isinstance(t, StringType):
        return st.text(max_size=20)
    if isinstance(t, UUIDType):
        return st.uuids()
    if isinstance(t, FixedType):
        return st.binary(min_size=t.length, max_size=t.length)
    if isinstance(t, BinaryType):
        return st.binary(max_size=20)
    raise AssertionError(t)


def arrow_type(t: PrimitiveType) -> pa.DataType:
    simple: dict[type[PrimitiveType], pa.DataType] = {
        BooleanType: pa.bool_(),
        IntegerType: pa.int32(),
        LongType: pa.int64(),
        FloatType: pa.float32(),
        DoubleType: pa.float64(),
        DateType: pa.date32(),
        TimeType: pa.time64("us"),
        TimestampType: pa.timestamp("us"),
        TimestamptzType: pa.timestamp("us", tz="UTC"),
        StringType: pa.string(),
        UUIDType: pa.binary(16),
        BinaryType: pa.binary(),
    }
    if isinstance(t, DecimalType):
        return pa.decimal128(t.precision, t.scale)
    if isinstance(t, FixedType):
        return pa.binary(t.length)
    return simple[type(t)]


def arrow_array(
    t: PrimitiveType, values: list[Any], arrow_t: pa.DataType | None = None
) -> pa.Array:
    plain = [v.bytes if isinstance(v, uuid.UUID) else v for v in values]
    return pa.array(plain, type=arrow_t or arrow_type(t))


def pyiceberg_type(t: PrimitiveType) -> pyi_types.PrimitiveType:
    if isinstance(t, DecimalType):
        return pyi_types.DecimalType(t.precision, t.scale)
    if isinstance(t, FixedType):
        return pyi_types.FixedType(t.length)
    simple: dict[type[PrimitiveType], pyi_types.PrimitiveType] = {
        BooleanType: pyi_types.BooleanType(),
        IntegerType: pyi_types.IntegerType(),
        LongType: pyi_types.LongType(),
        FloatType: pyi_types.FloatType(),
        DoubleType: pyi_types.DoubleType(),
        DateType: pyi_types.DateType(),
        TimeType: pyi_types.TimeType(),
        TimestampType: pyi_types.TimestampType(),
        TimestamptzType: pyi_types.TimestamptzType(),
        StringType: pyi_types.StringType(),
        UUIDType: pyi_types.UUIDType(),
        BinaryType: pyi_types.BinaryType(),
    }
    return simple[type(t)]


def pyiceberg_transform(transform: Transform) -> pyi_transforms.Transform[Any, Any]:
    return pyi_transforms.parse_transform(str(transform))


# ---------------------------------------------------------------------------------------------
# Appendix B: 32-bit hash requirements.

SPEC_HASHES: list[tuple[PrimitiveType, Any, int]] = [
    (IntegerType(), 34, 2017239379),
    (LongType(), 34, 2017239379),
    (DecimalType(9, 2), Decimal("14.20"), -500754589),
    (DateType(), dt.date(2017, 11, 16), -653330422),
    (TimeType(), dt.time(22, 31, 8), -662762989),
    (TimestampType(), dt.datetime(2017, 11, 16, 22, 31, 8), -2047944441),
    (TimestampType(), "2017-11-16T22:31:08.000001", -1207196810),
    (TimestamptzType(), "2017-11-16T14:31:08-08:00", -2047944441),
    (TimestamptzType(), "2017-11-16T14:31:08.000001-08:00", -1207196810),
    (StringType(), "iceberg", 1210000089),
    (UUIDType(), uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"), 1488055340),
    (FixedType(4), b"\x00\x01\x02\x03", -188683207),
    (BinaryType(), b"\x00\x01\x02\x03", -188683207),
]


@pytest.mark.parametrize(("source", "value", "expected"), SPEC_HASHES, ids=lambda x: str(x))
def test_hash_matches_spec_appendix_b_example(
    source: PrimitiveType, value: Any, expected: int
) -> None:
    assert hash_value(source, from_python(source, value)) == expected


@pytest.mark.parametrize(("source", "value", "expected"), SPEC_HASHES, ids=lambda x: str(x))
def test_bucket_of_spec_example_is_positive_hash_modulo_n(
    source: PrimitiveType, value: Any, expected: int
) -> None:
    in_memory = from_python(source, value)
    bucket = BucketTransform(16)
    assert bucket.apply(source, in_memory) == (expected & INT_MAX) % 16
    assert bucket.apply_arrow(source, arrow_array(source, [in_memory])).to_pylist() == [
        (expected & INT_MAX) % 16
    ]


def test_int_and_long_bucket_alike_so_promotion_keeps_partitions() -> None:
    bucket = BucketTransform(100)
    for v in (0, 1, -1, 34, INT_MAX, INT_MIN):
        assert bucket.apply(IntegerType(), v) == bucket.apply(LongType(), v)


# ---------------------------------------------------------------------------------------------
# Spec examples of truncate and the temporal transforms.


@pytest.mark.parametrize(
    ("source", "width", "value", "expected"),
    [
        (IntegerType(), 10, 1, 0),
        (IntegerType(), 10, -1, -10),
        (LongType(), 10, 1, 0),
        (LongType(), 10, -1, -10),
        (DecimalType(9, 2), 50, Decimal("10.65"), Decimal("10.50")),
        (DecimalType(9, 2), 50, Decimal("-0.05"), Decimal("-0.50")),
        (StringType(), 3, "iceberg", "ice"),
        (StringType(), 3, "añ😀x", "añ😀"),
        (BinaryType(), 3, b"\x01\x02\x03\x04", b"\x01\x02\x03"),
    ],
)
def test_truncate_matches_spec_examples(
    source: PrimitiveType, width: int, value: Any, expected: Any
) -> None:
    truncate = TruncateTransform(width)
    assert truncate.apply(source, value) == expected
    arrow_result = truncate.apply_arrow(source, arrow_array(source, [value, None]))
    assert arrow_result.to_pylist() == [expected, None]


@pytest.mark.parametrize(
    ("transform", "source", "value", "expected"),
    [
        (YearTransform(), DateType(), "2017-11-16", 47),
        (YearTransform(), DateType(), "1969-12-31", -1),
        (MonthTransform(), DateType(), "2017-11-16", 574),
        (MonthTransform(), DateType(), "1969-12-31", -1),
        (DayTransform(), DateType(), "2017-11-16", 17486),
        (YearTransform(), TimestampType(), "2017-12-01T10:12:55.038194", 47),
        (MonthTransform(), TimestampType(), "2017-12-01T10:12:55.038194", 575),
        (DayTransform(), TimestampType(), "2017-12-01T10:12:55.038194", 17501),
        (HourTransform(), TimestampType(), "2017-12-01T10:12:55.038194", 420034),
        (DayTransform(), TimestampType(), "1969-12-31T23:59:59.999999", -1),
        (HourTransform(), TimestampType(), "1969-12-31T23:59:59.999999", -1),
        (HourTransform(), TimestamptzType(), "2017-12-01T10:12:55.038194-01:00", 420035),
        (YearTransform(), TimestamptzType(), "1970-01-01T00:30:00+01:00", -1),
    ],
)
def test_temporal_transforms_count_from_epoch_and_floor_before_it(
    transform: Transform, source: PrimitiveType, value: str, expected: int
) -> None:
    in_memory = from_python(source, value)
    assert transform.apply(source, in_memory) == expected
    arrow_result = transform.apply_arrow(source, arrow_array(source, [in_memory]))
    result_type = transform.result_type(source)
    assert [from_python(result_type, v) for v in arrow_result.to_pylist()] == [expected]


def test_year_and_month_of_far_dates_agree_between_arrow_and_scalar() -> None:
    # Arrow's own year kernel wraps past year 32767; the transforms must not.
    days = [-800_000, 3_000_000, 11_248_738, -13_000_000, None]
    micros = [None if d is None else d * MICROS_PER_DAY + 1 for d in days]
    for transform in (YearTransform(), MonthTransform()):
        for source, values in ((DateType(), days), (TimestampType(), micros)):
            result = transform.apply_arrow(source, arrow_array(source, values)).to_pylist()
            assert result == [transform.apply(source, v) for v in values]
    assert YearTransform().apply(DateType(), 11_248_738) == 32768 - 1970


def test_temporal_transforms_handle_dates_outside_python_range() -> None:
    assert YearTransform().apply(DateType(), -800_000) == -2191
    assert MonthTransform().apply(DateType(), 3_000_000) == (10183 - 1970) * 12 + 8  # 10183-09-21
    assert YearTransform().to_human_string(IntegerType(), 10000 - 1970) == "+10000"


# ---------------------------------------------------------------------------------------------
# pyiceberg as an oracle.


def _transform_cases() -> list[tuple[Transform, PrimitiveType]]:
    cases: list[tuple[Transform, PrimitiveType]] = []
    for n in (1, 7, 16, 1000):
        cases += [(BucketTransform(n), t) for t in BUCKETABLE]
    for w in (1, 3, 10, 1000):
        cases += [(TruncateTransform(w), t) for t in TRUNCATABLE]
    for transform in (YearTransform(), MonthTransform(), DayTransform()):
        cases += [(transform, t) for t in TEMPORAL]
    cases += [(HourTransform(), TimestampType()), (HourTransform(), TimestamptzType())]
    cases += [(IdentityTransform(), t) for t in ALL_PRIMITIVES]
    cases += [(VoidTransform(), t) for t in ALL_PRIMITIVES]
    return cases


TRANSFORM_CASES = _transform_cases()


def _case_id(case: Any) -> str:
    return str(case)


def _safe_values(transform: Transform, source: PrimitiveType) -> st.SearchStrategy[Any]:
    values = values_of(source)
    if isinstance(transform, TruncateTransform) and isinstance(source, (IntegerType, LongType)):
        # Truncating the very smallest values overflows the type; tested separately.
        low = INT_MIN if isinstance(source, IntegerType) else LONG_MIN
        values = values.filter(lambda v: v >= low + transform.width)
    if isinstance(transform, TruncateTransform) and isinstance(source, DecimalType):
        lowest = -(10**source.precision) + transform.width
        values = values.filter(lambda v: decimal_to_unscaled(source, v) >= lowest)
    return values


@pytest.mark.parametrize(("transform", "source"), TRANSFORM_CASES, ids=_case_id)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_apply_matches_pyiceberg(transform: Transform, source: PrimitiveType, data: Any) -> None:
    value = data.draw(_safe_values(transform, source))
    oracle = pyiceberg_transform(transform).transform(pyiceberg_type(source))
    expected = oracle(value)
    result = transform.apply(source, value)
    if isinstance(expected, dt.date):  # pyiceberg's day transform of a date
        expected = from_python(DateType(), expected)
    assert result == expected
    assert transform.apply(source, None) is None


@pytest.mark.parametrize(("transform", "source"), TRANSFORM_CASES, ids=_case_id)
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_apply_arrow_equals_apply_elementwise(
    transform: Transform, source: PrimitiveType, data: Any
) -> None:
    values = data.draw(st.lists(st.none() | _safe_values(transform, source), max_size=30))
    result = transform.apply_arrow(source, arrow_array(source, values))
    result_type = transform.result_type(source)
    assert result.type == arrow_type(result_type)
    assert [from_python(result_type, v) for v in result.to_pylist()] == [
        transform.apply(source, v) for v in values
    ]


def test_can_transform_matches_pyiceberg() -> None:
    transforms: list[Transform] = [
        IdentityTransform(),
        BucketTransform(4),
        TruncateTransform(4),
        YearTransform(),
        MonthTransform(),
        DayTransform(),
        HourTransform(),
        VoidTransform(),
    ]
    for transform in transforms:
        oracle = pyiceberg_transform(transform)
        for source in ALL_PRIMITIVES:
            assert transform.can_transform(source) == oracle.can_transform(
                pyiceberg_type(source)
            ), (transform, source)


# ---------------------------------------------------------------------------------------------
# Arrow specifics.


@pytest.mark.parametrize(
    ("source", "arrow_t", "values"),
    [
        (StringType(), pa.large_string(), ["iceberg", None, "añ😀x"]),
        (BinaryType(), pa.large_binary(), [b"\x00\x01\x02\x03", None]),
        (TimestampType(), pa.timestamp("ns"), [1_000, None, -1_000]),
        (TimestamptzType(), pa.timestamp("ms", tz="Europe/Paris"), [1_000, None, -1_000]),
        (TimeType(), pa.time32("ms"), [1_000, None]),
    ],
)
def test_apply_arrow_accepts_other_arrow_layouts(
    source: PrimitiveType, arrow_t: pa.DataType, values: list[Any]
) -> None:
    array = pa.array(values, type=arrow_t)
    standard = array.cast(arrow_type(source))
    for transform in (BucketTransform(16), IdentityTransform()):
        expected = [from_python(source, v) for v in standard.to_pylist()]
        if not transform.is_identity:
            expected = [transform.apply(source, v) for v in expected]
        result = transform.apply_arrow(source, array).to_pylist()
        if transform.is_identity:
            result = [from_python(source, v) for v in result]
        assert result == expected


def test_apply_arrow_accepts_chunked_arrays_and_arrow_uuid_type() -> None:
    chunked = pa.chunked_array([[1, 2], [None, -5]], type=pa.int64())
    bucket = BucketTransform(8)
    assert bucket.apply_arrow(LongType(), chunked).to_pylist() == [
        bucket.apply(LongType(), v) for v in (1, 2, None, -5)
    ]
    u = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")
    uuids = pa.array([u.bytes, None], type=pa.uuid())
    assert bucket.apply_arrow(UUIDType(), uuids).to_pylist() == [(1488055340 & INT_MAX) % 8, None]


def test_bucket_and_day_of_a_million_timestamps_are_vectorized() -> None:
    micros = pa.array(range(-500_000_000_000, 500_000_000_000, 1_000_000), pa.int64())
    timestamps = micros.cast(pa.timestamp("us"))
    start = time.perf_counter()
    buckets = BucketTransform(16).apply_arrow(TimestampType(), timestamps)
    days = DayTransform().apply_arrow(TimestampType(), timestamps)
    elapsed = time.perf_counter() - start
    assert len(buckets) == len(days) == 1_000_000
    assert elapsed < 5, elapsed
    sample = [0, 1, 499_999, 999_999]
    for i in sample:
        v = micros[i].as_py()
        assert buckets[i].as_py() == BucketTransform(16).apply(TimestampType(), v)


def test_truncate_overflow_raises_validation_error() -> None:
    truncate = TruncateTransform(10)
    with pytest.raises(ValidationError, match="overflows"):
        truncate.apply(LongType(), LONG_MIN)
    with pytest.raises(ValidationError):
        truncate.apply_arrow(LongType(), pa.array([LONG_MIN], pa.int64()))
    with pytest.raises(ValidationError):
        truncate.apply_arrow(IntegerType(), pa.array([INT_MIN], pa.int32()))
    smallest = Decimal("-9999999.99")
    with pytest.raises(ValidationError, match="overflows"):
        truncate.apply(DecimalType(9, 2), smallest)
    with pytest.raises(ValidationError, match="overflows"):
        truncate.apply_arrow(DecimalType(9, 2), pa.array([smallest], pa.decimal128(9, 2)))


def test_void_makes_nulls_of_the_source_type() -> None:
    result = VoidTransform().apply_arrow(StringType(), pa.array(["a", None]))
    assert result.type == pa.string()
    assert result.to_pylist() == [None, None]
    assert VoidTransform().apply(StringType(), "a") is None


# ---------------------------------------------------------------------------------------------
# Parsing, types, ordering, names.


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("identity", IdentityTransform()),
        ("bucket[16]", BucketTransform(16)),
        ("truncate[4]", TruncateTransform(4)),
        ("year", YearTransform()),
        ("month", MonthTransform()),
        ("day", DayTransform()),
        ("hour", HourTransform()),
        ("void", VoidTransform()),
        (" Bucket[ 8 ] ", BucketTransform(8)),
        ("DAY", DayTransform()),
    ],
)
def test_parse_transform_reads_spec_strings(text: str, expected: Transform) -> None:
    transform = parse_transform(text)
    assert transform == expected
    assert parse_transform(str(transform)) == transform


@pytest.mark.parametrize("text", ["bucket", "bucket[]", "bucket[-1]", "zorder", "truncate[x]", ""])
def test_parse_transform_rejects_unknown_user_input(text: str) -> None:
    with pytest.raises(ValidationError):
        parse_transform(text)


@pytest.mark.parametrize("text", ["bucket[0]", "truncate[0]", "bucket[-1]", "truncate[ -4 ]"])
def test_a_bucket_count_or_width_below_one_is_rejected_as_such(text: str) -> None:
    with pytest.raises(ValidationError, match="positive"):
        parse_transform(text)
    with pytest.raises(ValidationError):
        parse_transform(text, strict=False)


def test_unknown_transform_from_metadata_round_trips_but_cannot_be_applied() -> None:
    transform = parse_transform("zorder[a, b]", strict=False)
    assert transform == UnknownTransform("zorder[a, b]")
    assert str(transform) == "zorder[a, b]"
    assert transform.result_type(LongType()) == StringType()
    with pytest.raises(ValidationError, match="unknown transform"):
        transform.apply(LongType(), 1)
    with pytest.raises(ValidationError, match="unknown transform"):
        transform.apply_arrow(LongType(), pa.array([1], pa.int64()))


@pytest.mark.parametrize(
    ("transform", "source", "expected"),
    [
        (IdentityTransform(), DecimalType(9, 2), DecimalType(9, 2)),
        (BucketTransform(4), StringType(), IntegerType()),
        (TruncateTransform(4), StringType(), StringType()),
        (YearTransform(), TimestampType(), IntegerType()),
        (MonthTransform(), DateType(), IntegerType()),
        (DayTransform(), TimestamptzType(), DateType()),
        (HourTransform(), TimestampType(), IntegerType()),
        (VoidTransform(), UUIDType(), UUIDType()),
    ],
)
def test_result_type_follows_spec(
    transform: Transform, source: PrimitiveType, expected: PrimitiveType
) -> None:
    assert transform.result_type(source) == expected


def test_identity_of_nested_type_is_rejected() -> None:
    nested = ListType(1, LongType())
    assert not IdentityTransform().can_transform(nested)
    assert not IdentityTransform().can_transform(StructType(()))
    with pytest.raises(ValidationError):
        IdentityTransform().result_type(nested)


def test_applying_to_an_unsupported_type_raises_validation_error() -> None:
    with pytest.raises(ValidationError, match=r"bucket\[4\] cannot be applied to type boolean"):
        BucketTransform(4).apply(BooleanType(), True)
    with pytest.raises(ValidationError):
        HourTransform().apply_arrow(DateType(), pa.array([1], pa.date32()))


def test_values_not_in_memory_form_raise_validation_error() -> None:
    with pytest.raises(ValidationError, match="cannot apply bucket"):
        BucketTransform(4).apply(LongType(), "34")
    with pytest.raises(ValidationError, match="cannot apply year"):
        YearTransform().apply(DateType(), dt.date(2024, 1, 1))
    with pytest.raises(ValidationError, match="a string column does not hold long values"):
        BucketTransform(4).apply_arrow(LongType(), pa.array(["34"]))
    with pytest.raises(ValidationError):
        TruncateTransform(4).apply_arrow(StringType(), pa.array([1]))


def test_order_preservation_flags() -> None:
    ordered = [IdentityTransform(), TruncateTransform(3), YearTransform(), MonthTransform()]
    ordered += [DayTransform(), HourTransform()]
    assert all(t.preserves_order for t in ordered)
    assert not BucketTransform(3).preserves_order
    assert not VoidTransform().preserves_order
    assert IdentityTransform().is_identity and not DayTransform().is_identity
    assert VoidTransform().is_void and not IdentityTransform().is_void


def test_finer_time_order_satisfies_coarser() -> None:
    hour, day, month, year = HourTransform(), DayTransform(), MonthTransform(), YearTransform()
    assert hour.satisfies_order_of(day)
    assert hour.satisfies_order_of(year)
    assert day.satisfies_order_of(month)
    assert month.satisfies_order_of(month)
    assert not day.satisfies_order_of(hour)
    assert not year.satisfies_order_of(month)
    assert not day.satisfies_order_of(BucketTransform(4))


def test_identity_satisfies_every_order_preserving_transform() -> None:
    identity = IdentityTransform()
    assert identity.satisfies_order_of(DayTransform())
    assert identity.satisfies_order_of(TruncateTransform(5))
    assert identity.satisfies_order_of(identity)
    assert not identity.satisfies_order_of(BucketTransform(4))
    assert not identity.satisfies_order_of(VoidTransform())
    assert not DayTransform().satisfies_order_of(identity)


def test_truncate_order_depends_on_source_type() -> None:
    long10, long5, long3 = TruncateTransform(10), TruncateTransform(5), TruncateTransform(3)
    assert long5.satisfies_order_of(long10, source=LongType())
    assert not long10.satisfies_order_of(long5, source=LongType())
    assert not long3.satisfies_order_of(long10, source=LongType())
    assert long10.satisfies_order_of(long5, source=StringType())
    assert not long5.satisfies_order_of(long10, source=StringType())
    assert not long5.satisfies_order_of(long10)  # unknown source: only equal transforms
    assert BucketTransform(4).satisfies_order_of(BucketTransform(4))
    assert not BucketTransform(4).satisfies_order_of(BucketTransform(8))


def test_dedup_name_groups_time_transforms() -> None:
    assert {t.dedup_name() for t in (YearTransform(), DayTransform(), HourTransform())} == {"time"}
    assert BucketTransform(4).dedup_name() == "bucket[4]"
    assert IdentityTransform().dedup_name() == "identity"


@pytest.mark.parametrize(
    ("transform", "expected"),
    [
        (IdentityTransform(), "ts"),
        (BucketTransform(16), "ts_bucket"),
        (TruncateTransform(4), "ts_trunc"),
        (YearTransform(), "ts_year"),
        (MonthTransform(), "ts_month"),
        (DayTransform(), "ts_day"),
        (HourTransform(), "ts_hour"),
        (VoidTransform(), "ts_null"),
        (UnknownTransform("zorder[a]"), "ts_zorder_a"),
    ],
)
def test_default_partition_field_names_follow_java(transform: Transform, expected: str) -> None:
    assert default_partition_field_name("ts", transform) == expected


def test_a_field_added_to_a_spec_names_its_bucket_count_or_width_as_java_does() -> None:
    assert default_partition_field_name("id", BucketTransform(16), evolving=True) == "id_bucket_16"
    assert default_partition_field_name("s", TruncateTransform(4), evolving=True) == "s_trunc_4"
    assert default_partition_field_name("ts", DayTransform(), evolving=True) == "ts_day"
    assert default_partition_field_name("ts", IdentityTransform(), evolving=True) == "ts"


# ---------------------------------------------------------------------------------------------
# Human strings (partition paths).


@pytest.mark.parametrize(
    ("transform", "source", "value", "expected"),
    [
        (IdentityTransform(), DateType(), "2024-01-02", "2024-01-02"),
        (
            IdentityTransform(),
            TimestampType(),
            "2024-01-02T10:11:12.000001",
            "2024-01-02T10:11:12.000001",
        ),
        (IdentityTransform(), TimestampType(), "2024-01-02T10:11:12.5", "2024-01-02T10:11:12.500"),
        (IdentityTransform(), TimestampType(), "2024-01-02T10:11:00", "2024-01-02T10:11"),
        (
            IdentityTransform(),
            TimestamptzType(),
            "2024-01-02T10:11:12+00:00",
            "2024-01-02T10:11:12Z",
        ),
        (IdentityTransform(), TimeType(), "10:11:12.000123", "10:11:12.000123"),
        (IdentityTransform(), StringType(), "a/b c", "a/b c"),
        (IdentityTransform(), BinaryType(), b"\x00\x01\x02\x03", "AAECAw=="),
        (IdentityTransform(), BooleanType(), True, "true"),
        (IdentityTransform(), DecimalType(9, 2), "14.2", "14.20"),
        (IdentityTransform(), LongType(), None, "null"),
        (YearTransform(), TimestampType(), "2024-03-05T10:00:00", "2024"),
        (MonthTransform(), TimestampType(), "2024-03-05T10:00:00", "2024-03"),
        (MonthTransform(), DateType(), "1969-12-05", "1969-12"),
        (DayTransform(), TimestampType(), "2024-03-05T10:00:00", "2024-03-05"),
        (HourTransform(), TimestampType(), "2024-03-05T10:59:00", "2024-03-05-10"),
        (HourTransform(), TimestampType(), "1969-12-31T23:30:00", "1969-12-31-23"),
        (BucketTransform(16), StringType(), "iceberg", "9"),
        (TruncateTransform(2), BinaryType(), b"\x00\x01\x02", "AAE="),
        (VoidTransform(), LongType(), 5, "null"),
    ],
)
def test_to_human_string_matches_java(
    transform: Transform, source: PrimitiveType, value: Any, expected: str
) -> None:
    partition_value = transform.apply(source, from_python(source, value))
    assert transform.to_human_string(transform.result_type(source), partition_value) == expected


@pytest.mark.parametrize(
    ("transform", "source"),
    [
        (YearTransform(), TimestampType()),
        (MonthTransform(), DateType()),
        (DayTransform(), DateType()),
        (HourTransform(), TimestamptzType()),
    ],
)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_time_human_strings_match_pyiceberg(
    transform: Transform, source: PrimitiveType, data: Any
) -> None:
    value = data.draw(values_of(source))
    partition_value = transform.apply(source, value)
    oracle = pyiceberg_transform(transform)
    result_type = transform.result_type(source)
    expected = oracle.to_human_string(pyiceberg_type(result_type), partition_value)
    assert transform.to_human_string(result_type, partition_value) == expected

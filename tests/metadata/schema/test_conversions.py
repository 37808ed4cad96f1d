"""Single-value serialization (binary and JSON), Python value conversion, truncated bounds."""

from __future__ import annotations

import datetime as dt
import math
import re
import struct
import uuid
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyiceberg.conversions as pyi_conversions
import pyiceberg.types as pyi_types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lakecat.metadata.errors import CorruptMetadata, ValidationError
from lakecat.metadata.schema.conversions import (
    INT_MAX,
    INT_MIN,
    LONG_MAX,
    LONG_MIN,
    MICROS_PER_DAY,
    civil_from_days,
    days_from_civil,
    from_bytes,
    from_json_value,
    from_python,
    human_string,
    java_floating_string,
    to_bytes,
    to_json_value,
    to_python,
    truncate_lower_bound_binary,
    truncate_lower_bound_string,
    truncate_upper_bound_binary,
    truncate_upper_bound_string,
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
    LongType,
    PrimitiveType,
    StringType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

PRIMITIVES: list[PrimitiveType] = [
    BooleanType(),
    IntegerType(),
    LongType(),
    FloatType(),
    DoubleType(),
    DecimalType(1, 0),
    DecimalType(9, 2),
    DecimalType(38, 10),
    DateType(),
    TimeType(),
    TimestampType(),
    TimestamptzType(),
    StringType(),
    UUIDType(),
    FixedType(1),
    FixedType(16),
    BinaryType(),
]

# Python's datetime covers years 1..9999; pyiceberg and to_python need values inside it.
MIN_DAY = dt.date(1, 1, 1).toordinal() - dt.date(1970, 1, 1).toordinal()
MAX_DAY = dt.date(9999, 12, 31).toordinal() - dt.date(1970, 1, 1).toordinal()


def values_of(t: PrimitiveType, *, python_range: bool = False) -> st.SearchStrategy[Any]:
    """In-memory values of ``t``; with ``python_range`` temporal values fit ``datetime``."""
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
        return st.integers(MIN_DAY, MAX_DAY) if python_range else st.integers(INT_MIN, INT_MAX)
    if isinstance(t, TimeType):
        return st.integers(0, MICROS_PER_DAY - 1)
    if isinstance(t, (TimestampType, TimestamptzType)):
        if python_range:
            return st.integers(MIN_DAY * MICROS_PER_DAY, (MAX_DAY + 1) * MICROS_PER_DAY - 1)
        return st.integers(LONG_MIN, LONG_MAX)
    if isinstance(t, StringType):
        return st.text()
    if isinstance(t, UUIDType):
        return st.uuids()
    if isinstance(t, FixedType):
        return st.binary(min_size=t.length, max_size=t.length)
    if isinstance(t, BinaryType):
        return st.binary()
    raise AssertionError(t)


def pyiceberg_type(t: PrimitiveType) -> pyi_types.PrimitiveType:
    if isinstance(t, DecimalType):
        return pyi_types.DecimalType(t.precision, t.scale)
    if isinstance(t, FixedType):
        return pyi_types.FixedType(t.length)
    return {
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
    }[type(t)]


ids = str

# ---------------------------------------------------------------------------------------------
# Binary single-value serialization.


@pytest.mark.parametrize("t", PRIMITIVES, ids=ids)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_bytes_round_trip(t: PrimitiveType, data: Any) -> None:
    value = data.draw(values_of(t))
    assert from_bytes(t, to_bytes(t, value)) == value


@pytest.mark.parametrize("t", PRIMITIVES, ids=ids)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_bytes_match_pyiceberg(t: PrimitiveType, data: Any) -> None:
    value = data.draw(values_of(t))
    encoded = to_bytes(t, value)
    assert encoded == pyi_conversions.to_bytes(pyiceberg_type(t), value)
    decoded = pyi_conversions.from_bytes(pyiceberg_type(t), encoded)
    assert from_python(t, decoded) == value


@pytest.mark.parametrize(
    ("t", "value", "expected"),
    [
        (BooleanType(), False, "00"),
        (BooleanType(), True, "01"),
        (IntegerType(), 34, "22000000"),
        (IntegerType(), -1, "ffffffff"),
        (LongType(), 34, "2200000000000000"),
        (FloatType(), 1.0, "0000803f"),
        (DoubleType(), 1.0, "000000000000f03f"),
        (DateType(), 17486, "4e440000"),
        (TimeType(), 81068000000, "008307e012000000"),
        (TimestampType(), 1510871468000000, "00c3262d215e0500"),
        (StringType(), "iceberg", "69636562657267"),
        (StringType(), "", ""),
        (
            UUIDType(),
            uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"),
            "f79c3e09677c4bbda4793f349cb785e7",
        ),
        (FixedType(2), b"\x00\xff", "00ff"),
        (BinaryType(), b"", ""),
        (DecimalType(9, 2), Decimal("14.20"), "058c"),
        (DecimalType(9, 2), Decimal("-14.20"), "fa74"),
        (DecimalType(9, 2), Decimal("0.00"), "00"),
        (DecimalType(3, 0), Decimal("127"), "7f"),
        (DecimalType(3, 0), Decimal("128"), "0080"),
        (DecimalType(3, 0), Decimal("-128"), "80"),
        (DecimalType(3, 0), Decimal("-129"), "ff7f"),
    ],
)
def test_known_byte_encodings(t: PrimitiveType, value: Any, expected: str) -> None:
    assert to_bytes(t, value).hex() == expected
    assert from_bytes(t, bytes.fromhex(expected)) == value


def test_any_non_zero_byte_reads_as_true() -> None:
    assert from_bytes(BooleanType(), b"\x02") is True


def test_float_nan_survives_bytes() -> None:
    assert math.isnan(from_bytes(FloatType(), to_bytes(FloatType(), math.nan)))
    assert math.isnan(from_bytes(DoubleType(), to_bytes(DoubleType(), math.nan)))


def test_decimal_bytes_keep_the_type_scale() -> None:
    value = from_bytes(DecimalType(9, 2), bytes.fromhex("058c"))
    assert str(value) == "14.20"


@pytest.mark.parametrize(
    ("t", "data"),
    [
        (IntegerType(), b"\x00"),
        (LongType(), b"\x00" * 4),
        (BooleanType(), b""),
        (StringType(), b"\xff"),
        (UUIDType(), b"\x00" * 15),
        (FixedType(2), b"\x00"),
        (DecimalType(9, 2), b""),
    ],
)
def test_malformed_bytes_raise_corrupt_metadata(t: PrimitiveType, data: bytes) -> None:
    with pytest.raises(CorruptMetadata):
        from_bytes(t, data)


@pytest.mark.parametrize(
    ("t", "value"),
    [
        (IntegerType(), 2**31),
        (IntegerType(), "1"),
        (DecimalType(9, 2), Decimal("1.234")),
        (DecimalType(3, 0), Decimal("1000")),
        (FixedType(2), b"\x00"),
        (StringType(), 5),
    ],
)
def test_bad_in_memory_values_do_not_serialize(t: PrimitiveType, value: Any) -> None:
    with pytest.raises(ValidationError):
        to_bytes(t, value)


# ---------------------------------------------------------------------------------------------
# JSON single-value serialization.


@pytest.mark.parametrize(
    ("t", "natural", "expected"),
    [
        (BooleanType(), True, True),
        (IntegerType(), 34, 34),
        (LongType(), 34, 34),
        (DoubleType(), 1.0, 1.0),
        (DecimalType(9, 2), "14.20", "14.20"),
        (DecimalType(9, 2), Decimal("14.2"), "14.20"),
        (DecimalType(9, 2), Decimal("-0.05"), "-0.05"),
        (DecimalType(5, 0), 7, "7"),
        (DateType(), dt.date(2017, 11, 16), "2017-11-16"),
        (TimeType(), dt.time(22, 31, 8, 123456), "22:31:08.123456"),
        (
            TimestampType(),
            dt.datetime(2017, 11, 16, 22, 31, 8, 123456),
            "2017-11-16T22:31:08.123456",
        ),
        (
            TimestamptzType(),
            dt.datetime(2017, 11, 16, 22, 31, 8, 123456, tzinfo=dt.UTC),
            "2017-11-16T22:31:08.123456+00:00",
        ),
        (StringType(), "iceberg", "iceberg"),
        (
            UUIDType(),
            "F79C3E09-677C-4BBD-A479-3F349CB785E7",
            "f79c3e09-677c-4bbd-a479-3f349cb785e7",
        ),
        (FixedType(4), b"\x00\x01\x02\xff", "000102ff"),
        (BinaryType(), b"\x00\x01\x02\xff", "000102ff"),
    ],
)
def test_json_values_match_spec_examples(t: PrimitiveType, natural: Any, expected: Any) -> None:
    value = from_python(t, natural)
    assert to_json_value(t, value) == expected
    assert from_json_value(t, expected) == value


def test_json_reads_other_writers_forms() -> None:
    assert from_json_value(TimeType(), "22:31:08") == 81068000000
    assert from_json_value(TimestamptzType(), "2017-11-16T14:31:08-08:00") == 1510871468000000
    assert from_json_value(TimestamptzType(), "2017-11-16T22:31:08Z") == 1510871468000000
    assert from_json_value(BinaryType(), "000102FF") == b"\x00\x01\x02\xff"
    assert from_json_value(LongType(), None) is None


def test_json_dates_outside_python_range_use_java_year_format() -> None:
    assert to_json_value(DateType(), -800_000) == "-0221-09-04"
    assert to_json_value(DateType(), 3_000_000) == "+10183-09-21"


@pytest.mark.parametrize(
    ("t", "obj"),
    [
        (IntegerType(), "34"),
        (IntegerType(), 1.5),
        (DecimalType(9, 2), 14.2),
        (DateType(), 17486),
        (DateType(), "2017-13-01"),
        (BinaryType(), "xyz"),
        (FixedType(2), "00"),
        (DoubleType(), "NaN"),
        (UUIDType(), "not-a-uuid"),
        (BooleanType(), "true"),
        (TimestampType(), "2017-11-16T22:31:08+00:00"),
        (TimestampType(), "2017-11-16T22:31:08.123456789"),
    ],
)
def test_json_rejects_values_of_the_wrong_form(t: PrimitiveType, obj: Any) -> None:
    with pytest.raises(ValidationError):
        from_json_value(t, obj)


@pytest.mark.parametrize("t", PRIMITIVES, ids=ids)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_json_round_trip(t: PrimitiveType, data: Any) -> None:
    value = data.draw(values_of(t))
    assert from_json_value(t, to_json_value(t, value)) == value


@pytest.mark.parametrize("t", PRIMITIVES, ids=ids)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_json_interoperates_with_pyiceberg(t: PrimitiveType, data: Any) -> None:
    value = data.draw(values_of(t, python_range=True))
    pyi_t = pyiceberg_type(t)
    # pyiceberg reads what we write ...
    assert from_python(t, pyi_conversions.from_json(pyi_t, to_json_value(t, value))) == value
    # ... and we read what pyiceberg writes.
    assert from_json_value(t, pyi_conversions.to_json(pyi_t, value)) == value


# ---------------------------------------------------------------------------------------------
# Natural Python values.


@pytest.mark.parametrize(
    ("t", "natural", "expected"),
    [
        (BooleanType(), "TRUE", True),
        (IntegerType(), "42", 42),
        (LongType(), 2**40, 2**40),
        (FloatType(), 0.1, 0.10000000149011612),
        (DoubleType(), 1, 1.0),
        (DecimalType(9, 2), 14.2, Decimal("14.20")),
        (DecimalType(9, 2), 3, Decimal("3.00")),
        (DecimalType(9, 2), "-0.5", Decimal("-0.50")),
        (DateType(), dt.date(1969, 12, 31), -1),
        (DateType(), "2024-01-01", 19723),
        (DateType(), 5, 5),
        (TimeType(), dt.time(0, 0, 0, 1), 1),
        (TimeType(), "10:00", 36_000_000_000),
        (TimestampType(), dt.datetime(1969, 12, 31, 23, 59, 59, 999999), -1),
        (TimestampType(), "2024-01-01", 19723 * MICROS_PER_DAY),
        (TimestampType(), dt.date(2024, 1, 1), 19723 * MICROS_PER_DAY),
        (TimestamptzType(), dt.datetime(1970, 1, 1, 1), 3_600_000_000),
        (
            TimestamptzType(),
            dt.datetime(1970, 1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1))),
            0,
        ),
        (TimestamptzType(), "1970-01-01T00:00:00.000001Z", 1),
        (StringType(), "añ😀", "añ😀"),
        (
            UUIDType(),
            "f79c3e09-677c-4bbd-a479-3f349cb785e7",
            uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7"),
        ),
        (UUIDType(), b"\x00" * 16, uuid.UUID(int=0)),
        (FixedType(2), bytearray(b"ab"), b"ab"),
        (BinaryType(), memoryview(b"ab"), b"ab"),
    ],
)
def test_from_python_accepts_natural_values(t: PrimitiveType, natural: Any, expected: Any) -> None:
    result = from_python(t, natural)
    assert result == expected
    assert type(result) is type(expected)


def test_from_python_normalizes_decimals_to_the_type_scale() -> None:
    assert str(from_python(DecimalType(9, 2), Decimal("14.2"))) == "14.20"
    assert str(from_python(DecimalType(38, 10), "1.5")) == "1.5000000000"


@pytest.mark.parametrize(
    ("t", "bad", "message"),
    [
        (DateType(), "abc", "'abc' is not a valid date"),
        (DateType(), dt.datetime(2024, 1, 1), "a datetime, not a date"),
        (DateType(), 2**40, "out of range"),
        (TimeType(), "25:00", "not a valid time"),
        (TimeType(), MICROS_PER_DAY, "out of range"),
        (TimestampType(), "yesterday", "not a valid timestamp"),
        (TimestampType(), dt.datetime(2024, 1, 1, tzinfo=dt.UTC), "naive datetime"),
        (IntegerType(), 2**31, "out of range"),
        (IntegerType(), True, "not a valid int"),
        (IntegerType(), 1.5, "not a valid int"),
        (LongType(), "12x", "not a valid long"),
        (FloatType(), 1e300, "out of float range"),
        (DoubleType(), "abc", "not a valid double"),
        (DecimalType(9, 2), "1.234", "more than 2 fractional digits"),
        (DecimalType(3, 0), 1000, "more than 3 digits"),
        (DecimalType(9, 2), "NaN", "not a valid decimal"),
        (DecimalType(9, 2), "abc", "not a valid decimal"),
        (BooleanType(), 1, "not a valid boolean"),
        (StringType(), b"abc", "not a valid string"),
        (StringType(), "\ud800", "not encodable"),
        (UUIDType(), "xyz", "not a valid uuid"),
        (FixedType(2), b"abc", "3 bytes, expected 2"),
        (BinaryType(), "abc", "not a valid binary"),
    ],
)
def test_from_python_rejects_values_that_do_not_fit(
    t: PrimitiveType, bad: Any, message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        from_python(t, bad)


def test_from_python_keeps_none() -> None:
    assert all(from_python(t, None) is None for t in PRIMITIVES)


@pytest.mark.parametrize("t", PRIMITIVES, ids=ids)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_to_python_then_from_python_is_identity(t: PrimitiveType, data: Any) -> None:
    value = data.draw(values_of(t, python_range=True))
    assert from_python(t, to_python(t, value)) == value


def test_to_python_gives_natural_values() -> None:
    assert to_python(DateType(), -1) == dt.date(1969, 12, 31)
    assert to_python(TimeType(), 1) == dt.time(0, 0, 0, 1)
    assert to_python(TimestampType(), -1) == dt.datetime(1969, 12, 31, 23, 59, 59, 999999)
    aware = to_python(TimestamptzType(), 0)
    assert aware == dt.datetime(1970, 1, 1, tzinfo=dt.UTC) and aware.tzinfo is not None
    assert to_python(LongType(), 5) == 5
    with pytest.raises(ValidationError, match="outside Python's datetime range"):
        to_python(DateType(), 3_000_000)


# ---------------------------------------------------------------------------------------------
# Calendar arithmetic.


@settings(max_examples=200, deadline=None)
@given(st.integers(-(10**8), 10**8))
def test_civil_days_round_trip_and_match_arrow(days: int) -> None:
    assert days_from_civil(*civil_from_days(days)) == days
    if days_from_civil(-32767, 1, 1) <= days <= days_from_civil(32767, 12, 31):
        # (arrow's calendar kernels keep the year in 16 bits)
        arr = pa.array([days], pa.date32())
        expected = (pc.year(arr)[0].as_py(), pc.month(arr)[0].as_py(), pc.day(arr)[0].as_py())
        assert civil_from_days(days) == expected


# ---------------------------------------------------------------------------------------------
# Truncated bounds (metrics mode truncate(N)).


def test_string_bounds_truncate_by_code_points() -> None:
    assert truncate_lower_bound_string("añ😀xyz", 3) == "añ😀"
    assert truncate_upper_bound_string("añ😀xyz", 3) == "añ😁"
    assert truncate_upper_bound_string("abc", 3) == "abc"
    assert truncate_upper_bound_string("abc", 5) == "abc"
    assert truncate_lower_bound_string("", 2) == ""


def test_string_upper_bound_skips_code_points_that_cannot_be_incremented() -> None:
    top = chr(0x10FFFF)
    assert truncate_upper_bound_string("a" + top + "z", 2) == "b"
    assert truncate_upper_bound_string(top * 3, 2) is None
    # U+D7FF + 1 would be a surrogate, which UTF-8 cannot hold: jump to U+E000.
    bound = truncate_upper_bound_string("\ud7ffzz", 1)
    assert bound == "\ue000"
    assert bound.encode("utf-8") > "\ud7ffzz".encode()


def test_binary_bounds_truncate_and_carry() -> None:
    assert truncate_lower_bound_binary(b"\x01\x02\x03", 2) == b"\x01\x02"
    assert truncate_upper_bound_binary(b"\x01\x02\x03", 2) == b"\x01\x03"
    assert truncate_upper_bound_binary(b"\x01\xff\x03", 2) == b"\x02"
    assert truncate_upper_bound_binary(b"\xff\xff\x03", 2) is None
    assert truncate_upper_bound_binary(b"\xff\xff", 2) == b"\xff\xff"


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1), st.integers(1, 8))
def test_string_bounds_enclose_the_value(value: str, width: int) -> None:
    lower = truncate_lower_bound_string(value, width)
    upper = truncate_upper_bound_string(value, width)
    assert len(lower) <= width and lower.encode() <= value.encode()
    if upper is not None:
        assert len(upper) <= width and upper.encode() >= value.encode()


@settings(max_examples=200, deadline=None)
@given(st.binary(min_size=1), st.integers(1, 8))
def test_binary_bounds_enclose_the_value(value: bytes, width: int) -> None:
    lower = truncate_lower_bound_binary(value, width)
    upper = truncate_upper_bound_binary(value, width)
    assert len(lower) <= width and lower <= value
    if upper is not None:
        assert len(upper) <= width and upper >= value
    else:
        assert value[:width] == b"\xff" * width


def _float32(value: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


# (value, float32?, what java.lang.Double / Float.toString print: checked on a JVM)
JAVA_FLOATING_TEXT = [
    (1.0, False, "1.0"),
    (0.1, False, "0.1"),
    (100.0, False, "100.0"),
    (123.456, False, "123.456"),
    (9999999.0, False, "9999999.0"),
    (1e7, False, "1.0E7"),
    (12345678.0, False, "1.2345678E7"),
    (0.001, False, "0.001"),
    (0.00099, False, "9.9E-4"),
    (1e-4, False, "1.0E-4"),
    (1e16, False, "1.0E16"),
    (-2.5e-10, False, "-2.5E-10"),
    (0.0, False, "0.0"),
    (-0.0, False, "-0.0"),
    (math.nan, False, "NaN"),
    (math.inf, False, "Infinity"),
    (-math.inf, False, "-Infinity"),
    (5e-324, False, "4.9E-324"),
    (1.7976931348623157e308, False, "1.7976931348623157E308"),
    (_float32(0.1), False, "0.10000000149011612"),
    (_float32(0.1), True, "0.1"),
    (_float32(0.3), True, "0.3"),
    (_float32(1e7), True, "1.0E7"),
    (_float32(16777216.0), True, "1.6777216E7"),
    (_float32(1.4e-45), True, "1.4E-45"),
    (_float32(3.4028235e38), True, "3.4028235E38"),
    (_float32(-1234.5677), True, "-1234.5677"),
    (1 / 3, True, "0.33333334"),  # a double given as a float: rounded to the float first
    (0.1, True, "0.1"),
]


@pytest.mark.parametrize(("value", "single", "expected"), JAVA_FLOATING_TEXT)
def test_floating_values_print_as_java_prints_them(
    value: float, single: bool, expected: str
) -> None:
    assert java_floating_string(value, single=single) == expected
    assert human_string(FloatType() if single else DoubleType(), value) == expected


@settings(max_examples=500, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False), st.booleans())
def test_floating_text_reads_back_as_the_same_value_in_javas_shape(
    value: float, single: bool
) -> None:
    if single:
        value = _float32(value) if abs(value) < 3.4e38 else 1.5
    text = java_floating_string(value, single=single)
    assert (_float32(float(text)) if single else float(text)) == value
    assert re.fullmatch(r"-?(\d+\.\d+|\d\.\d+E-?\d+)", text)
    plain = "E" not in text
    assert plain == (value == 0 or 1e-3 <= abs(value) < 1e7)

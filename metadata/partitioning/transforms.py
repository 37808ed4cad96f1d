"""Iceberg partition transforms (spec: "Partition Transforms").

Partition specs and sort orders store transforms as the spec's strings (``"bucket[16]"``);
:func:`parse_transform` turns such a string into a frozen :class:`Transform` value that knows
its result type, which source types it accepts, and how to apply itself to one value
(:meth:`Transform.apply`) or to a pyarrow array (:meth:`Transform.apply_arrow`). Values are in
lakecat's in-memory form (see :mod:`lakecat.metadata.schema.types`); arrays use the arrow types
lakecat writes (date32, time64[us], timestamp[us], timestamp[us, UTC], int32/int64,
decimal128, string, binary, fixed_size_binary).

Bucketing hashes integer-like columns (int, long, date, time, timestamps) with a vectorized
Murmur3 written in pyarrow compute kernels; strings, binaries, uuids and decimals are hashed
one value at a time with ``mmh3``.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import mmh3
import pyarrow as pa
import pyarrow.compute as pc

from lakecat.metadata.errors import ValidationError
from lakecat.metadata.schema.conversions import (
    INT_MAX,
    INT_MIN,
    LONG_MAX,
    LONG_MIN,
    MICROS_PER_DAY,
    MICROS_PER_HOUR,
    civil_from_days,
    days_from_civil,
    decimal_to_unscaled,
    format_year,
    human_string,
    unscaled_to_decimal,
    unscaled_to_min_bytes,
)
from lakecat.metadata.schema.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    PrimitiveType,
    StringType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

_ARROW_INPUT_ERRORS = (
    pa.ArrowInvalid,
    pa.ArrowNotImplementedError,
    pa.ArrowTypeError,
    TypeError,
    AttributeError,
)


@dataclass(frozen=True, slots=True)
class Transform:
    """Base of every partition transform. Instances are immutable values."""

    preserves_order: ClassVar[bool] = False
    is_identity: ClassVar[bool] = False
    is_void: ClassVar[bool] = False

    def __str__(self) -> str:
        raise NotImplementedError

    def result_type(self, source: IcebergType) -> PrimitiveType:
        """The type of the partition values this transform produces from ``source``."""
        raise NotImplementedError

    def can_transform(self, source: IcebergType) -> bool:
        """Whether the spec allows this transform on a column of type ``source``."""
        raise NotImplementedError

    def apply(self, source: PrimitiveType, value: Any) -> Any:
        """Transform one in-memory value of type ``source``; None stays None."""
        self._check(source)
        if value is None:
            return None
        try:
            return self._apply(source, value)
        except (TypeError, AttributeError, struct.error) as exc:  # not the in-memory form
            raise ValidationError(f"cannot apply {self} to {value!r} of type {source}") from exc

    def apply_arrow(self, source: PrimitiveType, array: pa.Array | pa.ChunkedArray) -> pa.Array:
        """Transform a whole arrow column of type ``source`` (nulls stay null)."""
        self._check(source)
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        if isinstance(array.type, pa.BaseExtensionType):  # e.g. arrow's canonical uuid type
            array = array.storage
        if not _arrow_type_fits(source, array.type):
            raise ValidationError(f"a {array.type} column does not hold {source} values")
        try:
            return self._apply_arrow(source, array)
        except _ARROW_INPUT_ERRORS as exc:  # overflow, or an arrow type that does not fit source
            raise ValidationError(
                f"cannot apply {self} to a {array.type} column of type {source}: {exc}"
            ) from exc

    def to_human_string(self, result_type: IcebergType, value: Any) -> str:
        """The partition value as it appears in data file paths (Java ``toHumanString``).

        The caller URL-encodes it for a path, as Java's ``partitionToPath`` does.
        """
        return str(human_string(result_type, value))

    def satisfies_order_of(self, other: Transform, *, source: IcebergType | None = None) -> bool:
        """Whether data ordered by this transform is also ordered by ``other``.

        ``source`` (the column type both apply to) lets truncate compare widths.
        """
        return self == other

    def dedup_name(self) -> str:
        """Key under which two partition fields on one column count as duplicates."""
        return str(self)

    def _check(self, source: PrimitiveType) -> None:
        if not self.can_transform(source):
            raise ValidationError(f"transform {self} cannot be applied to type {source}")

    def _apply(self, source: PrimitiveType, value: Any) -> Any:
        raise NotImplementedError

    def _apply_arrow(self, source: PrimitiveType, array: pa.Array) -> pa.Array:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class IdentityTransform(Transform):
    preserves_order: ClassVar[bool] = True
    is_identity: ClassVar[bool] = True

    def __str__(self) -> str:
        return "identity"

    def result_type(self, source: IcebergType) -> PrimitiveType:
        return _primitive(source, self)

    def can_transform(self, source: IcebergType) -> bool:
        return isinstance(source, PrimitiveType)

    def satisfies_order_of(self, other: Transform, *, source: IcebergType | None = None) -> bool:
        # Ordering by the value itself orders by any monotonic function of it.
        return other.preserves_order

    def _apply(self, source: PrimitiveType, value: Any) -> Any:
        return value

    def _apply_arrow(self, source: PrimitiveType, array: pa.Array) -> pa.Array:
        return array


@dataclass(frozen=True, slots=True)
class BucketTransform(Transform):
    """``bucket[N]``: Murmur3 (x86, 32-bit, seed 0) hash of the value, modulo N."""

    num_buckets: int = 1

    def __post_init__(self) -> None:
        if self.num_buckets <= 0:
            raise ValidationError(f"bucket needs a positive number of buckets: {self.num_buckets}")

    def __str__(self) -> str:
        return f"bucket[{self.num_buckets}]"

    def result_type(self, source: IcebergType) -> PrimitiveType:
        return IntegerType()

    def can_transform(self, source: IcebergType) -> bool:
        return isinstance(source, _BUCKET_SOURCES)

    def _apply(self, source: PrimitiveType, value: Any) -> int:
        return (hash_value(source, value) & int(INT_MAX)) % self.num_buckets

    def _apply_arrow(self, source: PrimitiveType, array: pa.Array) -> pa.Array:
        return _bucket_array(source, array, self.num_buckets)


@dataclass(frozen=True, slots=True)
class TruncateTransform(Transform):
    """``truncate[W]``: round numbers down to a multiple of W, cut strings/binary to W."""

    width: int = 1
    preserves_order: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if self.width <= 0:
            raise ValidationError(f"truncate needs a positive width: {self.width}")

    def __str__(self) -> str:
        return f"truncate[{self.width}]"

    def result_type(self, source: IcebergType) -> PrimitiveType:
        return _primitive(source, self)

    def can_transform(self, source: IcebergType) -> bool:
        return isinstance(source, _TRUNCATE_SOURCES)

    def satisfies_order_of(self, other: Transform, *, source: IcebergType | None = None) -> bool:
        if self == other:
            return True
        if not isinstance(other, TruncateTransform):
            return False
        if isinstance(source, (StringType, BinaryType)):
            # A longer prefix orders everything a shorter prefix does.
            return self.width >= other.width
        if isinstance(source, (IntegerType, LongType, DecimalType)):
            # floor(v / W2) is a monotonic function of floor(v / W1) when W1 divides W2.
            return other.width % self.width == 0
        return False

    def _apply(self, source: PrimitiveType, value: Any) -> Any:
        if isinstance(source, (StringType, BinaryType)):
            return value[: self.width]
        if isinstance(source, DecimalType):
            unscaled = decimal_to_unscaled(source, value)
            truncated = unscaled - unscaled % self.width  # Python's % floors, as in the spec
            if -truncated >= int(10**source.precision):
                raise ValidationError(f"{self} of {value} overflows {source}")
            return unscaled_to_decimal(truncated, source.scale)
        low, high = (INT_MIN, INT_MAX) if isinstance(source, IntegerType) else (LONG_MIN, LONG_MAX)
        result = value - value % self.width
        if result < low or result > high:
            raise ValidationError(f"{self} of {value} overflows {source}")
        return result

    def _apply_arrow(self, source: PrimitiveType, array: pa.Array) -> pa.Array:
        if isinstance(source, StringType):
            return pc.utf8_slice_codeunits(array, 0, self.width)
        if isinstance(source, BinaryType):
            return pc.binary_slice(array, 0, self.width)
        if isinstance(source, DecimalType):
            values = [None if v is None else self._apply(source, v) for v in array.to_pylist()]
            return pa.array(values, type=array.type)
        as_long = pc.cast(array, pa.int64())
        truncated = pc.multiply_checked(_floor_div(as_long, self.width), self.width)
        return pc.cast(truncated, array.type)  # a safe cast: overflow raises


@dataclass(frozen=True, slots=True)
class _TimeTransform(Transform):
    """Shared behaviour of year, month, day and hour."""

    preserves_order: ClassVar[bool] = True
    # Finer granularities have smaller numbers; a finer order satisfies a coarser one.
    granularity: ClassVar[int] = 0

    def can_transform(self, source: IcebergType) -> bool:
        return isinstance(source, (DateType, TimestampType, TimestamptzType))

    def result_type(self, source: IcebergType) -> PrimitiveType:
        return IntegerType()

    def satisfies_order_of(self, other: Transform, *, source: IcebergType | None = None) -> bool:
        return isinstance(other, _TimeTransform) and self.granularity <= other.granularity

    def dedup_name(self) -> str:
        # At most one time-based partition field per column (Java's "time").
        return "time"

    def _apply_each(self, source: PrimitiveType, array: pa.Array) -> pa.Array:
        values = _as_int64(source, array).to_pylist()
        return pa.array([None if v is None else self._apply(source, v) for v in values], pa.int32())


# Arrow's calendar kernels (year, month) hold the year in 16 bits: beyond +-32767 they wrap.
_ARROW_MIN_DAY = days_from_civil(-32767, 1, 1)
_ARROW_MAX_DAY = days_from_civil(32767, 12, 31)


def _within_arrow_calendar(source: PrimitiveType, array: pa.Array) -> bool:
    days = _as_int64(source, array)
    if not isinstance(source, DateType):
        days = _floor_div(days, MICROS_PER_DAY)
    bounds = pc.min_max(days)
    low, high = bounds["min"].as_py(), bounds["max"].as_py()
    return low is None or (low >= _ARROW_MIN_DAY and high <= _ARROW_MAX_DAY)


def _days(source: PrimitiveType, value: int) -> int:
    return value if isinstance(source, DateType) else value // MICROS_PER_DAY


@dataclass(frozen=True, slots=True)
class YearTransform(_TimeTransform):
    """Years since 1970 (negative before)."""

    granularity: ClassVar[int] = 4

    def __str__(self) -> str:
        return "year"

    def to_human_string(self, result_type: IcebergType, value: Any) -> str:
        return "null" if value is None else format_year(1970 + value)

    def _apply(self, source: PrimitiveType, value: Any) -> int:
        return int(civil_from_days(_days(source, value))[0]) - 1970

    def _apply_arrow(self, source: PrimitiveType, array: pa.Array) -> pa.Array:
        if not _within_arrow_calendar(source, array):
            return self._apply_each(source, array)
        return pc.cast(pc.subtract(pc.year(array), 1970), pa.int32())


@dataclass(frozen=True, slots=True)
class MonthTransform(_TimeTransform):
    """Months since 1970-01 (negative before)."""

    granularity: ClassVar[int] = 3

    def __str__(self) -> str:
        return "month"

    def to_human_string(self, result_type: IcebergType, value: Any) -> str:
        if value is None:
            return "null"
        years, month = divmod(value, 12)
        return f"{format_year(1970 + years)}-{month + 1:02d}"

    def _apply(self, source: PrimitiveType, value: Any) -> int:
        year, month, _ = civil_from_days(_days(source, value))
        return int((year - 1970) * 12 + month - 1)

    def _apply_arrow(self, source: PrimitiveType, array: pa.Array) -> pa.Array:
        if not _within_arrow_calendar(source, array):
            return self._apply_each(source, array)
        years = pc.subtract(pc.year(array), 1970)
        months = pc.add(pc.multiply(years, 12), pc.subtract(pc.month(array), 1))
        return pc.cast(months, pa.int32())


@dataclass(frozen=True, slots=True)
class DayTransform(_TimeTransform):
    """Days since 1970-01-01; the result type is date, as in Java and pyiceberg."""

    granularity: ClassVar[int] = 2

    def __str__(self) -> str:
        return "day"

    def result_type(self, source: IcebergType) -> PrimitiveType:
        return DateType()

    def _apply(self, source: PrimitiveType, value: Any) -> int:
        return _days(source, value)

    def _apply_arrow(self, source: PrimitiveType, array: pa.Array) -> pa.Array:
        if isinstance(source, DateType):
            return array
        days = _floor_div(pc.cast(array, pa.int64()), MICROS_PER_DAY)
        return pc.cast(pc.cast(days, pa.int32()), pa.date32())


@dataclass(frozen=True, slots=True)
class HourTransform(_TimeTransform):
    """Hours since 1970-01-01T00:00 (negative before)."""

    granularity: ClassVar[int] = 1

    def __str__(self) -> str:
        return "hour"

    def can_transform(self, source: IcebergType) -> bool:
        return isinstance(source, (TimestampType, TimestamptzType))

    def to_human_string(self, result_type: IcebergType, value: Any) -> str:
        if value is None:
            return "null"
        days, hour = divmod(value, 24)
        year, month, day = civil_from_days(days)
        return f"{format_year(year)}-{month:02d}-{day:02d}-{hour:02d}"

    def _apply(self, source: PrimitiveType, value: Any) -> int:
        return int(value // MICROS_PER_HOUR)

    def _apply_arrow(self, source: PrimitiveType, array: pa.Array) -> pa.Array:
        return pc.cast(_floor_div(pc.cast(array, pa.int64()), MICROS_PER_HOUR), pa.int32())


@dataclass(frozen=True, slots=True)
class VoidTransform(Transform):
    """Always null; used to drop a partition field in v1 tables."""

    is_void: ClassVar[bool] = True

    def __str__(self) -> str:
        return "void"

    def result_type(self, source: IcebergType) -> PrimitiveType:
        return _primitive(source, self)

    def can_transform(self, source: IcebergType) -> bool:
        return True

    def to_human_string(self, result_type: IcebergType, value: Any) -> str:
        return "null"

    def apply(self, source: PrimitiveType, value: Any) -> Any:
        return None

    def _apply_arrow(self, source: PrimitiveType, array: pa.Array) -> pa.Array:
        return pa.nulls(len(array), type=array.type)


@dataclass(frozen=True, slots=True)
class UnknownTransform(Transform):
    """A transform found in existing metadata that lakecat does not know (e.g. a newer spec's).

    It round-trips through metadata unchanged but cannot be applied.
    """

    text: str = ""

    def __str__(self) -> str:
        return self.text

    def result_type(self, source: IcebergType) -> PrimitiveType:
        # Java's UnknownTransform also reports string.
        return StringType()

    def can_transform(self, source: IcebergType) -> bool:
        # Another Iceberg implementation validated it when it wrote the metadata.
        return True

    def _apply(self, source: PrimitiveType, value: Any) -> Any:
        raise ValidationError(f"cannot apply unknown transform {self.text!r}")

    def _apply_arrow(self, source: PrimitiveType, array: pa.Array) -> pa.Array:
        raise ValidationError(f"cannot apply unknown transform {self.text!r}")


_ARROW_TYPE_CHECKS: dict[type[PrimitiveType], Callable[[pa.DataType], bool]] = {
    BooleanType: pa.types.is_boolean,
    IntegerType: pa.types.is_integer,
    LongType: pa.types.is_integer,
    FloatType: pa.types.is_floating,
    DoubleType: pa.types.is_floating,
    DecimalType: pa.types.is_decimal,
    DateType: pa.types.is_date32,
    TimeType: pa.types.is_time,
    TimestampType: pa.types.is_timestamp,
    TimestamptzType: pa.types.is_timestamp,
    StringType: lambda t: pa.types.is_string(t) or pa.types.is_large_string(t),
    UUIDType: pa.types.is_fixed_size_binary,
    FixedType: pa.types.is_fixed_size_binary,
    BinaryType: lambda t: pa.types.is_binary(t) or pa.types.is_large_binary(t),
}


def _arrow_type_fits(source: PrimitiveType, arrow_type: pa.DataType) -> bool:
    """Whether an arrow column can hold values of ``source`` (casts would silently parse)."""
    check = _ARROW_TYPE_CHECKS.get(type(source))
    return check is None or bool(check(arrow_type))


_BUCKET_SOURCES = (
    IntegerType,
    LongType,
    DecimalType,
    DateType,
    TimeType,
    TimestampType,
    TimestamptzType,
    StringType,
    UUIDType,
    FixedType,
    BinaryType,
)
_TRUNCATE_SOURCES = (IntegerType, LongType, DecimalType, StringType, BinaryType)

_PARAMETERIZED = re.compile(r"^(bucket|truncate)\[\s*(-?\d+)\s*\]$")  # (a count below 1 is refused)
_PARAMETERIZED_FACTORY: dict[str, Callable[[int], Transform]] = {
    "bucket": BucketTransform,
    "truncate": TruncateTransform,
}
_SIMPLE: dict[str, Transform] = {
    "identity": IdentityTransform(),
    "year": YearTransform(),
    "month": MonthTransform(),
    "day": DayTransform(),
    "hour": HourTransform(),
    "void": VoidTransform(),
}


def parse_transform(text: str, *, strict: bool = True) -> Transform:
    """Parse a spec transform string such as ``"bucket[16]"`` or ``"day"``.

    With ``strict`` (user input) an unknown string raises :class:`ValidationError`; with
    ``strict=False`` (metadata written by another implementation) it becomes an
    :class:`UnknownTransform` that round-trips unchanged. ``bucket[0]``, ``bucket[-1]`` and
    ``truncate[0]`` are always errors (a count or width must be positive).
    """
    normalized = text.strip().lower()
    simple = _SIMPLE.get(normalized)
    if simple is not None:
        return simple
    if m := _PARAMETERIZED.match(normalized):
        return _PARAMETERIZED_FACTORY[m.group(1)](int(m.group(2)))
    if strict:
        raise ValidationError(
            f"unknown partition transform {text!r}; expected identity, bucket[N], "
            "truncate[W], year, month, day, hour or void"
        )
    return UnknownTransform(text)


_FIELD_NAME_SUFFIX: dict[type[Transform], str] = {
    BucketTransform: "_bucket",
    TruncateTransform: "_trunc",
    YearTransform: "_year",
    MonthTransform: "_month",
    DayTransform: "_day",
    HourTransform: "_hour",
    VoidTransform: "_null",
}


def default_partition_field_name(
    source_name: str, transform: Transform, *, evolving: bool = False
) -> str:
    """The partition field name Java's ``PartitionSpec.Builder`` picks for a new table's spec
    (``ts_day``, ``id_bucket``), or with ``evolving`` the one its ``UpdatePartitionSpec``
    picks for a field added to a table's spec, which also names the bucket count or width
    (``id_bucket_16``, ``name_trunc_4``; ``BaseUpdatePartitionSpec.PartitionNameGenerator``).

    Unknown transforms get a sanitized suffix of their text.
    """
    if transform.is_identity:
        return source_name
    if evolving and isinstance(transform, BucketTransform):
        return f"{source_name}_bucket_{transform.num_buckets}"
    if evolving and isinstance(transform, TruncateTransform):
        return f"{source_name}_trunc_{transform.width}"
    suffix = _FIELD_NAME_SUFFIX.get(type(transform))
    if suffix is None:
        return f"{source_name}_{_sanitize(str(transform))}"
    return source_name + suffix


def _sanitize(text: str) -> str:
    return re.sub(r"[^0-9A-Za-z_]+", "_", text).strip("_")


def _primitive(source: IcebergType, transform: Transform) -> PrimitiveType:
    if not isinstance(source, PrimitiveType):
        raise ValidationError(f"transform {transform} cannot be applied to {source}")
    return source


def _floor_div(values: pa.Array, divisor: int) -> pa.Array:
    """Floor division of an int64 array (arrow's integer ``divide`` truncates toward zero)."""
    quotient = pc.divide(values, pa.scalar(divisor, pa.int64()))
    remainder = pc.subtract(values, pc.multiply(quotient, divisor))
    return pc.if_else(pc.less(remainder, 0), pc.subtract(quotient, 1), quotient)


# ---------------------------------------------------------------------------------------------
# The spec's 32-bit hash (Appendix B): Murmur3 x86 32-bit, seed 0.

_LONG_HASHED = (IntegerType, LongType, DateType, TimeType, TimestampType, TimestamptzType)
_LONG = struct.Struct("<q")


def hash_value(source: PrimitiveType, value: Any) -> int:
    """The spec's signed 32-bit hash of one in-memory value of type ``source``.

    int and long hash alike (as 8-byte little-endian longs) so that promoting int to long
    keeps bucket values; dates hash their day count, times and timestamps their micros.
    """
    if isinstance(source, _LONG_HASHED):
        data = _LONG.pack(value)
    elif isinstance(source, StringType):
        data = value.encode("utf-8")
    elif isinstance(source, UUIDType):
        data = value.bytes if not isinstance(value, bytes) else value
    elif isinstance(source, (FixedType, BinaryType)):
        data = bytes(value)
    elif isinstance(source, DecimalType):
        data = unscaled_to_min_bytes(decimal_to_unscaled(source, value))
    else:
        raise ValidationError(f"values of type {source} cannot be hashed for bucketing")
    return int(mmh3.hash(data, 0, signed=True))


def _bucket_array(source: PrimitiveType, array: pa.Array, num_buckets: int) -> pa.Array:
    if isinstance(source, _LONG_HASHED):
        return _bucket_longs(_as_int64(source, array), num_buckets)
    # No arrow kernel hashes variable-width values with Murmur3: one mmh3 call per value.
    buckets = [
        None if v is None else (hash_value(source, v) & INT_MAX) % num_buckets
        for v in array.to_pylist()
    ]
    return pa.array(buckets, pa.int32())


def _as_int64(source: PrimitiveType, array: pa.Array) -> pa.Array:
    """The in-memory integers (days or micros) of an integer-like arrow column."""
    arrow_type = array.type
    if isinstance(source, DateType):
        return pc.cast(pc.cast(array, pa.int32()), pa.int64())
    if pa.types.is_time(arrow_type) and arrow_type.unit != "us":
        array = pc.cast(array, pa.time64("us"))
    elif pa.types.is_timestamp(arrow_type) and arrow_type.unit != "us":
        array = pc.cast(array, pa.timestamp("us", tz=arrow_type.tz))
    return pc.cast(array, pa.int64())


_M32 = 0xFFFFFFFF


def _u64(value: int) -> pa.Scalar:
    return pa.scalar(value, pa.uint64())


def _mul32(values: pa.Array, constant: int) -> pa.Array:
    # Both factors are below 2**32, so the uint64 product is exact before masking.
    return pc.bit_wise_and(pc.multiply(values, _u64(constant)), _u64(_M32))


def _rotl32(values: pa.Array, bits: int) -> pa.Array:
    rotated = pc.bit_wise_or(
        pc.shift_left(values, _u64(bits)), pc.shift_right(values, _u64(32 - bits))
    )
    return pc.bit_wise_and(rotated, _u64(_M32))


def _murmur3_longs(longs: pa.Array) -> pa.Array:
    """Murmur3 x86 32-bit (seed 0) of each int64 as 8 little-endian bytes, as uint64 values."""
    raw = longs.view(pa.uint64())
    h: pa.Array | None = None
    for block in (pc.bit_wise_and(raw, _u64(_M32)), pc.shift_right(raw, _u64(32))):
        k = _mul32(_rotl32(_mul32(block, 0xCC9E2D51), 15), 0x1B873593)
        h = k if h is None else pc.bit_wise_xor(h, k)
        h = _rotl32(h, 13)
        h = pc.bit_wise_and(pc.add(pc.multiply(h, _u64(5)), _u64(0xE6546B64)), _u64(_M32))
    assert h is not None
    h = pc.bit_wise_xor(h, _u64(8))  # the input length
    h = pc.bit_wise_xor(h, pc.shift_right(h, _u64(16)))
    h = _mul32(h, 0x85EBCA6B)
    h = pc.bit_wise_xor(h, pc.shift_right(h, _u64(13)))
    h = _mul32(h, 0xC2B2AE35)
    return pc.bit_wise_xor(h, pc.shift_right(h, _u64(16)))


def _bucket_longs(longs: pa.Array, num_buckets: int) -> pa.Array:
    # (hash & Integer.MAX_VALUE) % N; the masked value is non-negative, so truncating
    # division is floor division here.
    positive = pc.bit_wise_and(_murmur3_longs(longs), _u64(INT_MAX))
    quotient = pc.divide(positive, _u64(num_buckets))
    remainder = pc.subtract(positive, pc.multiply(quotient, _u64(num_buckets)))
    return pc.cast(remainder, pa.int32())

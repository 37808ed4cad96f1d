"""Single values of Iceberg primitive types in their serialized forms (spec: Appendix D).

Values are in lakecat's in-memory form (see :mod:`lakecat.metadata.schema.types`): dates are days,
times and timestamps are microseconds, decimals are :class:`~decimal.Decimal`, uuids are
:class:`uuid.UUID`, fixed and binary are :class:`bytes`.

* :func:`to_bytes` / :func:`from_bytes`: the binary single-value serialization, used for
  column bounds in manifests and partition summaries.
* :func:`to_json_value` / :func:`from_json_value`: the JSON single-value serialization, used
  for default values.
* :func:`from_python` / :func:`to_python`: between natural Python values (``datetime.date``,
  ISO strings, ...) and the in-memory form; ``from_python`` validates user input.
* ``truncate_*_bound_*``: shortened column bounds for the ``truncate(N)`` metrics mode.

The calendar arithmetic here works on plain integers so that dates far outside Python's
``datetime`` range (years 1..9999) still convert, as they do in Java.
"""

from __future__ import annotations

import base64
import ctypes
import datetime as dt
import math
import re
import struct
import uuid
from decimal import Decimal, InvalidOperation
from typing import Any

from lakecat.metadata.errors import CorruptMetadata, ValidationError
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

MICROS_PER_SECOND = 1_000_000
MICROS_PER_HOUR = 3_600 * MICROS_PER_SECOND
MICROS_PER_DAY = 24 * MICROS_PER_HOUR
INT_MIN: int = -(2**31)
INT_MAX: int = 2**31 - 1
LONG_MIN: int = -(2**63)
LONG_MAX: int = 2**63 - 1
MAX_CODE_POINT = 0x10FFFF

_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_ONE_MICRO = dt.timedelta(microseconds=1)
_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()

_INT = struct.Struct("<i")
_LONG = struct.Struct("<q")
_FLOAT = struct.Struct("<f")
_DOUBLE = struct.Struct("<d")

# ---------------------------------------------------------------------------------------------
# Calendar arithmetic on integers (H. Hinnant's days_from_civil / civil_from_days algorithms).


def civil_from_days(days: int) -> tuple[int, int, int]:
    """(year, month, day) of the proleptic Gregorian date ``days`` after 1970-01-01."""
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1_460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (1 if month <= 2 else 0)
    return year, month, day


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days from 1970-01-01 to the proleptic Gregorian date (year, month, day)."""
    y = year - (1 if month <= 2 else 0)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (month - 3 if month > 2 else month + 9) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146_097 + doe - 719_468


def format_year(year: int) -> str:
    """A year as Java's ``LocalDate.toString`` prints it ("0042", "-0001", "+10000")."""
    if year > 9999:
        return f"+{year}"
    if year < 0:
        return f"-{-year:04d}"
    return f"{year:04d}"


def format_date(days: int) -> str:
    """ISO date ("2017-11-16") of a day count."""
    year, month, day = civil_from_days(days)
    return f"{format_year(year)}-{month:02d}-{day:02d}"


def _split_time(micros_of_day: int) -> tuple[int, int, int, int]:
    seconds, micros = divmod(micros_of_day, MICROS_PER_SECOND)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    return hour, minute, second, micros


def format_time(micros_of_day: int) -> str:
    """ISO time with microsecond precision ("22:31:08.000001")."""
    hour, minute, second, micros = _split_time(micros_of_day)
    return f"{hour:02d}:{minute:02d}:{second:02d}.{micros:06d}"


def format_timestamp(micros: int) -> str:
    """ISO timestamp without zone, microsecond precision ("2017-11-16T22:31:08.000001")."""
    days, of_day = divmod(micros, MICROS_PER_DAY)
    return f"{format_date(days)}T{format_time(of_day)}"


# ---------------------------------------------------------------------------------------------
# Decimals: the unscaled integer, computed exactly (no decimal context rounding).


def decimal_to_unscaled(t: DecimalType, value: Decimal) -> int:
    """The unscaled integer of ``value`` at the scale of ``t``.

    Raises :class:`ValidationError` if ``value`` has more fractional digits than the scale
    allows, or more digits than the precision.
    """
    if not value.is_finite():
        raise ValidationError(f"{value} is not a valid {t}")
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)  # finite
    magnitude = int("".join(map(str, digits)) or "0")
    shift = exponent + t.scale
    if shift >= 0:
        magnitude *= int(10**shift)
    else:
        magnitude, dropped = divmod(magnitude, int(10**-shift))
        if dropped:
            raise ValidationError(f"{value} has more than {t.scale} fractional digits for {t}")
    if magnitude >= int(10**t.precision):
        raise ValidationError(f"{value} has more than {t.precision} digits for {t}")
    return -magnitude if sign else magnitude


def unscaled_to_decimal(unscaled: int, scale: int) -> Decimal:
    """The Decimal ``unscaled * 10**-scale``, with exactly ``scale`` fractional digits."""
    digits = tuple(int(c) for c in str(abs(unscaled)))
    return Decimal((1 if unscaled < 0 else 0, digits, -scale))


def unscaled_to_min_bytes(unscaled: int) -> bytes:
    """Two's-complement big-endian bytes of minimal length (Java ``BigInteger.toByteArray``)."""
    length = (unscaled if unscaled >= 0 else ~unscaled).bit_length() // 8 + 1
    return unscaled.to_bytes(length, "big", signed=True)


# ---------------------------------------------------------------------------------------------
# Binary single-value serialization.


def to_bytes(t: PrimitiveType, value: Any) -> bytes:
    """Serialize one in-memory value of type ``t`` (spec: binary single-value serialization)."""
    try:
        if isinstance(t, BooleanType):
            return b"\x01" if value else b"\x00"
        if isinstance(t, (IntegerType, DateType)):
            return _INT.pack(value)
        if isinstance(t, (LongType, TimeType, TimestampType, TimestamptzType)):
            return _LONG.pack(value)
        if isinstance(t, FloatType):
            return _FLOAT.pack(value)
        if isinstance(t, DoubleType):
            return _DOUBLE.pack(value)
        if isinstance(t, StringType):
            return bytes(value.encode("utf-8"))
        if isinstance(t, UUIDType):
            return bytes(value.bytes)
        if isinstance(t, FixedType) and len(value) != t.length:
            raise ValidationError(f"{t} value has {len(value)} bytes")
        if isinstance(t, (FixedType, BinaryType)):
            return bytes(value)
        if isinstance(t, DecimalType):
            return unscaled_to_min_bytes(decimal_to_unscaled(t, value))
    except (struct.error, AttributeError, TypeError, UnicodeEncodeError) as exc:
        raise ValidationError(f"cannot serialize {value!r} as {t}: {exc}") from exc
    raise ValidationError(f"binary serialization of type {t} is not supported")


def from_bytes(t: PrimitiveType, data: bytes) -> Any:
    """Read one value of type ``t`` written by :func:`to_bytes` (or any Iceberg writer).

    Malformed bytes raise :class:`CorruptMetadata`: they come from stored metadata.
    """
    try:
        if isinstance(t, BooleanType):
            if len(data) != 1:
                raise CorruptMetadata(f"boolean value needs 1 byte, got {len(data)}")
            return data != b"\x00"
        if isinstance(t, (IntegerType, DateType)):
            return _INT.unpack(data)[0]
        if isinstance(t, (LongType, TimeType, TimestampType, TimestamptzType)):
            return _LONG.unpack(data)[0]
        if isinstance(t, FloatType):
            return _FLOAT.unpack(data)[0]
        if isinstance(t, DoubleType):
            return _DOUBLE.unpack(data)[0]
        if isinstance(t, StringType):
            return bytes(data).decode("utf-8")
        if isinstance(t, UUIDType):
            return uuid.UUID(bytes=bytes(data))
        if isinstance(t, FixedType):
            if len(data) != t.length:
                raise CorruptMetadata(f"{t} value has {len(data)} bytes")
            return bytes(data)
        if isinstance(t, BinaryType):
            return bytes(data)
        if isinstance(t, DecimalType):
            if not data:
                raise CorruptMetadata(f"empty {t} value")
            return unscaled_to_decimal(int.from_bytes(data, "big", signed=True), t.scale)
    except (struct.error, UnicodeDecodeError, ValueError) as exc:
        raise CorruptMetadata(f"cannot read {t} value from {bytes(data).hex()}: {exc}") from exc
    raise CorruptMetadata(f"binary serialization of type {t} is not supported")


def decode_bound(t: IcebergType, data: bytes) -> Any:
    """A column bound or partition summary bound of type ``t``: :func:`from_bytes`, except
    that bounds written before an int -> long or float -> double promotion keep their 4 bytes
    (Java's ``Conversions.fromByteBuffer`` reads them the same way)."""
    if not isinstance(t, PrimitiveType):
        raise CorruptMetadata(f"a bound of the non-primitive type {t}")
    if isinstance(t, LongType) and len(data) == 4:
        return from_bytes(IntegerType(), data)
    if isinstance(t, DoubleType) and len(data) == 4:
        return from_bytes(FloatType(), data)
    return from_bytes(t, data)


# ---------------------------------------------------------------------------------------------
# JSON single-value serialization.


def to_json_value(t: PrimitiveType, value: Any) -> Any:
    """Serialize one in-memory value of type ``t`` as the spec's JSON single value."""
    if value is None:
        return None
    if isinstance(t, (BooleanType, IntegerType, LongType, FloatType, DoubleType, StringType)):
        return value
    if isinstance(t, DateType):
        return format_date(value)
    if isinstance(t, TimeType):
        return format_time(value)
    if isinstance(t, TimestampType):
        return format_timestamp(value)
    if isinstance(t, TimestamptzType):
        return format_timestamp(value) + "+00:00"
    if isinstance(t, UUIDType):
        return str(value)
    if isinstance(t, (FixedType, BinaryType)):
        return bytes(value).hex()
    if isinstance(t, DecimalType):
        return format_decimal(t, value)
    raise ValidationError(f"JSON serialization of type {t} is not supported")


def format_decimal(t: DecimalType, value: Decimal) -> str:
    """Plain decimal string with exactly the type's scale ("14.20")."""
    unscaled = decimal_to_unscaled(t, value)
    digits = str(abs(unscaled)).rjust(t.scale + 1, "0")
    sign = "-" if unscaled < 0 else ""
    if t.scale == 0:
        return sign + digits
    return f"{sign}{digits[: -t.scale]}.{digits[-t.scale :]}"


def from_json_value(t: PrimitiveType, obj: Any) -> Any:
    """Read a JSON single value of type ``t`` into the in-memory form.

    Raises :class:`ValidationError` when ``obj`` is not a value of ``t``.
    """
    if obj is None:
        return None
    if isinstance(t, (FixedType, BinaryType)):
        if not isinstance(obj, str):
            raise ValidationError(f"{obj!r} is not a hex string for {t}")
        try:
            return from_python(t, bytes.fromhex(obj))
        except ValueError as exc:
            raise ValidationError(f"{obj!r} is not a hex string for {t}") from exc
    if isinstance(t, (DecimalType, DateType, TimeType, TimestampType, TimestamptzType)) and (
        not isinstance(obj, str)
    ):
        raise ValidationError(f"{obj!r} is not a JSON string for {t}")
    if isinstance(t, (FloatType, DoubleType)) and isinstance(obj, str):
        # Python's json module reads NaN/Infinity as floats; other writers may quote them.
        raise ValidationError(f"{obj!r} is not a JSON number for {t}")
    if isinstance(t, (IntegerType, LongType)) and not isinstance(obj, int):
        raise ValidationError(f"{obj!r} is not a JSON integer for {t}")
    if isinstance(t, BooleanType) and not isinstance(obj, bool):
        raise ValidationError(f"{obj!r} is not a JSON boolean for {t}")
    return from_python(t, obj)


# ---------------------------------------------------------------------------------------------
# Natural Python values <-> in-memory form.


def from_python(t: PrimitiveType, value: Any) -> Any:
    """Convert a natural Python value to lakecat's in-memory form of type ``t``.

    Accepts, besides the in-memory form itself (so an int is days for a date and micros for a
    timestamp, as Java binds integer literals): ``datetime.date``/``time``/``datetime`` and
    ISO-8601 strings for temporal types (a naive datetime or an offset-less string for
    ``timestamptz`` is taken as UTC; an aware one for ``timestamp`` is refused),
    ``Decimal``/``int``/``float``/``str`` for decimals (refused if they need rounding),
    ``str``/16 ``bytes``/``uuid.UUID`` for uuids, numeric strings for numbers and
    "true"/"false" for booleans. Floats are rounded to what a 4-byte ``float`` stores.
    Raises :class:`ValidationError` when the value does not fit ``t``.
    """
    if value is None:
        return None
    converter = _FROM_PYTHON.get(type(t))
    if converter is None:
        raise ValidationError(f"values of type {t} are not supported")
    return converter(t, value)


def _invalid(t: PrimitiveType, value: Any, why: str = "") -> ValidationError:
    suffix = f" ({why})" if why else ""
    return ValidationError(f"{value!r} is not a valid {t}{suffix}")


def _boolean(t: PrimitiveType, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise _invalid(t, value)


def _integral(t: PrimitiveType, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool):
        raise _invalid(t, value)
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError as exc:
            raise _invalid(t, value) from exc
    if not isinstance(value, int):
        raise _invalid(t, value)
    if not low <= value <= high:
        raise _invalid(t, value, f"out of range {low}..{high}")
    return int(value)


def _int(t: PrimitiveType, value: Any) -> int:
    return _integral(t, value, INT_MIN, INT_MAX)


def _long(t: PrimitiveType, value: Any) -> int:
    return _integral(t, value, LONG_MIN, LONG_MAX)


def _floating(t: PrimitiveType, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal, str)):
        raise _invalid(t, value)
    try:
        result = float(value)
    except (ValueError, OverflowError) as exc:
        raise _invalid(t, value) from exc
    if isinstance(t, FloatType):
        # Keep exactly what a 4-byte float stores, so bounds and values compare consistently.
        try:
            result = float(_FLOAT.unpack(_FLOAT.pack(result))[0])
        except (struct.error, OverflowError) as exc:
            raise _invalid(t, value, "out of float range") from exc
    return result


def _decimal(t: PrimitiveType, value: Any) -> Decimal:
    assert isinstance(t, DecimalType)
    if isinstance(value, bool):
        raise _invalid(t, value)
    if isinstance(value, float):
        value = repr(value)  # the shortest decimal that round-trips, not the binary expansion
    if isinstance(value, (int, str)):
        try:
            value = Decimal(value.strip() if isinstance(value, str) else value)
        except InvalidOperation as exc:
            raise _invalid(t, value) from exc
    if not isinstance(value, Decimal):
        raise _invalid(t, value)
    return unscaled_to_decimal(decimal_to_unscaled(t, value), t.scale)


# ISO-8601 text, parsed with integer arithmetic so that years outside 1..9999 ("+10183",
# "-0221", as Java writes them) read back too.
_ISO_DATE = r"([+-]?\d{4,})-(\d{2})-(\d{2})"
_ISO_TIME = r"(\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?"
_DATE_TEXT = re.compile(rf"^{_ISO_DATE}$")
_TIME_TEXT = re.compile(rf"^{_ISO_TIME}$")
_TIMESTAMP_TEXT = re.compile(rf"^{_ISO_DATE}(?:[T ]{_ISO_TIME}(Z|[+-]\d{{2}}(?::?\d{{2}})?)?)?$")


def _days_of_text(t: PrimitiveType, text: str, year: str, month: str, day: str) -> int:
    y, m, d = int(year), int(month), int(day)
    days = days_from_civil(y, m, d)
    if not 1 <= m <= 12 or civil_from_days(days) != (y, m, d):
        raise _invalid(t, text)
    return days


def _micros_of_text(
    t: PrimitiveType, text: str, hour: str, minute: str, second: str | None, fraction: str | None
) -> int:
    h, m, sec = int(hour), int(minute), int(second or 0)
    if h > 23 or m > 59 or sec > 59:
        raise _invalid(t, text)
    digits = (fraction or "").ljust(9, "0")
    if digits[6:] != "000":
        raise _invalid(t, text, "finer than microseconds")
    return ((h * 60 + m) * 60 + sec) * MICROS_PER_SECOND + int(digits[:6])


def _offset_micros(offset: str) -> int:
    if offset == "Z":
        return 0
    digits = offset[1:].replace(":", "")
    minutes = int(digits[:2]) * 60 + int(digits[2:] or 0)
    return (1 if offset[0] == "+" else -1) * minutes * 60 * MICROS_PER_SECOND


def _timestamp_text(t: PrimitiveType, text: str) -> tuple[int, str | None]:
    """(micros of the wall-clock time, zone offset text or None) of an ISO timestamp."""
    match = _TIMESTAMP_TEXT.match(text.strip())
    if match is None:
        raise _invalid(t, text)
    year, month, day, hour, minute, second, fraction, offset = match.groups()
    micros = _days_of_text(t, text, year, month, day) * MICROS_PER_DAY
    if hour is not None:
        micros += _micros_of_text(t, text, hour, minute, second, fraction)
    return micros, offset


def _date(t: PrimitiveType, value: Any) -> int:
    if isinstance(value, dt.datetime):
        raise _invalid(t, value, "a datetime, not a date")
    if isinstance(value, dt.date):
        return value.toordinal() - _EPOCH_ORDINAL
    if isinstance(value, str):
        match = _DATE_TEXT.match(value.strip())
        if match is None:
            raise _invalid(t, value)
        return _integral(t, _days_of_text(t, value, *match.groups()), INT_MIN, INT_MAX)
    # Days, as Java binds an integer literal to a date.
    return _integral(t, value, INT_MIN, INT_MAX)


def _time(t: PrimitiveType, value: Any) -> int:
    if isinstance(value, str):
        match = _TIME_TEXT.match(value.strip())
        if match is None:
            raise _invalid(t, value)
        return _micros_of_text(t, value, *match.groups())
    if isinstance(value, dt.time):
        if value.utcoffset() is not None:
            raise _invalid(t, value, "time of day must not have a zone")
        seconds = (value.hour * 60 + value.minute) * 60 + value.second
        return seconds * MICROS_PER_SECOND + value.microsecond
    return _integral(t, value, 0, MICROS_PER_DAY - 1)


def _timestamp(t: PrimitiveType, value: Any) -> int:
    if isinstance(value, str):
        micros, offset = _timestamp_text(t, value)
        if offset is not None:
            raise _invalid(t, value, "timestamp without zone must not have a zone offset")
        return _integral(t, micros, LONG_MIN, LONG_MAX)
    if isinstance(value, dt.datetime):
        if value.utcoffset() is not None:
            raise _invalid(t, value, "timestamp without zone needs a naive datetime")
        return int((value - _EPOCH) // _ONE_MICRO)
    if isinstance(value, dt.date):
        return (value.toordinal() - _EPOCH_ORDINAL) * MICROS_PER_DAY
    return _integral(t, value, LONG_MIN, LONG_MAX)


def _timestamptz(t: PrimitiveType, value: Any) -> int:
    if isinstance(value, str):
        micros, offset = _timestamp_text(t, value)
        if offset is not None:  # without an offset the text is taken as UTC
            micros -= _offset_micros(offset)
        return _integral(t, micros, LONG_MIN, LONG_MAX)
    if isinstance(value, dt.datetime):
        if value.utcoffset() is None:
            value = value.replace(tzinfo=dt.UTC)
        return int((value - _EPOCH_UTC) // _ONE_MICRO)
    if isinstance(value, dt.date):
        return (value.toordinal() - _EPOCH_ORDINAL) * MICROS_PER_DAY
    return _integral(t, value, LONG_MIN, LONG_MAX)


def _string(t: PrimitiveType, value: Any) -> str:
    if not isinstance(value, str):
        raise _invalid(t, value)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:  # lone surrogates cannot be written
        raise _invalid(t, value, "not encodable as UTF-8") from exc
    return value


def _uuid(t: PrimitiveType, value: Any) -> uuid.UUID:
    if isinstance(value, uuid.UUID):
        return value
    try:
        if isinstance(value, str):
            return uuid.UUID(value.strip())
        if isinstance(value, (bytes, bytearray, memoryview)):
            return uuid.UUID(bytes=bytes(value))
    except ValueError as exc:
        raise _invalid(t, value) from exc
    raise _invalid(t, value)


def _binary(t: PrimitiveType, value: Any) -> bytes:
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise _invalid(t, value)
    result = bytes(value)
    if isinstance(t, FixedType) and len(result) != t.length:
        raise _invalid(t, value, f"{len(result)} bytes, expected {t.length}")
    return result


_FROM_PYTHON: dict[type[PrimitiveType], Any] = {
    BooleanType: _boolean,
    IntegerType: _int,
    LongType: _long,
    FloatType: _floating,
    DoubleType: _floating,
    DecimalType: _decimal,
    DateType: _date,
    TimeType: _time,
    TimestampType: _timestamp,
    TimestamptzType: _timestamptz,
    StringType: _string,
    UUIDType: _uuid,
    FixedType: _binary,
    BinaryType: _binary,
}


def to_python(t: PrimitiveType, value: Any) -> Any:
    """Convert an in-memory value to a natural Python value for display.

    date -> ``datetime.date``; time -> ``datetime.time``; timestamp -> naive
    ``datetime.datetime``; timestamptz -> ``datetime.datetime`` in UTC; everything else is
    returned as is. Raises :class:`ValidationError` for dates outside Python's years 1..9999.
    """
    if value is None:
        return None
    try:
        if isinstance(t, DateType):
            return dt.date.fromordinal(value + _EPOCH_ORDINAL)
        if isinstance(t, TimeType):
            hour, minute, second, micros = _split_time(value)
            return dt.time(hour, minute, second, micros)
        if isinstance(t, TimestampType):
            return _EPOCH + dt.timedelta(microseconds=value)
        if isinstance(t, TimestamptzType):
            return _EPOCH_UTC + dt.timedelta(microseconds=value)
    except (ValueError, OverflowError) as exc:
        raise ValidationError(f"{value!r} as {t} is outside Python's datetime range") from exc
    return value


# ---------------------------------------------------------------------------------------------
# Truncated bounds for the truncate(N) metrics mode.


def truncate_lower_bound_string(value: str, width: int) -> str:
    """The first ``width`` code points: still <= every string that starts with them."""
    return value[:width]


def truncate_upper_bound_string(value: str, width: int) -> str | None:
    """A string of at most ``width`` code points that is >= ``value``, or None if none exists.

    Truncates, then increments the last code point that can be incremented (dropping the
    ones after it), like Java's ``UnicodeUtil.truncateStringMax``. Surrogates are skipped
    because they cannot be written as UTF-8.
    """
    if len(value) <= width:
        return value
    prefix = value[:width]
    for i in range(len(prefix) - 1, -1, -1):
        code_point = ord(prefix[i]) + 1
        if 0xD800 <= code_point <= 0xDFFF:
            code_point = 0xE000
        if code_point <= MAX_CODE_POINT:
            return prefix[:i] + chr(code_point)
    return None


def truncate_lower_bound_binary(value: bytes, width: int) -> bytes:
    """The first ``width`` bytes: still <= every value that starts with them."""
    return bytes(value[:width])


def truncate_upper_bound_binary(value: bytes, width: int) -> bytes | None:
    """At most ``width`` bytes that compare >= ``value`` (unsigned), or None if none exist."""
    if len(value) <= width:
        return bytes(value)
    prefix = bytearray(value[:width])
    for i in range(len(prefix) - 1, -1, -1):
        if prefix[i] < 0xFF:
            return bytes(prefix[:i]) + bytes([prefix[i] + 1])
    return None


# ---------------------------------------------------------------------------------------------
# Human-readable partition values (Java's TransformUtil / Transform.toHumanString).


def _java_time(micros_of_day: int) -> str:
    # java.time.LocalTime.toString: seconds only when non-zero, fraction in groups of 3 digits.
    hour, minute, second, micros = _split_time(micros_of_day)
    text = f"{hour:02d}:{minute:02d}"
    if second or micros:
        text += f":{second:02d}"
    if micros:
        text += f".{micros // 1000:03d}" if micros % 1000 == 0 else f".{micros:06d}"
    return text


def _shortest_digits(value: float, single: bool) -> tuple[str, int]:
    """The fewest significant digits that read back as ``value`` (a float32 when ``single``)
    and the decimal exponent of the first one: ``("15", -1)`` for 0.15."""
    if single:
        value = ctypes.c_float(value).value  # C's rounding to a float32 (a no-op on one)
        for precision in range(1, 10):  # nine digits always read back
            text = f"{value:.{precision - 1}e}"
            if ctypes.c_float(float(text)).value == value:
                break
    else:
        text = repr(value)  # Python's repr is the shortest text that reads back
    _, digits, exponent = Decimal(text).normalize().as_tuple()
    if len(digits) == 1:
        # Java prints at least two digits ("d.d"), the two nearest the value: 4.9E-324
        _, digits, exponent = Decimal(f"{value:.1e}").normalize().as_tuple()
    shown = "".join(map(str, digits))
    return shown, len(shown) - 1 + int(exponent)


def java_floating_string(value: float, single: bool = False) -> str:
    """``value`` as Java's ``Double.toString`` (``Float.toString`` when ``single``) prints it:
    the shortest digits that read back, in plain notation from 10^-3 up to 10^7 (``0.001``,
    ``1234.5``, ``1.0``), else as ``1.0E7`` / ``1.5E-4``; ``NaN``, ``Infinity``, ``-0.0``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if value == 0:
        return sign + "0.0"
    digits, exponent = _shortest_digits(abs(value), single)
    if -3 <= exponent < 7:
        if exponent < 0:
            return f"{sign}0.{'0' * (-exponent - 1)}{digits}"
        whole = digits[: exponent + 1].ljust(exponent + 1, "0")
        return f"{sign}{whole}.{digits[exponent + 1 :] or '0'}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def human_string(t: IcebergType, value: Any) -> str:
    """An in-memory value of type ``t`` as Java's ``Transform.toHumanString`` prints it.

    date "2024-03-05", time "10:11:12.000001", timestamp "2024-03-05T10:11:12.000001",
    timestamptz "2024-03-05T10:11:12.000001Z" (all Java ``java.time`` formats), boolean
    "true", binary/fixed base64, float/double as Java's ``Float``/``Double.toString``
    ("1.0E7", "0.1" for the float32 nearest 0.1), null "null", anything else ``str(value)``.
    """
    if value is None:
        return "null"
    if isinstance(t, (FloatType, DoubleType)):
        return java_floating_string(float(value), single=isinstance(t, FloatType))
    if isinstance(t, DateType):
        return format_date(value)
    if isinstance(t, TimeType):
        return _java_time(value)
    if isinstance(t, (TimestampType, TimestamptzType)):
        days, of_day = divmod(value, MICROS_PER_DAY)
        text = f"{format_date(days)}T{_java_time(of_day)}"
        return text + "Z" if isinstance(t, TimestamptzType) else text
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    return str(value)

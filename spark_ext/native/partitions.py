"""Partitioning a native write: Iceberg transforms as hidden Spark columns, and back.

Each partition field of the table's default spec becomes a hidden column computed with Spark
SQL exactly as the Iceberg spec defines the transform; the write ``partitionBy``-s the hidden
columns, so Spark puts each file in a ``<hidden name>=<value>`` folder and leaves the hidden
columns out of the file (the source columns stay in it, as Iceberg requires). After the job,
:func:`parse_partition` reads each file's partition tuple back from its folders, and
:func:`check_partition` cross-checks it against the source columns' ranges in the footer.

What is computed, without any session-time-zone-dependent function (microseconds and days
from ``unix_micros``, ``timestamp_diff`` from a zone-less epoch, ``unix_date``; exact integer
floor division as ``(v - pmod(v, d)) div d``):

* identity on int, long, boolean, decimal, string, date (its day number) and timestamps
  (microseconds);
* year, month, day on dates and timestamps, hour on timestamps (UTC for timestamptz, the
  wall-clock value for timestamp);
* truncate[W] on int and long (``v - pmod(v, W)``, an overflow fails the job), on decimals
  of precision up to 37 (the same on the unscaled value, computed as ``v - pmod(v, W * 10^-s)``
  in Spark's exact decimal arithmetic; a result past the precision fails the job, as lakecat's
  writer refuses it) and on strings (the first W code points: Spark's ``substring`` counts
  code points) and binaries up to W = 64 (the first W bytes: ``substring`` of a binary counts
  bytes; in hexadecimal a folder name of up to 128 characters, within the 255 bytes a local
  file system allows);
* void (no column: the value is always null).

* bucket[N] on int, long, date, timestamps, string, decimal and binary, by the ``bucket``
  function of a lakecat SQL catalog of the session (``<catalog>.system.bucket(N, value)``, the
  spec's Murmur3 hash in the plugin's Java; Spark has no such expression): the planner names
  the catalog (``functions``), and a write with a bucket field but no catalog to compute it
  does not qualify.

Identity on float, double, binary (a folder name of a long value's hexadecimal would pass the
255 bytes a local file system allows), fixed and uuid, truncate on binaries past W = 64 and on
decimals of precision 38 do not qualify (:class:`NotNative`).

Folder values: Spark writes null *and* the empty string as ``__HIVE_DEFAULT_PARTITION__`` and
escapes special characters as ``%XX``; a ``%`` in a path is best avoided, because lakecat's
FileIO decodes ``%XX`` in ``file:`` URIs while Spark, Hadoop and pyiceberg take them
literally. So numbers and booleans go as they are (digits, ``-``, ``.``, ``true``), and a
string is URL-encoded (``url_encode``: UTF-8, space as ``+``) with ``~`` in place of ``%``
and ``~2A`` for ``*``, leaving only ``A-Za-z0-9._+-`` and ``~XX`` escapes, none of which Spark
escapes; the empty string is ``~`` and the string ``__HIVE_DEFAULT_PARTITION__`` is
``~__HIVE_DEFAULT_PARTITION__``. The default partition name itself is null. A truncated binary
goes as its bytes in hexadecimal (``hex``), the empty binary as ``~``.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from enum import Enum
from typing import Any
from urllib.parse import unquote_plus

from pyspark.sql import Column
from pyspark.sql import functions as F

from lakecat.metadata.errors import CorruptMetadata
from lakecat.metadata.io import ColumnRange
from lakecat.metadata.partitioning import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    PartitionField,
    PartitionSpec,
    Transform,
    TruncateTransform,
    YearTransform,
    parse_transform,
)
from lakecat.metadata.schema import (
    INT_MIN,
    MICROS_PER_DAY,
    MICROS_PER_HOUR,
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    IntegerType,
    LongType,
    PrimitiveType,
    Schema,
    StringType,
    TimestampType,
    TimestamptzType,
)
from lakecat.spark_ext.native.columns import quoted
from lakecat.spark_ext.native.support import NotNative, loadable_everywhere
from lakecat.spark_ext.settings import CATALOG_PLUGIN, plugin_catalogs

DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
_ESCAPE = "~"
_ENCODED = re.compile(r"(?:[A-Za-z0-9._+-]|~[0-9A-F]{2})*")
EPOCH_NTZ = "TIMESTAMP_NTZ'1970-01-01 00:00:00'"  # a zone-less epoch, as SQL
_TEMPORAL = (DateType, TimestampType, TimestamptzType)
# the sources of a bucket field the catalog's bucket function takes (as the table form has them)
_BUCKET_SOURCES = (IntegerType, LongType, *_TEMPORAL, StringType, DecimalType, BinaryType)


class Encoding(Enum):
    """How a partition value is written in a folder name."""

    INTEGER = "integer"
    BOOLEAN = "boolean"
    DECIMAL = "decimal"
    STRING = "string"
    BINARY = "binary"  # hexadecimal, as a string
    VOID = "void"  # no folder


@dataclass(frozen=True)
class HiddenPartition:
    """One partition field of the write: its hidden column and how its folder decodes."""

    field: PartitionField
    transform: Transform
    source_type: PrimitiveType
    source_path: tuple[str, ...]  # names from the top-level column down to the source
    encoding: Encoding
    column: str | None  # the hidden column (None for void)
    # the lakecat SQL catalog of the session whose function computes a bucket field's value
    # (None: no catalog, and then Spark cannot compute it); None for every other transform
    function: str | None = None

    @property
    def computable(self) -> bool:
        """Whether Spark can compute the value here: anything but a bucket without the
        catalog function."""
        return not isinstance(self.transform, BucketTransform) or self.function is not None


def session_functions(spark: Any) -> str | None:
    """The lakecat SQL catalog of the session whose functions compute the transforms Spark
    has no expression for (the first by name); None when the session has none, or when a JVM
    of the application could not load the catalog's classes (they compute the values in the
    tasks)."""
    catalogs = plugin_catalogs(spark)
    if not catalogs or not loadable_everywhere(spark.sparkContext, CATALOG_PLUGIN):
        return None
    return catalogs[0]


def plan_partitions(
    spec: PartitionSpec, schema: Schema, taken: Collection[str], functions: str | None = None
) -> tuple[HiddenPartition, ...]:
    """The hidden columns of ``spec``'s fields (:class:`NotNative` for a transform whose
    value cannot be written and read back exactly), named apart from the ``taken`` column
    names; a bucket field computed by the functions of the catalog ``functions`` (see
    :attr:`HiddenPartition.computable`)."""
    used = {name.lower() for name in taken}
    out: list[HiddenPartition] = []
    for pf in spec.fields:
        hidden = plan_partition(pf, schema, used, functions)
        if hidden.column is not None:
            used.add(hidden.column.lower())
        out.append(hidden)
    return tuple(out)


def plan_partition(
    pf: PartitionField, schema: Schema, taken: Collection[str], functions: str | None = None
) -> HiddenPartition:
    """One field of :func:`plan_partitions`: its hidden column, named apart from ``taken``
    (lower case)."""
    transform = parse_transform(pf.transform, strict=False)
    source = schema.find_field(pf.source_id)
    if not isinstance(source.field_type, PrimitiveType):
        raise NotNative(f"partition field {pf.name!r} has a non-primitive source")
    path = _source_path(schema, pf.source_id)
    if transform.is_void:
        return HiddenPartition(pf, transform, source.field_type, path, Encoding.VOID, None)
    encoding = _encoding(pf, transform, source.field_type)
    name = _hidden_name(pf.name, taken)
    function = functions if isinstance(transform, BucketTransform) else None
    return HiddenPartition(pf, transform, source.field_type, path, encoding, name, function)


def _source_path(schema: Schema, field_id: int) -> tuple[str, ...]:
    """The names from the top-level column down to the source (walked by id: a name may
    contain dots); :class:`NotNative` for a source inside a list or map."""
    if schema.in_list_or_map(field_id):
        name = schema.column_name(field_id)
        raise NotNative(f"partition source {name!r} is in a list or map")
    return schema.column_path(field_id)


def _encoding(pf: PartitionField, transform: Transform, t: PrimitiveType) -> Encoding:
    if isinstance(transform, IdentityTransform):
        if isinstance(t, (IntegerType, LongType, *_TEMPORAL)):
            return Encoding.INTEGER
        if isinstance(t, BooleanType):
            return Encoding.BOOLEAN
        if isinstance(t, DecimalType):
            return Encoding.DECIMAL
        if isinstance(t, StringType):
            return Encoding.STRING
    elif isinstance(transform, (YearTransform, MonthTransform, DayTransform, HourTransform)):
        if transform.can_transform(t):
            return Encoding.INTEGER
    elif isinstance(transform, TruncateTransform):
        if isinstance(t, (IntegerType, LongType)):
            return Encoding.INTEGER
        if isinstance(t, StringType):
            return Encoding.STRING
        if isinstance(t, DecimalType) and t.precision <= _TRUNCATE_DECIMAL_PRECISION:
            return Encoding.DECIMAL
        if isinstance(t, BinaryType) and transform.width <= _TRUNCATE_BINARY_WIDTH:
            return Encoding.BINARY
    elif isinstance(transform, BucketTransform) and isinstance(t, _BUCKET_SOURCES):
        return Encoding.INTEGER
    raise NotNative(
        f"partition field {pf.name!r} ({transform} of {t}) is not computed by the native write"
    )


def _hidden_name(name: str, used: Collection[str]) -> str:
    # Letters, digits and "_" only, not starting with "_" or "." (Spark and Hadoop hide such
    # folders), apart from every column of the write.
    base = re.sub(r"[^0-9A-Za-z_]", "_", name).lstrip("_") or "p"
    candidate, n = base, 1
    while candidate.lower() in used:
        candidate, n = f"{base}_{n}", n + 1
    return candidate


# ---- Spark columns ------------------------------------------------------------------------


def hidden_columns(partitions: Sequence[HiddenPartition]) -> list[Column]:
    """The hidden columns, to add to the DataFrame in table form and partition by."""
    return [partition_value(p).alias(p.column) for p in partitions if p.column is not None]


def source_column(path: Sequence[str]) -> Column:
    """The column at ``path`` (top-level name, then struct fields)."""
    column = F.col("`" + path[0].replace("`", "``") + "`")
    for name in path[1:]:
        column = column.getField(name)
    return column


def partition_value(p: HiddenPartition) -> Column:
    """The Spark expression of one partition field's value (not void)."""
    source = source_column(p.source_path)
    t, transform = p.source_type, p.transform
    if isinstance(transform, BucketTransform):
        assert p.function is not None, "a bucket field is computed by a catalog's function"
        return catalog_transform(p.function, str(transform), source)
    if isinstance(transform, IdentityTransform):
        if isinstance(t, _TEMPORAL):
            return _micros(source, t) if not isinstance(t, DateType) else F.unix_date(source)
        return _encode(source) if p.encoding is Encoding.STRING else source
    if isinstance(transform, TruncateTransform):
        if isinstance(t, StringType):
            return _encode(F.substring(source, 1, transform.width))
        if isinstance(t, BinaryType):
            return _encode(F.hex(F.substring(source, 1, transform.width)))
        if isinstance(t, DecimalType):
            return _truncate_decimal(source, p, t)
        return _truncate(source, p, int_range=isinstance(t, IntegerType))
    if isinstance(transform, HourTransform):
        return _floor_div(_micros(source, t), MICROS_PER_HOUR)
    if isinstance(t, DateType):
        days = F.unix_date(source)
    else:
        days = _floor_div(_micros(source, t), MICROS_PER_DAY)
    if isinstance(transform, DayTransform):
        return days
    date = source if isinstance(t, DateType) else F.date_from_unix_date(days)
    years = F.year(date) - F.lit(1970)
    if isinstance(transform, YearTransform):
        return years
    return years * F.lit(12) + F.month(date) - F.lit(1)


# the catalog's function of each transform whose name is not the transform's own
_FUNCTION_NAMES = {"year": "years", "month": "months", "day": "days", "hour": "hours"}


def catalog_transform(catalog: str, transform: str, value: Column) -> Column:
    """``transform`` (``bucket[N]``, ``truncate[W]``, ``year``, ``month``, ``day``, ``hour``)
    of ``value``, computed by the function of the lakecat SQL catalog ``catalog``
    (``<catalog>.system.bucket(N, value)``, ...)."""
    name, _, width = transform.rstrip("]").partition("[")
    function = f"{quoted(catalog)}.system.{_FUNCTION_NAMES.get(name, name)}"
    return F.call_function(function, *([F.lit(int(width))] if width else []), value)


def _micros(source: Column, t: PrimitiveType) -> Column:
    """Microseconds since the epoch: of the instant (timestamptz), of the wall-clock value
    read as UTC (timestamp)."""
    if isinstance(t, TimestamptzType):
        return F.unix_micros(source)
    return F.timestamp_diff("MICROSECOND", F.expr(EPOCH_NTZ), source)


def _floor_div(values: Column, divisor: int) -> Column:
    exact = values - F.pmod(values, F.lit(divisor))
    return F.call_function("div", exact, F.lit(divisor))


def _truncate(source: Column, p: HiddenPartition, *, int_range: bool) -> Column:
    assert isinstance(p.transform, TruncateTransform)
    value = source.cast("long")
    truncated = F.try_subtract(value, F.pmod(value, F.lit(p.transform.width)))
    overflow = truncated.isNull() & value.isNotNull()
    if int_range:
        overflow = overflow | (truncated < F.lit(INT_MIN))
    message = F.lit(f"partition field {p.field.name!r}: {p.transform} overflows")
    return F.when(overflow, F.raise_error(message)).otherwise(truncated)


# truncate[W] of a binary as a folder value: 2W hexadecimal characters
_TRUNCATE_BINARY_WIDTH = 64
# v - pmod(v, w) of a decimal(p, s) is a decimal(p + 1, s) in Spark's arithmetic, exact up
# to its largest precision, 38
_TRUNCATE_DECIMAL_PRECISION = 37


def _truncate_decimal(source: Column, p: HiddenPartition, t: DecimalType) -> Column:
    """truncate[W] of a decimal(p, s): the spec's ``v - (((v % W) + W) % W)`` on the unscaled
    value ``v``, computed on the decimal itself with the width ``W * 10^-s`` (the same digits
    at scale ``s``); a result whose unscaled value needs more than ``p`` digits (below
    ``-10^(p - s)``) fails the job, as lakecat's writer refuses it."""
    assert isinstance(p.transform, TruncateTransform)
    width = F.lit(Decimal(p.transform.width).scaleb(-t.scale))
    truncated = source - F.pmod(source, width)
    overflow = truncated <= F.lit(-(Decimal(10) ** (t.precision - t.scale)))
    message = F.lit(f"partition field {p.field.name!r}: {p.transform} overflows")
    exact = truncated.cast(f"decimal({t.precision},{t.scale})")
    return F.when(overflow, F.raise_error(message)).otherwise(exact)


def _encode(text: Column) -> Column:
    encoded = F.replace(
        F.replace(F.url_encode(text), F.lit("%"), F.lit(_ESCAPE)), F.lit("*"), F.lit("~2A")
    )
    return (
        F.when(text == F.lit(""), F.lit(_ESCAPE))
        .when(text == F.lit(DEFAULT_PARTITION), F.lit(_ESCAPE + DEFAULT_PARTITION))
        .otherwise(encoded)
    )


# ---- back from the folders ----------------------------------------------------------------


def parse_partition(
    folders: Sequence[str], partitions: Sequence[HiddenPartition], *, path: str
) -> tuple[Any, ...]:
    """The partition tuple of a file from its ``<hidden name>=<value>`` folders (in
    lakecat's in-memory form of each field's result type)."""
    hidden = [p for p in partitions if p.column is not None]
    if len(folders) != len(hidden):
        raise CorruptMetadata(f"{path}: expected {len(hidden)} partition folders")
    texts: dict[str, str] = {}
    for p, folder in zip(hidden, folders, strict=True):
        name, sep, value = folder.partition("=")
        if not sep or name != p.column:
            raise CorruptMetadata(f"{path}: folder {folder!r} is not partition {p.column!r}")
        texts[p.column] = value
    return tuple(
        None if p.column is None else _decode(p, texts[p.column], path) for p in partitions
    )


def _decode(p: HiddenPartition, text: str, path: str) -> Any:
    if text == DEFAULT_PARTITION:
        return None
    try:
        if p.encoding is Encoding.INTEGER:
            return int(text)
        if p.encoding is Encoding.BOOLEAN:
            return {"true": True, "false": False}[text]
        if p.encoding is Encoding.DECIMAL:
            return _decimal(text, p.source_type)
        if p.encoding is Encoding.BINARY:
            return bytes.fromhex(_decode_string(text))
        return _decode_string(text)
    except (ValueError, KeyError, InvalidOperation):
        raise CorruptMetadata(f"{path}: {text!r} is not a value of {p.field.name!r}") from None


def _decode_string(text: str) -> str:
    if text == _ESCAPE:
        return ""
    if text == _ESCAPE + DEFAULT_PARTITION:
        return DEFAULT_PARTITION
    if not _ENCODED.fullmatch(text):
        raise ValueError(text)
    return unquote_plus(text.replace(_ESCAPE, "%"), errors="strict")


def _decimal(text: str, t: PrimitiveType) -> Decimal:
    value = Decimal(text)
    assert isinstance(t, DecimalType)
    exponent = value.as_tuple().exponent
    if not value.is_finite() or exponent != -t.scale:
        raise ValueError(text)
    return value


def check_partition(
    partition: tuple[Any, ...],
    partitions: Sequence[HiddenPartition],
    ranges: Mapping[int, ColumnRange],
    *,
    path: str,
) -> None:
    """Cross-check a file's partition tuple (read from its folders) against its footer: the
    source column of a null partition value holds only nulls; the transform of the source's
    min and max, where the footer has them, is the partition value. :class:`CorruptMetadata`
    otherwise (the write fails and deletes its files)."""
    for p, value in zip(partitions, partition, strict=True):
        if p.column is None:
            continue
        found = ranges.get(p.field.source_id)
        if found is None or found.null_count is None:
            continue
        if value is None:
            consistent = found.null_count == found.value_count
        else:
            consistent = found.null_count == 0 and (
                found.low is None
                or p.transform.apply(p.source_type, found.low)
                == value
                == p.transform.apply(p.source_type, found.high)
            )
        if not consistent:
            raise CorruptMetadata(
                f"{path}: partition {p.field.name}={value!r} read from the folder does not "
                "match the file's values"
            )

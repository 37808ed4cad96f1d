"""Avro schemas of manifests and manifest lists (format v2 and v3), and partition value codecs.

The schemas follow the spec's "Manifests" and "Manifest Lists" sections and its Appendix A
(Avro): every field carries a ``field-id``, optional fields are ``["null", T]`` unions with a
null default, lists carry ``element-id``, and maps with int keys are arrays of key/value
records marked ``logicalType: map``. Record names follow Iceberg Java (``r<field id>``,
``k<key id>_v<value id>``) so files look the same as the ones Java and pyiceberg write.

Named Avro types (records, fixed) must have unique names within one schema. Avro lets a
later field refer to an earlier definition by name, but pyiceberg's reader cannot follow such
references, so a repeated name (two ``decimal(9,2)`` partition fields) gets the partition
field id as suffix instead.

Partition values travel through fastavro in two directions:

* writing: lakecat's in-memory form is what fastavro expects for date/time/timestamp (ints);
  decimals are encoded here to the fixed width (fastavro's own encoder is slow and rejects
  some exponents), uuids become their 16 bytes;
* reading: fastavro turns logical types into ``datetime``/``date``/``time``/``Decimal`` objects
  (and has no switch to turn that off), so readers convert them back. The converters also
  accept the raw form, for files whose writer left out a logical type.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable
from decimal import Decimal
from functools import lru_cache
from operator import itemgetter
from typing import Any

import fastavro

from lakecat.metadata.errors import CorruptMetadata, ValidationError
from lakecat.metadata.schema.conversions import decimal_to_unscaled, unscaled_to_decimal
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
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

AvroSchema = dict[str, Any]
Converter = Callable[[Any], Any]

FORMAT_VERSION = "2"  # what manifests are written as unless the table is v3


# ---- Avro types of partition values ------------------------------------------------------
def decimal_required_bytes(precision: int) -> int:
    """The fewest bytes whose two's complement holds every unscaled value of ``precision``."""
    if not 0 < precision <= 38:
        raise ValidationError(f"decimal precision must be in 1..38, got {precision}")
    largest = 10**precision - 1
    n = 1
    while largest >= 1 << (8 * n - 1):
        n += 1
    return n


def _unique(name: str, field_id: int, names: set[str]) -> str:
    out = name if name not in names else f"{name}_{field_id}"
    names.add(out)
    return out


def _avro_primitive(t: PrimitiveType, field_id: int, names: set[str]) -> Any:
    simple = _SIMPLE_AVRO.get(type(t))
    if simple is not None:
        return simple
    if isinstance(t, DecimalType):
        return {
            "type": "fixed",
            "name": _unique(f"decimal_{t.precision}_{t.scale}", field_id, names),
            "size": decimal_required_bytes(t.precision),
            "logicalType": "decimal",
            "precision": t.precision,
            "scale": t.scale,
        }
    if isinstance(t, UUIDType):
        return {
            "type": "fixed",
            "name": _unique("uuid_fixed", field_id, names),
            "size": 16,
            "logicalType": "uuid",
        }
    if isinstance(t, FixedType):
        return {
            "type": "fixed",
            "name": _unique(f"fixed_{t.length}", field_id, names),
            "size": t.length,
        }
    if isinstance(t, TimestampType | TimestamptzType):
        return {
            "type": "long",
            "logicalType": "timestamp-micros",
            "adjust-to-utc": isinstance(t, TimestamptzType),
        }
    raise ValidationError(f"type {t} cannot be a partition value in a v2 manifest")


_SIMPLE_AVRO: dict[type, Any] = {
    BooleanType: "boolean",
    IntegerType: "int",
    LongType: "long",
    FloatType: "float",
    DoubleType: "double",
    StringType: "string",
    BinaryType: "bytes",
    DateType: {"type": "int", "logicalType": "date"},
    TimeType: {"type": "long", "logicalType": "time-micros"},
}


def avro_name(name: str) -> str:
    """A valid Avro name for a field name, escaped the way Iceberg Java and pyiceberg do."""
    if not name:
        raise ValidationError("a partition field needs a name")
    if _is_avro_name(name):
        return name
    out = [name[0] if _avro_start(name[0]) else _escape(name[0])]
    out.extend(c if _avro_char(c) else _escape(c) for c in name[1:])
    return "".join(out)


def _avro_start(c: str) -> bool:
    return c == "_" or ("a" <= c.lower() <= "z")


def _avro_char(c: str) -> bool:
    return _avro_start(c) or "0" <= c <= "9"


def _is_avro_name(name: str) -> bool:
    return _avro_start(name[0]) and all(_avro_char(c) for c in name[1:])


def _escape(c: str) -> str:
    return "_" + c if "0" <= c <= "9" else f"_x{ord(c):X}"


def partition_record(partition_type: StructType) -> AvroSchema:
    """The Avro record (named ``r102``) of a partition struct, all fields optional."""
    names: set[str] = {"r102"}
    fields = []
    for f in partition_type.fields:
        name = avro_name(f.name)
        field: AvroSchema = {
            "name": name,
            "type": ["null", _avro_primitive(primitive_of(f), f.field_id, names)],
            "default": None,
            "field-id": f.field_id,
        }
        if name != f.name:
            field["iceberg-field-name"] = f.name
        fields.append(field)
    return {"type": "record", "name": "r102", "fields": fields}


# ---- manifest entry (v2) -----------------------------------------------------------------
def _required(name: str, avro_type: Any, field_id: int) -> AvroSchema:
    return {"name": name, "type": avro_type, "field-id": field_id}


def _optional(name: str, avro_type: Any, field_id: int) -> AvroSchema:
    return {"name": name, "type": ["null", avro_type], "default": None, "field-id": field_id}


def _int_map(name: str, field_id: int, key_id: int, value_id: int, value: str) -> AvroSchema:
    record = {
        "type": "record",
        "name": f"k{key_id}_v{value_id}",
        "fields": [_required("key", "int", key_id), _required("value", value, value_id)],
    }
    return _optional(name, {"type": "array", "items": record, "logicalType": "map"}, field_id)


def _list(name: str, field_id: int, element_id: int, element: str) -> AvroSchema:
    return _optional(name, {"type": "array", "items": element, "element-id": element_id}, field_id)


def manifest_entry_schema(partition_type: StructType, format_version: int = 2) -> AvroSchema:
    """The ``manifest_entry`` Avro schema (v2, or v3 with row lineage and deletion vector
    fields) for a partition struct, as a JSON structure."""
    v3_fields = (
        [
            _optional("first_row_id", "long", 142),
            _optional("referenced_data_file", "string", 143),
            _optional("content_offset", "long", 144),
            _optional("content_size_in_bytes", "long", 145),
        ]
        if format_version >= 3
        else []
    )
    data_file = {
        "type": "record",
        "name": "r2",
        "fields": [
            _required("content", "int", 134),
            _required("file_path", "string", 100),
            _required("file_format", "string", 101),
            _required("partition", partition_record(partition_type), 102),
            _required("record_count", "long", 103),
            _required("file_size_in_bytes", "long", 104),
            _int_map("column_sizes", 108, 117, 118, "long"),
            _int_map("value_counts", 109, 119, 120, "long"),
            _int_map("null_value_counts", 110, 121, 122, "long"),
            _int_map("nan_value_counts", 137, 138, 139, "long"),
            _int_map("lower_bounds", 125, 126, 127, "bytes"),
            _int_map("upper_bounds", 128, 129, 130, "bytes"),
            _optional("key_metadata", "bytes", 131),
            _list("split_offsets", 132, 133, "long"),
            _list("equality_ids", 135, 136, "int"),
            _optional("sort_order_id", "int", 140),
            *v3_fields,
        ],
    }
    return {
        "type": "record",
        "name": "manifest_entry",
        "fields": [
            _required("status", "int", 0),
            _optional("snapshot_id", "long", 1),
            _optional("sequence_number", "long", 3),
            _optional("file_sequence_number", "long", 4),
            _required("data_file", data_file, 2),
        ],
    }


@lru_cache(maxsize=256)
def parsed_manifest_entry_schema(partition_type: StructType, format_version: int = 2) -> Any:
    """fastavro's parsed form of :func:`manifest_entry_schema`, parsed once per partition type
    and format version.

    The cache is keyed by the (frozen, hashable) partition type, so it holds pure values and
    never leaks state between catalogs.
    """
    return fastavro.parse_schema(manifest_entry_schema(partition_type, format_version))


# ---- manifest list (v2, v3) --------------------------------------------------------------
def manifest_list_schema(format_version: int = 2) -> AvroSchema:
    """The ``manifest_file`` Avro schema (v3 adds ``first_row_id``), as a JSON structure."""
    summary = {
        "type": "record",
        "name": "r508",
        "fields": [
            _required("contains_null", "boolean", 509),
            _optional("contains_nan", "boolean", 518),
            _optional("lower_bound", "bytes", 510),
            _optional("upper_bound", "bytes", 511),
        ],
    }
    return {
        "type": "record",
        "name": "manifest_file",
        "fields": [
            _required("manifest_path", "string", 500),
            _required("manifest_length", "long", 501),
            _required("partition_spec_id", "int", 502),
            _required("content", "int", 517),
            _required("sequence_number", "long", 515),
            _required("min_sequence_number", "long", 516),
            _required("added_snapshot_id", "long", 503),
            _required("added_files_count", "int", 504),
            _required("existing_files_count", "int", 505),
            _required("deleted_files_count", "int", 506),
            _required("added_rows_count", "long", 512),
            _required("existing_rows_count", "long", 513),
            _required("deleted_rows_count", "long", 514),
            _optional("partitions", {"type": "array", "items": summary, "element-id": 508}, 507),
            _optional("key_metadata", "bytes", 519),
            *([_optional("first_row_id", "long", 520)] if format_version >= 3 else []),
        ],
    }


@lru_cache(maxsize=4)
def parsed_manifest_list_schema(format_version: int = 2) -> Any:
    return fastavro.parse_schema(manifest_list_schema(format_version))


# ---- partition values: lakecat form -> fastavro ----------------------------------------
def _decimal_writer(t: DecimalType) -> Converter:
    size = decimal_required_bytes(t.precision)

    def write(value: Any) -> Any:
        if not isinstance(value, Decimal):
            raise ValidationError(f"partition value {value!r} is not a Decimal for {t}")
        return decimal_to_unscaled(t, value).to_bytes(size, "big", signed=True)

    return write


def _uuid_writer(value: Any) -> Any:
    if isinstance(value, uuid.UUID):
        return value.bytes
    raise ValidationError(f"partition value {value!r} is not a uuid.UUID")


def _fixed_writer(t: FixedType) -> Converter:
    def write(value: Any) -> Any:
        # fastavro writes fixed bytes without checking the length; a wrong length would
        # corrupt every record after it.
        if not isinstance(value, bytes) or len(value) != t.length:
            raise ValidationError(f"partition value {value!r} is not {t.length} bytes for {t}")
        return value

    return write


_INT_RANGE = (-(2**31), 2**31 - 1)


def _int_writer(value: Any) -> Any:
    # Union branches are named explicitly (see partition_encoder), which skips fastavro's
    # validation; without this check an out-of-range int would be written as a long varint
    # that other readers reject.
    if not isinstance(value, int) or not _INT_RANGE[0] <= value <= _INT_RANGE[1]:
        raise ValidationError(f"partition value {value!r} is not a 32-bit int")
    return value


def avro_writer(t: PrimitiveType) -> Converter | None:
    """How to hand a partition value of type ``t`` to fastavro, or ``None`` if as it is."""
    if isinstance(t, DecimalType):
        return _decimal_writer(t)
    if isinstance(t, UUIDType):
        return _uuid_writer
    if isinstance(t, FixedType):
        return _fixed_writer(t)
    if isinstance(t, IntegerType | DateType):
        return _int_writer
    return None


def union_branch(avro_type: Any) -> str:
    """The name fastavro's tuple notation uses for a union branch of this Avro type."""
    if isinstance(avro_type, str):
        return avro_type
    kind: str = avro_type["type"]
    return str(avro_type["name"]) if kind in ("record", "fixed", "enum") else kind


PartitionEncoder = Callable[[tuple[Any, ...]], dict[str, Any]]


@lru_cache(maxsize=256)
def partition_encoder(partition_type: StructType) -> PartitionEncoder:
    """Turns a partition tuple into the record fastavro writes for this partition type.

    Non-null values are given as ``(branch name, value)``: fastavro's tuple notation for a
    union branch. Without it fastavro validates each value against every branch, which
    doubles the cost of writing a manifest.
    """
    record = partition_record(partition_type)
    plan = tuple(
        (avro["name"], union_branch(avro["type"][1]), avro_writer(primitive_of(f)))
        for f, avro in zip(partition_type.fields, record["fields"], strict=True)
    )

    def encode(values: tuple[Any, ...]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for (name, branch, write), value in zip(plan, values, strict=True):
            if value is None:
                out[name] = None
            else:
                out[name] = (branch, value if write is None else write(value))
        return out

    return encode


# ---- partition values: fastavro -> lakecat form ----------------------------------------
_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_EPOCH_NAIVE = dt.datetime(1970, 1, 1)
_ONE_MICRO = dt.timedelta(microseconds=1)


def _read_date(value: Any) -> Any:
    return value.toordinal() - _EPOCH_ORDINAL if isinstance(value, dt.date) else value


def _read_time(value: Any) -> Any:
    if isinstance(value, dt.time):
        seconds = (value.hour * 60 + value.minute) * 60 + value.second
        return seconds * 1_000_000 + value.microsecond
    return value


def _read_timestamp(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        epoch = _EPOCH_NAIVE if value.tzinfo is None else _EPOCH_UTC
        micros: int = (value - epoch) // _ONE_MICRO
        return micros
    return value


def _read_uuid(value: Any) -> Any:
    if isinstance(value, bytes):
        return uuid.UUID(bytes=value)
    if isinstance(value, str):
        return uuid.UUID(value)
    return value


def _decimal_reader(t: DecimalType) -> Converter:
    def read(value: Any) -> Any:
        if isinstance(value, bytes):
            return unscaled_to_decimal(int.from_bytes(value, "big", signed=True), t.scale)
        return value

    return read


def avro_reader(t: PrimitiveType) -> Converter | None:
    """How to turn what fastavro returns for type ``t`` into lakecat's form (``None``: as is)."""
    if isinstance(t, DateType):
        return _read_date
    if isinstance(t, TimeType):
        return _read_time
    if isinstance(t, TimestampType | TimestamptzType):
        return _read_timestamp
    if isinstance(t, UUIDType):
        return _read_uuid
    if isinstance(t, DecimalType):
        return _decimal_reader(t)
    return None


def primitive_of(field: NestedField) -> PrimitiveType:
    """The type of a partition field, which the spec requires to be primitive."""
    t = field.field_type
    if not isinstance(t, PrimitiveType):
        raise ValidationError(f"partition field {field.name!r} must have a primitive type")
    return t


def partition_fields_of(writer_schema: Any, location: str) -> tuple[tuple[str, int | None], ...]:
    """(Avro name, field id) of each partition field in a manifest file's own schema."""
    try:
        data_file = _field_type(writer_schema, "data_file")
        partition = _field_type(data_file, "partition")
        return tuple((f["name"], f.get("field-id")) for f in partition["fields"])
    except (KeyError, TypeError) as exc:
        raise CorruptMetadata(f"{location}: not a manifest (no data_file.partition)") from exc


def _field_type(record: Any, name: str) -> Any:
    for f in record["fields"]:
        if f["name"] == name:
            t = f["type"]
            if isinstance(t, list):  # an optional field: the non-null branch
                t = next(b for b in t if b != "null")
            return t
    raise KeyError(name)


PartitionDecoder = Callable[[dict[str, Any]], tuple[Any, ...]]


@lru_cache(maxsize=256)
def partition_decoder(
    file_fields: tuple[tuple[str, int | None], ...], ptype: StructType
) -> PartitionDecoder:
    """Turns the partition record fastavro reads from a file of this shape into a tuple.

    Fields are matched by field id (by position if the file carries no ids); a partition
    field the file does not have reads as null.
    """
    by_id = {fid: name for name, fid in file_fields if fid is not None}
    names: list[str | None] = []
    for i, f in enumerate(ptype.fields):
        if by_id:
            names.append(by_id.get(f.field_id))
        else:
            names.append(file_fields[i][0] if i < len(file_fields) else None)
    readers = [avro_reader(primitive_of(f)) for f in ptype.fields]
    if not names:
        return lambda record: ()
    present = [n for n in names if n is not None]
    if len(present) == len(names) and all(r is None for r in readers):
        if len(present) == 1:
            only = present[0]
            return lambda record: (record[only],)
        getter: PartitionDecoder = itemgetter(*present)
        return getter
    plan = tuple(zip(names, readers, strict=True))

    def read(record: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(
            None if name is None else (record[name] if conv is None else conv(record[name]))
            for name, conv in plan
        )

    return read

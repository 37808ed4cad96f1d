"""Iceberg schemas <-> Arrow schemas, and making user data fit a table schema.

Arrow form of an Iceberg schema (:func:`schema_to_arrow`):

=====================  ==========================================================
Iceberg                Arrow
=====================  ==========================================================
boolean                ``bool``
int / long             ``int32`` / ``int64``
float / double         ``float32`` / ``float64``
decimal(P, S)          ``decimal128(P, S)``
date                   ``date32``
time                   ``time64("us")``
timestamp              ``timestamp("us")``
timestamptz            ``timestamp("us", tz="UTC")``
string / binary        ``string`` / ``binary`` (32-bit offsets)
uuid                   ``pa.uuid()`` (the ``arrow.uuid`` extension of ``fixed_size_binary(16)``)
fixed[L]               ``fixed_size_binary(L)``
struct / list / map    ``struct`` / ``list`` / ``map``
=====================  ==========================================================

Every Arrow field, including list elements and map keys and values, carries its Iceberg field
id as the metadata ``PARQUET:field_id``, which pyarrow writes as the Parquet field id; a field
is nullable exactly when it is optional.

uuid uses ``pa.uuid()``, as pyiceberg 0.12 does: pyarrow then writes the Parquet ``UUID``
logical type, as Iceberg Java does (a plain ``fixed_size_binary(16)`` is written as an
unannotated 16-byte fixed column, which other engines see as ``fixed[16]``), reads it back
as ``pa.uuid()``, and its values are ``uuid.UUID``, lakecat's in-memory form. The cost:
pyarrow has few compute kernels for extension types, so filter and sort on
``array.storage`` (the 16 bytes) rather than on the uuid column itself.

Streaming: :func:`conform_batches` conforms a stream batch by batch; each result batch has
the schema of :func:`schema_to_arrow`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace

import pyarrow as pa
import pyarrow.compute as pc

from lakecat.metadata.errors import NullInRequiredColumn, SchemaMismatch
from lakecat.metadata.schema.schema import Schema
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
    ListType,
    LongType,
    MapType,
    NestedField,
    PrimitiveType,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

FIELD_ID_KEY = b"PARQUET:field_id"
DOC_KEY = b"doc"  # pyiceberg's key for field docs in Arrow metadata

# ---------------------------------------------------------------------------------------------
# Iceberg -> Arrow


def schema_to_arrow(schema: Schema) -> pa.Schema:
    """The Arrow schema lakecat reads and writes for ``schema`` (see the module docstring)."""
    return pa.schema([field_to_arrow(f) for f in schema.fields])


def field_to_arrow(f: NestedField) -> pa.Field:
    """One Iceberg field as an Arrow field carrying its field id (and doc) as metadata."""
    metadata = {FIELD_ID_KEY: str(f.field_id).encode()}
    if f.doc:
        metadata[DOC_KEY] = f.doc.encode()
    return pa.field(f.name, type_to_arrow(f.field_type), nullable=not f.required, metadata=metadata)


def type_to_arrow(t: IcebergType) -> pa.DataType:
    """The Arrow type of an Iceberg type; nested fields carry their ids."""
    if isinstance(t, StructType):
        return pa.struct([field_to_arrow(f) for f in t.fields])
    if isinstance(t, ListType):
        return pa.list_(field_to_arrow(t.element_field))
    if isinstance(t, MapType):
        return pa.map_(field_to_arrow(t.key_field), field_to_arrow(t.value_field))
    if isinstance(t, FixedType):
        return pa.binary(t.length)
    if isinstance(t, DecimalType):
        return pa.decimal128(t.precision, t.scale)
    simple = _SIMPLE_TO_ARROW.get(type(t))
    if simple is None:
        raise SchemaMismatch(f"Iceberg type {t} has no Arrow form")
    return simple


_SIMPLE_TO_ARROW: dict[type[IcebergType], pa.DataType] = {
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
    BinaryType: pa.binary(),
    UUIDType: pa.uuid(),
}


def field_id_of(f: pa.Field) -> int | None:
    """The ``PARQUET:field_id`` of an Arrow field, or ``None`` if it has none."""
    raw = f.metadata.get(FIELD_ID_KEY) if f.metadata else None
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        raise SchemaMismatch(f"field {f.name!r} has a malformed field id {raw!r}") from None


# ---------------------------------------------------------------------------------------------
# Arrow -> Iceberg


def arrow_to_schema(arrow_schema: pa.Schema, *, fresh_ids: bool = True) -> Schema:
    """An Iceberg schema for Arrow data.

    With ``fresh_ids`` the field ids are assigned like Iceberg's ``assignFreshIds``: the fields
    of a struct get consecutive ids first, then their nested types are numbered in order
    (top-level fields are 1..k). Otherwise ids are read from ``PARQUET:field_id`` metadata
    and a field without one raises :class:`SchemaMismatch`.

    Type mapping beyond the exact forms of :func:`schema_to_arrow`: large and view strings and
    binaries, dictionaries (by their value type), int8/int16/uint8/uint16 -> int,
    uint32 -> long, float16 -> float, date64 -> date, time32 -> time, timestamps of any unit
    -> timestamp (naive) or timestamptz (any zone; Arrow stores UTC instants). Iceberg v2 has
    no nanosecond types: ``timestamp[ns]`` and ``time64[ns]`` map to the microsecond types
    and :func:`conform_to_schema` refuses values that would lose precision. uint64 and types
    Iceberg cannot store (null, duration, interval, union, ...) raise :class:`SchemaMismatch`.
    """
    reader = _IdReader(read_ids=not fresh_ids)
    fields = tuple(reader.read_field(f, f.name) for f in arrow_schema)
    if fresh_ids:
        fields = _fresh_struct_fields(fields, itertools.count(1))
    return Schema(fields)


@dataclass
class _IdReader:
    read_ids: bool

    def _id(self, f: pa.Field, path: str) -> int:
        if not self.read_ids:
            return 0  # replaced by fresh ids
        field_id = field_id_of(f)
        if field_id is None:
            raise SchemaMismatch(f"Arrow field {path!r} has no {FIELD_ID_KEY.decode()} metadata")
        return field_id

    def read_field(self, f: pa.Field, path: str) -> NestedField:
        doc = f.metadata.get(DOC_KEY) if f.metadata else None
        return NestedField(
            field_id=self._id(f, path),
            name=f.name,
            field_type=self.read_type(f.type, path),
            required=not f.nullable,
            doc=doc.decode() if doc else None,
        )

    def read_type(self, t: pa.DataType, path: str) -> IcebergType:
        if pa.types.is_dictionary(t):
            return self.read_type(t.value_type, path)
        if pa.types.is_struct(t):
            return StructType(
                tuple(
                    self.read_field(t.field(i), f"{path}.{t.field(i).name}")
                    for i in range(t.num_fields)
                )
            )
        if pa.types.is_map(t):
            key = self.read_field(t.key_field, f"{path}.key")
            value = self.read_field(t.item_field, f"{path}.value")
            return MapType(
                key.field_id, key.field_type, value.field_id, value.field_type, value.required
            )
        if _is_list_like(t):
            element = self.read_field(t.value_field, f"{path}.element")
            return ListType(element.field_id, element.field_type, element.required)
        return _primitive_from_arrow(t, path)


def _is_list_like(t: pa.DataType) -> bool:
    return bool(
        pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_fixed_size_list(t)
        or pa.types.is_list_view(t)
        or pa.types.is_large_list_view(t)
    )


def _primitive_from_arrow(t: pa.DataType, path: str) -> PrimitiveType:
    if isinstance(t, pa.UuidType):
        return UUIDType()
    if pa.types.is_boolean(t):
        return BooleanType()
    if pa.types.is_signed_integer(t):
        return IntegerType() if t.bit_width <= 32 else LongType()
    if pa.types.is_unsigned_integer(t):
        if t.bit_width <= 16:
            return IntegerType()
        if t.bit_width == 32:
            return LongType()
        raise SchemaMismatch(
            f"column {path!r} has type {t}, which no Iceberg type holds losslessly; "
            "cast it to int64 or decimal(20, 0) first"
        )
    if pa.types.is_float16(t) or pa.types.is_float32(t):
        return FloatType()
    if pa.types.is_float64(t):
        return DoubleType()
    if pa.types.is_decimal(t):
        if t.precision > 38:
            raise SchemaMismatch(
                f"column {path!r} has type {t}; Iceberg decimals hold at most 38 digits"
            )
        return DecimalType(t.precision, t.scale)
    if pa.types.is_date(t):
        return DateType()
    if pa.types.is_time(t):
        return TimeType()
    if pa.types.is_timestamp(t):
        return TimestampType() if t.tz is None else TimestamptzType()
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return StringType()
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return BinaryType()
    if pa.types.is_fixed_size_binary(t):
        return FixedType(t.byte_width)
    raise SchemaMismatch(f"column {path!r} has Arrow type {t}, which Iceberg v2 cannot store")


def _fresh_struct_fields(
    fields: tuple[NestedField, ...], counter: Iterator[int]
) -> tuple[NestedField, ...]:
    # Java's AssignFreshIds: number every field of this struct, then descend in order.
    ids = [next(counter) for _ in fields]
    return tuple(
        replace(f, field_id=new_id, field_type=_fresh_type(f.field_type, counter))
        for new_id, f in zip(ids, fields, strict=True)
    )


def _fresh_type(t: IcebergType, counter: Iterator[int]) -> IcebergType:
    if isinstance(t, StructType):
        return StructType(_fresh_struct_fields(t.fields, counter))
    if isinstance(t, ListType):
        element_id = next(counter)
        return ListType(element_id, _fresh_type(t.element_type, counter), t.element_required)
    if isinstance(t, MapType):
        key_id, value_id = next(counter), next(counter)
        key_type = _fresh_type(t.key_type, counter)
        value_type = _fresh_type(t.value_type, counter)
        return MapType(key_id, key_type, value_id, value_type, t.value_required)
    return t


# ---------------------------------------------------------------------------------------------
# Conforming user data to a table schema


def conform_to_schema(table: pa.Table, schema: Schema) -> pa.Table:
    """``table`` made to fit ``schema`` for writing; the result's schema is exactly
    ``schema_to_arrow(schema)``, field ids included.

    Columns are matched by exact name at every nesting level and put in schema order.
    Lossless casts are applied (narrower ints and floats widen, ``large_string`` becomes
    ``string``, ``timestamp[ms]`` becomes ``timestamp[us]``, ``fixed_size_binary(16)``
    becomes uuid, dictionaries are decoded, ...); a narrowing cast is accepted only when
    every value fits (``int64`` into ``int`` without overflow, ``timestamp[ns]`` without
    sub-microsecond digits). A missing optional column becomes nulls.

    Raises :class:`SchemaMismatch` (naming the column) for a missing required column, an
    extra column, a type that cannot be cast (``string`` into ``int``, ``double`` into
    ``int``, a zoned timestamp into ``timestamp`` or a naive one into ``timestamptz``) or
    values that do not fit; raises :class:`NullInRequiredColumn` (naming each column and its
    count) for nulls in a required field, nested ones included (nulls under a null parent
    struct, list or map do not count).
    """
    conformer = _Conformer()
    columns = conformer.columns(table.schema, table.columns, schema, table.num_rows)
    conformer.raise_nulls()
    return pa.Table.from_arrays(columns, schema=schema_to_arrow(schema))


def conform_batches(batches: Iterable[pa.RecordBatch], schema: Schema) -> Iterator[pa.RecordBatch]:
    """:func:`conform_to_schema` over a stream (a ``pa.RecordBatchReader`` or any iterable of
    record batches), one batch at a time; raises on the first batch that does not fit."""
    target = schema_to_arrow(schema)
    for batch in batches:
        conformer = _Conformer()
        columns = conformer.columns(batch.schema, batch.columns, schema, batch.num_rows)
        conformer.raise_nulls()
        yield pa.RecordBatch.from_arrays([_single(c) for c in columns], schema=target)


def _single(column: pa.ChunkedArray) -> pa.Array:
    return column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)


@dataclass
class _Conformer:
    """Converts columns field by field, collecting null counts of required fields so that one
    error can name every offending column with its full count (over all chunks)."""

    nulls: dict[str, int] = field(default_factory=dict)

    def raise_nulls(self) -> None:
        bad = {name: n for name, n in self.nulls.items() if n}
        if not bad:
            return
        listed = ", ".join(f"{name!r} ({n} null{'s' if n != 1 else ''})" for name, n in bad.items())
        raise NullInRequiredColumn(f"required columns contain nulls: {listed}")

    def _count(self, path: str, n: int) -> None:
        self.nulls[path] = self.nulls.get(path, 0) + n

    def columns(
        self,
        source_schema: pa.Schema,
        source_columns: list[pa.ChunkedArray] | list[pa.Array],
        schema: Schema,
        num_rows: int,
    ) -> list[pa.ChunkedArray]:
        by_name = _unique_names(source_schema.names, "")
        _reject_extra(by_name, {f.name for f in schema.fields}, "")
        out = []
        for f in schema.fields:
            target = field_to_arrow(f)
            index = by_name.get(f.name)
            if index is None:
                out.append(pa.chunked_array([self.missing(f, f.name, num_rows)], type=target.type))
                continue
            column = source_columns[index]
            chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
            converted = [self.array(chunk, f, f.name) for chunk in chunks]
            out.append(pa.chunked_array(converted, type=target.type))
        return out

    def missing(self, f: NestedField, path: str, length: int) -> pa.Array:
        if f.required:
            raise SchemaMismatch(
                f"required column {path!r} ({f.field_type}) is missing from the data"
            )
        return pa.nulls(length, type=type_to_arrow(f.field_type))

    def array(self, arr: pa.Array, f: NestedField, path: str) -> pa.Array:
        """``arr`` converted to ``f``'s Arrow type; counts nulls if ``f`` is required."""
        if isinstance(arr, pa.DictionaryArray):
            arr = arr.dictionary_decode()
        if pa.types.is_null(arr.type):
            arr = pa.nulls(len(arr), type=type_to_arrow(f.field_type))
        if f.required and arr.null_count:
            self._count(path, arr.null_count)
        t = f.field_type
        if isinstance(t, StructType):
            return self.struct_array(arr, t, path)
        if isinstance(t, ListType):
            return self.list_array(arr, t, path)
        if isinstance(t, MapType):
            return self.map_array(arr, t, path)
        assert isinstance(t, PrimitiveType)
        return _cast_primitive(arr, t, path)

    def struct_array(self, arr: pa.Array, t: StructType, path: str) -> pa.Array:
        if not pa.types.is_struct(arr.type):
            raise _type_error(path, arr.type, t)
        names = [arr.type.field(i).name for i in range(arr.type.num_fields)]
        by_name = _unique_names(names, path + ".")
        _reject_extra(by_name, {f.name for f in t.fields}, path + ".")
        # flatten() merges the parent's validity into the children (and honours slicing),
        # so child nulls under a null parent are not counted against required children.
        flat = arr.flatten()
        parent_nulls = arr.null_count
        children = []
        for f in t.fields:
            child_path = f"{path}.{f.name}"
            index = by_name.get(f.name)
            if index is None:
                children.append(self.missing(f, child_path, len(arr)))
                continue
            child = flat[index]
            if f.required and parent_nulls:
                # Only nulls where the parent is valid count: |child or parent| - |parent|.
                self._count(child_path, _decoded(child).null_count - parent_nulls)
                child = self.array(child, replace(f, required=False), child_path)
            else:
                child = self.array(child, f, child_path)
            children.append(child)
        mask = arr.is_null() if parent_nulls else None
        return pa.StructArray.from_arrays(
            children, fields=[field_to_arrow(f) for f in t.fields], mask=mask
        )

    def list_array(self, arr: pa.Array, t: ListType, path: str) -> pa.Array:
        if not _is_list_like(arr.type):
            raise _type_error(path, arr.type, t)
        offsets, values = list_parts(arr)
        values = self.array(values, t.element_field, f"{path}.element")
        mask = arr.is_null() if arr.null_count else None
        return pa.ListArray.from_arrays(offsets, values, type=type_to_arrow(t), mask=mask)

    def map_array(self, arr: pa.Array, t: MapType, path: str) -> pa.Array:
        if not pa.types.is_map(arr.type):
            raise _type_error(path, arr.type, t)
        offsets, keys, values = map_parts(arr)
        keys = self.array(keys, t.key_field, f"{path}.key")
        values = self.array(values, t.value_field, f"{path}.value")
        mask = arr.is_null() if arr.null_count else None
        return pa.MapArray.from_arrays(offsets, keys, values, type=type_to_arrow(t), mask=mask)


def _decoded(arr: pa.Array) -> pa.Array:
    return arr.dictionary_decode() if isinstance(arr, pa.DictionaryArray) else arr


def _unique_names(names: list[str], prefix: str) -> dict[str, int]:
    by_name: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in by_name:
            raise SchemaMismatch(f"the data has two columns named {prefix + name!r}")
        by_name[name] = i
    return by_name


def _reject_extra(by_name: dict[str, int], known: set[str], prefix: str) -> None:
    extra = [prefix + name for name in by_name if name not in known]
    if extra:
        raise SchemaMismatch(
            "the data has columns the table schema does not: "
            + ", ".join(repr(name) for name in extra)
            + " (evolve the schema first, or drop them)"
        )


def list_parts(arr: pa.Array) -> tuple[pa.Array, pa.Array]:
    """(int32 offsets from 0, values) of any list-like array, honouring slicing and dropping
    values hidden under null lists, ready for ``ListArray.from_arrays``."""
    lengths = pc.fill_null(pc.list_value_length(arr), 0).cast(pa.int64())
    ends = pc.cumulative_sum(lengths)
    offsets = pa.concat_arrays([pa.array([0], pa.int64()), ends]).cast(pa.int32())
    return offsets, arr.flatten()


def map_parts(arr: pa.Array) -> tuple[pa.Array, pa.Array, pa.Array]:
    """(int32 offsets from 0, keys, values) of a map array (see :func:`list_parts`)."""
    # A map is laid out as a list of key/value structs; viewing it as one reuses list_parts.
    entries_type = pa.list_(arr.type.field(0))
    offsets, entries = list_parts(arr.view(entries_type))
    keys, values = entries.flatten()
    return offsets, keys, values


# Which Arrow source types may be cast to each Iceberg primitive type. Casts that pyarrow
# performs but that change meaning (string -> int parsing, double -> float rounding,
# float -> int truncation) are left out on purpose.
_ACCEPTS: dict[type[PrimitiveType], Callable[[pa.DataType], bool]] = {
    BooleanType: pa.types.is_boolean,
    IntegerType: pa.types.is_integer,
    LongType: pa.types.is_integer,
    FloatType: lambda s: bool(pa.types.is_float16(s) or pa.types.is_float32(s)),
    DoubleType: pa.types.is_floating,
    DecimalType: pa.types.is_decimal,
    DateType: pa.types.is_date,
    TimeType: pa.types.is_time,
    TimestampType: pa.types.is_timestamp,
    TimestamptzType: pa.types.is_timestamp,
    StringType: lambda s: bool(
        pa.types.is_string(s) or pa.types.is_large_string(s) or pa.types.is_string_view(s)
    ),
    BinaryType: lambda s: bool(
        pa.types.is_binary(s)
        or pa.types.is_large_binary(s)
        or pa.types.is_binary_view(s)
        or pa.types.is_fixed_size_binary(s)
    ),
    FixedType: lambda s: bool(
        pa.types.is_fixed_size_binary(s) or pa.types.is_binary(s) or pa.types.is_large_binary(s)
    ),
    UUIDType: lambda s: (
        isinstance(s, pa.UuidType) or (pa.types.is_fixed_size_binary(s) and s.byte_width == 16)
    ),
}


def arrow_type_fits(source: pa.DataType, t: PrimitiveType) -> bool:
    """Whether Arrow values of type ``source`` may be cast to ``t`` (values permitting)."""
    if pa.types.is_dictionary(source):
        source = source.value_type
    accepts = _ACCEPTS.get(type(t))
    return accepts is not None and (pa.types.is_null(source) or accepts(source))


def _cast_primitive(arr: pa.Array, t: PrimitiveType, path: str) -> pa.Array:
    target = type_to_arrow(t)
    source = arr.type
    if source == target:
        return arr
    if not arrow_type_fits(source, t):
        raise _type_error(path, source, t)
    if isinstance(t, TimestampType) and source.tz is not None:
        raise SchemaMismatch(
            f"column {path!r} is a timestamp without time zone but the data has zone "
            f"{source.tz!r}; convert it to naive local times or make the column timestamptz"
        )
    if isinstance(t, TimestamptzType) and source.tz is None:
        raise SchemaMismatch(
            f"column {path!r} is timestamptz but the data has naive timestamps; "
            "attach a time zone (e.g. UTC) to the data first"
        )
    try:
        return arr.cast(target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise SchemaMismatch(
            f"column {path!r}: cannot convert {source} to {t} ({target}) without losing data: {exc}"
        ) from exc


def _type_error(path: str, source: pa.DataType, t: IcebergType) -> SchemaMismatch:
    return SchemaMismatch(
        f"column {path!r} has Arrow type {source}, which cannot be written to a {t} column"
    )

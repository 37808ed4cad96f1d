"""Iceberg schemas as Spark schemas, and Arrow batches between lakecat's and Spark's forms.

===================  ==========================  =============================================
Iceberg              Spark                       note
===================  ==========================  =============================================
boolean              BooleanType
int / long           IntegerType / LongType
float / double       FloatType / DoubleType
decimal(P, S)        DecimalType(P, S)
date                 DateType
timestamp            TimestampNTZType
timestamptz          TimestampType
string               StringType
uuid                 StringType                  canonical text form, as Iceberg Spark does
fixed[L] / binary    BinaryType                  a write checks fixed lengths
struct / list / map  StructType / ArrayType /    nullability from ``required``
                     MapType
time                 (none)                      Spark 4 rejects TIME; project the column away
===================  ==========================  =============================================

Reads hand Spark Arrow batches exactly in the form ``to_arrow_schema(spark schema)``;
writes take Spark's Arrow batches, match columns to the table's by name (exact first, then
case-insensitively, as Spark resolves names) and turn uuid text back into uuids before
:func:`lakecat.catalog.write.writer.conform` checks and casts the rest.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pyarrow as pa
from pyspark.sql import types as st
from pyspark.sql.pandas.types import to_arrow_schema

from lakecat.metadata.errors import SchemaMismatch, ValidationError
from lakecat.metadata.schema import (
    LINEAGE_COLUMNS,
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
    Schema,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
    arrow_to_schema,
    from_json_value,
    list_parts,
    map_parts,
    to_json_value,
)

# Metadata columns a read adds on request (Iceberg Spark's names): the data file of each row
# and the row's position in it. Row-level operations use them to rewrite whole files.
FILE_COLUMN = "_file"
POS_COLUMN = "_pos"
METADATA_COLUMNS = (FILE_COLUMN, POS_COLUMN)
# ... and constants of each row's file, made from its manifest entry by the row's _file
# (lakecat.spark_ext.source.partition_column): its partition spec's id and its partition
SPEC_ID_COLUMN = "_spec_id"
PARTITION_COLUMN = "_partition"
FILE_CONSTANTS = (SPEC_ID_COLUMN, PARTITION_COLUMN)
# What a compaction's rows carry to its writer instead (one long, not a path per row): the
# index of the row's file among its read task's files, shifted left by ROW_ADDRESS_SHIFT,
# plus its position in the file.
ROW_ADDRESS_COLUMN = "_lakecat_row_address"
ROW_ADDRESS_SHIFT = 40
COMMENT = "comment"  # the key of a Spark column's comment in its field metadata
# ... and of its default value and its existence default (Spark's ResolveDefaultColumns)
CURRENT_DEFAULT = "CURRENT_DEFAULT"
EXISTS_DEFAULT = "EXISTS_DEFAULT"

_SIMPLE: dict[type[IcebergType], Callable[[], st.DataType]] = {
    BooleanType: st.BooleanType,
    IntegerType: st.IntegerType,
    LongType: st.LongType,
    FloatType: st.FloatType,
    DoubleType: st.DoubleType,
    DateType: st.DateType,
    TimestampType: st.TimestampNTZType,
    TimestamptzType: st.TimestampType,
    StringType: st.StringType,
    UUIDType: st.StringType,
    BinaryType: st.BinaryType,
}


def spark_type(
    t: IcebergType, path: str, *, time_as_text: bool = False, comments: bool = False
) -> st.DataType:
    """The Spark type of an Iceberg type (see the module docstring). ``time_as_text``: a
    ``time``, which Spark 4 has no type for, as its text (``StringType``; the metadata
    tables show time bounds and values so) instead of refusing it. ``comments``: struct
    fields carry their docs as Spark column comments."""
    if isinstance(t, StructType):
        return st.StructType(
            [
                spark_field(f, f"{path}.{f.name}", time_as_text=time_as_text, comments=comments)
                for f in t.fields
            ]
        )
    if isinstance(t, ListType):
        element = spark_type(
            t.element_type, f"{path}.element", time_as_text=time_as_text, comments=comments
        )
        return st.ArrayType(element, containsNull=not t.element_required)
    if isinstance(t, MapType):
        return st.MapType(
            spark_type(t.key_type, f"{path}.key", time_as_text=time_as_text, comments=comments),
            spark_type(t.value_type, f"{path}.value", time_as_text=time_as_text, comments=comments),
            valueContainsNull=not t.value_required,
        )
    if isinstance(t, DecimalType):
        return st.DecimalType(t.precision, t.scale)
    if isinstance(t, FixedType):
        return st.BinaryType()
    if isinstance(t, TimeType):
        if time_as_text:
            return st.StringType()
        raise SchemaMismatch(
            f"column {path!r} has type time, which Spark 4 does not support; read the other "
            "columns by giving Spark a schema without it: spark.read.schema(...)"
        )
    make = _SIMPLE.get(type(t))
    if make is None:
        raise SchemaMismatch(f"column {path!r} has type {t}, which has no Spark form")
    return make()


def spark_field(
    f: NestedField,
    path: str,
    *,
    time_as_text: bool = False,
    comments: bool = False,
    defaults: bool = False,
) -> st.StructField:
    """The Spark field of an Iceberg field. ``comments``: its doc as the column's comment;
    ``defaults``: its ``write-default`` and ``initial-default`` as the column's default
    (:data:`CURRENT_DEFAULT`) and existence default (:data:`EXISTS_DEFAULT`), Spark SQL
    literals (:func:`sql_literal`), as Iceberg's Spark runtime reports them: Spark fills a
    column an ``INSERT`` leaves out, or names as ``DEFAULT``, with the write default."""
    field_type = spark_type(f.field_type, path, time_as_text=time_as_text, comments=comments)
    metadata: dict[str, str] = {}
    if comments and f.doc:
        metadata[COMMENT] = f.doc
    if defaults and isinstance(f.field_type, PrimitiveType):
        for key, value in ((CURRENT_DEFAULT, f.write_default), (EXISTS_DEFAULT, f.initial_default)):
            if value is not None:
                metadata[key] = sql_literal(f.field_type, value, path)
    return st.StructField(f.name, field_type, nullable=not f.required, metadata=metadata or None)


def sql_literal(t: PrimitiveType, value: Any, path: str) -> str:
    """A Spark SQL literal of the value ``value`` (the spec's JSON single-value form) of type
    ``t``, of exactly Spark's type for ``t``. Raises :class:`SchemaMismatch` for a value that
    is not one of ``t`` and for ``time``, which Spark has no type for."""
    try:
        text = to_json_value(t, from_json_value(t, value))
    except ValidationError as exc:
        raise SchemaMismatch(f"column {path!r} has a default that is not a {t}: {exc}") from exc
    if isinstance(t, BooleanType):
        return "true" if text else "false"
    if isinstance(t, IntegerType):
        return str(text)
    if isinstance(t, LongType):
        return f"{text}L"
    if isinstance(t, FloatType | DoubleType):
        number = float(text)
        shown = "NaN" if math.isnan(number) else repr(number).replace("inf", "Infinity")
        return f"CAST('{shown}' AS {'FLOAT' if isinstance(t, FloatType) else 'DOUBLE'})"
    if isinstance(t, DecimalType):
        return f"CAST('{text}' AS DECIMAL({t.precision}, {t.scale}))"
    if isinstance(t, DateType):
        return f"DATE '{text}'"
    if isinstance(t, TimestampType):
        return f"TIMESTAMP_NTZ '{text}'"
    if isinstance(t, TimestamptzType):
        return f"TIMESTAMP_LTZ '{text}'"
    if isinstance(t, StringType | UUIDType):
        return "'" + str(text).replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(t, FixedType | BinaryType):
        return f"X'{text}'"
    raise SchemaMismatch(f"column {path!r} has a default of type {t}, which Spark has no form for")


def spark_schema(
    schema: Schema,
    *,
    metadata_columns: bool = False,
    row_lineage: bool = False,
    row_addresses: bool = False,
    comments: bool = False,
    defaults: bool = False,
) -> st.StructType:
    """The Spark schema of an Iceberg schema, with the row lineage columns (``_row_id``,
    ``_last_updated_sequence_number``; null before format v3), the metadata columns and the
    row address column (:data:`ROW_ADDRESS_COLUMN`) when asked. ``comments``: the fields'
    docs as Spark column comments (the catalog's tables show them in ``DESCRIBE``; reads and
    writes compare schemas without them); ``defaults``: the top-level columns' defaults
    (:func:`spark_field`)."""
    fields = [spark_field(f, f.name, comments=comments, defaults=defaults) for f in schema.fields]
    if row_lineage:
        fields += [
            st.StructField(f.name, st.LongType(), nullable=True)
            for f in LINEAGE_COLUMNS.values()
            if f.name not in schema.column_names
        ]
    if metadata_columns:
        fields += [
            st.StructField(FILE_COLUMN, st.StringType(), nullable=False),
            st.StructField(POS_COLUMN, st.LongType(), nullable=False),
        ]
    if row_addresses:
        fields.append(st.StructField(ROW_ADDRESS_COLUMN, st.LongType(), nullable=False))
    return st.StructType(fields)


def project(schema: Schema, requested: st.StructType) -> tuple[Schema, bool]:
    """The table columns a Spark schema asks for (a user-given schema projects), and whether
    it asks for the metadata columns (or the row address, ``_spec_id`` or ``_partition``,
    which are made from them). The row
    lineage columns (``_row_id``, ``_last_updated_sequence_number``) resolve to their reserved
    fields unless the table has a column of that name.

    Names resolve exactly, then case-insensitively. A struct may be asked for in part (Spark's
    nested schema pruning: some of its fields, in Spark's order, also in list elements and map
    values); the column then reads as that part. A requested column whose type is neither the
    table column's Spark type nor such a part of it raises :class:`SchemaMismatch`.
    """
    by_lower = {f.name.lower(): f for f in schema.fields}
    chosen: list[NestedField] = []
    wants_metadata = False
    for field in requested.fields:
        if (
            field.name in METADATA_COLUMNS
            or field.name in FILE_CONSTANTS
            or field.name == ROW_ADDRESS_COLUMN
        ):
            wants_metadata = True
            continue
        found = next((f for f in schema.fields if f.name == field.name), None)
        found = found or by_lower.get(field.name.lower()) or LINEAGE_COLUMNS.get(field.name)
        if found is None:
            raise SchemaMismatch(
                f"column {field.name!r} is not in the table (columns: "
                f"{', '.join(schema.column_names)})"
            )
        pruned = _pruned(found.field_type, field.dataType, found.name)
        if pruned is None:
            expected = spark_type(found.field_type, found.name)
            raise SchemaMismatch(
                f"column {field.name!r} reads as {expected.simpleString()}, not "
                f"{field.dataType.simpleString()}"
            )
        chosen.append(replace(found, field_type=pruned))
    return Schema(tuple(chosen), schema.schema_id), wants_metadata


def _pruned(t: IcebergType, requested: st.DataType, path: str) -> IcebergType | None:
    """``t`` cut down to what ``requested`` asks for: Spark's nested schema pruning asks for
    some fields of a struct (in a list's elements and a map's values too), in the struct's
    order. ``None`` when ``requested`` is not ``t``'s Spark type or such a pruning of it (a
    struct's fields in another order included: batches map struct fields by position)."""
    if isinstance(t, StructType) and isinstance(requested, st.StructType):
        by_lower = {f.name.lower(): f for f in t.fields}
        position = {f.field_id: i for i, f in enumerate(t.fields)}
        fields: list[NestedField] = []
        for wanted in requested.fields:
            sub = next((f for f in t.fields if f.name == wanted.name), None)
            sub = sub or by_lower.get(wanted.name.lower())
            if sub is None or (fields and position[sub.field_id] <= position[fields[-1].field_id]):
                return None
            sub_type = _pruned(sub.field_type, wanted.dataType, f"{path}.{sub.name}")
            if sub_type is None:
                return None
            fields.append(replace(sub, field_type=sub_type))
        return StructType(tuple(fields))
    if isinstance(t, ListType) and isinstance(requested, st.ArrayType):
        element = _pruned(t.element_type, requested.elementType, f"{path}.element")
        return None if element is None else replace(t, element_type=element)
    if isinstance(t, MapType) and isinstance(requested, st.MapType):
        key = _pruned(t.key_type, requested.keyType, f"{path}.key")
        value = _pruned(t.value_type, requested.valueType, f"{path}.value")
        if key is None or value is None:
            return None
        return replace(t, key_type=key, value_type=value)
    return t if spark_type(t, path) == requested else None


# ---- Arrow: lakecat's form -> Spark's form (reads) -----------------------------------------


def to_spark_batch(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """A batch in lakecat's Arrow form (same columns, in order) in Spark's form ``target``."""
    columns = [
        _to_spark_array(column, field.type)
        for column, field in zip(batch.columns, target, strict=True)
    ]
    return pa.RecordBatch.from_arrays(columns, schema=target)


def _to_spark_array(arr: pa.Array, target: pa.DataType) -> pa.Array:
    if arr.type == target:
        return arr
    if isinstance(arr.type, pa.UuidType):
        return uuid_text(arr)
    if pa.types.is_struct(arr.type):
        children = [
            _to_spark_array(child, target.field(i).type) for i, child in enumerate(arr.flatten())
        ]
        mask = arr.is_null() if arr.null_count else None
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if pa.types.is_list(arr.type):
        offsets, values = list_parts(arr)
        values = _to_spark_array(values, target.value_type)
        mask = arr.is_null() if arr.null_count else None
        return pa.ListArray.from_arrays(offsets, values, type=target, mask=mask)
    if pa.types.is_map(arr.type):
        offsets, keys, items = map_parts(arr)
        keys = _to_spark_array(keys, target.key_type)
        items = _to_spark_array(items, target.item_type)
        mask = arr.is_null() if arr.null_count else None
        return pa.MapArray.from_arrays(offsets, keys, items, type=target, mask=mask)
    return arr.cast(target)


def uuid_text(arr: pa.Array) -> pa.Array:
    """uuid values as canonical text (Spark has no uuid type)."""
    storage = arr.storage if isinstance(arr, pa.ExtensionArray) else arr
    return pa.array(
        [None if b is None else str(uuid.UUID(bytes=b)) for b in storage.to_pylist()],
        pa.string(),
    )


# ---- Arrow: Spark's form -> the table's names (writes) -------------------------------------


def _table_fields(names: list[str], schema: Schema) -> list[NestedField | None]:
    """The table's field each of Spark's column names writes to: exact first, then
    case-insensitively, as Spark resolves names (None: the table has no such column)."""
    exact = {f.name: f for f in schema.fields}
    by_lower = {f.name.lower(): f for f in schema.fields}
    return [exact.get(name) or by_lower.get(name.lower()) for name in names]


def table_schema(columns: st.StructType) -> Schema:
    """The Iceberg schema of a table created with Spark's ``columns`` (``CREATE TABLE``,
    ``REPLACE TABLE``): types as Spark's own Arrow form maps them, field ids in order, and
    each column's ``COMMENT`` (nested ones too) as its field's doc."""
    schema = arrow_to_schema(to_arrow_schema(columns, timezone="UTC"))
    return replace(schema, fields=_documented(schema.fields, columns))


def _documented(fields: tuple[NestedField, ...], spark: st.StructType) -> tuple[NestedField, ...]:
    return tuple(
        replace(
            f,
            doc=s.metadata.get(COMMENT) or f.doc,
            field_type=_documented_type(f.field_type, s.dataType),
        )
        for f, s in zip(fields, spark.fields, strict=True)
    )


def _documented_type(t: IcebergType, spark: st.DataType) -> IcebergType:
    if isinstance(t, StructType) and isinstance(spark, st.StructType):
        return StructType(_documented(t.fields, spark))
    if isinstance(t, ListType) and isinstance(spark, st.ArrayType):
        return replace(t, element_type=_documented_type(t.element_type, spark.elementType))
    if isinstance(t, MapType) and isinstance(spark, st.MapType):
        return replace(
            t,
            key_type=_documented_type(t.key_type, spark.keyType),
            value_type=_documented_type(t.value_type, spark.valueType),
        )
    return t


def from_spark_schema(data: pa.Schema, schema: Schema) -> pa.Schema:
    """The Arrow schema of Spark's rows (``to_arrow_schema`` of the DataFrame's schema) as
    :func:`from_spark_table` makes them for a table of ``schema``: the table's names, text
    written to a uuid column as uuid; a column the table lacks as it is."""
    fields: list[pa.Field] = []
    for arrow_field, field in zip(data, _table_fields(data.names, schema), strict=True):
        if field is None:
            fields.append(arrow_field)
            continue
        t = arrow_field.type
        if isinstance(field.field_type, UUIDType) and _is_text(t):
            t = pa.uuid()
        fields.append(pa.field(field.name, t, arrow_field.nullable))
    return pa.schema(fields)


def from_spark_table(table: pa.Table, schema: Schema) -> pa.Table:
    """Spark's columns renamed to the table's names and uuid text parsed, ready for
    :func:`lakecat.catalog.write.writer.conform` (which checks and casts everything else)."""
    names: list[str] = []
    columns: list[pa.ChunkedArray] = []
    fields = _table_fields(table.column_names, schema)
    for name, column, field in zip(table.column_names, table.columns, fields, strict=True):
        if field is None:
            names.append(name)  # conform names the extra column
            columns.append(column)
            continue
        names.append(field.name)
        if isinstance(field.field_type, UUIDType) and _is_text(column.type):
            column = pa.chunked_array(
                [_parse_uuids(chunk, field.name) for chunk in column.chunks],
                type=pa.binary(16),
            )
        columns.append(column)
    return pa.Table.from_arrays(columns, names=names)


def _is_text(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t))


def _parse_uuids(chunk: pa.Array, column: str) -> pa.Array:
    out: list[bytes | None] = []
    for text in chunk.to_pylist():
        if text is None:
            out.append(None)
            continue
        try:
            out.append(uuid.UUID(text).bytes)
        except ValueError:
            raise SchemaMismatch(f"column {column!r}: {text!r} is not a uuid") from None
    return pa.array(out, pa.binary(16))

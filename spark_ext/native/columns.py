"""A DataFrame's columns as the table's columns, for Spark's own Parquet writer.

The native write hands Spark a DataFrame in the table's form: the table's top-level columns in
schema order, each field (nested ones included) carrying its Iceberg field id in the
``parquet.field.id`` metadata, from which Spark writes Parquet field ids
(``spark.sql.parquet.fieldId.write.enabled``). Columns are matched as the data source matches
them: top-level names exactly, then case-insensitively; struct fields by exact name.

Only what converts exactly qualifies (:class:`NotNative` otherwise, and the data source, with
its own checks, serves the write): the same Spark type, or a widening that loses nothing
(byte/short/int to int or long, float to double, a decimal into one with as many integer
and fraction digits). A missing optional field is written as nulls; a missing required one,
a DataFrame column the table lacks, or a type Spark cannot write in Iceberg's Parquet form
(uuid and fixed, which Spark writes as plain binary; time) do not qualify. A required field
that is nullable in the DataFrame is checked row by row: a null fails the Spark job
(``raise_error``).

Lists and maps: Spark's writer has no field to carry the id of a list's element or a map's key
and value, so those ids go into the metadata of the column or struct field holding the list or
map (:data:`NESTED_IDS_KEY`, :func:`field_metadata`) and the catalog plugin's Parquet format
(:data:`ID_PARQUET_FORMAT`) writes them into the file schema. Such a column qualifies only
where that format is loadable (``lists_and_maps``: the session has a lakecat SQL catalog), and
only when it converts as a whole (one cast): lists and maps of the same shape, struct fields
inside them matched by name in the table's order, nothing required inside them that the
DataFrame may hold nulls in.

Planning (:func:`plan_columns`) is pure and decides; :func:`build_columns` turns the plan into
Spark columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as st

from lakecat.metadata.schema import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    Schema,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    child_fields,
)
from lakecat.spark_ext.native.support import NotNative
from lakecat.spark_ext.types import spark_type

FIELD_ID_KEY = "parquet.field.id"
# The ids of the list elements and map keys and values inside a field's type, in pre-order up
# to the next struct (whose fields carry their own): read by ID_PARQUET_FORMAT's writer.
NESTED_IDS_KEY = "lakecat.parquet.nested.ids"
# The catalog plugin's Parquet file format that writes those ids (Spark's writes none).
ID_PARQUET_FORMAT = "lakecat.spark.IdParquetFormat"
# Its write option: the bytes at which a task rolls to a new file (the table's target size).
TARGET_SIZE_OPTION = "lakecat.target-file-size"

# Spark types that convert exactly into each Iceberg primitive type (decimals aside).
_EXACT_SOURCES: dict[type[IcebergType], tuple[type[st.DataType], ...]] = {
    BooleanType: (st.BooleanType,),
    IntegerType: (st.ByteType, st.ShortType, st.IntegerType),
    LongType: (st.ByteType, st.ShortType, st.IntegerType, st.LongType),
    FloatType: (st.FloatType,),
    DoubleType: (st.FloatType, st.DoubleType),
    DateType: (st.DateType,),
    TimestampType: (st.TimestampNTZType,),
    TimestamptzType: (st.TimestampType,),
    StringType: (st.StringType,),
    BinaryType: (st.BinaryType,),
}


@dataclass(frozen=True)
class FieldPlan:
    """How one table field is made from the DataFrame."""

    field: NestedField
    path: str  # dotted, for messages
    source: str | None  # the DataFrame field's name; None: missing, written as nulls
    check_nulls: bool  # required in the table, nullable in the DataFrame
    # A struct rebuilt field by field (reordered, missing or checked children); None: the
    # column converts as a whole with one cast.
    children: tuple[FieldPlan, ...] | None = None


def check_writable(schema: Schema, *, lists_and_maps: bool) -> None:
    """:class:`NotNative` for a column type Spark cannot write in Iceberg's Parquet form.
    ``lists_and_maps``: whether :data:`ID_PARQUET_FORMAT` writes the write's files (the ids of
    list elements and map keys and values)."""
    for f in schema.fields:
        _check_writable(f.field_type, f.name, lists_and_maps)


def _check_writable(t: IcebergType, path: str, lists_and_maps: bool) -> None:
    if isinstance(t, (ListType, MapType)) and not lists_and_maps:
        raise NotNative(
            f"column {path!r} is a {'list' if isinstance(t, ListType) else 'map'}: Spark's "
            "writer cannot write the field ids of list elements and map keys and values, "
            "and the session has no lakecat SQL catalog, whose plugin writes them"
        )
    if isinstance(t, (StructType, ListType, MapType)):
        for child in child_fields(t):
            _check_writable(child.field_type, f"{path}.{child.name}", lists_and_maps)
    elif isinstance(t, TimeType):
        raise NotNative(f"column {path!r} has type time, which Spark 4 does not support")
    elif type(t) not in _EXACT_SOURCES and not isinstance(t, DecimalType):
        raise NotNative(
            f"column {path!r} has type {t}, which Spark does not write in Iceberg's Parquet form"
        )


def has_lists_or_maps(t: IcebergType) -> bool:
    """Whether a value of ``t`` holds a list or map (written with :data:`ID_PARQUET_FORMAT`)."""
    if isinstance(t, StructType):
        return any(has_lists_or_maps(f.field_type) for f in t.fields)
    return isinstance(t, (ListType, MapType))


def plan_columns(
    schema: Schema, source: st.StructType, *, lists_and_maps: bool
) -> tuple[FieldPlan, ...]:
    """How each top-level table column is made from the DataFrame schema ``source``
    (:class:`NotNative` when one cannot be made exactly; ``lists_and_maps``: as for
    :func:`check_writable`)."""
    check_writable(schema, lists_and_maps=lists_and_maps)
    return _plan_fields(schema.fields, source.fields, prefix="", top_level=True)


def _plan_fields(
    fields: Sequence[NestedField],
    source: Sequence[st.StructField],
    *,
    prefix: str,
    top_level: bool,
) -> tuple[FieldPlan, ...]:
    match = _matcher(source, prefix=prefix, top_level=top_level)
    plans: list[FieldPlan] = []
    used: set[str] = set()
    for f in fields:
        path = prefix + f.name
        found = match(f.name)
        if found is None:
            if f.required:
                raise NotNative(f"the DataFrame lacks the required column {path!r}")
            plans.append(FieldPlan(f, path, None, check_nulls=False))
            continue
        used.add(found.name)
        plans.append(_plan_field(f, found, path))
    extra = [s.name for s in source if s.name not in used]
    if extra:
        raise NotNative(f"the table has no column {prefix + extra[0]!r}")
    return tuple(plans)


def _matcher(source: Sequence[st.StructField], *, prefix: str, top_level: bool) -> _FieldMatcher:
    names = [s.name.lower() if top_level else s.name for s in source]
    if len(set(names)) != len(names):
        raise NotNative(f"the DataFrame has duplicate columns in {prefix or 'its top level'}")
    return _FieldMatcher(tuple(source), case_insensitive=top_level)


@dataclass(frozen=True)
class _FieldMatcher:
    source: tuple[st.StructField, ...]
    case_insensitive: bool

    def __call__(self, name: str) -> st.StructField | None:
        exact = next((s for s in self.source if s.name == name), None)
        if exact is not None or not self.case_insensitive:
            return exact
        return next((s for s in self.source if s.name.lower() == name.lower()), None)


def _plan_field(f: NestedField, found: st.StructField, path: str) -> FieldPlan:
    t = f.field_type
    check = f.required and found.nullable
    if isinstance(t, StructType):
        if not isinstance(found.dataType, st.StructType):
            raise NotNative(f"column {path!r} is a struct in the table, not in the DataFrame")
        children = _plan_fields(t.fields, found.dataType.fields, prefix=f"{path}.", top_level=False)
        whole = [c.field.name for c in children] == [s.name for s in found.dataType.fields] and all(
            c.source is not None and not c.check_nulls and c.children is None for c in children
        )
        return FieldPlan(f, path, found.name, check, None if whole else children)
    if isinstance(t, (ListType, MapType)):
        problem = _container_problem(found.dataType, t, path)
        if problem is not None:
            raise NotNative(problem)
    elif not _converts_exactly(found.dataType, t):
        raise NotNative(
            f"column {path!r}: {found.dataType.simpleString()} does not convert exactly to {t}"
        )
    return FieldPlan(f, path, found.name, check)


def _container_problem(source: st.DataType, target: IcebergType, path: str) -> str | None:
    """Why a value of Spark type ``source`` does not convert exactly, with one cast, to a
    value of ``target`` inside a list or map (None: it does). A cast matches struct fields by
    position, so they must be the table's, by name and in its order."""
    if isinstance(target, ListType):
        if not isinstance(source, st.ArrayType):
            return f"column {path!r} is a list in the table, not in the DataFrame"
        if target.element_required and source.containsNull:
            return f"the DataFrame may hold null elements in the required elements of {path!r}"
        return _container_problem(source.elementType, target.element_type, f"{path}.element")
    if isinstance(target, MapType):
        if not isinstance(source, st.MapType):
            return f"column {path!r} is a map in the table, not in the DataFrame"
        if target.value_required and source.valueContainsNull:
            return f"the DataFrame may hold null values in the required values of {path!r}"
        return _container_problem(
            source.keyType, target.key_type, f"{path}.key"
        ) or _container_problem(source.valueType, target.value_type, f"{path}.value")
    if isinstance(target, StructType):
        if not isinstance(source, st.StructType):
            return f"field {path!r} is a struct in the table, not in the DataFrame"
        names = [f.name for f in target.fields]
        if [s.name for s in source.fields] != names:
            return (
                f"the struct {path!r} inside a list or map has the fields "
                f"{[s.name for s in source.fields]} in the DataFrame, not the table's {names}"
            )
        for field, found in zip(target.fields, source.fields, strict=True):
            if field.required and found.nullable:
                return f"the DataFrame may hold nulls in the required field {path}.{field.name!r}"
            problem = _container_problem(found.dataType, field.field_type, f"{path}.{field.name}")
            if problem is not None:
                return problem
        return None
    if not _converts_exactly(source, target):
        return f"field {path!r}: {source.simpleString()} does not convert exactly to {target}"
    return None


def _converts_exactly(source: st.DataType, target: IcebergType) -> bool:
    if isinstance(target, DecimalType):
        return (
            isinstance(source, st.DecimalType)
            and source.scale <= target.scale
            and source.precision - source.scale <= target.precision - target.scale
        )
    return isinstance(source, _EXACT_SOURCES.get(type(target), ()))


# ---- Spark columns ------------------------------------------------------------------------


def id_type(t: IcebergType) -> st.DataType:
    """The Spark type of ``t`` with the field ids of nested fields in their metadata
    (:func:`field_metadata`), and nullable, so that a cast to it always resolves (required
    fields are checked apart)."""
    if isinstance(t, StructType):
        return st.StructType(
            [
                st.StructField(f.name, id_type(f.field_type), True, metadata=field_metadata(f))
                for f in t.fields
            ]
        )
    if isinstance(t, ListType):
        return st.ArrayType(id_type(t.element_type), containsNull=True)
    if isinstance(t, MapType):
        return st.MapType(id_type(t.key_type), id_type(t.value_type), valueContainsNull=True)
    return spark_type(t, "")


def field_metadata(f: NestedField) -> dict[str, object]:
    """The Spark field metadata carrying ``f``'s field id, and the ids of the list elements and
    map keys and values inside its type (:data:`NESTED_IDS_KEY`) when it has any."""
    ids = nested_ids(f.field_type)
    return {FIELD_ID_KEY: f.field_id, **({NESTED_IDS_KEY: ids} if ids else {})}


def nested_ids(t: IcebergType) -> list[int]:
    """The ids of the list elements and map keys and values inside ``t`` in pre-order (an
    element's id, then those inside the element; a key's, those inside the key, the value's,
    those inside the value), up to the next struct."""
    if isinstance(t, (ListType, MapType)):
        return [i for f in child_fields(t) for i in (f.field_id, *nested_ids(f.field_type))]
    return []


def quoted(name: str) -> str:
    """A column name for ``F.col``, which would read dots as struct access."""
    return "`" + name.replace("`", "``") + "`"


def build_columns(plans: Sequence[FieldPlan]) -> list[Column]:
    """The table's top-level columns, each with its field id, made as planned."""
    return [
        _build(F.col(quoted(p.source)) if p.source is not None else None, p).alias(
            p.field.name, metadata=field_metadata(p.field)
        )
        for p in plans
    ]


def _build(source: Column | None, plan: FieldPlan) -> Column:
    target = id_type(plan.field.field_type)
    if source is None:
        return F.lit(None).cast(target)
    if plan.children is None:
        column = source.cast(target)
    else:
        rebuilt = F.struct(
            *[
                _build(
                    source.getField(child.source) if child.source is not None else None, child
                ).alias(child.field.name)
                for child in plan.children
            ]
        )
        column = F.when(source.isNull(), F.lit(None)).otherwise(rebuilt).cast(target)
    if plan.check_nulls:
        message = f"null in the required column {plan.path!r}"
        column = F.when(column.isNull(), F.raise_error(F.lit(message))).otherwise(column)
    return column

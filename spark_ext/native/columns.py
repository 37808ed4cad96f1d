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
(lists and maps, whose element, key and value field ids Spark cannot express; uuid and fixed,
which Spark writes as plain binary; time) do not qualify. A required field that is nullable
in the DataFrame is checked row by row: a null fails the Spark job (``raise_error``).

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
)
from lakecat.spark_ext.native.support import NotNative
from lakecat.spark_ext.types import spark_type

FIELD_ID_KEY = "parquet.field.id"

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


def check_writable(schema: Schema) -> None:
    """:class:`NotNative` for a column type Spark cannot write in Iceberg's Parquet form."""
    for f in schema.fields:
        _check_writable(f.field_type, f.name)


def _check_writable(t: IcebergType, path: str) -> None:
    if isinstance(t, StructType):
        for child in t.fields:
            _check_writable(child.field_type, f"{path}.{child.name}")
    elif isinstance(t, (ListType, MapType)):
        raise NotNative(
            f"column {path!r} is a {'list' if isinstance(t, ListType) else 'map'}: Spark cannot "
            "write the field ids of list elements and map keys and values"
        )
    elif isinstance(t, TimeType):
        raise NotNative(f"column {path!r} has type time, which Spark 4 does not support")
    elif type(t) not in _EXACT_SOURCES and not isinstance(t, DecimalType):
        raise NotNative(
            f"column {path!r} has type {t}, which Spark does not write in Iceberg's Parquet form"
        )


def plan_columns(schema: Schema, source: st.StructType) -> tuple[FieldPlan, ...]:
    """How each top-level table column is made from the DataFrame schema ``source``
    (:class:`NotNative` when one cannot be made exactly)."""
    check_writable(schema)
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
    if not _converts_exactly(found.dataType, t):
        raise NotNative(
            f"column {path!r}: {found.dataType.simpleString()} does not convert exactly to {t}"
        )
    return FieldPlan(f, path, found.name, check)


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
    """The Spark type of ``t`` with the field ids of nested fields in their metadata (and
    nullable, so that a cast to it always resolves; required fields are checked apart)."""
    if isinstance(t, StructType):
        return st.StructType(
            [
                st.StructField(
                    f.name, id_type(f.field_type), True, metadata={FIELD_ID_KEY: f.field_id}
                )
                for f in t.fields
            ]
        )
    return spark_type(t, "")


def quoted(name: str) -> str:
    """A column name for ``F.col``, which would read dots as struct access."""
    return "`" + name.replace("`", "``") + "`"


def build_columns(plans: Sequence[FieldPlan]) -> list[Column]:
    """The table's top-level columns, each with its field id, made as planned."""
    return [
        _build(F.col(quoted(p.source)) if p.source is not None else None, p).alias(
            p.field.name, metadata={FIELD_ID_KEY: p.field.field_id}
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

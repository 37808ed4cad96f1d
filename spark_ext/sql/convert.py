"""Spark's catalog values, as the JVM catalog plugin sends them in JSON, in lakecat's terms.

* partition transforms: Spark's ``identity(c)``, ``years/months/days/hours(c)``,
  ``bucket(N, c)`` and ``truncate(W, c)`` <-> lakecat's ``partition_by`` items
  (``"c"``, ``("c", "day")``, ``("c", "bucket[16]")``, ...);
* filter predicates (Spark's V2 ``Predicate`` trees, literals in Catalyst's internal form) ->
  lakecat expressions, only when lakecat evaluates them exactly as Spark does (the rules of
  :mod:`lakecat.spark_ext.source.filters`): they decide which rows a ``DELETE`` or an overwrite
  removes, and Spark does not look at the rows again;
* Spark data types -> Iceberg types, for the columns ``ALTER TABLE ... ADD COLUMN`` adds.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from pyspark.sql import datasource as ds
from pyspark.sql import types as st

from lakecat.catalog import Table
from lakecat.metadata import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
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
)
from lakecat.metadata.errors import ValidationError
from lakecat.metadata.expressions import AlwaysFalse, AlwaysTrue, Expression, and_, or_
from lakecat.metadata.schema import IcebergType
from lakecat.metadata.table import TableMetadata
from lakecat.spark_ext.source.filters import to_expression

# Spark transform name <-> lakecat transform (the time transforms take no argument).
_TIME_TRANSFORMS = {"years": "year", "months": "month", "days": "day", "hours": "hour"}
_SPARK_TIME_TRANSFORMS = {v: k for k, v in _TIME_TRANSFORMS.items()}

PartitionItem = str | tuple[str, str]


class UnsupportedByCatalog(ValidationError):
    """A Spark catalog request lakecat cannot serve (a transform, a change, a filter)."""


# ---- partition transforms -------------------------------------------------------------------
def partition_by(transforms: Sequence[Mapping[str, Any]]) -> list[PartitionItem]:
    """lakecat's ``partition_by`` for Spark's ``PARTITIONED BY`` transforms."""
    out: list[PartitionItem] = []
    for t in transforms:
        name = t["name"]
        # Spark's reference is one name per level; joined, it is the column's full name,
        # which names one field (Iceberg schemas have unique full names).
        columns = [".".join(a["ref"]) for a in t["args"] if "ref" in a]
        literals = [int(a["literal"]) for a in t["args"] if "literal" in a]
        if len(columns) != 1:
            raise UnsupportedByCatalog(f"partition transform {name} needs exactly one column")
        column = columns[0]
        if name == "identity" and not literals:
            out.append(column)
        elif name in _TIME_TRANSFORMS and not literals:
            out.append((column, _TIME_TRANSFORMS[name]))
        elif name in ("bucket", "truncate") and len(literals) == 1:
            out.append((column, f"{name}[{literals[0]}]"))
        else:
            raise UnsupportedByCatalog(
                f"unsupported partition transform {name}: use a column, years(c), months(c), "
                "days(c), hours(c), bucket(N, c) or truncate(W, c)"
            )
    return out


def spark_transforms(table: Table | TableMetadata) -> list[dict[str, Any]]:
    """The table's partition spec as Spark transforms (void fields are left out)."""
    schema = table.schema()
    out: list[dict[str, Any]] = []
    for field in table.spec().fields:
        transform = spark_transform(schema, field.source_id, field.transform)
        if transform is not None:
            out.append(transform)
    return out


def spark_sort_order(table: Table | TableMetadata) -> list[dict[str, Any]]:
    """The table's sort order as Spark sort orders: a transform (as :func:`spark_transforms`
    gives them), ``ascending``, ``nulls_first``; as far as its fields have Spark transforms."""
    schema = table.schema()
    out: list[dict[str, Any]] = []
    for field in table.sort_order().fields:
        transform = spark_transform(schema, field.source_id, field.transform)
        if transform is None:
            break
        out.append(
            {
                "transform": transform,
                "ascending": field.direction == "asc",
                "nulls_first": field.null_order == "nulls-first",
            }
        )
    return out


def spark_transform(schema: Schema, source_id: int, transform: str) -> dict[str, Any] | None:
    """A partition or sort field's transform of the column ``source_id`` as a Spark transform
    (JSON, as the plugin's ``SparkJson.transforms`` reads it); None for ``void`` and for
    transforms Spark has no name for."""
    # The names from the top-level column down, each as it is ("a.b" stays one name).
    column = {"ref": list(schema.column_path(source_id))}
    if transform == "identity":
        return {"name": "identity", "args": [column]}
    if transform in _SPARK_TIME_TRANSFORMS:
        return {"name": _SPARK_TIME_TRANSFORMS[transform], "args": [column]}
    if transform.startswith(("bucket[", "truncate[")):
        name, _, width = transform.rstrip("]").partition("[")
        return {"name": name, "args": [{"literal": int(width)}, column]}
    return None  # void


# ---- predicates -----------------------------------------------------------------------------
def predicates_expression(predicates: Sequence[Mapping[str, Any]], schema: Schema) -> Expression:
    """The conjunction of Spark's predicates as one lakecat expression; raises
    :class:`UnsupportedByCatalog` for a predicate lakecat would not evaluate exactly as Spark."""
    return and_(*(_predicate(p, schema) for p in predicates))


def _predicate(p: Mapping[str, Any], schema: Schema) -> Expression:
    op = p.get("op")
    children = p.get("children", [])
    if op == "ALWAYS_TRUE":
        return AlwaysTrue()
    if op == "ALWAYS_FALSE":
        return AlwaysFalse()
    if op is None and p.get("type") == "boolean" and p.get("literal") in ("true", "false"):
        # Spark's AlwaysTrue / AlwaysFalse predicates are boolean literals too (TRUNCATE TABLE,
        # DELETE FROM ... WHERE true)
        return AlwaysTrue() if p["literal"] == "true" else AlwaysFalse()
    if op == "AND":
        return and_(*(_predicate(c, schema) for c in children))
    if op == "OR":
        return or_(*(_predicate(c, schema) for c in children))
    leaf = _filter(p)
    expression = to_expression(leaf, schema) if leaf is not None else None
    if expression is None:
        raise UnsupportedByCatalog(
            f"lakecat cannot evaluate the condition {_describe(p)} exactly as Spark does "
            "(comparisons of uuid columns, expressions other than a column against literals)"
        )
    return expression


_COMPARISON_FILTERS: dict[str, Any] = {
    "=": ds.EqualTo,
    "<=>": ds.EqualNullSafe,
    "<": ds.LessThan,
    "<=": ds.LessThanOrEqual,
    ">": ds.GreaterThan,
    ">=": ds.GreaterThanOrEqual,
}
_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "<=>": "<=>", "<>": "<>"}


def _filter(p: Mapping[str, Any]) -> ds.Filter | None:
    """A Python data source filter for one leaf predicate (None: not a column test)."""
    op = p.get("op")
    children = list(p.get("children", []))
    if op == "NOT" and len(children) == 1:
        child = _filter(children[0])
        return None if child is None else ds.Not(child)
    if op in ("IS_NULL", "IS_NOT_NULL") and len(children) == 1 and "ref" in children[0]:
        column = tuple(children[0]["ref"])
        return ds.IsNull(column) if op == "IS_NULL" else ds.IsNotNull(column)
    if op == "IN" and children and "ref" in children[0]:
        if not all("literal" in c for c in children[1:]):
            return None
        return ds.In(tuple(children[0]["ref"]), tuple(literal(c) for c in children[1:]))
    if op in _FLIPPED and len(children) == 2:
        left, right = children
        if "literal" in left and "ref" in right:
            left, right, op = right, left, _FLIPPED[op]
        if "ref" not in left or "literal" not in right:
            return None
        column, value = tuple(left["ref"]), literal(right)
        if op == "<>":
            return ds.Not(ds.EqualTo(column, value))
        made: ds.Filter = _COMPARISON_FILTERS[op](column, value)
        return made
    if op == "STARTS_WITH" and len(children) == 2 and "ref" in children[0]:
        return ds.StringStartsWith(tuple(children[0]["ref"]), literal(children[1]))
    return None


_EPOCH = dt.datetime(1970, 1, 1)
_LITERALS: dict[str, Any] = {
    "string": str,
    "boolean": lambda text: text == "true",
    "byte": int,
    "short": int,
    "integer": int,
    "long": int,
    "float": float,
    "double": float,
    "decimal": Decimal,
    "date": lambda text: _EPOCH.date() + dt.timedelta(days=int(text)),
    "timestamp": lambda text: _EPOCH.replace(tzinfo=dt.UTC) + dt.timedelta(microseconds=int(text)),
    "timestamp_ntz": lambda text: _EPOCH + dt.timedelta(microseconds=int(text)),
    "binary": base64.b64decode,
}


def literal(node: Mapping[str, Any]) -> Any:
    """A Spark literal (Catalyst's internal form as text, and its type's name) in Python."""
    text = node["literal"]
    if text is None:
        return None
    convert = _LITERALS.get(node["type"])
    if convert is None:
        raise UnsupportedByCatalog(f"literals of type {node['type']} are not supported")
    return convert(text)


# ---- types ----------------------------------------------------------------------------------
def spark_data_type(type_json: str) -> st.DataType:
    """A Spark type from its JSON form (``DataType.json()``)."""
    field = {"name": "_", "type": json.loads(type_json), "nullable": True, "metadata": {}}
    return st.StructType.fromJson({"type": "struct", "fields": [field]}).fields[0].dataType


_PRIMITIVES: dict[type[st.DataType], Any] = {
    st.BooleanType: BooleanType,
    st.ByteType: IntegerType,
    st.ShortType: IntegerType,
    st.IntegerType: IntegerType,
    st.LongType: LongType,
    st.FloatType: FloatType,
    st.DoubleType: DoubleType,
    st.DateType: DateType,
    st.TimestampType: TimestamptzType,
    st.TimestampNTZType: TimestampType,
    st.StringType: StringType,
    st.CharType: StringType,
    st.VarcharType: StringType,
    st.BinaryType: BinaryType,
}


def iceberg_type(t: st.DataType) -> IcebergType:
    """The Iceberg type of a Spark type (nested ids are placeholders: lakecat's schema update
    assigns fresh ones)."""
    if isinstance(t, st.DecimalType):
        return DecimalType(t.precision, t.scale)
    if isinstance(t, st.StructType):
        return StructType(
            tuple(
                NestedField(i, f.name, iceberg_type(f.dataType), required=not f.nullable)
                for i, f in enumerate(t.fields, start=1)
            )
        )
    if isinstance(t, st.ArrayType):
        return ListType(1, iceberg_type(t.elementType), element_required=not t.containsNull)
    if isinstance(t, st.MapType):
        return MapType(
            1,
            iceberg_type(t.keyType),
            2,
            iceberg_type(t.valueType),
            value_required=not t.valueContainsNull,
        )
    make = _PRIMITIVES.get(type(t))
    if make is None:
        raise UnsupportedByCatalog(f"Spark type {t.simpleString()} has no Iceberg form")
    result: IcebergType = make()
    return result


def _describe(p: Mapping[str, Any]) -> str:
    if "ref" in p:
        return ".".join(p["ref"])
    if "literal" in p:
        return repr(p["literal"])
    if "unsupported" in p:
        return str(p["unsupported"])
    return f"{p.get('op')}({', '.join(_describe(c) for c in p.get('children', []))})"

"""Filters Spark pushes down (``pyspark.sql.datasource.Filter``) as lakecat expressions.

Spark hands a Python data source the conjuncts of a query's WHERE clause that it can express
(comparisons, IN, IS [NOT] NULL, string prefix, NOT of those). A filter converts only when
lakecat evaluates it exactly as Spark does, because a converted filter is used to prune files
and to filter rows, and Spark does not evaluate it again:

* comparisons of float and double columns convert to what Spark means: Spark orders NaN above
  every number and takes ``NaN = NaN`` as true, lakecat compares as IEEE 754 and tests NaN
  with ``IS NAN``; so ``x > 1.5`` becomes ``x > 1.5 OR x IS NAN``, ``x = NaN`` becomes
  ``x IS NAN``, ``NOT (x < 1.5)`` becomes ``x >= 1.5 OR x IS NAN`` (``-0.0 = 0.0`` in both);
* uuid columns (text in Spark) convert only for null checks: Spark compares their text,
  lakecat their 16 bytes;
* ``x NOT IN (..., NULL)`` and ``NOT (x <=> v)`` do not convert (SQL gives them no rows,
  respectively null rows, where lakecat's rewrites differ);
* a literal that does not bind to the column's type leaves the filter to Spark.

Everything else converts: for the rest of the types, SQL's three-valued logic in a WHERE
clause keeps exactly the rows lakecat's expressions match.
"""

from __future__ import annotations

import math
from typing import Any

from pyspark.sql import datasource as ds

from lakecat.metadata.errors import ValidationError
from lakecat.metadata.expressions import (
    AlwaysFalse,
    EqualTo,
    Expression,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNaN,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    NotEqualTo,
    NotIn,
    NotNaN,
    NotNull,
    Or,
    StartsWith,
    and_,
    bind,
    or_,
)
from lakecat.metadata.schema import (
    DoubleType,
    FloatType,
    IcebergType,
    Schema,
    StringType,
    UUIDType,
)

_COMPARISONS: dict[type[ds.Filter], type[Any]] = {
    ds.EqualTo: EqualTo,
    ds.GreaterThan: GreaterThan,
    ds.GreaterThanOrEqual: GreaterThanOrEqual,
    ds.LessThan: LessThan,
    ds.LessThanOrEqual: LessThanOrEqual,
}


def to_expression(f: ds.Filter, schema: Schema) -> Expression | None:
    """The lakecat expression for a pushed filter, or ``None`` when Spark must evaluate it."""
    expression = _convert(f, schema)
    if expression is None:
        return None
    try:
        bind(schema, expression)  # the literal must fit the column
    except ValidationError:
        return None
    return expression


def _convert(f: ds.Filter, schema: Schema) -> Expression | None:
    if isinstance(f, ds.Not):
        return _convert_not(f.child, schema)
    column = _column(f, schema)
    if column is None:
        return None
    name, t = column
    if isinstance(f, ds.IsNull):
        return IsNull(name)
    if isinstance(f, ds.IsNotNull):
        return NotNull(name)
    if isinstance(t, FloatType | DoubleType):
        return _float_comparison(f, name, negated=False)
    if not comparable(t):
        return None
    if isinstance(f, ds.EqualNullSafe):
        return IsNull(name) if f.value is None else EqualTo(name, f.value)
    if isinstance(f, ds.In):
        values = [v for v in f.value if v is not None]
        return In(name, frozenset(values)) if values else AlwaysFalse()
    if isinstance(f, ds.StringStartsWith):
        return StartsWith(name, f.value) if isinstance(t, StringType) else None
    make = _COMPARISONS.get(type(f))
    value = getattr(f, "value", None)
    if make is None or value is None:
        return None
    result: Expression = make(name, value)
    return result


def _convert_not(child: ds.Filter, schema: Schema) -> Expression | None:
    if isinstance(child, ds.Not):
        return _convert(child.child, schema)  # NOT NOT a is a, in SQL's three values too
    if isinstance(child, ds.In) and any(v is None for v in child.value):
        return None  # x NOT IN (.., NULL) is never true in SQL
    if isinstance(child, ds.EqualNullSafe):
        # NOT (x <=> v) is true for null x; lakecat's x != v is not.
        column = _column(child, schema)
        return NotNull(column[0]) if child.value is None and column is not None else None
    column = _column(child, schema)
    if column is not None and isinstance(column[1], FloatType | DoubleType):
        if isinstance(child, ds.IsNull | ds.IsNotNull):
            return NotNull(column[0]) if isinstance(child, ds.IsNull) else IsNull(column[0])
        return _float_comparison(child, column[0], negated=True)
    inner = _convert(child, schema)
    return None if inner is None else Not(inner)


# Spark's comparisons of non-null values are a total order (NaN the greatest, -0.0 = 0.0), so
# NOT of one is the opposite comparison; IN and = have their negations as the last two.
_SPARK_OPS: dict[type[ds.Filter], str] = {
    ds.EqualTo: "=",
    ds.EqualNullSafe: "=",
    ds.LessThan: "<",
    ds.LessThanOrEqual: "<=",
    ds.GreaterThan: ">",
    ds.GreaterThanOrEqual: ">=",
    ds.In: "in",
}
_SPARK_NOT = {"=": "!=", "<": ">=", "<=": ">", ">": "<=", ">=": "<", "in": "not in"}


def _float_comparison(f: ds.Filter, name: str, *, negated: bool) -> Expression | None:
    """Spark's comparison (or its ``NOT``) of the float or double column ``name`` as the
    lakecat expression selecting the same rows. Spark orders NaN above every number and takes
    ``NaN = NaN`` as true; lakecat's comparisons are IEEE 754's (false with a NaN operand but
    ``!=``), and ``IS NAN`` / ``IS NOT NAN`` test it. ``-0.0 = 0.0`` in both. Null rows match
    neither, as in a WHERE clause."""
    op = _SPARK_OPS.get(type(f))
    value = getattr(f, "value", None)
    if op is None:
        return None
    if isinstance(f, ds.EqualNullSafe) and value is None:
        return NotNull(name) if negated else IsNull(name)
    if isinstance(f, ds.In):
        values = [v for v in f.value if v is not None]  # NULL matches nothing
        if not all(isinstance(v, float | int) and not isinstance(v, bool) for v in values):
            return None
        nan = any(math.isnan(v) for v in values)
        numbers = frozenset(v for v in values if not math.isnan(v))
        if negated:  # non-null, not a number of the list, and not NaN when NaN is in it
            kept: list[Expression] = [NotIn(name, numbers) if numbers else NotNull(name)]
            return and_(*kept, NotNaN(name)) if nan else kept[0]
        parts: list[Expression] = [In(name, numbers)] if numbers else []
        return or_(*parts, IsNaN(name)) if nan else (parts[0] if parts else AlwaysFalse())
    if not isinstance(value, float | int) or isinstance(value, bool):
        return None
    if negated:
        op = _SPARK_NOT[op]
    if math.isnan(value):  # NaN: above every number, equal to itself
        return {
            "=": IsNaN(name),
            "!=": NotNaN(name),
            "<": NotNaN(name),
            "<=": NotNull(name),
            ">": AlwaysFalse(),
            ">=": IsNaN(name),
        }[op]
    if op in (">", ">="):  # NaN rows are above every number
        above = GreaterThan(name, value) if op == ">" else GreaterThanOrEqual(name, value)
        return Or(above, IsNaN(name))
    made: Expression = {
        "=": EqualTo,
        "!=": NotEqualTo,  # NaN != v in both
        "<": LessThan,  # NaN < v in neither
        "<=": LessThanOrEqual,
    }[op](name, value)
    return made


def _column(f: ds.Filter, schema: Schema) -> tuple[str, IcebergType] | None:
    """The column a filter tests (its full name) and its type; None for a column lakecat
    cannot filter on.

    Spark names the column as a path, one name per level; the path is walked field by field
    (a name may contain dots), and the field's full name, unique in an Iceberg schema, is
    what the lakecat expression refers to."""
    path = getattr(f, "attribute", None)
    if not path or not isinstance(path, tuple | list):
        return None
    try:
        field = schema.find_path(tuple(path))
    except ValidationError:
        return None
    name = schema.column_name(field.field_id)
    if not schema.has_field(name):
        return None  # a schema written elsewhere with an ambiguous full name
    if schema.in_list_or_map(field.field_id):  # no value per row
        return None
    return name, field.field_type


def comparable(t: IcebergType) -> bool:
    """Whether comparisons of a column of type ``t`` mean the same in Spark and lakecat (a
    float or double one converts through :func:`_float_comparison`; a uuid one does not)."""
    return t.is_primitive and not isinstance(t, FloatType | DoubleType | UUIDType)

"""What the evaluators share: compiling a bound expression into closures, decoding bounds."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from lakecat.metadata.errors import ValidationError
from lakecat.metadata.expressions.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundPredicate,
    Expression,
    Operation,
    Or,
    bind,
    is_bound,
)
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import (
    DoubleType,
    FloatType,
    IcebergType,
)

# Past this many values an IN is not checked against bounds (Java's IN_PREDICATE_LIMIT).
IN_PREDICATE_LIMIT = 200

Op = Operation
T = TypeVar("T")
EMPTY: Mapping[int, Any] = {}


def ensure_bound(schema: Schema, expr: Expression) -> Expression:
    """``expr`` if it is already bound, else ``bind(schema, expr)`` (case-sensitive)."""
    return expr if is_bound(expr) else bind(schema, expr)


def compile_filter(
    expr: Expression,
    leaf: Callable[[BoundPredicate], Callable[[T], bool]],
) -> Callable[[T], bool]:
    """Turn a bound expression into one closure, with ``leaf`` compiling each predicate."""
    if isinstance(expr, BoundPredicate):
        return leaf(expr)
    if isinstance(expr, And):
        left, right = compile_filter(expr.left, leaf), compile_filter(expr.right, leaf)
        return lambda x: left(x) and right(x)
    if isinstance(expr, Or):
        left, right = compile_filter(expr.left, leaf), compile_filter(expr.right, leaf)
        return lambda x: left(x) or right(x)
    if isinstance(expr, AlwaysTrue):
        return lambda x: True
    if isinstance(expr, AlwaysFalse):
        return lambda x: False
    raise ValidationError(f"expected a bound expression (see expressions.bind), got {expr}")


def is_float(t: IcebergType) -> bool:
    return isinstance(t, FloatType | DoubleType)


def is_nan(value: Any) -> bool:
    return isinstance(value, float) and value != value

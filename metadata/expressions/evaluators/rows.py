"""Evaluating a bound filter on values: one row (:func:`row_evaluator`) or Arrow data
(:func:`to_arrow_filter`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakecat.metadata.errors import ValidationError
from lakecat.metadata.expressions.evaluators.base import Op, compile_filter, is_float
from lakecat.metadata.expressions.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundPredicate,
    Expression,
    Or,
)
from lakecat.metadata.schema.arrow import type_to_arrow
from lakecat.metadata.schema.types import (
    IcebergType,
    UUIDType,
)

# ---- rows ---------------------------------------------------------------------------------


def value_predicate(pred: BoundPredicate) -> Callable[[Any], bool]:
    """A test of one value (in-memory form, None for null) against a bound predicate."""
    op, lit, lits = pred.op, pred.literal, pred.literals
    if op is Op.IS_NULL:
        return lambda v: v is None
    if op is Op.NOT_NULL:
        return lambda v: v is not None
    if op is Op.IS_NAN:
        return lambda v: v is not None and v != v
    if op is Op.NOT_NAN:
        return lambda v: v is not None and v == v
    if op is Op.EQ:
        return lambda v: v is not None and v == lit
    if op is Op.NOT_EQ:
        return lambda v: v is not None and v != lit
    if op is Op.LT:
        return lambda v: v is not None and v < lit
    if op is Op.LT_EQ:
        return lambda v: v is not None and v <= lit
    if op is Op.GT:
        return lambda v: v is not None and v > lit
    if op is Op.GT_EQ:
        return lambda v: v is not None and v >= lit
    if op is Op.IN:
        return lambda v: v is not None and v in lits
    if op is Op.NOT_IN:
        return lambda v: v is not None and v not in lits
    if op is Op.STARTS_WITH:
        return lambda v: v is not None and v.startswith(lit)
    if op is Op.NOT_STARTS_WITH:
        return lambda v: v is not None and not v.startswith(lit)
    raise ValidationError(f"unsupported predicate {pred}")  # pragma: no cover


def row_evaluator(expr: Expression) -> Callable[[Mapping[int, Any]], bool]:
    """Evaluate a bound expression on one row given as ``{field_id: in-memory value}``.

    Missing ids count as null. This is the reference semantics the other evaluators agree with.
    """

    def leaf(pred: BoundPredicate) -> Callable[[Mapping[int, Any]], bool]:
        test, fid = value_predicate(pred), pred.ref.field_id
        return lambda row: test(row.get(fid))

    return compile_filter(expr, leaf)


# ---- Arrow --------------------------------------------------------------------------------


def to_arrow_filter(expr: Expression) -> pc.Expression:
    """A pyarrow compute expression selecting the rows that match a bound expression.

    Columns are addressed by name (``pc.field("a", "b")`` for the struct field ``a.b``), as
    :func:`lakecat.metadata.schema.arrow.schema_to_arrow` names them. The result is never
    null, so ``~to_arrow_filter(e)`` selects exactly the rows that do *not* match (the rows a
    delete keeps).
    """
    if isinstance(expr, BoundPredicate):
        return _arrow_predicate(expr)
    if isinstance(expr, And):
        return to_arrow_filter(expr.left) & to_arrow_filter(expr.right)
    if isinstance(expr, Or):
        return to_arrow_filter(expr.left) | to_arrow_filter(expr.right)
    if isinstance(expr, AlwaysTrue):
        return pc.scalar(True)
    if isinstance(expr, AlwaysFalse):
        return pc.scalar(False)
    raise ValidationError(f"expected a bound expression (see expressions.bind), got {expr}")


def _arrow_type(t: IcebergType) -> pa.DataType:
    # uuid columns are compared through their 16-byte storage: arrow has no kernels for the
    # uuid extension type.
    return pa.binary(16) if isinstance(t, UUIDType) else type_to_arrow(t)


def _arrow_value(t: IcebergType, value: Any) -> Any:
    return value.bytes if isinstance(t, UUIDType) else value


def _arrow_predicate(pred: BoundPredicate) -> pc.Expression:
    ref = pred.ref
    field = pc.field(*(ref.path or (ref.name,)))
    if isinstance(ref.type, UUIDType):
        field = field.cast(pa.binary(16))
    op = pred.op
    if op is Op.IS_NULL:
        return field.is_null()
    valid = field.is_valid()
    if op is Op.NOT_NULL:
        return valid
    # Every other predicate is false for nulls: "valid & p" turns p's null into false, so the
    # whole filter stays null-free and can be inverted.
    if op is Op.IS_NAN:
        return valid & pc.is_nan(field)
    if op is Op.NOT_NAN:
        return valid & ~pc.is_nan(field)
    if op is Op.STARTS_WITH:
        return valid & pc.starts_with(field, pattern=pred.literal)
    if op is Op.NOT_STARTS_WITH:
        return valid & ~pc.starts_with(field, pattern=pred.literal)
    arrow_type = _arrow_type(ref.type)
    if op in (Op.IN, Op.NOT_IN):
        literals = list(pred.literals)
        if is_float(ref.type) and 0.0 in pred.literals:
            # is_in hashes bits, so 0.0 and -0.0 differ there while they compare equal (and
            # are one element of a Python set).
            literals = [v for v in literals if v != 0.0] + [0.0, -0.0]
        values = pa.array([_arrow_value(ref.type, v) for v in literals], type=arrow_type)
        member = field.isin(values)
        return valid & (member if op is Op.IN else ~member)
    scalar = pa.scalar(_arrow_value(ref.type, pred.literal), type=arrow_type)
    if op is Op.EQ:
        return valid & (field == scalar)
    if op is Op.NOT_EQ:
        return valid & (field != scalar)
    if op is Op.LT:
        return valid & (field < scalar)
    if op is Op.LT_EQ:
        return valid & (field <= scalar)
    if op is Op.GT:
        return valid & (field > scalar)
    if op is Op.GT_EQ:
        return valid & (field >= scalar)
    raise ValidationError(f"unsupported predicate {pred}")  # pragma: no cover

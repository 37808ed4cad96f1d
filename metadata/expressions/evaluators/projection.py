"""Projecting a row filter onto a partition spec: inclusive and strict projections through each
transform, as Java's ``Projections``."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any

from lakecat.metadata.errors import LakecatError, ValidationError
from lakecat.metadata.expressions.evaluators.base import Op, ensure_bound
from lakecat.metadata.expressions.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundPredicate,
    BoundReference,
    Expression,
    Operation,
    Or,
    simplify_and,
    simplify_or,
)
from lakecat.metadata.partitioning.spec import PartitionField, PartitionSpec
from lakecat.metadata.partitioning.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    Transform,
    TruncateTransform,
    YearTransform,
    parse_transform,
)
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import (
    BinaryType,
    DecimalType,
    IntegerType,
    LongType,
    NestedField,
    PrimitiveType,
    StringType,
)

# ---- partition projection -----------------------------------------------------------------


class _PartitionSource:
    """A partition field's transform, source type and partition-side reference."""

    __slots__ = ("ref", "source_type", "transform")

    def __init__(self, field: PartitionField, source_type: PrimitiveType) -> None:
        self.transform: Transform = parse_transform(field.transform, strict=False)
        self.source_type = source_type
        result = self.transform.result_type(source_type)
        self.ref = BoundReference(field.field_id, field.name, result, (field.name,))


def _partition_sources(spec: PartitionSpec, schema: Schema) -> dict[int, list[_PartitionSource]]:
    by_source: dict[int, list[_PartitionSource]] = {}
    for field in spec.fields:
        # A partition field whose source column was dropped cannot be filtered on.
        if not schema.has_field(field.source_id):
            continue
        source_type = schema.find_type(field.source_id)
        if isinstance(source_type, PrimitiveType):
            part = _PartitionSource(field, source_type)
            by_source.setdefault(field.source_id, []).append(part)
    return by_source


def partition_schema(spec: PartitionSpec, schema: Schema) -> Schema:
    """The partition struct of ``spec`` as a schema (optional fields with partition field ids)."""
    fields = []
    for field in spec.fields:
        source = schema.find_type(field.source_id)
        result = parse_transform(field.transform, strict=False).result_type(source)
        fields.append(NestedField(field.field_id, field.name, result, required=False))
    return Schema(tuple(fields))


def inclusive_projection(schema: Schema, spec: PartitionSpec, expr: Expression) -> Expression:
    """A filter on partition values that holds for every partition holding a matching row.

    The result refers to partition fields (ids and names of ``spec``'s fields, result types of
    their transforms). A predicate with no usable partition field projects to ``AlwaysTrue``;
    several partition fields of one column are combined with AND.
    """
    return _project(ensure_bound(schema, expr), _partition_sources(spec, schema), strict=False)


def strict_projection(schema: Schema, spec: PartitionSpec, expr: Expression) -> Expression:
    """A filter on partition values that holds only for partitions whose rows all match.

    A predicate with no usable partition field projects to ``AlwaysFalse``; several partition
    fields of one column are combined with OR.
    """
    return _project(ensure_bound(schema, expr), _partition_sources(spec, schema), strict=True)


def selects_whole_partitions(
    schema: Schema, specs: Iterable[PartitionSpec], expr: Expression
) -> bool:
    """Whether partition values alone decide ``expr`` under every spec of ``specs``: its
    inclusive and strict projections are the same filter, so each file, whatever spec wrote
    it, holds either no matching row or only matching rows (Java's
    ``ExpressionUtil.selectsPartitions``). The projections are compared as Java's
    ``isEquivalentTo`` does: structurally, once a strict bound on a partition value that
    steps (a time transform's ordinal, a truncated integer) is written as the inclusive bound
    it equals (``day > 5`` as ``day >= 6``, ``truncate10 < 20`` as ``truncate10 <= 10``), so
    ``ts >= '2024-01-01'`` on ``days(ts)`` counts; anything else errs towards ``False``. A
    read that keeps the files whose partition values pass the inclusive projection then need
    not test its rows against ``expr``."""
    bound = ensure_bound(schema, expr)
    for spec in specs:
        sources = _partition_sources(spec, schema)
        steps = {
            part.ref.field_id: step
            for parts in sources.values()
            for part in parts
            if (step := _value_step(part)) is not None
        }
        inclusive = _inclusive_bounds(_project(bound, sources, strict=False), steps)
        if inclusive != _inclusive_bounds(_project(bound, sources, strict=True), steps):
            return False
    return True


def _value_step(part: _PartitionSource) -> int | None:
    """The distance between neighbouring values ``part``'s transform produces, where they are
    integers with one (``None`` elsewhere)."""
    transform, source = part.transform, part.source_type
    if isinstance(transform, _TIME_TRANSFORMS) and transform.can_transform(source):
        return 1  # ordinals of years, months, days, hours
    if isinstance(transform, TruncateTransform) and isinstance(source, IntegerType | LongType):
        return transform.width  # multiples of the width
    return None  # identity projects a bound unchanged both ways: nothing to rewrite


def _inclusive_bounds(expr: Expression, steps: dict[int, int]) -> Expression:
    """``expr`` with ``x > v`` as ``x >= v + step`` and ``x < v`` as ``x <= v - step`` on the
    partition fields of ``steps`` (whose values are the multiples of the step, ``v`` one of
    them as a projection makes it)."""
    if isinstance(expr, And | Or):
        left, right = _inclusive_bounds(expr.left, steps), _inclusive_bounds(expr.right, steps)
        return And(left, right) if isinstance(expr, And) else Or(left, right)
    if isinstance(expr, BoundPredicate) and expr.op in (Op.GT, Op.LT):
        step = steps.get(expr.ref.field_id)
        if step is not None:
            if expr.op is Op.GT:
                return BoundPredicate(Op.GT_EQ, expr.ref, expr.literal + step)
            return BoundPredicate(Op.LT_EQ, expr.ref, expr.literal - step)
    return expr


def _project(
    expr: Expression, sources: dict[int, list[_PartitionSource]], *, strict: bool
) -> Expression:
    if isinstance(expr, And):
        left = _project(expr.left, sources, strict=strict)
        return simplify_and(left, _project(expr.right, sources, strict=strict))
    if isinstance(expr, Or):
        left = _project(expr.left, sources, strict=strict)
        return simplify_or(left, _project(expr.right, sources, strict=strict))
    if isinstance(expr, AlwaysTrue | AlwaysFalse):
        return expr
    if not isinstance(expr, BoundPredicate):
        raise ValidationError(f"expected a bound expression (see expressions.bind), got {expr}")
    result: Expression = AlwaysFalse() if strict else AlwaysTrue()
    for part in sources.get(expr.ref.field_id, ()):
        try:
            projected = _project_strict(part, expr) if strict else _project_inclusive(part, expr)
        except LakecatError:
            # A boundary the transform cannot take (e.g. past the decimal's precision) leaves
            # the partition undecided, which is always safe.
            projected = None
        if projected is not None:
            result = simplify_or(result, projected) if strict else simplify_and(result, projected)
    return result


def _step(t: PrimitiveType, value: Any, direction: int) -> Any:
    """The next (direction 1) or previous (-1) value of an integer-like or decimal type."""
    if isinstance(t, DecimalType):
        return value + direction * Decimal(1).scaleb(-t.scale)
    return value + direction


def _make(part: _PartitionSource, op: Operation, value: Any = None) -> BoundPredicate:
    return BoundPredicate(op, part.ref, value)


def _make_set(part: _PartitionSource, op: Operation, values: frozenset[Any]) -> BoundPredicate:
    if len(values) == 1:
        (only,) = values
        return BoundPredicate(Op.EQ if op is Op.IN else Op.NOT_EQ, part.ref, only)
    return BoundPredicate(op, part.ref, literals=values)


_TIME_TRANSFORMS = (YearTransform, MonthTransform, DayTransform, HourTransform)
_ORDERED = (TruncateTransform, *_TIME_TRANSFORMS)
# Transforms that map null to null and every other value to a non-null value.
_NULL_PRESERVING = (BucketTransform, TruncateTransform, *_TIME_TRANSFORMS)
_UNARY_KEPT = (Op.IS_NULL, Op.NOT_NULL)


def _project_null_test(part: _PartitionSource, op: Operation) -> BoundPredicate | None:
    if isinstance(part.transform, _NULL_PRESERVING) and part.transform.can_transform(
        part.source_type
    ):
        return _make(part, op)
    return None


def _project_inclusive(part: _PartitionSource, pred: BoundPredicate) -> BoundPredicate | None:
    transform, st, op = part.transform, part.source_type, pred.op

    def apply(v: Any) -> Any:
        return transform.apply(st, v)

    if isinstance(transform, IdentityTransform):
        return BoundPredicate(op, part.ref, pred.literal, pred.literals)
    if op in _UNARY_KEPT:
        return _project_null_test(part, op)
    if isinstance(transform, BucketTransform):
        if op is Op.EQ:
            return _make(part, Op.EQ, apply(pred.literal))
        if op is Op.IN:
            return _make_set(part, Op.IN, frozenset(apply(v) for v in pred.literals))
        return None
    if isinstance(transform, TruncateTransform) and isinstance(st, StringType | BinaryType):
        return _truncate_array_inclusive(part, pred, apply)
    if isinstance(transform, _ORDERED):
        if op is Op.IN:
            return _make_set(part, Op.IN, frozenset(apply(v) for v in pred.literals))
        lit = pred.literal
        if op is Op.LT:
            return _make(part, Op.LT_EQ, apply(_step(st, lit, -1)))
        if op is Op.LT_EQ:
            return _make(part, Op.LT_EQ, apply(lit))
        if op is Op.GT:
            return _make(part, Op.GT_EQ, apply(_step(st, lit, 1)))
        if op is Op.GT_EQ:
            return _make(part, Op.GT_EQ, apply(lit))
        if op is Op.EQ:
            return _make(part, Op.EQ, apply(lit))
    return None


def _truncate_array_inclusive(
    part: _PartitionSource, pred: BoundPredicate, apply: Callable[[Any], Any]
) -> BoundPredicate | None:
    op, lit = pred.op, pred.literal
    assert isinstance(part.transform, TruncateTransform)  # only called for truncate
    width = part.transform.width
    if op is Op.IN:
        return _make_set(part, Op.IN, frozenset(apply(v) for v in pred.literals))
    if op in (Op.LT, Op.LT_EQ):
        return _make(part, Op.LT_EQ, apply(lit))
    if op in (Op.GT, Op.GT_EQ):
        return _make(part, Op.GT_EQ, apply(lit))
    if op is Op.EQ:
        return _make(part, Op.EQ, apply(lit))
    if op is Op.STARTS_WITH:
        return _make(part, Op.STARTS_WITH, apply(lit))
    if op is Op.NOT_STARTS_WITH:
        if len(lit) < width:
            return _make(part, Op.NOT_STARTS_WITH, lit)
        if len(lit) == width:
            return _make(part, Op.NOT_EQ, lit)
    return None


def _project_strict(part: _PartitionSource, pred: BoundPredicate) -> BoundPredicate | None:
    transform, st, op = part.transform, part.source_type, pred.op

    def apply(v: Any) -> Any:
        return transform.apply(st, v)

    if isinstance(transform, IdentityTransform):
        return BoundPredicate(op, part.ref, pred.literal, pred.literals)
    if op in _UNARY_KEPT:
        return _project_null_test(part, op)
    if isinstance(transform, BucketTransform):
        if op is Op.NOT_EQ:
            return _make(part, Op.NOT_EQ, apply(pred.literal))
        if op is Op.NOT_IN:
            return _make_set(part, Op.NOT_IN, frozenset(apply(v) for v in pred.literals))
        return None
    if op is Op.NOT_IN and isinstance(transform, _ORDERED):
        return _make_set(part, Op.NOT_IN, frozenset(apply(v) for v in pred.literals))
    if isinstance(transform, TruncateTransform) and isinstance(st, StringType | BinaryType):
        return _truncate_array_strict(part, pred, apply)
    if isinstance(transform, _ORDERED):
        lit = pred.literal
        if op is Op.LT:
            return _make(part, Op.LT, apply(lit))
        if op is Op.LT_EQ:
            return _make(part, Op.LT, apply(_step(st, lit, 1)))
        if op is Op.GT:
            return _make(part, Op.GT, apply(lit))
        if op is Op.GT_EQ:
            return _make(part, Op.GT, apply(_step(st, lit, -1)))
        if op is Op.NOT_EQ:
            return _make(part, Op.NOT_EQ, apply(lit))
    return None


def _truncate_array_strict(
    part: _PartitionSource, pred: BoundPredicate, apply: Callable[[Any], Any]
) -> BoundPredicate | None:
    op, lit = pred.op, pred.literal
    assert isinstance(part.transform, TruncateTransform)  # only called for truncate
    width = part.transform.width
    if op in (Op.LT, Op.LT_EQ):
        return _make(part, Op.LT, apply(lit))
    if op in (Op.GT, Op.GT_EQ):
        return _make(part, Op.GT, apply(lit))
    if op is Op.NOT_EQ:
        return _make(part, Op.NOT_EQ, apply(lit))
    if op is Op.STARTS_WITH:
        if len(lit) < width:
            return _make(part, Op.STARTS_WITH, lit)
        if len(lit) == width:
            return _make(part, Op.EQ, lit)
        return None
    if op is Op.NOT_STARTS_WITH:
        if len(lit) < width:
            return _make(part, Op.NOT_STARTS_WITH, lit)
        if len(lit) == width:
            return _make(part, Op.NOT_EQ, lit)
        return _make(part, Op.NOT_STARTS_WITH, apply(lit))
    return None

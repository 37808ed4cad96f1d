"""Evaluating bound row filters: on Arrow data, on file metrics, on partitions and manifests.

Every evaluator follows the semantics documented in :mod:`lakecat.metadata.expressions`
(a row matches when the filter is TRUE; predicates on nulls are not TRUE except ``IS NULL``;
NaN compares as IEEE 754). Pruning evaluators come in two kinds:

* *inclusive* ("rows might match"): False only when no row can match, so a scan may skip.
  :class:`InclusiveMetricsEvaluator`, :class:`PartitionEvaluator`, :class:`ManifestEvaluator`.
* *strict* ("all rows must match"): True only when every row matches, so a delete may drop a
  whole file without rewriting it. :class:`StrictMetricsEvaluator`, ``strict=True`` partitions.

The metrics rules follow Iceberg Java's ``InclusiveMetricsEvaluator``,
``StrictMetricsEvaluator`` and ``ManifestEvaluator``; the strict rules are tightened where Java
counts nulls as matching ``!=``, ``NOT IN`` and ``IS NOT NAN`` (lakecat never does) and where
Java trusts a missing null or NaN count. Partition projection follows Java's ``Projections``
and each transform's ``project``/``projectStrict`` (as pyiceberg 0.12 implements them, without
Java's adjustment for pre-1970 partition values written by Iceberg 0.10 and older).

Each evaluator compiles its expression once into nested closures; evaluating a file or a
manifest then decodes only the bounds that the filter reads, each at most once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from lakecat.metadata.arrow_schema import type_to_arrow
from lakecat.metadata.conversions import from_bytes
from lakecat.metadata.datafile import DataFile, ManifestFile, PartitionFieldSummary
from lakecat.metadata.errors import LakecatError, ValidationError
from lakecat.metadata.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundPredicate,
    BoundReference,
    Expression,
    Operation,
    Or,
    bind,
    is_bound,
    simplify_and,
    simplify_or,
)
from lakecat.metadata.partitioning import PartitionField, PartitionSpec
from lakecat.metadata.schema import Schema
from lakecat.metadata.transforms import (
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
from lakecat.metadata.types import (
    BinaryType,
    DecimalType,
    DoubleType,
    FloatType,
    IcebergType,
    IntegerType,
    LongType,
    NestedField,
    PrimitiveType,
    StringType,
    UUIDType,
)

# Past this many values an IN is not checked against bounds (Java's IN_PREDICATE_LIMIT).
IN_PREDICATE_LIMIT = 200

Op = Operation
T = TypeVar("T")
_EMPTY: Mapping[int, Any] = {}


def ensure_bound(schema: Schema, expr: Expression) -> Expression:
    """``expr`` if it is already bound, else ``bind(schema, expr)`` (case-sensitive)."""
    return expr if is_bound(expr) else bind(schema, expr)


def _compile(
    expr: Expression,
    leaf: Callable[[BoundPredicate], Callable[[T], bool]],
) -> Callable[[T], bool]:
    """Turn a bound expression into one closure, with ``leaf`` compiling each predicate."""
    if isinstance(expr, BoundPredicate):
        return leaf(expr)
    if isinstance(expr, And):
        left, right = _compile(expr.left, leaf), _compile(expr.right, leaf)
        return lambda x: left(x) and right(x)
    if isinstance(expr, Or):
        left, right = _compile(expr.left, leaf), _compile(expr.right, leaf)
        return lambda x: left(x) or right(x)
    if isinstance(expr, AlwaysTrue):
        return lambda x: True
    if isinstance(expr, AlwaysFalse):
        return lambda x: False
    raise ValidationError(f"expected a bound expression (see expressions.bind), got {expr}")


def _is_float(t: IcebergType) -> bool:
    return isinstance(t, FloatType | DoubleType)


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and value != value


def _decode(t: IcebergType, data: bytes) -> Any:
    assert isinstance(t, PrimitiveType)
    # Bounds written before an int -> long or float -> double promotion keep their 4 bytes
    # (Java's Conversions.fromByteBuffer reads them the same way).
    if isinstance(t, LongType) and len(data) == 4:
        return from_bytes(IntegerType(), data)
    if isinstance(t, DoubleType) and len(data) == 4:
        return from_bytes(FloatType(), data)
    return from_bytes(t, data)


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

    return _compile(expr, leaf)


# ---- Arrow --------------------------------------------------------------------------------


def to_arrow_filter(expr: Expression) -> pc.Expression:
    """A pyarrow compute expression selecting the rows that match a bound expression.

    Columns are addressed by name (``pc.field("a", "b")`` for the struct field ``a.b``), as
    :func:`lakecat.metadata.arrow_schema.schema_to_arrow` names them. The result is never
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
        if _is_float(ref.type) and 0.0 in pred.literals:
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


# ---- data file metrics --------------------------------------------------------------------


class _FileStats:
    """One data file's metrics, with bounds decoded on first use."""

    __slots__ = (
        "_lower",
        "_upper",
        "lower_bytes",
        "nan_counts",
        "null_counts",
        "upper_bytes",
        "value_counts",
    )

    def __init__(self, f: DataFile) -> None:
        self.value_counts = f.value_counts or _EMPTY
        self.null_counts = f.null_value_counts or _EMPTY
        self.nan_counts = f.nan_value_counts or _EMPTY
        self.lower_bytes = f.lower_bounds or _EMPTY
        self.upper_bytes = f.upper_bounds or _EMPTY
        self._lower: dict[int, Any] = {}
        self._upper: dict[int, Any] = {}

    def lower(self, ref: BoundReference) -> Any:
        fid = ref.field_id
        try:
            return self._lower[fid]
        except KeyError:
            raw = self.lower_bytes.get(fid)
            value = None if raw is None else _decode(ref.type, raw)
            self._lower[fid] = value
            return value

    def upper(self, ref: BoundReference) -> Any:
        fid = ref.field_id
        try:
            return self._upper[fid]
        except KeyError:
            raw = self.upper_bytes.get(fid)
            value = None if raw is None else _decode(ref.type, raw)
            self._upper[fid] = value
            return value

    def nulls_only(self, fid: int) -> bool:
        values, nulls = self.value_counts.get(fid), self.null_counts.get(fid)
        return values is not None and nulls is not None and values - nulls == 0

    def nans_only(self, fid: int) -> bool:
        nans = self.nan_counts.get(fid)
        return nans is not None and nans == self.value_counts.get(fid)

    def no_nulls(self, fid: int) -> bool:
        """Known to hold no null (a missing count proves nothing)."""
        return self.null_counts.get(fid) == 0

    def no_nans(self, ref: BoundReference) -> bool:
        """Known to hold no NaN (always, for types without NaN)."""
        return not _is_float(ref.type) or self.nan_counts.get(ref.field_id) == 0


FileTest = Callable[[_FileStats], bool]


class InclusiveMetricsEvaluator:
    """Might a data file hold rows that match? (False means the file can be skipped.)

    Uses the file's record count, value/null/NaN counts and lower/upper bounds, following
    Iceberg Java's ``InclusiveMetricsEvaluator``. Missing metrics mean "might match".
    """

    def __init__(self, schema: Schema, expr: Expression) -> None:
        self.expr = ensure_bound(schema, expr)
        self._test: FileTest = _compile(self.expr, _inclusive_leaf)

    def eval(self, data_file: DataFile) -> bool:
        if data_file.record_count == 0:
            return False
        if data_file.record_count < 0:
            # Imported files of old writers carry -1: nothing is known.
            return True
        return self._test(_FileStats(data_file))


def _inclusive_leaf(pred: BoundPredicate) -> FileTest:
    ref, op, lit = pred.ref, pred.op, pred.literal
    fid = ref.field_id

    if op is Op.IS_NULL:
        return lambda s: s.null_counts.get(fid) != 0
    if op is Op.NOT_NULL:
        return lambda s: not s.nulls_only(fid)
    if op is Op.IS_NAN:
        return lambda s: not s.nulls_only(fid) and s.nan_counts.get(fid) != 0
    if op is Op.NOT_NAN:
        return lambda s: not s.nans_only(fid)
    if op in (Op.NOT_EQ, Op.NOT_IN):
        # Bounds need not be actual values: (X, Y) does not prove that X occurs.
        return lambda s: True

    def no_values(s: _FileStats) -> bool:
        return s.nulls_only(fid) or s.nans_only(fid)

    if op is Op.LT or op is Op.LT_EQ:
        strict = op is Op.LT

        def below(s: _FileStats) -> bool:
            if no_values(s):
                return False
            lower = s.lower(ref)
            if lower is None or _is_nan(lower):  # NaN bounds are unreliable (old ORC files)
                return True
            return bool(lower < lit) if strict else bool(lower <= lit)

        return below
    if op is Op.GT or op is Op.GT_EQ:
        strict = op is Op.GT

        def above(s: _FileStats) -> bool:
            if no_values(s):
                return False
            upper = s.upper(ref)
            if upper is None or _is_nan(upper):
                return True
            return bool(upper > lit) if strict else bool(upper >= lit)

        return above
    if op is Op.EQ:

        def equal(s: _FileStats) -> bool:
            if no_values(s):
                return False
            lower = s.lower(ref)
            if lower is not None and not _is_nan(lower) and lower > lit:
                return False
            upper = s.upper(ref)
            return upper is None or _is_nan(upper) or not upper < lit

        return equal
    if op is Op.IN:
        lits = pred.literals

        def member(s: _FileStats) -> bool:
            if no_values(s):
                return False
            if len(lits) > IN_PREDICATE_LIMIT:
                return True
            lower = s.lower(ref)
            if lower is None or _is_nan(lower):
                return True
            candidates = [v for v in lits if lower <= v]
            if not candidates:
                return False
            upper = s.upper(ref)
            if upper is None or _is_nan(upper):
                return True
            return any(upper >= v for v in candidates)

        return member
    if op is Op.STARTS_WITH:
        n = len(lit)

        def starts(s: _FileStats) -> bool:
            if s.nulls_only(fid):
                return False
            lower = s.lower(ref)
            if lower is not None and lower[:n] > lit:
                return False
            # An upper bound truncated to fewer characters is still >= every value's prefix.
            upper = s.upper(ref)
            return upper is None or not upper[:n] < lit

        return starts
    if op is Op.NOT_STARTS_WITH:
        n = len(lit)

        def not_starts(s: _FileStats) -> bool:
            if s.null_counts.get(fid) != 0:
                return True
            lower, upper = s.lower(ref), s.upper(ref)
            if lower is None or upper is None:
                return True
            # Only when both bounds start with the prefix must every value start with it.
            return not (lower[:n] == lit and upper[:n] == lit)

        return not_starts
    raise ValidationError(f"unsupported predicate {pred}")  # pragma: no cover


class StrictMetricsEvaluator:
    """Must every row of a data file match? (True means a delete may drop the whole file.)

    Follows Iceberg Java's ``StrictMetricsEvaluator``, but never counts a null as matching and
    treats a missing null or NaN count as "may contain some"; filters on fields nested in
    structs are never decided by metrics.
    """

    def __init__(self, schema: Schema, expr: Expression) -> None:
        self.expr = ensure_bound(schema, expr)
        self._test: FileTest = _compile(self.expr, _strict_leaf)

    def eval(self, data_file: DataFile) -> bool:
        if data_file.record_count == 0:
            return True
        if data_file.record_count < 0:
            return False
        return self._test(_FileStats(data_file))


def _strict_leaf(pred: BoundPredicate) -> FileTest:
    ref, op, lit = pred.ref, pred.op, pred.literal
    fid = ref.field_id
    if not ref.is_top_level:
        return lambda s: False

    if op is Op.IS_NULL:
        return lambda s: s.nulls_only(fid)
    if op is Op.NOT_NULL:
        return lambda s: s.no_nulls(fid)
    if op is Op.IS_NAN:
        return lambda s: s.nans_only(fid)
    if op is Op.NOT_NAN:
        return lambda s: s.no_nulls(fid) and s.nan_counts.get(fid) == 0

    def clean(s: _FileStats) -> bool:
        return s.no_nulls(fid) and s.no_nans(ref)

    if op in (Op.LT, Op.LT_EQ):
        strict = op is Op.LT

        def below(s: _FileStats) -> bool:
            if not clean(s):
                return False
            upper = s.upper(ref)
            if upper is None:
                return False
            return bool(upper < lit) if strict else bool(upper <= lit)

        return below
    if op in (Op.GT, Op.GT_EQ):
        strict = op is Op.GT

        def above(s: _FileStats) -> bool:
            if not clean(s):
                return False
            lower = s.lower(ref)
            if lower is None or _is_nan(lower):
                return False
            return bool(lower > lit) if strict else bool(lower >= lit)

        return above
    if op is Op.EQ or op is Op.IN:
        lits = pred.literals if op is Op.IN else frozenset((lit,))

        def all_in(s: _FileStats) -> bool:
            if not clean(s):
                return False
            lower, upper = s.lower(ref), s.upper(ref)
            return lower is not None and lower == upper and lower in lits

        return all_in
    if op is Op.NOT_EQ or op is Op.NOT_IN:
        lits = pred.literals if op is Op.NOT_IN else frozenset((lit,))

        def none_in(s: _FileStats) -> bool:
            if not s.no_nulls(fid):
                return False
            if s.nans_only(fid):
                return True  # NaN != x for every x
            lower = s.lower(ref)
            if lower is not None:
                if _is_nan(lower):
                    return False
                remaining = [v for v in lits if lower <= v]
                if not remaining:
                    return True
            else:
                remaining = list(lits)
            upper = s.upper(ref)
            if upper is None or _is_nan(upper):
                return False
            return not any(upper >= v for v in remaining)

        return none_in
    if op is Op.STARTS_WITH:
        n = len(lit)

        def all_start(s: _FileStats) -> bool:
            if not s.no_nulls(fid):
                return False
            lower, upper = s.lower(ref), s.upper(ref)
            # Every string between two strings that start with a prefix starts with it too.
            return (
                lower is not None
                and upper is not None
                and lower[:n] == lit
                and upper[:n] == lit
                and len(lower) >= n
            )

        return all_start
    if op is Op.NOT_STARTS_WITH:
        n = len(lit)

        def none_start(s: _FileStats) -> bool:
            if not s.no_nulls(fid):
                return False
            lower, upper = s.lower(ref), s.upper(ref)
            return (lower is not None and lower[:n] > lit) or (
                upper is not None and upper[:n] < lit
            )

        return none_start
    raise ValidationError(f"unsupported predicate {pred}")  # pragma: no cover


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


# ---- partitions and manifests -------------------------------------------------------------


def _positions(spec: PartitionSpec) -> dict[int, int]:
    return {field.field_id: i for i, field in enumerate(spec.fields)}


class PartitionEvaluator:
    """Evaluate a row filter on partition tuples of one spec.

    Inclusive (the default): might the partition hold matching rows? With ``strict=True``:
    must every row of the partition match? Partition tuples hold in-memory values in the
    spec's field order, as :class:`~lakecat.metadata.datafile.DataFile.partition` does.
    """

    def __init__(
        self, spec: PartitionSpec, schema: Schema, expr: Expression, *, strict: bool = False
    ) -> None:
        bound = ensure_bound(schema, expr)
        project = strict_projection if strict else inclusive_projection
        self.projected = project(schema, spec, bound)
        positions = _positions(spec)

        def leaf(pred: BoundPredicate) -> Callable[[tuple[Any, ...]], bool]:
            test, pos = value_predicate(pred), positions[pred.ref.field_id]
            return lambda partition: test(partition[pos])

        self._test: Callable[[tuple[Any, ...]], bool] = _compile(self.projected, leaf)

    def eval(self, partition: tuple[Any, ...]) -> bool:
        return self._test(partition)


def strict_partition_eval(
    spec: PartitionSpec, schema: Schema, expr: Expression
) -> Callable[[tuple[Any, ...]], bool]:
    """A test of partition tuples: True when every row in the partition must match."""
    return PartitionEvaluator(spec, schema, expr, strict=True).eval


class PartitionSummaries:
    """A manifest's partition summaries, with bounds decoded on first use and then kept.

    The decoded values do not depend on type promotion (int -> long, float -> double and
    decimal widening read the same value back), so one instance can serve every scan of the
    manifest it was built for; :class:`~lakecat.metadata.manifest_cache.ManifestCache` keeps
    them with the cached manifest lists for that reason.
    """

    __slots__ = ("_lower", "_upper", "fields")

    def __init__(self, fields: tuple[PartitionFieldSummary, ...]) -> None:
        self.fields = fields
        self._lower: dict[int, Any] = {}
        self._upper: dict[int, Any] = {}

    def lower(self, pos: int, t: IcebergType) -> Any:
        try:
            return self._lower[pos]
        except KeyError:
            raw = self.fields[pos].lower_bound
            value = self._lower[pos] = None if raw is None else _decode(t, raw)
            return value

    def upper(self, pos: int, t: IcebergType) -> Any:
        try:
            return self._upper[pos]
        except KeyError:
            raw = self.fields[pos].upper_bound
            value = self._upper[pos] = None if raw is None else _decode(t, raw)
            return value


class ManifestEvaluator:
    """Might a manifest list entry's manifest hold files with matching rows?

    Projects the filter onto ``spec``'s partition fields and checks it against the manifest's
    partition summaries (null/NaN flags and bounds), following Iceberg Java's
    ``ManifestEvaluator``. A manifest without summaries might match.
    """

    def __init__(self, spec: PartitionSpec, schema: Schema, expr: Expression) -> None:
        self.projected = inclusive_projection(schema, spec, ensure_bound(schema, expr))
        positions = _positions(spec)
        self._size = len(spec.fields)

        def leaf(pred: BoundPredicate) -> Callable[[PartitionSummaries], bool]:
            return _manifest_leaf(pred, positions[pred.ref.field_id])

        self._test: Callable[[PartitionSummaries], bool] = _compile(self.projected, leaf)

    def eval(self, manifest: ManifestFile) -> bool:
        summaries = manifest.partitions
        if summaries is None:
            return True  # nothing can be concluded
        return self.eval_summaries(PartitionSummaries(summaries))

    def eval_summaries(self, summaries: PartitionSummaries) -> bool:
        """As :meth:`eval`, on summaries decoded earlier (and kept, e.g. by a cache)."""
        if len(summaries.fields) != self._size:
            # Written for another spec: nothing can be concluded.
            return True
        return self._test(summaries)


def _manifest_leaf(pred: BoundPredicate, pos: int) -> Callable[[PartitionSummaries], bool]:
    op, lit, t = pred.op, pred.literal, pred.ref.type

    if op is Op.IS_NULL:
        return lambda s: s.fields[pos].contains_null is not False
    if op is Op.NOT_NULL:

        def not_null(s: PartitionSummaries) -> bool:
            summary = s.fields[pos]
            # lower_bound is missing when every value is null (or NaN, for floats).
            all_null = summary.contains_null and summary.lower_bound is None
            if all_null and _is_float(t):
                all_null = summary.contains_nan is False
            return not all_null

        return not_null
    if op is Op.IS_NAN:
        return lambda s: s.fields[pos].contains_nan is not False
    if op is Op.NOT_NAN:

        def not_nan(s: PartitionSummaries) -> bool:
            summary = s.fields[pos]
            return not (
                summary.contains_nan is True
                and summary.contains_null is False
                and summary.lower_bound is None
            )

        return not_nan
    if op in (Op.NOT_EQ, Op.NOT_IN):
        return lambda s: True
    if op in (Op.LT, Op.LT_EQ):
        strict = op is Op.LT

        def below(s: PartitionSummaries) -> bool:
            lower = s.lower(pos, t)
            if lower is None:
                return False
            if _is_nan(lower):  # summaries should exclude NaN; if not, they prove nothing
                return True
            return bool(lower < lit) if strict else bool(lower <= lit)

        return below
    if op in (Op.GT, Op.GT_EQ):
        strict = op is Op.GT

        def above(s: PartitionSummaries) -> bool:
            upper = s.upper(pos, t)
            if upper is None:
                return False
            if _is_nan(upper):
                return True
            return bool(upper > lit) if strict else bool(upper >= lit)

        return above
    if op is Op.EQ:

        def equal(s: PartitionSummaries) -> bool:
            lower, upper = s.lower(pos, t), s.upper(pos, t)
            if lower is None or upper is None:
                return False
            return (_is_nan(lower) or lower <= lit) and (_is_nan(upper) or lit <= upper)

        return equal
    if op is Op.IN:
        lits = pred.literals

        def member(s: PartitionSummaries) -> bool:
            lower = s.lower(pos, t)
            if lower is None:
                return False
            if len(lits) > IN_PREDICATE_LIMIT or _is_nan(lower):
                return True
            candidates = [v for v in lits if lower <= v]
            if not candidates:
                return False
            upper = s.upper(pos, t)
            return upper is None or _is_nan(upper) or any(upper >= v for v in candidates)

        return member
    if op is Op.STARTS_WITH:
        n = len(lit)

        def starts(s: PartitionSummaries) -> bool:
            lower, upper = s.lower(pos, t), s.upper(pos, t)
            if lower is None or upper is None:
                return False
            return not (lower[:n] > lit or upper[:n] < lit)

        return starts
    if op is Op.NOT_STARTS_WITH:
        n = len(lit)

        def not_starts(s: PartitionSummaries) -> bool:
            summary = s.fields[pos]
            if summary.contains_null:
                return True
            lower, upper = s.lower(pos, t), s.upper(pos, t)
            if lower is None or upper is None:
                return True
            return not (lower[:n] == lit and upper[:n] == lit)

        return not_starts
    raise ValidationError(f"unsupported predicate {pred}")  # pragma: no cover

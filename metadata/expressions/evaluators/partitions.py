"""Evaluating a filter on partition values (:class:`PartitionEvaluator`) and on a manifest's
partition summaries (:class:`ManifestEvaluator`, one rule per operation in ``_MANIFEST_RULES``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lakecat.metadata.errors import ValidationError
from lakecat.metadata.expressions.evaluators.base import (
    IN_PREDICATE_LIMIT,
    Op,
    compile_filter,
    ensure_bound,
    is_float,
    is_nan,
)
from lakecat.metadata.expressions.evaluators.projection import (
    inclusive_projection,
    strict_projection,
)
from lakecat.metadata.expressions.evaluators.rows import value_predicate
from lakecat.metadata.expressions.expressions import (
    BoundPredicate,
    Expression,
)
from lakecat.metadata.manifests.datafile import ManifestFile, PartitionFieldSummary
from lakecat.metadata.partitioning.spec import PartitionSpec
from lakecat.metadata.schema.conversions import decode_bound
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import (
    IcebergType,
)

# ---- partitions and manifests -------------------------------------------------------------


def _positions(spec: PartitionSpec) -> dict[int, int]:
    return {field.field_id: i for i, field in enumerate(spec.fields)}


class PartitionEvaluator:
    """Evaluate a row filter on partition tuples of one spec.

    Inclusive (the default): might the partition hold matching rows? With ``strict=True``:
    must every row of the partition match? Partition tuples hold in-memory values in the
    spec's field order, as :class:`~lakecat.metadata.manifests.datafile.DataFile.partition` does.
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

        self._test: Callable[[tuple[Any, ...]], bool] = compile_filter(self.projected, leaf)

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
    manifest it was built for; :class:`~lakecat.metadata.manifests.cache.ManifestCache` keeps
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
            value = self._lower[pos] = None if raw is None else decode_bound(t, raw)
            return value

    def upper(self, pos: int, t: IcebergType) -> Any:
        try:
            return self._upper[pos]
        except KeyError:
            raw = self.fields[pos].upper_bound
            value = self._upper[pos] = None if raw is None else decode_bound(t, raw)
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

        self._test: Callable[[PartitionSummaries], bool] = compile_filter(self.projected, leaf)

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


_SummaryTest = Callable[[PartitionSummaries], bool]


def _manifest_leaf(pred: BoundPredicate, pos: int) -> _SummaryTest:
    """A test of the summary at ``pos`` for one predicate: False when no row can match."""
    rule = _MANIFEST_RULES.get(pred.op)
    if rule is None:
        raise ValidationError(f"unsupported predicate {pred}")  # pragma: no cover
    return rule(pred, pos)


def _manifest_is_null(pred: BoundPredicate, pos: int) -> _SummaryTest:
    """Might hold a null unless the summary says it holds none."""
    return lambda s: s.fields[pos].contains_null is not False


def _manifest_not_null(pred: BoundPredicate, pos: int) -> _SummaryTest:
    """Might hold a non-null value unless the summary shows every value is null."""
    t = pred.ref.type

    def not_null(s: PartitionSummaries) -> bool:
        summary = s.fields[pos]
        # lower_bound is missing when every value is null (or NaN, for floats).
        all_null = summary.contains_null and summary.lower_bound is None
        if all_null and is_float(t):
            all_null = summary.contains_nan is False
        return not all_null

    return not_null


def _manifest_is_nan(pred: BoundPredicate, pos: int) -> _SummaryTest:
    """Might hold a NaN unless the summary says it holds none."""
    return lambda s: s.fields[pos].contains_nan is not False


def _manifest_not_nan(pred: BoundPredicate, pos: int) -> _SummaryTest:
    """Might hold a non-NaN value unless the summary shows every value is NaN."""

    def not_nan(s: PartitionSummaries) -> bool:
        summary = s.fields[pos]
        return not (
            summary.contains_nan is True
            and summary.contains_null is False
            and summary.lower_bound is None
        )

    return not_nan


def _manifest_not_eq_or_not_in(pred: BoundPredicate, pos: int) -> _SummaryTest:
    """``!=`` and ``NOT IN`` always might match."""
    # Bounds need not be actual values: (X, Y) does not prove that X occurs.
    return lambda s: True


def _manifest_below(pred: BoundPredicate, pos: int) -> _SummaryTest:
    """``<`` and ``<=`` might match unless the lower bound is missing or past the literal."""
    lit, t, strict = pred.literal, pred.ref.type, pred.op is Op.LT

    def below(s: PartitionSummaries) -> bool:
        lower = s.lower(pos, t)
        if lower is None:
            return False
        if is_nan(lower):  # summaries should exclude NaN; if not, they prove nothing
            return True
        return bool(lower < lit) if strict else bool(lower <= lit)

    return below


def _manifest_above(pred: BoundPredicate, pos: int) -> _SummaryTest:
    """``>`` and ``>=`` might match unless the upper bound is missing or short of the literal."""
    lit, t, strict = pred.literal, pred.ref.type, pred.op is Op.GT

    def above(s: PartitionSummaries) -> bool:
        upper = s.upper(pos, t)
        if upper is None:
            return False
        if is_nan(upper):  # as in _manifest_below: a NaN bound proves nothing
            return True
        return bool(upper > lit) if strict else bool(upper >= lit)

    return above


def _manifest_eq(pred: BoundPredicate, pos: int) -> _SummaryTest:
    """``=`` might match unless a bound is missing or the literal lies outside the bounds."""
    lit, t = pred.literal, pred.ref.type

    def equal(s: PartitionSummaries) -> bool:
        lower, upper = s.lower(pos, t), s.upper(pos, t)
        if lower is None or upper is None:
            return False
        return (is_nan(lower) or lower <= lit) and (is_nan(upper) or lit <= upper)

    return equal


def _manifest_in(pred: BoundPredicate, pos: int) -> _SummaryTest:
    """``IN`` might match unless the lower bound is missing or no literal lies within the
    bounds.

    Past :data:`IN_PREDICATE_LIMIT` literals the bounds are not checked.
    """
    lits, t = pred.literals, pred.ref.type

    def member(s: PartitionSummaries) -> bool:
        lower = s.lower(pos, t)
        if lower is None:
            return False
        if len(lits) > IN_PREDICATE_LIMIT or is_nan(lower):
            return True
        candidates = [v for v in lits if lower <= v]
        if not candidates:
            return False
        upper = s.upper(pos, t)
        return upper is None or is_nan(upper) or any(upper >= v for v in candidates)

    return member


def _manifest_starts_with(pred: BoundPredicate, pos: int) -> _SummaryTest:
    """``LIKE 'p%'`` might match unless a bound is missing or the bounds put every value's
    prefix before or after ``p``."""
    lit, t = pred.literal, pred.ref.type
    n = len(lit)

    def starts(s: PartitionSummaries) -> bool:
        lower, upper = s.lower(pos, t), s.upper(pos, t)
        if lower is None or upper is None:
            return False
        return not (lower[:n] > lit or upper[:n] < lit)

    return starts


def _manifest_not_starts_with(pred: BoundPredicate, pos: int) -> _SummaryTest:
    """``NOT LIKE 'p%'`` might match unless the summary shows no null and both bounds start
    with ``p``."""
    lit, t = pred.literal, pred.ref.type
    n = len(lit)

    def not_starts(s: PartitionSummaries) -> bool:
        summary = s.fields[pos]
        if summary.contains_null:
            return True
        lower, upper = s.lower(pos, t), s.upper(pos, t)
        if lower is None or upper is None:
            return True
        # Only when both bounds start with the prefix must every value start with it.
        return not (lower[:n] == lit and upper[:n] == lit)

    return not_starts


_MANIFEST_RULES: dict[Op, Callable[[BoundPredicate, int], _SummaryTest]] = {
    Op.IS_NULL: _manifest_is_null,
    Op.NOT_NULL: _manifest_not_null,
    Op.IS_NAN: _manifest_is_nan,
    Op.NOT_NAN: _manifest_not_nan,
    Op.NOT_EQ: _manifest_not_eq_or_not_in,
    Op.NOT_IN: _manifest_not_eq_or_not_in,
    Op.LT: _manifest_below,
    Op.LT_EQ: _manifest_below,
    Op.GT: _manifest_above,
    Op.GT_EQ: _manifest_above,
    Op.EQ: _manifest_eq,
    Op.IN: _manifest_in,
    Op.STARTS_WITH: _manifest_starts_with,
    Op.NOT_STARTS_WITH: _manifest_not_starts_with,
}

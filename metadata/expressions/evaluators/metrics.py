"""Whether a data file's column metrics let rows match: inclusive ("might match", scans skip on
False) and strict ("all rows match", deletes drop whole files on True).

Each predicate is compiled by one rule per operation (or family of operations), looked up in
``_INCLUSIVE_RULES`` or ``_STRICT_RULES``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lakecat.metadata.errors import ValidationError
from lakecat.metadata.expressions.evaluators.base import (
    EMPTY,
    IN_PREDICATE_LIMIT,
    Op,
    compile_filter,
    ensure_bound,
    is_float,
    is_nan,
)
from lakecat.metadata.expressions.expressions import (
    BoundPredicate,
    BoundReference,
    Expression,
    referenced_field_ids,
)
from lakecat.metadata.manifests.datafile import DataFile
from lakecat.metadata.schema.conversions import decode_bound
from lakecat.metadata.schema.schema import Schema

# ---- data file metrics --------------------------------------------------------------------


class _FileStats:
    """One data file's metrics, with bounds decoded on first use."""

    __slots__ = (
        "_lower",
        "_upper",
        "lower_bytes",
        "nan_counts",
        "null_counts",
        "record_count",
        "upper_bytes",
        "value_counts",
    )

    def __init__(self, f: DataFile) -> None:
        self.record_count = f.record_count
        self.value_counts = f.value_counts or EMPTY
        self.null_counts = f.null_value_counts or EMPTY
        self.nan_counts = f.nan_value_counts or EMPTY
        self.lower_bytes = f.lower_bounds or EMPTY
        self.upper_bytes = f.upper_bounds or EMPTY
        self._lower: dict[int, Any] = {}
        self._upper: dict[int, Any] = {}

    def lower(self, ref: BoundReference) -> Any:
        fid = ref.field_id
        try:
            return self._lower[fid]
        except KeyError:
            raw = self.lower_bytes.get(fid)
            value = None if raw is None else decode_bound(ref.type, raw)
            self._lower[fid] = value
            return value

    def upper(self, ref: BoundReference) -> Any:
        fid = ref.field_id
        try:
            return self._upper[fid]
        except KeyError:
            raw = self.upper_bytes.get(fid)
            value = None if raw is None else decode_bound(ref.type, raw)
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
        return not is_float(ref.type) or self.nan_counts.get(ref.field_id) == 0

    def nulls_or_nans_only(self, fid: int) -> bool:
        """Known to hold only nulls, or only NaN: no value for the bounds to describe."""
        return self.nulls_only(fid) or self.nans_only(fid)

    def no_nulls_or_nans(self, ref: BoundReference) -> bool:
        """Known to hold neither nulls nor NaN."""
        return self.no_nulls(ref.field_id) and self.no_nans(ref)


FileTest = Callable[[_FileStats], bool]


class InclusiveMetricsEvaluator:
    """Might a data file hold rows that match? (False means the file can be skipped.)

    Uses the file's record count, value/null/NaN counts and lower/upper bounds, following
    Iceberg Java's ``InclusiveMetricsEvaluator``. Missing metrics mean "might match".
    """

    def __init__(self, schema: Schema, expr: Expression) -> None:
        self.expr = ensure_bound(schema, expr)
        # the fields whose metrics it reads (a Parquet reader gathers just those per row group)
        self.field_ids = frozenset(referenced_field_ids(self.expr))
        self._test: FileTest = compile_filter(self.expr, _inclusive_leaf)

    def eval(self, data_file: DataFile) -> bool:
        if data_file.record_count == 0:
            return False
        if data_file.record_count < 0:
            # Imported files of old writers carry -1: nothing is known.
            return True
        return self._test(_FileStats(data_file))


def _inclusive_leaf(pred: BoundPredicate) -> FileTest:
    """A test of file metrics for one predicate: False when no row can match."""
    rule = _INCLUSIVE_RULES.get(pred.op)
    if rule is None:
        raise ValidationError(f"unsupported predicate {pred}")  # pragma: no cover
    return rule(pred)


def _unknown(bound: Any) -> bool:
    """A bound that proves nothing: missing, or NaN."""
    return bound is None or is_nan(bound)  # NaN bounds are unreliable (old ORC files)


def _inclusive_is_null(pred: BoundPredicate) -> FileTest:
    """Might hold a null unless the null count is known to be 0.

    A field nested in a struct is null in each row whose struct is null, and Iceberg Java
    (1.10.2, Parquet) counts neither a value nor a null of a float or double field in such a
    row. So a null count of 0 proves no null there only when the value count covers every
    row of the file (it counts nulls: the spec's ``value_counts``)."""
    fid = pred.ref.field_id
    if pred.ref.is_top_level:
        return lambda s: s.null_counts.get(fid) != 0
    return lambda s: s.null_counts.get(fid) != 0 or s.value_counts.get(fid) != s.record_count


def _inclusive_not_null(pred: BoundPredicate) -> FileTest:
    """Might hold a non-null value unless every value is known to be null."""
    fid = pred.ref.field_id
    return lambda s: not s.nulls_only(fid)


def _inclusive_is_nan(pred: BoundPredicate) -> FileTest:
    """Might hold a NaN unless every value is null or the NaN count is known to be 0."""
    fid = pred.ref.field_id
    return lambda s: not s.nulls_only(fid) and s.nan_counts.get(fid) != 0


def _inclusive_not_nan(pred: BoundPredicate) -> FileTest:
    """Might hold a non-NaN value unless every value is known to be NaN."""
    fid = pred.ref.field_id
    return lambda s: not s.nans_only(fid)


def _inclusive_not_eq_or_not_in(pred: BoundPredicate) -> FileTest:
    """``!=`` and ``NOT IN`` always might match."""
    # Bounds need not be actual values: (X, Y) does not prove that X occurs.
    return lambda s: True


def _inclusive_below(pred: BoundPredicate) -> FileTest:
    """``<`` and ``<=`` might match unless the lower bound is past the literal."""
    ref, lit, strict = pred.ref, pred.literal, pred.op is Op.LT

    def below(s: _FileStats) -> bool:
        if s.nulls_or_nans_only(ref.field_id):
            return False
        lower = s.lower(ref)
        if _unknown(lower):
            return True
        return bool(lower < lit) if strict else bool(lower <= lit)

    return below


def _inclusive_above(pred: BoundPredicate) -> FileTest:
    """``>`` and ``>=`` might match unless the upper bound is short of the literal."""
    ref, lit, strict = pred.ref, pred.literal, pred.op is Op.GT

    def above(s: _FileStats) -> bool:
        if s.nulls_or_nans_only(ref.field_id):
            return False
        upper = s.upper(ref)
        if _unknown(upper):
            return True
        return bool(upper > lit) if strict else bool(upper >= lit)

    return above


def _inclusive_eq(pred: BoundPredicate) -> FileTest:
    """``=`` might match unless the literal lies outside the bounds."""
    ref, lit = pred.ref, pred.literal

    def equal(s: _FileStats) -> bool:
        if s.nulls_or_nans_only(ref.field_id):
            return False
        lower = s.lower(ref)
        if not _unknown(lower) and lower > lit:
            return False
        upper = s.upper(ref)
        return _unknown(upper) or not upper < lit

    return equal


def _inclusive_in(pred: BoundPredicate) -> FileTest:
    """``IN`` might match unless no literal lies within the bounds.

    Past :data:`IN_PREDICATE_LIMIT` literals the bounds are not checked.
    """
    ref, lits = pred.ref, pred.literals

    def member(s: _FileStats) -> bool:
        if s.nulls_or_nans_only(ref.field_id):
            return False
        if len(lits) > IN_PREDICATE_LIMIT:
            return True
        lower = s.lower(ref)
        if _unknown(lower):
            return True
        candidates = [v for v in lits if lower <= v]
        if not candidates:
            return False
        upper = s.upper(ref)
        if _unknown(upper):
            return True
        return any(upper >= v for v in candidates)

    return member


def _inclusive_starts_with(pred: BoundPredicate) -> FileTest:
    """``LIKE 'p%'`` might match unless the bounds put every value's prefix before or after
    ``p``."""
    ref, lit = pred.ref, pred.literal
    fid, n = ref.field_id, len(lit)

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


def _inclusive_not_starts_with(pred: BoundPredicate) -> FileTest:
    """``NOT LIKE 'p%'`` might match unless the file is known to hold no null and both bounds
    start with ``p``."""
    ref, lit = pred.ref, pred.literal
    fid, n = ref.field_id, len(lit)

    def not_starts(s: _FileStats) -> bool:
        if s.null_counts.get(fid) != 0:
            return True
        lower, upper = s.lower(ref), s.upper(ref)
        if lower is None or upper is None:
            return True
        # Only when both bounds start with the prefix must every value start with it.
        return not (lower[:n] == lit and upper[:n] == lit)

    return not_starts


_INCLUSIVE_RULES: dict[Op, Callable[[BoundPredicate], FileTest]] = {
    Op.IS_NULL: _inclusive_is_null,
    Op.NOT_NULL: _inclusive_not_null,
    Op.IS_NAN: _inclusive_is_nan,
    Op.NOT_NAN: _inclusive_not_nan,
    Op.NOT_EQ: _inclusive_not_eq_or_not_in,
    Op.NOT_IN: _inclusive_not_eq_or_not_in,
    Op.LT: _inclusive_below,
    Op.LT_EQ: _inclusive_below,
    Op.GT: _inclusive_above,
    Op.GT_EQ: _inclusive_above,
    Op.EQ: _inclusive_eq,
    Op.IN: _inclusive_in,
    Op.STARTS_WITH: _inclusive_starts_with,
    Op.NOT_STARTS_WITH: _inclusive_not_starts_with,
}


class StrictMetricsEvaluator:
    """Must every row of a data file match? (True means a delete may drop the whole file.)

    Follows Iceberg Java's ``StrictMetricsEvaluator``, but never counts a null as matching and
    treats a missing null or NaN count as "may contain some"; filters on fields nested in
    structs are never decided by metrics.
    """

    def __init__(self, schema: Schema, expr: Expression) -> None:
        self.expr = ensure_bound(schema, expr)
        self._test: FileTest = compile_filter(self.expr, _strict_leaf)

    def eval(self, data_file: DataFile) -> bool:
        if data_file.record_count == 0:
            return True
        if data_file.record_count < 0:
            return False
        return self._test(_FileStats(data_file))


def _strict_leaf(pred: BoundPredicate) -> FileTest:
    """A test of file metrics for one predicate: True when every row must match."""
    if not pred.ref.is_top_level:
        return lambda s: False  # nested fields are never decided (see StrictMetricsEvaluator)
    rule = _STRICT_RULES.get(pred.op)
    if rule is None:
        raise ValidationError(f"unsupported predicate {pred}")  # pragma: no cover
    return rule(pred)


def _strict_is_null(pred: BoundPredicate) -> FileTest:
    """``IS NULL`` holds for every row when every value is known to be null."""
    fid = pred.ref.field_id
    return lambda s: s.nulls_only(fid)


def _strict_not_null(pred: BoundPredicate) -> FileTest:
    """``IS NOT NULL`` holds for every row when the null count is known to be 0."""
    fid = pred.ref.field_id
    return lambda s: s.no_nulls(fid)


def _strict_is_nan(pred: BoundPredicate) -> FileTest:
    """``IS NAN`` holds for every row when every value is known to be NaN."""
    fid = pred.ref.field_id
    return lambda s: s.nans_only(fid)


def _strict_not_nan(pred: BoundPredicate) -> FileTest:
    """``IS NOT NAN`` holds for every row when the null and NaN counts are known to be 0."""
    fid = pred.ref.field_id
    return lambda s: s.no_nulls(fid) and s.nan_counts.get(fid) == 0


def _strict_below(pred: BoundPredicate) -> FileTest:
    """``<`` and ``<=`` hold for every row of a null- and NaN-free file whose upper bound
    is below the literal."""
    ref, lit, strict = pred.ref, pred.literal, pred.op is Op.LT

    def below(s: _FileStats) -> bool:
        if not s.no_nulls_or_nans(ref):
            return False
        upper = s.upper(ref)
        if upper is None:
            return False
        return bool(upper < lit) if strict else bool(upper <= lit)

    return below


def _strict_above(pred: BoundPredicate) -> FileTest:
    """``>`` and ``>=`` hold for every row of a null- and NaN-free file whose lower bound
    is past the literal."""
    ref, lit, strict = pred.ref, pred.literal, pred.op is Op.GT

    def above(s: _FileStats) -> bool:
        if not s.no_nulls_or_nans(ref):
            return False
        lower = s.lower(ref)
        if lower is None or is_nan(lower):
            return False
        return bool(lower > lit) if strict else bool(lower >= lit)

    return above


def _strict_eq_or_in(pred: BoundPredicate) -> FileTest:
    """``=`` and ``IN`` hold for every row of a null- and NaN-free file whose bounds are one
    value among the literals."""
    ref = pred.ref
    lits = pred.literals if pred.op is Op.IN else frozenset((pred.literal,))

    def all_in(s: _FileStats) -> bool:
        if not s.no_nulls_or_nans(ref):
            return False
        lower, upper = s.lower(ref), s.upper(ref)
        return lower is not None and lower == upper and lower in lits

    return all_in


def _strict_not_eq_or_not_in(pred: BoundPredicate) -> FileTest:
    """``!=`` and ``NOT IN`` hold for every row of a null-free file when every value is NaN
    or no literal lies within the bounds."""
    ref = pred.ref
    lits = pred.literals if pred.op is Op.NOT_IN else frozenset((pred.literal,))

    def none_in(s: _FileStats) -> bool:
        if not s.no_nulls(ref.field_id):
            return False
        if s.nans_only(ref.field_id):
            return True  # NaN != x for every x
        lower = s.lower(ref)
        if lower is not None:
            if is_nan(lower):
                return False
            remaining = [v for v in lits if lower <= v]
            if not remaining:
                return True
        else:
            remaining = list(lits)
        upper = s.upper(ref)
        if upper is None or is_nan(upper):
            return False
        return not any(upper >= v for v in remaining)

    return none_in


def _strict_starts_with(pred: BoundPredicate) -> FileTest:
    """``LIKE 'p%'`` holds for every row of a null-free file whose bounds both start with
    ``p``."""
    ref, lit = pred.ref, pred.literal
    n = len(lit)

    def all_start(s: _FileStats) -> bool:
        if not s.no_nulls(ref.field_id):
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


def _strict_not_starts_with(pred: BoundPredicate) -> FileTest:
    """``NOT LIKE 'p%'`` holds for every row of a null-free file whose bounds put every
    value's prefix before or after ``p``."""
    ref, lit = pred.ref, pred.literal
    n = len(lit)

    def none_start(s: _FileStats) -> bool:
        if not s.no_nulls(ref.field_id):
            return False
        lower, upper = s.lower(ref), s.upper(ref)
        return (lower is not None and lower[:n] > lit) or (upper is not None and upper[:n] < lit)

    return none_start


_STRICT_RULES: dict[Op, Callable[[BoundPredicate], FileTest]] = {
    Op.IS_NULL: _strict_is_null,
    Op.NOT_NULL: _strict_not_null,
    Op.IS_NAN: _strict_is_nan,
    Op.NOT_NAN: _strict_not_nan,
    Op.LT: _strict_below,
    Op.LT_EQ: _strict_below,
    Op.GT: _strict_above,
    Op.GT_EQ: _strict_above,
    Op.EQ: _strict_eq_or_in,
    Op.IN: _strict_eq_or_in,
    Op.NOT_EQ: _strict_not_eq_or_not_in,
    Op.NOT_IN: _strict_not_eq_or_not_in,
    Op.STARTS_WITH: _strict_starts_with,
    Op.NOT_STARTS_WITH: _strict_not_starts_with,
}

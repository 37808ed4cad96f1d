"""Whether a data file's column metrics let rows match: inclusive ("might match", scans skip on
False) and strict ("all rows match", deletes drop whole files on True)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lakecat.metadata.errors import ValidationError
from lakecat.metadata.expressions.evaluators.base import (
    EMPTY,
    IN_PREDICATE_LIMIT,
    Op,
    compile_filter,
    decode_bound,
    ensure_bound,
    is_float,
    is_nan,
)
from lakecat.metadata.expressions.expressions import (
    BoundPredicate,
    BoundReference,
    Expression,
)
from lakecat.metadata.manifests.datafile import DataFile
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
        "upper_bytes",
        "value_counts",
    )

    def __init__(self, f: DataFile) -> None:
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


FileTest = Callable[[_FileStats], bool]


class InclusiveMetricsEvaluator:
    """Might a data file hold rows that match? (False means the file can be skipped.)

    Uses the file's record count, value/null/NaN counts and lower/upper bounds, following
    Iceberg Java's ``InclusiveMetricsEvaluator``. Missing metrics mean "might match".
    """

    def __init__(self, schema: Schema, expr: Expression) -> None:
        self.expr = ensure_bound(schema, expr)
        self._test: FileTest = compile_filter(self.expr, _inclusive_leaf)

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
            if lower is None or is_nan(lower):  # NaN bounds are unreliable (old ORC files)
                return True
            return bool(lower < lit) if strict else bool(lower <= lit)

        return below
    if op is Op.GT or op is Op.GT_EQ:
        strict = op is Op.GT

        def above(s: _FileStats) -> bool:
            if no_values(s):
                return False
            upper = s.upper(ref)
            if upper is None or is_nan(upper):
                return True
            return bool(upper > lit) if strict else bool(upper >= lit)

        return above
    if op is Op.EQ:

        def equal(s: _FileStats) -> bool:
            if no_values(s):
                return False
            lower = s.lower(ref)
            if lower is not None and not is_nan(lower) and lower > lit:
                return False
            upper = s.upper(ref)
            return upper is None or is_nan(upper) or not upper < lit

        return equal
    if op is Op.IN:
        lits = pred.literals

        def member(s: _FileStats) -> bool:
            if no_values(s):
                return False
            if len(lits) > IN_PREDICATE_LIMIT:
                return True
            lower = s.lower(ref)
            if lower is None or is_nan(lower):
                return True
            candidates = [v for v in lits if lower <= v]
            if not candidates:
                return False
            upper = s.upper(ref)
            if upper is None or is_nan(upper):
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
        self._test: FileTest = compile_filter(self.expr, _strict_leaf)

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
            if lower is None or is_nan(lower):
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

"""Row-filter expressions: the unbound model, binding to a schema, and rewriting.

An expression is built on column *names* (``EqualTo("id", 5)``, ``Col("ts").lt("2024-01-01")``,
or :func:`lakecat.metadata.expressions.parser.parse`) and then bound to a schema with
:func:`bind`. Binding resolves each name to a :class:`BoundReference` (field id, name, type),
converts every literal to lakecat's in-memory form for the column's type (see
:mod:`lakecat.metadata.schema.types`), pushes ``NOT`` down to the leaves and folds constants. Every
evaluator in :mod:`lakecat.metadata.expressions.evaluators` works on bound expressions.

Semantics (shared by every evaluator, so that a scan and a delete never disagree):

* A row *matches* when the expression is TRUE. A predicate on a null value is never TRUE,
  except ``IS NULL``; so ``x != 5``, ``x NOT IN (...)``, ``x NOT LIKE 'a%'`` and ``x IS NOT NAN``
  do not select nulls (SQL three-valued logic).
* NaN compares as IEEE 754 does: ``NaN < x``, ``NaN = x`` are false and ``NaN != x`` is true.
* ``NOT`` is defined by rewriting to the negated predicate (``NOT a < 5`` is ``a >= 5``), as
  Iceberg does; so ``NOT`` never selects the null or NaN values its operand did not decide.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from enum import Enum
from typing import Any, ClassVar

from lakecat.metadata.errors import UnknownColumn, ValidationError
from lakecat.metadata.schema import conversions
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import (
    BooleanType,
    DateType,
    DoubleType,
    FloatType,
    IcebergType,
    ListType,
    MapType,
    PrimitiveType,
    StringType,
    TimestampType,
    TimestamptzType,
    TimeType,
)


class Operation(Enum):
    """The predicate operations, with their SQL spelling."""

    EQ = "="
    NOT_EQ = "!="
    LT = "<"
    LT_EQ = "<="
    GT = ">"
    GT_EQ = ">="
    IN = "IN"
    NOT_IN = "NOT IN"
    IS_NULL = "IS NULL"
    NOT_NULL = "IS NOT NULL"
    IS_NAN = "IS NAN"
    NOT_NAN = "IS NOT NAN"
    STARTS_WITH = "LIKE"
    NOT_STARTS_WITH = "NOT LIKE"

    @property
    def negated(self) -> Operation:
        return _NEGATED[self]


_NEGATED = {
    Operation.EQ: Operation.NOT_EQ,
    Operation.NOT_EQ: Operation.EQ,
    Operation.LT: Operation.GT_EQ,
    Operation.GT_EQ: Operation.LT,
    Operation.LT_EQ: Operation.GT,
    Operation.GT: Operation.LT_EQ,
    Operation.IN: Operation.NOT_IN,
    Operation.NOT_IN: Operation.IN,
    Operation.IS_NULL: Operation.NOT_NULL,
    Operation.NOT_NULL: Operation.IS_NULL,
    Operation.IS_NAN: Operation.NOT_NAN,
    Operation.NOT_NAN: Operation.IS_NAN,
    Operation.STARTS_WITH: Operation.NOT_STARTS_WITH,
    Operation.NOT_STARTS_WITH: Operation.STARTS_WITH,
}
UNARY_OPS = frozenset({Operation.IS_NULL, Operation.NOT_NULL, Operation.IS_NAN, Operation.NOT_NAN})
SET_OPS = frozenset({Operation.IN, Operation.NOT_IN})
# Comparisons whose literal sits on the right: "5 < x" is "x > 5".
FLIPPED = {
    Operation.EQ: Operation.EQ,
    Operation.NOT_EQ: Operation.NOT_EQ,
    Operation.LT: Operation.GT,
    Operation.LT_EQ: Operation.GT_EQ,
    Operation.GT: Operation.LT,
    Operation.GT_EQ: Operation.LT_EQ,
}


# ---- the expression tree ----------------------------------------------------------------


class Expression:
    """Base of every expression, unbound or bound. Combine with ``&``, ``|`` and ``~``."""

    __slots__ = ()

    def __and__(self, other: Expression) -> Expression:
        return And(self, other)

    def __or__(self, other: Expression) -> Expression:
        return Or(self, other)

    def __invert__(self) -> Expression:
        return Not(self)


@dataclass(frozen=True, slots=True)
class AlwaysTrue(Expression):
    def __str__(self) -> str:
        return "true"


@dataclass(frozen=True, slots=True)
class AlwaysFalse(Expression):
    def __str__(self) -> str:
        return "false"


@dataclass(frozen=True, slots=True)
class And(Expression):
    left: Expression
    right: Expression

    def __str__(self) -> str:
        return f"{_child_str(self.left, self, False)} AND {_child_str(self.right, self, True)}"


@dataclass(frozen=True, slots=True)
class Or(Expression):
    left: Expression
    right: Expression

    def __str__(self) -> str:
        return f"{_child_str(self.left, self, False)} OR {_child_str(self.right, self, True)}"


@dataclass(frozen=True, slots=True)
class Not(Expression):
    child: Expression

    def __str__(self) -> str:
        return f"NOT ({self.child})"


def _child_str(child: Expression, parent: Expression, is_right: bool) -> str:
    # AND binds tighter than OR and both associate to the left, so only an OR under an AND,
    # or a right child of the same kind, needs parentheses for str() to parse back equal.
    needs = (isinstance(child, Or) and isinstance(parent, And)) or (
        is_right and type(child) is type(parent)
    )
    return f"({child})" if needs else str(child)


@dataclass(frozen=True, slots=True)
class UnboundPredicate(Expression):
    """A predicate on a column name (dotted for a field inside a struct)."""

    term: str
    op: ClassVar[Operation]


@dataclass(frozen=True, slots=True)
class LiteralPredicate(UnboundPredicate):
    value: Any

    def __str__(self) -> str:
        if self.op in (Operation.STARTS_WITH, Operation.NOT_STARTS_WITH):
            pattern = _escape_like(str(self.value)) + "%"
            return f"{quote_name(self.term)} {self.op.value} {_quote_string(pattern)}"
        return f"{quote_name(self.term)} {self.op.value} {format_literal(self.value)}"


@dataclass(frozen=True, slots=True)
class SetPredicate(UnboundPredicate):
    values: frozenset[Any]

    def __post_init__(self) -> None:
        if isinstance(self.values, str | bytes) or not isinstance(self.values, Iterable):
            raise ValidationError(
                f"{self.op.value} needs a collection of values, not {self.values!r}"
            )
        object.__setattr__(self, "values", frozenset(self.values))

    def __str__(self) -> str:
        items = ", ".join(format_literal(v) for v in _sorted_values(self.values))
        return f"{quote_name(self.term)} {self.op.value} ({items})"


@dataclass(frozen=True, slots=True)
class UnaryPredicate(UnboundPredicate):
    def __str__(self) -> str:
        return f"{quote_name(self.term)} {self.op.value}"


@dataclass(frozen=True, slots=True)
class EqualTo(LiteralPredicate):
    op: ClassVar[Operation] = Operation.EQ


@dataclass(frozen=True, slots=True)
class NotEqualTo(LiteralPredicate):
    op: ClassVar[Operation] = Operation.NOT_EQ


@dataclass(frozen=True, slots=True)
class LessThan(LiteralPredicate):
    op: ClassVar[Operation] = Operation.LT


@dataclass(frozen=True, slots=True)
class LessThanOrEqual(LiteralPredicate):
    op: ClassVar[Operation] = Operation.LT_EQ


@dataclass(frozen=True, slots=True)
class GreaterThan(LiteralPredicate):
    op: ClassVar[Operation] = Operation.GT


@dataclass(frozen=True, slots=True)
class GreaterThanOrEqual(LiteralPredicate):
    op: ClassVar[Operation] = Operation.GT_EQ


@dataclass(frozen=True, slots=True)
class StartsWith(LiteralPredicate):
    op: ClassVar[Operation] = Operation.STARTS_WITH


@dataclass(frozen=True, slots=True)
class NotStartsWith(LiteralPredicate):
    op: ClassVar[Operation] = Operation.NOT_STARTS_WITH


@dataclass(frozen=True, slots=True)
class In(SetPredicate):
    op: ClassVar[Operation] = Operation.IN


@dataclass(frozen=True, slots=True)
class NotIn(SetPredicate):
    op: ClassVar[Operation] = Operation.NOT_IN


@dataclass(frozen=True, slots=True)
class IsNull(UnaryPredicate):
    op: ClassVar[Operation] = Operation.IS_NULL


@dataclass(frozen=True, slots=True)
class NotNull(UnaryPredicate):
    op: ClassVar[Operation] = Operation.NOT_NULL


@dataclass(frozen=True, slots=True)
class IsNaN(UnaryPredicate):
    op: ClassVar[Operation] = Operation.IS_NAN


@dataclass(frozen=True, slots=True)
class NotNaN(UnaryPredicate):
    op: ClassVar[Operation] = Operation.NOT_NAN


UNBOUND_CLASSES: dict[Operation, type[UnboundPredicate]] = {
    cls.op: cls
    for cls in (
        EqualTo,
        NotEqualTo,
        LessThan,
        LessThanOrEqual,
        GreaterThan,
        GreaterThanOrEqual,
        StartsWith,
        NotStartsWith,
        In,
        NotIn,
        IsNull,
        NotNull,
        IsNaN,
        NotNaN,
    )
}


def predicate(op: Operation, term: str, value: Any = None) -> UnboundPredicate:
    """The unbound predicate for ``op``: ``value`` is the literal, or the values of IN/NOT IN."""
    cls = UNBOUND_CLASSES[op]
    if op in UNARY_OPS:
        return cls(term)
    return cls(term, value)  # type: ignore[call-arg]


@dataclass(frozen=True, slots=True)
class BoundReference:
    """A column resolved against a schema.

    ``path`` holds the names from the top-level column down to the field, for readers that
    address nested struct fields (``("location", "lat")``).
    """

    field_id: int
    name: str
    type: IcebergType
    path: tuple[str, ...] = ()

    @property
    def is_top_level(self) -> bool:
        return len(self.path) <= 1


@dataclass(frozen=True, slots=True)
class BoundPredicate(Expression):
    """A predicate on a bound column.

    ``literal`` (comparisons, LIKE) and ``literals`` (IN, NOT IN) are in lakecat's in-memory
    form for ``ref.type``.
    """

    op: Operation
    ref: BoundReference
    literal: Any = None
    literals: frozenset[Any] = frozenset()

    def __str__(self) -> str:
        name = quote_path(self.ref.path) if self.ref.path else quote_name(self.ref.name)
        if self.op in UNARY_OPS:
            return f"{name} {self.op.value}"
        if self.op in SET_OPS:
            items = ", ".join(format_value(self.ref.type, v) for v in _sorted_values(self.literals))
            return f"{name} {self.op.value} ({items})"
        if self.op in (Operation.STARTS_WITH, Operation.NOT_STARTS_WITH):
            return f"{name} {self.op.value} {_quote_string(_escape_like(self.literal) + '%')}"
        return f"{name} {self.op.value} {format_value(self.ref.type, self.literal)}"

    def negate(self) -> BoundPredicate:
        return BoundPredicate(self.op.negated, self.ref, self.literal, self.literals)


BoundExpression = Expression
"""An expression whose predicates are all :class:`BoundPredicate` (the result of :func:`bind`)."""


# ---- building ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Col:
    """A small builder: ``Col("ts").lt("2024-01-01") & Col("id").isin([1, 2])``."""

    name: str

    def eq(self, value: Any) -> Expression:
        return EqualTo(self.name, value)

    def ne(self, value: Any) -> Expression:
        return NotEqualTo(self.name, value)

    def lt(self, value: Any) -> Expression:
        return LessThan(self.name, value)

    def le(self, value: Any) -> Expression:
        return LessThanOrEqual(self.name, value)

    def gt(self, value: Any) -> Expression:
        return GreaterThan(self.name, value)

    def ge(self, value: Any) -> Expression:
        return GreaterThanOrEqual(self.name, value)

    def isin(self, values: Iterable[Any]) -> Expression:
        return In(self.name, frozenset(values))

    def notin(self, values: Iterable[Any]) -> Expression:
        return NotIn(self.name, frozenset(values))

    def is_null(self) -> Expression:
        return IsNull(self.name)

    def not_null(self) -> Expression:
        return NotNull(self.name)

    def is_nan(self) -> Expression:
        return IsNaN(self.name)

    def not_nan(self) -> Expression:
        return NotNaN(self.name)

    def starts_with(self, prefix: str) -> Expression:
        return StartsWith(self.name, prefix)

    def not_starts_with(self, prefix: str) -> Expression:
        return NotStartsWith(self.name, prefix)

    def between(self, low: Any, high: Any) -> Expression:
        return And(GreaterThanOrEqual(self.name, low), LessThanOrEqual(self.name, high))


def col(name: str) -> Col:
    """A column builder; see :class:`Col`."""
    return Col(name)


def and_(*exprs: Expression) -> Expression:
    """All of ``exprs`` (``AlwaysTrue`` when empty), left-associated."""
    if not exprs:
        return AlwaysTrue()
    result = exprs[0]
    for e in exprs[1:]:
        result = And(result, e)
    return result


def or_(*exprs: Expression) -> Expression:
    """Any of ``exprs`` (``AlwaysFalse`` when empty), left-associated."""
    if not exprs:
        return AlwaysFalse()
    result = exprs[0]
    for e in exprs[1:]:
        result = Or(result, e)
    return result


def simplify_and(left: Expression, right: Expression) -> Expression:
    """``left AND right`` with constants folded."""
    if isinstance(left, AlwaysFalse) or isinstance(right, AlwaysFalse):
        return AlwaysFalse()
    if isinstance(left, AlwaysTrue):
        return right
    if isinstance(right, AlwaysTrue):
        return left
    return And(left, right)


def simplify_or(left: Expression, right: Expression) -> Expression:
    """``left OR right`` with constants folded."""
    if isinstance(left, AlwaysTrue) or isinstance(right, AlwaysTrue):
        return AlwaysTrue()
    if isinstance(left, AlwaysFalse):
        return right
    if isinstance(right, AlwaysFalse):
        return left
    return Or(left, right)


# ---- rewriting --------------------------------------------------------------------------


def rewrite_not(expr: Expression) -> Expression:
    """Push every ``NOT`` down to the predicates, negating them (De Morgan for AND/OR)."""
    if isinstance(expr, Not):
        return _negate(expr.child)
    if isinstance(expr, And):
        return And(rewrite_not(expr.left), rewrite_not(expr.right))
    if isinstance(expr, Or):
        return Or(rewrite_not(expr.left), rewrite_not(expr.right))
    return expr


def _negate(expr: Expression) -> Expression:
    if isinstance(expr, Not):
        return rewrite_not(expr.child)
    if isinstance(expr, And):
        return Or(_negate(expr.left), _negate(expr.right))
    if isinstance(expr, Or):
        return And(_negate(expr.left), _negate(expr.right))
    if isinstance(expr, AlwaysTrue):
        return AlwaysFalse()
    if isinstance(expr, AlwaysFalse):
        return AlwaysTrue()
    if isinstance(expr, BoundPredicate):
        return expr.negate()
    if isinstance(expr, UnboundPredicate):
        neg = expr.op.negated
        if isinstance(expr, LiteralPredicate):
            return predicate(neg, expr.term, expr.value)
        if isinstance(expr, SetPredicate):
            return predicate(neg, expr.term, expr.values)
        return predicate(neg, expr.term)
    raise ValidationError(f"cannot negate {expr!r}")


# ---- binding ----------------------------------------------------------------------------


def bind(schema: Schema, expr: Expression, *, case_sensitive: bool = True) -> Expression:
    """Resolve column names against ``schema`` and convert literals to the columns' types.

    ``NOT`` is pushed down and constants are folded, so the result contains only ``And``,
    ``Or``, :class:`BoundPredicate`, ``AlwaysTrue`` and ``AlwaysFalse``. Raises
    :class:`UnknownColumn` for a name not in the schema and :class:`ValidationError` for a
    literal that does not fit its column (or a comparison with null or NaN).
    """
    return _bind(schema, rewrite_not(expr), case_sensitive)


def _bind(schema: Schema, expr: Expression, case_sensitive: bool) -> Expression:
    if isinstance(expr, And):
        return simplify_and(
            _bind(schema, expr.left, case_sensitive), _bind(schema, expr.right, case_sensitive)
        )
    if isinstance(expr, Or):
        return simplify_or(
            _bind(schema, expr.left, case_sensitive), _bind(schema, expr.right, case_sensitive)
        )
    if isinstance(expr, AlwaysTrue | AlwaysFalse | BoundPredicate):
        return expr
    if isinstance(expr, UnboundPredicate):
        return _bind_predicate(schema, expr, case_sensitive)
    if isinstance(expr, Not):  # pragma: no cover - rewrite_not removed every Not
        return _bind(schema, rewrite_not(expr), case_sensitive)
    raise ValidationError(f"not an expression: {expr!r}")


def _resolve(
    schema: Schema, pred: UnboundPredicate, case_sensitive: bool
) -> tuple[BoundReference, bool]:
    """The bound reference of the predicate's column, and whether it can never be null."""
    try:
        field = schema.find_field(pred.term, case_sensitive=case_sensitive)
    except UnknownColumn as exc:
        if len(schema.fields_named(pred.term, case_sensitive=case_sensitive)) > 1:
            raise UnknownColumn(f"{exc} (in filter {pred})") from None
        columns = ", ".join(schema.column_names)
        raise UnknownColumn(
            f"unknown column {pred.term!r} in filter {pred} (columns: {columns})"
        ) from None
    chain = [field]
    parent = schema.parent_id(field.field_id)
    while parent is not None:
        chain.append(schema.find_field(parent))
        parent = schema.parent_id(parent)
    chain.reverse()
    for ancestor in chain[:-1]:
        if isinstance(ancestor.field_type, ListType | MapType):
            raise ValidationError(
                f"cannot filter on {pred.term!r}: it is inside the {ancestor.field_type} column "
                f"{ancestor.name!r}, and row filters apply to one value per row"
            )
    path = tuple(f.name for f in chain)
    # A required field inside an optional struct is null whenever its parent is.
    never_null = all(f.required for f in chain)
    return BoundReference(field.field_id, ".".join(path), field.field_type, path), never_null


def _bind_predicate(schema: Schema, pred: UnboundPredicate, case_sensitive: bool) -> Expression:
    ref, never_null = _resolve(schema, pred, case_sensitive)
    op = pred.op
    t = ref.type
    is_float = isinstance(t, FloatType | DoubleType)
    if op is Operation.IS_NULL:
        return AlwaysFalse() if never_null else BoundPredicate(op, ref)
    if op is Operation.NOT_NULL:
        return AlwaysTrue() if never_null else BoundPredicate(op, ref)
    if op is Operation.IS_NAN:
        return BoundPredicate(op, ref) if is_float else AlwaysFalse()
    if op is Operation.NOT_NAN:
        if is_float:
            return BoundPredicate(op, ref)
        # A non-float value is never NaN, so this holds exactly for the non-null values.
        return AlwaysTrue() if never_null else BoundPredicate(Operation.NOT_NULL, ref)

    if not isinstance(t, PrimitiveType):
        raise ValidationError(f"cannot compare {ref.name!r} of type {t} with a value in {pred}")
    if isinstance(pred, SetPredicate):
        values = frozenset(_convert_literal(t, v, pred) for v in pred.values)
        if not values:
            if op is Operation.IN:
                return AlwaysFalse()
            return AlwaysTrue() if never_null else BoundPredicate(Operation.NOT_NULL, ref)
        if len(values) == 1:
            (only,) = values
            single = Operation.EQ if op is Operation.IN else Operation.NOT_EQ
            return BoundPredicate(single, ref, only)
        return BoundPredicate(op, ref, literals=values)

    assert isinstance(pred, LiteralPredicate)
    if op in (Operation.STARTS_WITH, Operation.NOT_STARTS_WITH):
        if not isinstance(t, StringType):
            raise ValidationError(f"LIKE needs a string column; {ref.name!r} is {t} in {pred}")
        if not isinstance(pred.value, str):
            raise ValidationError(f"LIKE needs a string prefix, not {pred.value!r} in {pred}")
        return BoundPredicate(op, ref, pred.value)
    return BoundPredicate(op, ref, _convert_literal(t, pred.value, pred))


def _convert_literal(t: PrimitiveType, value: Any, pred: UnboundPredicate) -> Any:
    if value is None:
        raise ValidationError(
            f"cannot compare with null in {pred}: use IS NULL / IS NOT NULL (is_null())"
        )
    if isinstance(value, bool) != isinstance(t, BooleanType) and not isinstance(value, str):
        raise ValidationError(f"{value!r} is not a valid {t} value for {pred.term!r} in {pred}")
    try:
        # from_python rejects values that do not fit exactly (1.234 for a decimal(9, 2)) and
        # rounds float literals to 32 bits for float columns, as the data is stored.
        converted = conversions.from_python(t, value)
    except ValidationError as exc:
        raise ValidationError(f"{exc} (in filter {pred})") from None
    if isinstance(converted, float) and math.isnan(converted):
        raise ValidationError(f"cannot compare with NaN in {pred}: use IS NAN / IS NOT NAN")
    return converted


# ---- inspection -------------------------------------------------------------------------


def referenced_field_ids(expr: Expression) -> set[int]:
    """The field ids a bound expression reads."""
    out: set[int] = set()
    for p in iter_predicates(expr):
        if isinstance(p, BoundPredicate):
            out.add(p.ref.field_id)
    return out


def referenced_columns(expr: Expression) -> set[str]:
    """The column names an expression (unbound or bound) refers to."""
    out: set[str] = set()
    for p in iter_predicates(expr):
        out.add(p.ref.name if isinstance(p, BoundPredicate) else p.term)  # type: ignore[attr-defined]
    return out


def iter_predicates(expr: Expression) -> Iterable[Expression]:
    """Every predicate (unbound or bound) in ``expr``, left to right."""
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, And | Or):
            stack.append(e.right)
            stack.append(e.left)
        elif isinstance(e, Not):
            stack.append(e.child)
        elif isinstance(e, UnboundPredicate | BoundPredicate):
            yield e


def is_bound(expr: Expression) -> bool:
    """True when ``expr`` has only bound predicates and no ``Not`` (what :func:`bind` returns)."""
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, And | Or):
            stack.extend((e.left, e.right))
        elif not isinstance(e, BoundPredicate | AlwaysTrue | AlwaysFalse):
            return False
    return True


# ---- printing ---------------------------------------------------------------------------

RESERVED_WORDS = frozenset(
    {"and", "or", "not", "in", "is", "null", "true", "false", "like", "between", "nan"}
)
_PLAIN_PART = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _quote_part(part: str) -> str:
    if _PLAIN_PART.match(part) and part.lower() not in RESERVED_WORDS:
        return part
    return "`" + part.replace("`", "``") + "`"


def quote_name(name: str) -> str:
    """A full column name as the parser reads it back, to exactly ``name``: as it is when it
    reads as dot-separated plain identifiers (``loc.city``), else the whole name in
    backquotes with each backquote in it doubled.

    The parser joins the parts of a column with ``"."``, so ``a.b`` and the backquoted
    ``a.b`` both read back as the full name ``"a.b"``, which :func:`bind` resolves as one
    name (a top-level column ``"a.b"`` or field ``b`` of struct ``a``, whichever the schema
    has; Iceberg schemas cannot have both)."""
    plain = all(_quote_part(p) == p for p in name.split("."))  # printing only: never resolved
    return name if plain else _quote_part(name)


def quote_path(path: tuple[str, ...]) -> str:
    """A column path (one name per level) as the parser reads it back: each part plain when
    it can be, else in backquotes (a top-level column ``"a.b"`` prints backquoted, field
    ``"x y"`` of struct ``s`` as ``s`` dot backquoted ``x y``). Reads back as the full name
    ``".".join(path)``."""
    return ".".join(_quote_part(p) for p in path)


def _quote_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _escape_like(prefix: str) -> str:
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _sorted_values(values: frozenset[Any]) -> list[Any]:
    try:
        return sorted(values)
    except TypeError:
        return sorted(values, key=repr)


def format_literal(value: Any) -> str:
    """A natural Python value in the parser's literal syntax."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | Decimal):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else _quote_string(repr(value))
    if isinstance(value, str):
        return _quote_string(value)
    if isinstance(value, dt.datetime):
        return f"TIMESTAMP '{value.isoformat()}'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, dt.time):
        return f"TIME '{value.isoformat()}'"
    if isinstance(value, uuid.UUID):
        return _quote_string(str(value))
    if isinstance(value, bytes | bytearray):
        return f"X'{bytes(value).hex()}'"
    return _quote_string(str(value))


def format_value(t: IcebergType, value: Any) -> str:
    """An in-memory value of type ``t`` in the parser's literal syntax (for messages)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if isinstance(t, DateType):
            return f"DATE '{conversions.format_date(value)}'"
        if isinstance(t, TimestampType):
            return f"TIMESTAMP '{conversions.format_timestamp(value)}'"
        if isinstance(t, TimestamptzType):
            return f"TIMESTAMP '{conversions.format_timestamp(value)}+00:00'"
        if isinstance(t, TimeType):
            return f"TIME '{conversions.format_time(value)}'"
    return format_literal(value)

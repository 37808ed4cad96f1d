"""What lakecat prunes by in the Spark SQL condition of ``lk.delete`` / ``lk.update``.

Spark evaluates the condition on the rows; lakecat reads it in its own filter syntax to plan
the files that may hold matching rows, to drop whole the files whose every row matches, and as
the read filter of the commit's conflict checks. A condition lakecat reads whole serves all
three (:attr:`ConditionFilter.exact`). One it cannot read whole (``part = 5 AND id % 800 = 5``:
lakecat's syntax has no ``%``) is split into its top-level conjuncts by Spark's own parser, and
the conjuncts lakecat reads make :attr:`ConditionFilter.implied`: every row that matches the
condition matches them, so they prune the files and serve as the read filter (a superset of
the rows the change depends on), but never drop a file whole.

:func:`spark_columns` tells which table columns the condition uses, so that the job finding
the matching rows reads only those (and ``_file``/``_pos``); :func:`joined_columns` the same
for a merge's condition and clauses.

A conjunct is handed to lakecat as the user's own text for it (the span Spark's parser
records), or else as Spark's SQL rendering of it, and only when Spark parses that text back to
the same expression: what lakecat reads is what Spark evaluates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lakecat.metadata.errors import LakecatError
from lakecat.metadata.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    BoundPredicate,
    Expression,
    Operation,
    Or,
    and_,
    bind,
    parse,
)
from lakecat.metadata.schema import DoubleType, FloatType, Schema
from lakecat.spark_ext.source.filters import comparable


@dataclass(frozen=True)
class ConditionFilter:
    """The condition in lakecat's filter syntax: ``exact`` when lakecat reads it whole, and
    ``implied``, which every matching row satisfies (``exact`` itself, else the conjuncts
    lakecat reads; ``AlwaysTrue`` when none)."""

    exact: Expression | None
    implied: Expression


def condition_filter(spark: Any, condition: str, schema: Schema) -> ConditionFilter:
    """What lakecat prunes by in ``condition`` (Spark SQL) on a table of ``schema``."""
    exact = _lakecat(condition, schema)
    if exact is not None:
        return ConditionFilter(exact, exact)
    parts = [_lakecat(text, schema) for text in spark_conjuncts(spark, condition)]
    return ConditionFilter(None, and_(*(p for p in parts if p is not None)))


def spark_conjuncts(spark: Any, condition: str) -> list[str]:
    """The top-level conjuncts of a Spark SQL condition, each as SQL text Spark parses to
    that conjunct; none when the condition does not parse or the session has no JVM."""
    parsed = _parsed(spark, condition)
    if parsed is None:
        return []
    parser, expression = parsed
    out: list[str] = []
    stack = [expression]
    while stack:
        node = stack.pop()
        if node.getClass().getSimpleName() == "And":
            stack.extend((node.right(), node.left()))
            continue
        text = _text_of(parser, node, condition)
        if text is not None:
            out.append(text)
    return out


def spark_columns(spark: Any, condition: str, columns: Sequence[str]) -> list[str] | None:
    """The table ``columns`` a Spark SQL condition refers to (case-insensitively), in table
    order; ``None`` when that cannot be told: the condition does not parse, has a subquery or
    a ``*``, or names something that is not a column."""
    names = _attribute_names(spark, condition)
    if names is None:
        return None
    by_lower = {c.lower(): c for c in columns}
    used: set[str] = set()
    for parts in names:
        column = by_lower.get(parts[0].lower())
        if column is None:
            return None
        used.add(column)
    return [c for c in columns if c in used]


def joined_columns(
    spark: Any, texts: Sequence[str], columns: Sequence[str], alias: str, other: str
) -> list[str] | None:
    """The table ``columns`` that Spark SQL ``texts`` over a join of the table (``alias``)
    with another relation (``other``) use: ``alias.c``, and a bare ``c`` that is a table
    column (it may be the other's, then reading it is only extra); in table order. ``None``
    when that cannot be told (a text does not parse, has a subquery or a ``*``)."""
    by_lower = {c.lower(): c for c in columns}
    used: set[str] = set()
    for text in texts:
        names = _attribute_names(spark, text)
        if names is None:
            return None
        for parts in names:
            if len(parts) > 1 and parts[0].lower() == other.lower():
                continue
            if len(parts) > 1 and parts[0].lower() == alias.lower():
                parts = parts[1:]
            column = by_lower.get(parts[0].lower())
            if column is not None:
                used.add(column)
    return [c for c in columns if c in used]


def _attribute_names(spark: Any, text: str) -> list[list[str]] | None:
    """The name parts of each column a Spark SQL expression names; ``None`` when it does not
    parse (or the session has no JVM), or has a subquery or a ``*``."""
    parsed = _parsed(spark, text)
    if parsed is None:
        return None
    out: list[list[str]] = []
    stack = [parsed[1]]
    while stack:
        node = stack.pop()
        kind = node.getClass().getSimpleName()
        if "Subquery" in kind or kind in ("ListQuery", "Exists", "UnresolvedStar"):
            return None
        if kind == "UnresolvedAttribute":
            parts = node.nameParts()
            out.append([str(parts.apply(i)) for i in range(parts.size())])
        children = node.children()
        stack.extend(children.apply(i) for i in range(children.size()))
    return out


def _parsed(spark: Any, condition: str) -> tuple[Any, Any] | None:
    """Spark's parser and its (unresolved) expression for ``condition``; ``None`` when the
    condition does not parse or the session has no JVM (Spark Connect)."""
    try:
        parser = spark._jsparkSession.sessionState().sqlParser()
        return parser, parser.parseExpression(condition)
    except Exception:  # Py4J's errors, or no JVM session
        return None


def _text_of(parser: Any, node: Any, condition: str) -> str | None:
    origin = node.origin()
    candidates = []
    if origin.startIndex().isDefined() and origin.stopIndex().isDefined():
        candidates.append(condition[origin.startIndex().get() : origin.stopIndex().get() + 1])
    candidates.append(node.sql())
    for text in candidates:
        try:
            if parser.parseExpression(text).equals(node):
                return str(text)
        except Exception:  # the span or rendering is not an expression on its own
            continue
    return None


def _lakecat(text: str, schema: Schema) -> Expression | None:
    """``text`` in lakecat's filter syntax, bound to ``schema``, when lakecat reads it and
    matches exactly the rows Spark does; else ``None``."""
    try:
        bound = bind(schema, parse(text), case_sensitive=False)
    except LakecatError:
        return None
    return _in_sparks_order(bound) if _as_spark(bound) else None


_DOUBLE_OPS = frozenset(
    {
        Operation.LT,
        Operation.LT_EQ,
        Operation.GT,
        Operation.GT_EQ,
        Operation.EQ,
        Operation.NOT_EQ,
        Operation.IN,
        Operation.NOT_IN,
    }
)


def _as_spark(bound: Expression) -> bool:
    """Whether a bound expression, its double comparisons read in Spark's order
    (:func:`_in_sparks_order`), matches the rows Spark's evaluation of the same text does.
    Comparisons of float columns are left out (lakecat rounds the literal to 32 bits, Spark
    widens the column to double: ``f = 0.1`` holds for ``0.1f`` in lakecat only), and so are
    those of uuids (Spark compares their text), as for the data source's pushed filters
    (:mod:`..source.filters`)."""
    if isinstance(bound, And | Or):
        return _as_spark(bound.left) and _as_spark(bound.right)
    if isinstance(bound, BoundPredicate):
        if bound.op in (Operation.IS_NULL, Operation.NOT_NULL):
            return True
        if isinstance(bound.ref.type, FloatType | DoubleType):
            if bound.op in (Operation.IS_NAN, Operation.NOT_NAN):
                return True
            return isinstance(bound.ref.type, DoubleType) and bound.op in _DOUBLE_OPS
        return comparable(bound.ref.type)
    return isinstance(bound, AlwaysTrue | AlwaysFalse)


def _in_sparks_order(bound: Expression) -> Expression:
    """A bound expression whose comparisons mean what Spark means by them: Spark orders NaN
    above every number (lakecat compares as IEEE 754), so ``x > v`` and ``x >= v`` on a double
    column also hold for NaN; ``<``, ``<=``, ``=``, ``!=`` and the lists mean the same in
    both (NaN is not a literal lakecat's syntax reads). ``NOT`` was pushed down to the
    comparisons by :func:`bind`, the opposite comparison in either order (``NOT (x < 1.5)``
    is ``x >= 1.5``, NaN included in Spark)."""
    if isinstance(bound, And):
        return And(_in_sparks_order(bound.left), _in_sparks_order(bound.right))
    if isinstance(bound, Or):
        return Or(_in_sparks_order(bound.left), _in_sparks_order(bound.right))
    if (
        isinstance(bound, BoundPredicate)
        and isinstance(bound.ref.type, DoubleType)
        and bound.op in (Operation.GT, Operation.GT_EQ)
    ):
        return Or(bound, BoundPredicate(Operation.IS_NAN, bound.ref))
    return bound

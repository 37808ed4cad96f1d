"""MERGE on Spark: the key filter that prunes the target, and the joined rows to write.

The target's candidate rows (with ``_file``/``_pos``) are joined with the source on the
merge condition (a left outer join, full outer when unmatched source rows are inserted).
Every joined row gets an action:

====  =====================================================================
D     matched, and the delete clause applies: the row goes
U     matched, and the update clause applies: the row is rewritten with SET
K     kept as it is (matched without an applicable clause, or not matched)
I     a source row without a match that is inserted
X     a source row without a match that is not inserted
====  =====================================================================

Files holding a D or U row are *changed*: copy-on-write, all their K and U rows are written
anew (with the inserted rows) and the files removed; merge-on-read, the positions of their D
and U rows are collected (for position delete files or deletion vectors) and only the U and I
rows are written, the files stay. The other candidates were only read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import Column
from pyspark.sql import functions as F

from lakecat.metadata.errors import LakecatError, ValidationError
from lakecat.metadata.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    Expression,
    GreaterThanOrEqual,
    In,
    LessThanOrEqual,
    and_,
    bind,
)
from lakecat.metadata.schema import (
    LAST_UPDATED_SEQUENCE_NUMBER,
    NestedField,
    Schema,
    TimestamptzType,
)
from lakecat.metadata.schema import (
    ROW_ID as ROW_ID_FIELD,
)
from lakecat.spark_ext.dml.positions import file_positions
from lakecat.spark_ext.source.filters import comparable
from lakecat.spark_ext.types import FILE_COLUMN, POS_COLUMN

# Up to this many distinct source keys the filter lists them (IN), past it a range.
MAX_IN_VALUES = 1000

_ACTION = "__lakecat_action"
_SOURCE_MARK = "__lakecat_source"
ROW_ID = ROW_ID_FIELD.name
LAST_UPDATED = LAST_UPDATED_SEQUENCE_NUMBER.name
_EQUALITY = re.compile(
    r"^\s*`?(\w+)`?\s*\.\s*`?(\w+)`?\s*(?:=|==|<=>)\s*`?(\w+)`?\s*\.\s*`?(\w+)`?\s*$"
)


@dataclass(frozen=True)
class MergeClauses:
    """The WHEN clauses of a merge, as Spark SQL text."""

    update: Mapping[str, str] | str | None
    update_condition: str | None
    delete: bool | str
    insert: Mapping[str, str] | str | None
    insert_condition: str | None
    target_alias: str
    source_alias: str

    @staticmethod
    def of(**kwargs: Any) -> MergeClauses:
        clauses = MergeClauses(**kwargs)
        if clauses.update is None and clauses.delete is False and clauses.insert is None:
            raise ValidationError("merge needs at least one WHEN clause")
        for value in (clauses.update, clauses.insert):
            if isinstance(value, str) and value != "*":
                raise ValidationError(f'a clause takes a mapping of columns or "*", not {value!r}')
        return clauses

    def expressions(self) -> list[str]:
        """The clauses' own Spark SQL texts: conditions and assigned values."""
        out = [c for c in (self.update_condition, self.insert_condition) if c is not None]
        if isinstance(self.delete, str):
            out.append(self.delete)
        for assignments in (self.update, self.insert):
            if isinstance(assignments, Mapping):
                out.extend(assignments.values())
        return out

    @property
    def changes_matches(self) -> bool:
        return self.update is not None or self.delete is not False


@dataclass
class MergePlan:
    changed_files: set[str]
    output: Any  # DataFrame of the rows to write
    writes_anything: bool
    _persisted: Any = None
    # merge-on-read: the positions of the deleted and updated rows, by changed file
    positions: Mapping[str, pa.Int64Array] | None = None

    def release(self) -> None:
        if self._persisted is not None:
            self._persisted.unpersist()


# ---- the key filter ---------------------------------------------------------------------------
def key_filter(
    on: str, source: Any, schema: Schema, target_alias: str, source_alias: str
) -> Expression:
    """A filter on the target's key columns covering every source key value (IN for few
    distinct values, a range for many); AlwaysTrue when ``on`` is not a plain conjunction of
    equalities lakecat can use."""
    pairs = key_pairs(on, schema, source, target_alias, source_alias)
    if not pairs:
        return AlwaysTrue()
    stats_columns = []
    for i, (_, source_column) in enumerate(pairs):
        c = F.col(source_column)
        stats_columns += [
            F.count_distinct(c).alias(f"n{i}"),
            F.min(c).alias(f"lo{i}"),
            F.max(c).alias(f"hi{i}"),
        ]
    stats = source.agg(*stats_columns).collect()[0]
    parts: list[Expression] = []
    for i, (field, source_column) in enumerate(pairs):
        if stats[f"n{i}"] == 0:
            return AlwaysFalse()  # no non-null key: no target row can match
        part: Expression
        if stats[f"n{i}"] <= MAX_IN_VALUES:
            values = [r[0] for r in source.select(source_column).distinct().collect()]
            part = In(field.name, frozenset(v for v in values if v is not None))
        else:
            part = and_(
                GreaterThanOrEqual(field.name, stats[f"lo{i}"]),
                LessThanOrEqual(field.name, stats[f"hi{i}"]),
            )
        try:
            bind(schema, part)
        except LakecatError:
            continue  # values that do not bind to the column: no pruning on this key
        parts.append(part)
    return and_(*parts)


def key_pairs(
    on: str, schema: Schema, source: Any, target_alias: str, source_alias: str
) -> list[tuple[NestedField, str]]:
    """(target field, source column) for each ``t.x = s.y`` of a conjunction ``on``."""
    if re.search(r"\bor\b|\(", on, flags=re.IGNORECASE):
        return []  # not a plain conjunction: a term cannot be taken alone
    by_lower = {f.name.lower(): f for f in schema.fields}
    source_columns = {c.lower(): c for c in source.columns}
    pairs = []
    for term in re.split(r"\band\b", on, flags=re.IGNORECASE):
        match = _EQUALITY.match(term)
        if match is None:
            continue
        left_alias, left, right_alias, right = match.groups()
        if (left_alias, right_alias) == (source_alias, target_alias):
            left_alias, left, right_alias, right = right_alias, right, left_alias, left
        if (left_alias, right_alias) != (target_alias, source_alias):
            continue
        field = by_lower.get(left.lower())
        source_column = source_columns.get(right.lower())
        if field is None or source_column is None:
            continue
        # Spark returns zoned timestamps as naive local times: leave those keys unpruned.
        if not comparable(field.field_type) or isinstance(field.field_type, TimestamptzType):
            continue
        pairs.append((field, source_column))
    return pairs


# ---- the joined rows --------------------------------------------------------------------------
def merge_rows(
    spark: Any,
    rows: Any | None,
    source: Any,
    on: str,
    clauses: MergeClauses,
    schema: Schema,
    *,
    merge_on_read: bool = False,
    row_lineage: bool = False,
) -> MergePlan:
    """The changed files and the rows to write (see the module docstring); with
    ``merge_on_read``, also the positions of the changed rows; with ``row_lineage`` (``rows``
    carry ``_row_id`` and ``_last_updated_sequence_number``: a v3 table), the rows written
    carry them too: kept and updated rows keep their ``_row_id``, updated and inserted rows
    get a null sequence number (the commit's), inserted rows a null ``_row_id`` (a new one)."""
    t, s = clauses.target_alias, clauses.source_alias
    columns = [f.name for f in schema.fields]
    marked = source.withColumn(_SOURCE_MARK, F.lit(True)).alias(s)
    inserts = _assignments(clauses.insert, columns, source.columns, s)
    if rows is None:  # no candidate files: nothing can match, only inserts
        if clauses.insert is None:
            return MergePlan(set(), None, False)
        insert_when = _condition(clauses.insert_condition)
        out = marked.where(insert_when).select(
            *[(F.expr(inserts[c]) if c in inserts else F.lit(None)).alias(c) for c in columns],
            *(_new_lineage() if row_lineage else []),
        )
        return MergePlan(set(), out, True)

    how = "full_outer" if clauses.insert is not None else "left_outer"
    joined = rows.alias(t).join(marked, F.expr(on), how)
    target_present = F.col(f"{t}.{FILE_COLUMN}").isNotNull()
    source_present = F.col(f"{s}.{_SOURCE_MARK}").isNotNull()
    matched = target_present & source_present
    delete_when = (
        F.lit(clauses.delete) if isinstance(clauses.delete, bool) else _condition(clauses.delete)
    )
    update_when = (
        _condition(clauses.update_condition) if clauses.update is not None else F.lit(False)
    )
    insert_when = (
        _condition(clauses.insert_condition) if clauses.insert is not None else F.lit(False)
    )
    action = (
        F.when(matched & delete_when, "D")
        .when(matched & update_when, "U")
        .when(matched, "K")
        .when(~target_present, F.when(insert_when, "I").otherwise("X"))
        .otherwise("K")
    )
    joined = joined.withColumn(_ACTION, action).persist()
    try:
        if clauses.changes_matches:
            _check_single_match(joined, matched, t)
        changed = {
            r[0]
            for r in joined.where(F.col(_ACTION).isin("U", "D"))
            .select(F.col(f"{t}.{FILE_COLUMN}"))
            .distinct()
            .collect()
        }
    except BaseException:
        joined.unpersist()
        raise
    updates = _assignments(clauses.update, columns, source.columns, s)
    positions = None
    if merge_on_read:
        try:
            positions = file_positions(
                joined.where(F.col(_ACTION).isin("U", "D")),
                F.col(f"{t}.{FILE_COLUMN}"),
                F.col(f"{t}.{POS_COLUMN}"),
            )
        except BaseException:
            joined.unpersist()
            raise
        keep = F.col(_ACTION) == "U"  # the new versions; the old ones are deleted by position
    else:
        keep = F.col(f"{t}.{FILE_COLUMN}").isin(sorted(changed)) & F.col(_ACTION).isin("U", "K")
    lineage = (
        kept_lineage(F.col(_ACTION) != "K", F.col(f"{t}.{ROW_ID}"), F.col(f"{t}.{LAST_UPDATED}"))
        if row_lineage
        else []
    )
    out = joined.where(keep | (F.col(_ACTION) == "I")).select(
        *[_output_column(c, updates, inserts, t) for c in columns], *lineage
    )
    return MergePlan(changed, out, True, joined, positions)


def _output_column(
    column: str, updates: Mapping[str, str], inserts: Mapping[str, str], t: str
) -> Column:
    current = F.col(f"{t}.`{column}`")
    updated = F.expr(updates[column]) if column in updates else current
    inserted = F.expr(inserts[column]) if column in inserts else F.lit(None)
    return (
        F.when(F.col(_ACTION) == "U", updated)
        .when(F.col(_ACTION) == "I", inserted)
        .otherwise(current)
        .alias(column)
    )


def kept_lineage(
    changed: Column, row_id: Column | None = None, sequence_number: Column | None = None
) -> list[Column]:
    """The row lineage columns of rows a rewrite writes (format v3): every row keeps its
    ``_row_id`` (an inserted row has none: null, assigned at commit), and a ``changed`` row
    gets a null ``_last_updated_sequence_number`` (it takes the committing snapshot's)."""
    row_id = F.col(ROW_ID) if row_id is None else row_id
    sequence_number = F.col(LAST_UPDATED) if sequence_number is None else sequence_number
    return [
        row_id.alias(ROW_ID),
        F.when(changed, F.lit(None).cast("long")).otherwise(sequence_number).alias(LAST_UPDATED),
    ]


def _new_lineage() -> list[Column]:
    """The row lineage columns of inserted rows: both null (assigned at commit)."""
    return [F.lit(None).cast("long").alias(name) for name in (ROW_ID, LAST_UPDATED)]


def _condition(text: str | None) -> Column:
    return F.lit(True) if text is None else F.coalesce(F.expr(text), F.lit(False))


def _assignments(
    clause: Mapping[str, str] | str | None,
    columns: Sequence[str],
    source_columns: Sequence[str],
    source_alias: str,
) -> dict[str, str]:
    """Target column -> Spark SQL expression for a clause's mapping or ``"*"``."""
    if clause is None:
        return {}
    if clause == "*":
        available = {c.lower() for c in source_columns}
        return {c: f"{source_alias}.`{c}`" for c in columns if c.lower() in available}
    assert not isinstance(clause, str)
    return resolve_columns(clause, columns)


def resolve_columns(assignments: Mapping[str, str], columns: Sequence[str]) -> dict[str, str]:
    """``assignments`` keyed by the table's own column names (exact, else case-insensitive);
    :class:`ValidationError` for a name that is no column."""
    by_lower = {c.lower(): c for c in columns}
    out: dict[str, str] = {}
    for name, value in assignments.items():
        column = name if name in columns else by_lower.get(name.lower())
        if column is None:
            raise ValidationError(f"cannot set {name!r}: no such column ({', '.join(columns)})")
        out[column] = value
    return out


def _check_single_match(joined: Any, matched: Column, t: str) -> None:
    duplicated = (
        joined.where(matched)
        .groupBy(F.col(f"{t}.{FILE_COLUMN}"), F.col(f"{t}.{POS_COLUMN}"))
        .count()
        .where(F.col("count") > 1)
        .limit(1)
        .collect()
    )
    if duplicated:
        raise ValidationError(
            "merge: a target row matched more than one source row; make the source unique "
            "on the merge keys (a row cannot be updated or deleted twice)"
        )

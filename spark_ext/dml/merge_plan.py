"""MERGE on Spark: the key filter that prunes the target, and the rows to write, in two passes.

The first pass (:func:`match_rows`) joins the target's candidate rows (with ``_file``/``_pos``)
with the source on the merge condition (an inner join, full outer when unmatched source rows
are inserted) and gives every joined row an action:

====  =====================================================================
D     matched, and the delete clause applies: the row goes
U     matched, and the update clause applies: the row is rewritten with SET
K     kept as it is (matched without an applicable clause)
I     a source row without a match that is inserted
X     a source row without a match that is not inserted
====  =====================================================================

It reads only the target columns the condition and the clauses' conditions use (Spark prunes
the rest), and caches what the second pass needs, which is about as large as the source: the
file, position and action of each matched row with its source row, and the inserted source
rows. From the cache come the single-match check and the *changed* files (those holding a D
or U row) or, merge-on-read, the positions of their D and U rows (for position delete files or
deletion vectors).

The second pass (:func:`merge_output`) reads the changed files only, whole, and joins their
rows with the cached matches by file and position: copy-on-write, all their K and U rows are
written anew (with the inserted rows) and the files removed; merge-on-read, only the U rows
(their new versions) and the inserted rows are written, the files stay. The source and the
clauses' conditions are not evaluated again, so both passes agree on every row. The other
candidates were only read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame
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
from lakecat.spark_ext.native.columns import quoted
from lakecat.spark_ext.source.filters import comparable
from lakecat.spark_ext.types import FILE_COLUMN, POS_COLUMN

# Up to this many distinct source keys the filter lists them (IN), past it a range.
MAX_IN_VALUES = 1000

_ACTION = "__lakecat_action"
_SOURCE_MARK = "__lakecat_source"
# the first pass's cached columns (with the source's)
_M_FILE, _M_POS, _M_ACTION = "__lakecat_match_file", "__lakecat_match_pos", "__lakecat_match"
_M_COLUMNS = frozenset({_M_FILE, _M_POS, _M_ACTION, _SOURCE_MARK})
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


# ---- the two passes ---------------------------------------------------------------------------
@dataclass
class Matches:
    """The first pass of a merge (:func:`match_rows`): what happens to each matched target row
    and which source rows are inserted, cached (narrow: no target column but the row's file
    and position)."""

    rows: DataFrame  # _M_FILE, _M_POS, _M_ACTION and the source's columns; persisted
    changed: set[str]  # the _file values of the files with D or U rows
    # merge-on-read: the positions of the D and U rows, by _file value
    positions: Mapping[str, pa.Int64Array] | None

    def release(self) -> None:
        self.rows.unpersist()


def match_rows(
    rows: DataFrame, source: DataFrame, on: str, clauses: MergeClauses, *, merge_on_read: bool
) -> Matches:
    """The first pass: the candidate ``rows`` (with ``_file`` / ``_pos``) joined with the source
    on ``on``, each matched row's action decided (D, U or K) and each unmatched source row's
    (I or X). Only the target columns ``on`` and the clauses' conditions use are read; what
    the second pass needs is cached: the matched rows' file, position and action with their
    source row, and the inserted source rows. Raises :class:`ValidationError` when a target
    row matches more than one source row and a matched clause could change it."""
    t, s = clauses.target_alias, clauses.source_alias
    marked = source.withColumn(_SOURCE_MARK, F.lit(True)).alias(s)
    joined = rows.alias(t).join(
        marked, F.expr(on), "full_outer" if clauses.insert is not None else "inner"
    )
    target_present = F.col(f"{t}.{FILE_COLUMN}").isNotNull()
    source_present = F.col(f"{s}.{_SOURCE_MARK}").isNotNull()
    matched = target_present & source_present
    action = (
        F.when(matched & _delete_when(clauses), "D")
        .when(matched & _update_when(clauses), "U")
        .when(matched, "K")
        .when(~target_present, F.when(_insert_when(clauses), "I").otherwise("X"))
    )
    # the matched rows a clause cannot change matter only to the single-match check
    wanted = ["D", "U", "I", *(["K"] if clauses.changes_matches else [])]
    cached = (
        joined.select(
            F.col(f"{t}.{FILE_COLUMN}").alias(_M_FILE),
            F.col(f"{t}.{POS_COLUMN}").alias(_M_POS),
            action.alias(_M_ACTION),
            *[F.col(f"{s}.{quoted(c)}") for c in source.columns],
        )
        .where(F.col(_M_ACTION).isin(wanted))
        .persist()
    )
    try:
        if clauses.changes_matches:
            _check_single_match(cached)
        changes = cached.where(F.col(_M_ACTION).isin("U", "D"))
        if merge_on_read:
            positions = file_positions(changes, F.col(_M_FILE), F.col(_M_POS))
            return Matches(cached, set(positions), positions)
        changed = {r[0] for r in changes.select(_M_FILE).distinct().collect()}
    except BaseException:
        cached.unpersist()
        raise
    return Matches(cached, changed, None)


def merge_output(
    rows: DataFrame | None,
    matches: Matches,
    clauses: MergeClauses,
    schema: Schema,
    *,
    merge_on_read: bool = False,
    row_lineage: bool = False,
) -> DataFrame | None:
    """The second pass: the rows to write, from ``rows`` (the rows of the changed files, read
    as for :func:`match_rows`; None when no file changed) and the first pass's ``matches``.
    Copy-on-write, every row of a changed file but the deleted ones, updated where the first
    pass decided so (the rows are joined with the cached matches by file and position, so
    the source and the conditions are not evaluated again); merge-on-read, the new versions
    of the updated rows only. Then the inserted source rows. None when there is nothing to
    write. With ``row_lineage``, the rows carry ``_row_id`` and
    ``_last_updated_sequence_number`` (see :func:`kept_lineage`)."""
    t, s = clauses.target_alias, clauses.source_alias
    columns = [f.name for f in schema.fields]
    source_columns = [c for c in matches.rows.columns if c not in _M_COLUMNS]
    updates = _assignments(clauses.update, columns, source_columns, s)
    inserts = _assignments(clauses.insert, columns, source_columns, s)
    parts: list[DataFrame] = []
    if rows is not None:
        changing = ["U"] if merge_on_read else ["U", "D"]
        changes = matches.rows.where(F.col(_M_ACTION).isin(changing))
        on = (F.col(f"{t}.{FILE_COLUMN}") == F.col(f"{s}.{_M_FILE}")) & (
            F.col(f"{t}.{POS_COLUMN}") == F.col(f"{s}.{_M_POS}")
        )
        joined = rows.alias(t).join(
            changes.alias(s), on, "inner" if merge_on_read else "left_outer"
        )
        acted = joined.withColumn(_ACTION, F.coalesce(F.col(f"{s}.{_M_ACTION}"), F.lit("K")))
        lineage = (
            kept_lineage(
                F.col(_ACTION) != "K", F.col(f"{t}.{ROW_ID}"), F.col(f"{t}.{LAST_UPDATED}")
            )
            if row_lineage
            else []
        )
        parts.append(
            acted.where(F.col(_ACTION).isin("U", "K")).select(
                *[_output_column(c, updates, t) for c in columns], *lineage
            )
        )
    if clauses.insert is not None:
        inserted = matches.rows.where(F.col(_M_ACTION) == "I").alias(s)
        parts.append(_inserted(inserted, inserts, columns, row_lineage))
    if not parts:
        return None
    out = parts[0]
    for part in parts[1:]:
        out = out.unionByName(part)
    return out


def only_inserts(
    source: DataFrame, clauses: MergeClauses, schema: Schema, *, row_lineage: bool = False
) -> DataFrame | None:
    """The rows a merge without candidate target rows writes: the source rows its insert
    clause inserts (None without one)."""
    if clauses.insert is None:
        return None
    s = clauses.source_alias
    columns = [f.name for f in schema.fields]
    inserts = _assignments(clauses.insert, columns, source.columns, s)
    return _inserted(source.alias(s).where(_insert_when(clauses)), inserts, columns, row_lineage)


def _delete_when(clauses: MergeClauses) -> Column:
    if isinstance(clauses.delete, bool):
        return F.lit(clauses.delete)
    return _condition(clauses.delete)


def _update_when(clauses: MergeClauses) -> Column:
    return _condition(clauses.update_condition) if clauses.update is not None else F.lit(False)


def _insert_when(clauses: MergeClauses) -> Column:
    return _condition(clauses.insert_condition) if clauses.insert is not None else F.lit(False)


def _output_column(column: str, updates: Mapping[str, str], t: str) -> Column:
    """A column of a changed file's row written back: SET's value where it is updated."""
    current = F.col(f"{t}.{quoted(column)}")
    if column not in updates:
        return current.alias(column)
    return F.when(F.col(_ACTION) == "U", F.expr(updates[column])).otherwise(current).alias(column)


def _inserted(
    rows: DataFrame, inserts: Mapping[str, str], columns: Sequence[str], row_lineage: bool
) -> DataFrame:
    """The inserted rows: the insert clause's values of the source ``rows`` (NULL for the
    columns it leaves out), with the lineage of new rows."""
    out: DataFrame = rows.select(
        *[(F.expr(inserts[c]) if c in inserts else F.lit(None)).alias(c) for c in columns],
        *(_new_lineage() if row_lineage else []),
    )
    return out


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


def _check_single_match(matches: DataFrame) -> None:
    duplicated = (
        matches.where(F.col(_M_ACTION).isin("D", "U", "K"))
        .groupBy(_M_FILE, _M_POS)
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

"""DELETE, UPDATE and MERGE for Spark users, committed with conflict checks.

>>> delete(spark, "db.events", "ts < '2024-01-01'")
>>> update(spark, "db.events", "region = 'eu'", {"amount": "amount * 2"})
>>> merge(spark, target="db.events", source=updates, on="t.id = s.id",
...       when_matched_update="*", when_not_matched_insert="*")

Conditions and SET values are Spark SQL, evaluated by Spark on the rows. Each operation

1. loads the table on the driver (the snapshot it starts from) and plans the files that may
   hold affected rows: the condition, or the top-level ``AND`` terms of it that lakecat's
   filter syntax reads (:mod:`.conditions`), prunes by partitions and column bounds (a MERGE
   prunes by the source's key values); a DELETE whose whole condition lakecat reads drops
   files whose rows all match without reading them;
2. finds on Spark the files with affected rows (with Spark's own Parquet reader where the
   files qualify: :mod:`.matches`), then rewrites those files whole on Spark (copy-on-write:
   unaffected rows are copied; the rows read by Spark's Parquet reader where the files
   qualify, else by the data source: :mod:`.file_rows`); files read and found unaffected
   count as *read* for the conflict checks;
3. commits one intent on the driver with the read filter it used and the table's isolation
   level (``write.delete/update/merge.isolation-level``), so that concurrent operations on
   disjoint partitions both commit, and overlapping ones fail with a typed conflict.

Rows for which a condition is NULL are not affected, as in SQL.

Merge-on-read (the table's ``write.delete.mode`` / ``write.update.mode`` = ``merge-on-read``):
DELETE and UPDATE leave the files with matching rows in place; one Spark job gathers the
matching rows' file and position (positions counted over every row of the file; :mod:`.matches`,
:mod:`.positions`) and the driver writes one position delete file
(v3: deletion vector) per data file;
UPDATE writes the new versions of the matched rows on Spark; a merge-on-read MERGE (the
table's ``write.merge.mode``) deletes the updated and deleted rows by position the same way and
writes their new versions and the inserted rows. Those files are *read* files for the conflict
checks.

Delete files (merge-on-read deletes this or another engine wrote): only live rows are matched
and written back (position deletes and deletion vectors are applied to Spark's reads by
position; equality deletes send the reads to the data source, which applies them); the commit
removes the delete files that applied only to the removed files.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import functions as F

from lakecat.catalog import Catalog
from lakecat.catalog.engine import (
    FileDeletes,
    Intent,
    OpKind,
    Scan,
    ScanPlan,
    delete_quietly,
    isolation_level,
    merge_on_read,
    replaced_deletes,
    write_position_deletes,
)
from lakecat.metadata import properties as P
from lakecat.metadata.errors import LakecatError, ValidationError
from lakecat.metadata.expressions import (
    AlwaysTrue,
    Expression,
    PartitionEvaluator,
    StrictMetricsEvaluator,
    bind,
)
from lakecat.metadata.manifests import DataFile
from lakecat.metadata.schema import LINEAGE_COLUMNS
from lakecat.spark_ext.dml.conditions import condition_filter, joined_columns, spark_columns
from lakecat.spark_ext.dml.file_rows import FileRows, file_rows, names_file_column
from lakecat.spark_ext.dml.matches import native_matches
from lakecat.spark_ext.dml.merge_plan import (
    MergeClauses,
    kept_lineage,
    key_filter,
    match_rows,
    merge_output,
    only_inserts,
    resolve_columns,
)
from lakecat.spark_ext.dml.positions import file_positions
from lakecat.spark_ext.native.distribution import distributed, distribution_mode
from lakecat.spark_ext.native.support import NotNative
from lakecat.spark_ext.native.write import stage as native_stage
from lakecat.spark_ext.settings import DEFAULT_FORMAT
from lakecat.spark_ext.source.staging import TargetTable, open_target, read_files, stage_write
from lakecat.spark_ext.types import FILE_COLUMN, METADATA_COLUMNS, POS_COLUMN

log = logging.getLogger("lakecat.spark")

_MATCH = "__lakecat_match"


@dataclass(frozen=True)
class RowLevelResult:
    """What a row-level operation did; ``snapshot_id`` is None when it changed nothing."""

    snapshot_id: int | None
    files_removed: int
    files_added: int
    files_read: int  # candidate files read on Spark (a DELETE drops some without reading)


def _stage(target: TargetTable, rows: Any, kind: OpKind) -> list[DataFile]:
    """Write the rows of a ``kind`` statement staged, spread over tasks by its distribution
    mode (``write.<kind>.distribution-mode``; without it, Iceberg's choice when the table sets
    ``write.distribution-mode``: :func:`~lakecat.spark_ext.native.distribution.statement_mode`)."""
    mode = distribution_mode(target.metadata, kind.value)
    spread = distributed(rows, target.metadata, mode)
    try:
        return native_stage(target, spread)
    except NotNative as exc:
        log.info("lakecat: writing the rows of %s through the data source: %s", target.name, exc)
    return stage_write(target, spread)


def delete(
    spark: Any,
    table: str,
    condition: str,
    *,
    catalog: Catalog | None = None,
    format_name: str = DEFAULT_FORMAT,
) -> RowLevelResult:
    """Delete the rows matching a Spark SQL condition."""
    with open_target(spark, table, catalog, format_name) as target:
        pruning = condition_filter(spark, condition, target.metadata.schema())
        expression = pruning.implied  # the files it may match, and the read filter
        planned = _candidates(target, expression)
        candidates = list(planned.files)
        # only a condition lakecat reads whole tells which files match in every row
        whole, partial = _split_strict(target, pruning.exact or AlwaysTrue(), candidates)
        if merge_on_read(target.metadata, OpKind.DELETE):
            deletes, _, replaced = _position_deletes(
                spark, target, partial, condition, planned.deletes
            )
            return _commit(
                target,
                OpKind.DELETE,
                P.DELETE_ISOLATION_LEVEL,
                expression,
                [*whole, *replaced],
                deletes,
                partial,
                files_read=len(partial),
            )
        touched = _files_with_matches(spark, target, partial, condition, planned.deletes)
        added: list[DataFile] = []
        if touched:
            rows = _rows_of(spark, target, touched, planned, condition)
            kept = rows.rows.where(~F.coalesce(F.expr(condition), F.lit(False)))
            added = _stage(target, kept.drop(*METADATA_COLUMNS), OpKind.DELETE)
        removed = [*whole, *touched]
        read = [f for f in partial if f.file_path not in set_of(touched)]
        return _commit(
            target,
            OpKind.DELETE,
            P.DELETE_ISOLATION_LEVEL,
            expression,
            removed,
            added,
            read,
            files_read=len(partial),
        )


def update(
    spark: Any,
    table: str,
    condition: str,
    set: Mapping[str, str],
    *,
    catalog: Catalog | None = None,
    format_name: str = DEFAULT_FORMAT,
) -> RowLevelResult:
    """Set columns to Spark SQL expressions in the rows matching a condition."""
    if not set:
        raise ValidationError("update needs at least one column to set")
    with open_target(spark, table, catalog, format_name) as target:
        columns = [f.name for f in target.metadata.schema().fields]
        assignments = resolve_columns(set, columns)
        expression = condition_filter(spark, condition, target.metadata.schema()).implied
        planned = _candidates(target, expression)
        candidates = list(planned.files)
        mor = merge_on_read(target.metadata, OpKind.UPDATE)
        replaced: list[DataFile] = []
        if mor:
            deletes, touched, replaced = _position_deletes(
                spark, target, candidates, condition, planned.deletes
            )
        else:
            touched = _files_with_matches(spark, target, candidates, condition, planned.deletes)
        added: list[DataFile] = []
        if touched:
            found = _rows_of(spark, target, touched, planned, condition, *assignments.values())
            rows = found.rows.withColumn(_MATCH, F.coalesce(F.expr(condition), F.lit(False)))
            if mor:  # only the new versions; the old ones are deleted by position
                rows = rows.where(F.col(_MATCH))
            out = rows.select(
                *[
                    F.when(F.col(_MATCH), F.expr(assignments[c])).otherwise(F.col(c)).alias(c)
                    if c in assignments
                    else F.col(c)
                    for c in columns
                ],
                *(kept_lineage(F.col(_MATCH)) if target.row_lineage else []),
            )
            try:
                added = _stage(target, out, OpKind.UPDATE)
            except BaseException:
                if mor:
                    delete_quietly(target.io, [d.file_path for d in deletes])
                raise
        if mor:
            return _commit(
                target,
                OpKind.UPDATE,
                P.UPDATE_ISOLATION_LEVEL,
                expression,
                replaced,
                [*added, *deletes],
                candidates,
                files_read=len(candidates),
            )
        read = [f for f in candidates if f.file_path not in set_of(touched)]
        return _commit(
            target,
            OpKind.UPDATE,
            P.UPDATE_ISOLATION_LEVEL,
            expression,
            touched,
            added,
            read,
            files_read=len(candidates),
        )


def merge(
    spark: Any,
    *,
    target: str,
    source: Any,
    on: str,
    when_matched_update: Mapping[str, str] | str | None = None,
    when_matched_update_condition: str | None = None,
    when_matched_delete: bool | str = False,
    when_not_matched_insert: Mapping[str, str] | str | None = None,
    when_not_matched_insert_condition: str | None = None,
    target_alias: str = "t",
    source_alias: str = "s",
    catalog: Catalog | None = None,
    format_name: str = DEFAULT_FORMAT,
) -> RowLevelResult:
    """Merge a source DataFrame into a table, in the style of Delta's ``DeltaTable.merge``.

    ``on`` joins target rows (alias ``t``) with source rows (alias ``s``). A matched target
    row is deleted when ``when_matched_delete`` is True or its condition holds, else updated
    with ``when_matched_update`` (``{"col": "s.col + 1"}``, or ``"*"``: every column from the
    source column of the same name) when ``when_matched_update_condition`` is absent or
    holds; a source row without a match is inserted with ``when_not_matched_insert`` (a
    mapping or ``"*"``) when its condition is absent or holds. A target row matched by more
    than one source row is an error when a matched clause would change it.

    Files are pruned by the source's values of the keys ``on`` compares with ``=``; those
    values also make the commit's read filter, so merges whose sources touch disjoint
    partitions (or key ranges) do not conflict.
    """
    clauses = MergeClauses.of(
        update=when_matched_update,
        update_condition=when_matched_update_condition,
        delete=when_matched_delete,
        insert=when_not_matched_insert,
        insert_condition=when_not_matched_insert_condition,
        target_alias=target_alias,
        source_alias=source_alias,
    )
    with open_target(spark, target, catalog, format_name) as planned:
        schema = planned.metadata.schema()
        expression = key_filter(on, source, schema, target_alias, source_alias)
        scanned = _candidates(planned, expression)
        candidates = list(scanned.files)
        mor = merge_on_read(planned.metadata, OpKind.MERGE)
        changed, positions, added = _merged(
            spark, planned, scanned, source, on, clauses, merge_on_read=mor
        )
        touched = [f for f in candidates if f.file_path in changed]
        if mor:
            return _merge_on_read_merge(planned, expression, positions, scanned, touched, added)
        read = [f for f in candidates if f.file_path not in changed]
        return _commit(
            planned,
            OpKind.MERGE,
            P.MERGE_ISOLATION_LEVEL,
            expression,
            touched,
            added,
            read,
            files_read=len(candidates),
        )


def _merged(
    spark: Any,
    target: TargetTable,
    scanned: ScanPlan,
    source: Any,
    on: str,
    clauses: MergeClauses,
    *,
    merge_on_read: bool,
) -> tuple[set[str], dict[str, pa.Int64Array], list[DataFile]]:
    """Run a merge's two passes (:mod:`.merge_plan`) over the candidate files ``scanned`` and
    stage the rows it writes: the paths of the files with changed rows, merge-on-read the
    positions of those rows (by path), and the files written."""
    schema = target.metadata.schema()
    lineage = target.row_lineage
    if not scanned.files:  # nothing can match: only inserts
        out = only_inserts(source, clauses, schema, row_lineage=lineage)
        return set(), {}, _stage(target, out, OpKind.MERGE) if out is not None else []
    expressions = (on, *clauses.expressions())
    # measured (docs/benchmarks.md): a merge of files with deletes is faster when the data
    # source applies the deletes in its tasks
    reason = "the candidate files have deletes" if scanned.deletes else None
    # the first pass reads the columns the condition and the clauses' conditions use
    conditions = [c for c in (on, clauses.update_condition, clauses.delete) if isinstance(c, str)]
    used = joined_columns(
        spark, conditions, schema.column_names, clauses.target_alias, clauses.source_alias
    )
    found = _rows_of(
        spark,
        target,
        scanned.files,
        scanned,
        *expressions,
        data_source_only=reason,
        columns=used,
    )
    matches = match_rows(found.rows, source, on, clauses, merge_on_read=merge_on_read)
    try:
        changed = {found.path(v) for v in matches.changed}
        positions = {found.path(v): p for v, p in (matches.positions or {}).items()}
        touched = [f for f in scanned.files if f.file_path in changed]
        again = None
        if touched:  # the same reader as the first pass: the rows name their files alike
            again = _rows_of(
                spark,
                target,
                touched,
                scanned,
                *expressions,
                data_source_only=None if found.native else reason or "the first pass read so",
            )
            if again.native != found.native:
                raise LakecatError(f"merge into {target.name}: the passes' readers differ")
        out = merge_output(
            again.rows if again is not None else None,
            matches,
            clauses,
            schema,
            merge_on_read=merge_on_read,
            row_lineage=lineage,
        )
        added = _stage(target, out, OpKind.MERGE) if out is not None else []
    finally:
        matches.release()
    return changed, positions, added


def _merge_on_read_merge(
    target: TargetTable,
    expression: Expression,
    positions: Mapping[str, pa.Int64Array],
    scanned: ScanPlan,
    touched: Sequence[DataFile],
    added: Sequence[DataFile],
) -> RowLevelResult:
    """Commit a merge-on-read MERGE: the changed rows (``positions``: of each changed file, by
    path) deleted by position (v3: deletion vectors), their new versions and the inserted rows
    in ``added``; every candidate read."""
    targets = [
        FileDeletes(f, positions[f.file_path], scanned.deletes.get(f.file_path, ()))
        for f in touched
    ]
    try:
        deletes = write_position_deletes(target.io, target.metadata, targets)
    except BaseException:
        delete_quietly(target.io, [f.file_path for f in added])
        raise
    return _commit(
        target,
        OpKind.MERGE,
        P.MERGE_ISOLATION_LEVEL,
        expression,
        replaced_deletes(target.metadata, targets),
        [*added, *deletes],
        scanned.files,
        files_read=len(scanned.files),
    )


# ---- planning ---------------------------------------------------------------------------------
def _candidates(target: TargetTable, expression: Expression) -> ScanPlan:
    """The files that may hold rows matching ``expression``, and the deletes of each."""
    scan = Scan(
        target.io,
        target.metadata,
        target.head,
        target.metadata.schema(),
        row_filter=expression,
        columns=_candidate_columns(target),
        case_sensitive=False,
    )
    return scan.plan()


def _candidate_columns(target: TargetTable) -> list[str] | None:
    """The columns a scan of the candidates asks for: with row lineage, its columns too, so
    that the plan holds each file's data sequence number."""
    if not target.row_lineage:
        return None
    return [*target.metadata.schema().column_names, *LINEAGE_COLUMNS]


def _rows_of(
    spark: Any,
    target: TargetTable,
    files: Sequence[DataFile],
    planned: ScanPlan,
    *expressions: str | None,
    data_source_only: str | None = None,
    columns: Sequence[str] | None = None,
) -> FileRows:
    """The live rows of ``files`` (of ``planned``), read natively unless the statement's own
    ``expressions`` name ``_file`` (or ``data_source_only`` gives a reason); ``columns``:
    only these table columns, without the row lineage."""
    reason = "the statement names _file" if names_file_column(*expressions) else data_source_only
    return file_rows(
        spark,
        target,
        files,
        deletes=planned.deletes,
        sequence_numbers=planned.sequence_numbers,
        data_source_only=reason,
        columns=columns,
    )


def _split_strict(
    target: TargetTable, expression: Expression, files: list[DataFile]
) -> tuple[list[DataFile], list[DataFile]]:
    """(files whose every row matches, the others), by partition values and column bounds."""
    if isinstance(expression, AlwaysTrue):
        return [], files
    schema = target.metadata.schema()
    bound = bind(schema, expression, case_sensitive=False)
    strict_metrics = StrictMetricsEvaluator(schema, bound)
    strict_partitions = {
        spec_id: PartitionEvaluator(spec, schema, bound, strict=True)
        for spec_id, spec in target.metadata.specs_by_id().items()
    }
    whole = [
        f for f in files if strict_partitions[f.spec_id].eval(f.partition) or strict_metrics.eval(f)
    ]
    chosen = set_of(whole)
    return whole, [f for f in files if f.file_path not in chosen]


def _files_with_matches(
    spark: Any,
    target: TargetTable,
    files: Sequence[DataFile],
    condition: str,
    deletes: Mapping[str, tuple[DataFile, ...]],
) -> list[DataFile]:
    """The files with at least one live row matching the condition (a Spark job; ``deletes``:
    the delete files of each file, by path)."""
    if not files:
        return []
    native = native_matches(spark, target, files, condition, deletes)
    if native is not None:
        found = native.files()
    else:
        rows = read_files(spark, target, files, columns=_columns_of(spark, target, condition))
        matching = rows.where(F.expr(condition)).select(FILE_COLUMN).distinct()
        found = {r[0] for r in matching.collect()}
    return [f for f in files if f.file_path in found]


def _position_deletes(
    spark: Any,
    target: TargetTable,
    files: Sequence[DataFile],
    condition: str,
    applied: Mapping[str, tuple[DataFile, ...]],
) -> tuple[list[DataFile], list[DataFile], list[DataFile]]:
    """Merge-on-read: one position delete file (v3: deletion vector) per file with rows
    matching the condition, naming their positions (a Spark job finds them; the driver
    writes the delete files); the files with matches; and the delete files the new deletion
    vectors replace (``applied``: the deletes of each file, by path)."""
    if not files:
        return [], [], []
    native = native_matches(spark, target, files, condition, applied)
    if native is not None:
        positions = native.positions()
    else:
        columns = _columns_of(spark, target, condition)
        rows = read_files(spark, target, files, columns=columns).where(F.expr(condition))
        positions = file_positions(rows, F.col(FILE_COLUMN), F.col(POS_COLUMN))
    touched = [f for f in files if f.file_path in positions]
    targets = [
        FileDeletes(f, positions[f.file_path], applied.get(f.file_path, ())) for f in touched
    ]
    written = write_position_deletes(target.io, target.metadata, targets)
    return written, touched, replaced_deletes(target.metadata, targets)


def _columns_of(spark: Any, target: TargetTable, condition: str) -> list[str] | None:
    """The table columns ``condition`` uses (``None``: every column)."""
    return spark_columns(spark, condition, target.metadata.schema().column_names)


def set_of(files: Sequence[DataFile]) -> set[str]:
    return {f.file_path for f in files}


# ---- commit ---------------------------------------------------------------------------------
def _commit(
    target: TargetTable,
    kind: OpKind,
    isolation_key: str,
    expression: Expression,
    removed: Sequence[DataFile],
    added: Sequence[DataFile],
    read: Sequence[DataFile],
    *,
    files_read: int,
) -> RowLevelResult:
    if not removed and not added:
        return RowLevelResult(None, 0, 0, files_read)
    head = target.head
    try:
        intent = Intent(
            kind=kind,
            starting_snapshot_id=head.snapshot_id if head else None,
            added_files=tuple(added),
            removed_files=tuple(removed),
            read_files=tuple(f.file_path for f in read),
            read_filter=expression,
            isolation=isolation_level(target.metadata, isolation_key),
            # rows copied to new files carry their lineage (read_files / stage_write)
            keeps_row_lineage=True,
        )
    except BaseException:
        delete_quietly(target.io, [f.file_path for f in added])
        raise
    result = target.table.commit_intent(intent)
    return RowLevelResult(result.snapshot_id, len(removed), len(added), files_read)

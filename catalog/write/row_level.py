"""Row-level UPDATE and MERGE (and upsert) over Arrow, copy-on-write or merge-on-read.

Both plan against the snapshot the operation starts from: the files that may hold the rows
they touch are read, one at a time, and the touched rows are changed. Copy-on-write rewrites
every file with a change whole (unchanged rows included) and removes it; merge-on-read
(:mod:`lakecat.catalog.write.merge_on_read`) keeps it, deletes the touched rows by position and
writes their new versions to new files. The rows to write are written out as they go past
:data:`~lakecat.catalog.write.row_ops.KEPT_ROWS_FLUSH_BYTES`, so memory does not grow with the
number of files. Files that were read and kept count as *read* for the
conflict checks. MERGE's read filter covers the source's keys, so the insert
side counts as a read: two concurrent upserts of the same new key cannot both commit.

Delete files (merge-on-read deletes another engine wrote): a file is read with its deletes
applied, so rows deleted before are neither updated, matched nor written back; the commit
removes the delete files that applied only to the rewritten files.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from lakecat.catalog.read.planning import ScanPlan
from lakecat.catalog.read.scan import Scan
from lakecat.catalog.write.merge_on_read import FileDeletes
from lakecat.catalog.write.row_ops import HeldRows, KeptRowsWriter, not_true, rewrite_columns
from lakecat.metadata.deletes.apply import row_positions
from lakecat.metadata.errors import SchemaMismatch, UnknownColumn, ValidationError
from lakecat.metadata.expressions.evaluators import to_arrow_filter
from lakecat.metadata.expressions.expressions import (
    AlwaysTrue,
    And,
    Expression,
    GreaterThanOrEqual,
    In,
    LessThanOrEqual,
    bind,
)
from lakecat.metadata.io.fileio import FileIO, deleted_on_error
from lakecat.metadata.manifests.cache import ManifestCache
from lakecat.metadata.manifests.datafile import DataFile
from lakecat.metadata.schema.arrow import conform_to_schema, schema_to_arrow
from lakecat.metadata.schema.lineage import mark_modified
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.table.snapshots import Snapshot
from lakecat.metadata.table.table_metadata import TableMetadata

# A value for SET: a constant, a pyarrow compute expression over the row's columns, or a
# function of the file's rows (a pyarrow Table) returning an array.
SetValue: TypeAlias = Any

# Above this many distinct keys, MERGE reads with a key range instead of an IN list.
_MAX_IN_KEYS = 10_000
_SOURCE_PREFIX = "__src_"
_POSITION = "__lakecat_row_pos"  # merge-on-read: a row's position in its data file


@dataclass
class RowLevelPlan:
    """Files to remove, rows to write in their place, files read and left alone."""

    removed: list[DataFile] = field(default_factory=list)
    # the rows to write in place of removed files (merge-on-read: the changed rows' new
    # versions), not yet written
    rewritten_rows: list[pa.Table] = field(default_factory=list)
    # data files of rewritten rows already written (``write_rewritten``); the caller commits
    # them or, on a failure, deletes them
    rewritten_files: list[DataFile] = field(default_factory=list)
    inserted_rows: list[pa.Table] = field(default_factory=list)
    read_files: list[str] = field(default_factory=list)
    read_filter: Expression = field(default_factory=AlwaysTrue)
    # merge-on-read: the changed rows' positions in files that stay
    position_deletes: list[FileDeletes] = field(default_factory=list)
    rows_updated: int = 0
    rows_deleted: int = 0
    rows_inserted: int = 0

    @property
    def changes_anything(self) -> bool:
        return (
            bool(self.removed)
            or bool(self.position_deletes)
            or any(t.num_rows for t in self.inserted_rows)
        )


# ---- UPDATE -------------------------------------------------------------------------------
def plan_update(
    io: FileIO,
    metadata: TableMetadata,
    snapshot: Snapshot | None,
    *,
    set_values: Mapping[str, SetValue],
    where: Expression,
    cache: ManifestCache | None = None,
    merge_on_read: bool = False,
    write_rewritten: KeptRowsWriter | None = None,
) -> RowLevelPlan:
    """The files an update of the rows matching ``where`` rewrites (copy-on-write) or deletes
    rows of by position (merge-on-read), and the rows it writes. ``write_rewritten``: as
    :func:`~lakecat.catalog.write.row_ops.plan_delete`'s ``write_kept``, for the rows it
    writes (copy-on-write, the rows of the rewritten files; merge-on-read, the new versions
    of the changed rows), into ``rewritten_files``."""
    schema = metadata.schema()
    if not set_values:
        raise ValidationError("update needs at least one column to set")
    for name in set_values:
        field = schema.find_field(name)
        if schema.parent_id(field.field_id) is not None:
            top = schema.column_path(field.field_id)[0]
            raise ValidationError(
                f"update sets whole top-level columns; {name!r} is a field nested in {top!r}"
            )
    plan = RowLevelPlan(read_filter=where)
    if snapshot is None:
        return plan
    bound = bind(schema, where)
    arrow_filter = to_arrow_filter(bound)
    scan = _rewrite_scan(io, metadata, snapshot, where, cache)
    rows_schema = scan.projected  # v3: with the row lineage the rewritten rows keep
    scanned = scan.plan()
    with deleted_on_error(io) as written:
        rewritten = HeldRows(write_rewritten, written, combine=merge_on_read)
        for f in scanned.files:
            position = _POSITION if merge_on_read else None
            rows = scan.live_rows(f, scanned, position_column=position)
            mask = _evaluate(rows, pc.coalesce(arrow_filter, pc.scalar(False)))
            hits = pc.sum(mask).as_py() or 0
            if not hits or merge_on_read:
                plan.read_files.append(f.file_path)
            if not hits:
                del rows, mask
                continue
            plan.rows_updated += hits
            if merge_on_read:
                positions = rows.column(_POSITION).filter(mask).combine_chunks()
                applied = scanned.deletes.get(f.file_path, ())
                plan.position_deletes.append(FileDeletes(f, positions, applied))
                rows = rows.drop_columns([_POSITION])
                updated = _apply_set(rows, mask, set_values, rows_schema)
                rewritten.add(mark_modified(updated, mask).filter(mask))
            else:
                plan.removed.append(f)
                updated = _apply_set(rows, mask, set_values, rows_schema)
                rewritten.add(mark_modified(updated, mask))
            del rows, mask, updated  # one file's rows at a time
    plan.rewritten_rows, plan.rewritten_files = rewritten.rows, rewritten.files
    return plan


def _rewrite_scan(
    io: FileIO,
    metadata: TableMetadata,
    snapshot: Snapshot,
    row_filter: Expression,
    cache: ManifestCache | None,
) -> Scan:
    """The scan a row-level change reads the rows it may change with (on a v3 table with
    their row lineage: :func:`~lakecat.catalog.write.row_ops.rewrite_columns`)."""
    return Scan(
        io,
        metadata,
        snapshot,
        metadata.schema(),
        row_filter=row_filter,
        columns=rewrite_columns(metadata),
        manifest_cache=cache,
    )


def _apply_set(
    rows: pa.Table, mask: pa.Array, set_values: Mapping[str, SetValue], schema: Schema
) -> pa.Table:
    target = schema_to_arrow(schema)
    columns = {}
    for name, value in set_values.items():
        old = rows.column(name)
        new = _value_array(rows, value, old.type, name)
        columns[name] = pc.if_else(mask, new, old)
    out = rows
    for name, array in columns.items():
        out = out.set_column(out.schema.get_field_index(name), target.field(name), array)
    return conform_to_schema(out, schema)


def _value_array(rows: pa.Table, value: SetValue, arrow_type: pa.DataType, name: str) -> pa.Array:
    try:
        if isinstance(value, pc.Expression):
            result = _evaluate(rows, value)
        elif callable(value):
            result = value(rows)
        else:
            return pa.array([value] * rows.num_rows, type=arrow_type)
        return pc.cast(result, arrow_type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
        raise SchemaMismatch(f"cannot set column {name!r}: {exc}") from exc


def _evaluate(rows: pa.Table, expr: pc.Expression) -> pa.Array:
    """Evaluate a compute expression over a table into one array."""
    projected = ds.dataset(rows).to_table(columns={"__value": expr})
    return projected.column("__value").combine_chunks()


# ---- MERGE --------------------------------------------------------------------------------
@dataclass(frozen=True)
class MergeClauses:
    """What MERGE does with matched target rows and unmatched source rows.

    ``matched_update``: ``True`` sets every non-key column the source has; a mapping sets
    target column -> source column name (or a compute expression over the joined row, where
    source columns are prefixed ``__src_``). ``matched_delete``: delete matched rows (takes
    precedence for rows matching ``matched_delete_if``, or all matched rows when that is
    ``None``). ``not_matched_insert``: insert source rows whose keys are not in the table.
    """

    matched_update: bool | Mapping[str, str | pc.Expression] = False
    matched_delete: bool = False
    matched_delete_if: Expression | None = None
    not_matched_insert: bool = False


def plan_merge(
    io: FileIO,
    metadata: TableMetadata,
    snapshot: Snapshot | None,
    *,
    source: pa.Table,
    on: Sequence[str],
    clauses: MergeClauses,
    target_filter: Expression | None = None,
    cache: ManifestCache | None = None,
    merge_on_read: bool = False,
    write_rewritten: KeptRowsWriter | None = None,
) -> RowLevelPlan:
    """The files a MERGE of ``source`` on the keys ``on`` rewrites (copy-on-write) or deletes
    rows of by position (merge-on-read), the rows it writes and the rows it inserts.
    ``write_rewritten``: as in :func:`plan_update`."""
    schema = metadata.schema()
    if not on:
        raise ValidationError("merge needs at least one key column in 'on'")
    for key in on:
        schema.find_field(key)
        if key not in source.column_names:
            raise UnknownColumn(f"merge key {key!r} is not a column of the source")
    unknown = [c for c in source.column_names if not schema.has_field(c)]
    if unknown:
        raise SchemaMismatch(f"source columns not in the table: {', '.join(unknown)}")
    source = source.combine_chunks()
    _check_unique_keys(source, on)
    read_filter = _key_filter(source, on)
    if target_filter is not None:
        read_filter = And(target_filter, read_filter)
    plan = RowLevelPlan(read_filter=read_filter)
    matched_keys: list[pa.Table] = []
    inside = to_arrow_filter(bind(schema, target_filter)) if target_filter is not None else None
    if snapshot is not None and source.num_rows:
        scan = _rewrite_scan(io, metadata, snapshot, read_filter, cache)
        rows_schema = scan.projected  # v3: with the row lineage the rewritten rows keep
        scanned = scan.plan()
        with deleted_on_error(io) as written:
            rewritten = HeldRows(write_rewritten, written, combine=merge_on_read)
            for f in scanned.files:
                position = _POSITION if merge_on_read else None
                rows = scan.live_rows(f, scanned, position_column=position)
                if inside is not None:
                    outside, rows_in = rows.filter(not_true(inside)), rows.filter(inside)
                else:
                    outside, rows_in = rows.schema.empty_table(), rows
                del rows
                merged = _merge_file(rows_in, source, on, clauses, schema)
                del rows_in
                if merged.keys.num_rows:
                    matched_keys.append(merged.keys)
                changed = merged.updated or merged.deleted
                if not changed or merge_on_read:
                    plan.read_files.append(f.file_path)
                if not changed:
                    del outside, merged
                    continue
                plan.rows_updated += merged.updated
                plan.rows_deleted += merged.deleted
                if merge_on_read:
                    _add_new_versions(plan, rewritten, f, scanned, merged, rows_schema)
                else:
                    plan.removed.append(f)
                    rewritten.add(_rewritten_file(outside, merged, rows_schema))
                del outside, merged  # one file's rows at a time
        plan.rewritten_rows, plan.rewritten_files = rewritten.rows, rewritten.files
    if clauses.not_matched_insert:
        inserts = _unmatched(source, on, matched_keys)
        if inserts.num_rows:
            plan.inserted_rows.append(conform_to_schema(inserts, schema))
            plan.rows_inserted = inserts.num_rows
    return plan


def _rewritten_file(outside: pa.Table, merged: _MergedFile, rows_schema: Schema) -> pa.Table:
    """Copy-on-write: a file's rows after MERGE, those outside its target filter included."""
    changed_rows = mark_modified(merged.rows, merged.update_mask)
    kept = changed_rows.filter(pc.invert(merged.delete_mask))
    return conform_to_schema(pa.concat_tables([outside, kept]), rows_schema)


def _add_new_versions(
    plan: RowLevelPlan,
    rewritten: HeldRows,
    f: DataFile,
    scanned: ScanPlan,
    merged: _MergedFile,
    rows_schema: Schema,
) -> None:
    """Merge-on-read: delete the rows MERGE touched in ``f`` by position, and add the new
    versions of those it updated."""
    touched = pc.or_(merged.update_mask, merged.delete_mask)
    positions = merged.rows.column(_POSITION).filter(touched).combine_chunks()
    applied = scanned.deletes.get(f.file_path, ())
    plan.position_deletes.append(FileDeletes(f, positions, applied))
    changed_rows = mark_modified(merged.rows, merged.update_mask)
    new_versions = changed_rows.filter(merged.update_mask).drop_columns([_POSITION])
    if new_versions.num_rows:
        rewritten.add(conform_to_schema(new_versions, rows_schema))


@dataclass(frozen=True)
class _MergedFile:
    """One file's rows after MERGE: every row in file order with its updates applied (schema
    of the rows read), which rows were updated and which deleted, and the matched keys."""

    rows: pa.Table
    update_mask: pa.BooleanArray
    delete_mask: pa.BooleanArray
    keys: pa.Table

    @property
    def updated(self) -> int:
        return pc.sum(self.update_mask).as_py() or 0

    @property
    def deleted(self) -> int:
        return pc.sum(self.delete_mask).as_py() or 0


def _merge_file(
    rows: pa.Table, source: pa.Table, on: Sequence[str], clauses: MergeClauses, schema: Schema
) -> _MergedFile:
    """MERGE's effect on one file's rows."""
    # Arrow joins the keys only (it cannot carry nested columns through a join); each target
    # row then takes its source row by index (source keys are unique: one match at most)
    indexed = rows.select(list(on)).append_column("__row", row_positions(0, rows.num_rows))
    source_keys = source.select(list(on)).append_column(
        "__source", row_positions(0, source.num_rows)
    )
    pairs = indexed.join(source_keys, keys=list(on), join_type="left outer", use_threads=False)
    picked = pairs.sort_by("__row").column("__source")
    joined = rows
    for c in source.column_names:
        if c not in on:
            joined = joined.append_column(_SOURCE_PREFIX + c, source.column(c).take(picked))
    matched = pc.is_valid(picked).combine_chunks()
    keys = joined.filter(matched).select(list(on))
    n_matched = pc.sum(matched).as_py() or 0
    nothing = pa.array([False] * joined.num_rows)
    if not n_matched or not (clauses.matched_update or clauses.matched_delete):
        return _MergedFile(rows, nothing, nothing, keys)
    delete_mask = nothing
    if clauses.matched_delete:
        delete_mask = matched
        if clauses.matched_delete_if is not None:
            cond = to_arrow_filter(bind(schema, clauses.matched_delete_if))
            delete_mask = pc.and_(matched, pc.fill_null(_evaluate(joined, cond), False))
    update_mask = pc.and_(matched, pc.invert(delete_mask))
    out = joined
    if clauses.matched_update:
        mapping = _update_mapping(clauses.matched_update, source, on)
        for target_col, src in mapping.items():
            if isinstance(src, pc.Expression):
                new = _evaluate(joined, src)
            else:
                new = joined.column(_SOURCE_PREFIX + src)
            old = out.column(target_col)
            value = pc.if_else(update_mask, pc.cast(new, old.type), old)
            out = out.set_column(out.schema.get_field_index(target_col), target_col, value)
    else:
        update_mask = nothing
    # the join drops field metadata and nullability: put the file's schema back
    merged = pa.Table.from_arrays(out.select(rows.column_names).columns, schema=rows.schema)
    return _MergedFile(merged, _plain(update_mask), _plain(delete_mask), keys)


def _plain(mask: pa.Array | pa.ChunkedArray) -> pa.BooleanArray:
    """A mask as one array with no nulls."""
    if isinstance(mask, pa.ChunkedArray):
        mask = mask.combine_chunks()
    return pc.fill_null(mask, False)


def _update_mapping(
    update: bool | Mapping[str, str | pc.Expression], source: pa.Table, on: Sequence[str]
) -> Mapping[str, str | pc.Expression]:
    if update is True:
        return {c: c for c in source.column_names if c not in on}
    if isinstance(update, Mapping):
        for col, src in update.items():
            if isinstance(src, str) and src not in source.column_names:
                raise UnknownColumn(f"merge update of {col!r}: no source column {src!r}")
        return update
    return {}


def _unmatched(source: pa.Table, on: Sequence[str], matched_keys: list[pa.Table]) -> pa.Table:
    if not matched_keys:
        return source
    keys = pa.concat_tables(matched_keys).group_by(list(on)).aggregate([])
    numbered = source.select(list(on)).append_column("__source", row_positions(0, source.num_rows))
    left = numbered.join(keys, keys=list(on), join_type="left anti", use_threads=False)
    return source.take(left.sort_by("__source").column("__source"))  # in the source's order


def _check_unique_keys(source: pa.Table, on: Sequence[str]) -> None:
    counts = source.group_by(list(on)).aggregate([([], "count_all")])
    dupes = counts.filter(pc.greater(counts.column("count_all"), 1))
    if dupes.num_rows:
        example = {k: dupes.column(k)[0].as_py() for k in on}
        raise ValidationError(
            f"merge source has {dupes.num_rows} key(s) on more than one row, e.g. {example}; "
            "each target row may match at most one source row"
        )


def _key_filter(source: pa.Table, on: Sequence[str]) -> Expression:
    """What MERGE reads: the source's key values (a range when there are very many)."""
    expr: Expression = AlwaysTrue()
    for key in on:
        column = source.column(key)
        values = pc.unique(column.drop_null()).to_pylist()
        if not values:
            part: Expression = In(key, frozenset())
        elif len(values) <= _MAX_IN_KEYS:
            part = In(key, frozenset(values))
        else:
            bounds = pc.min_max(column)
            part = And(
                GreaterThanOrEqual(key, bounds["min"].as_py()),
                LessThanOrEqual(key, bounds["max"].as_py()),
            )
        expr = part if isinstance(expr, AlwaysTrue) else And(expr, part)
    return expr

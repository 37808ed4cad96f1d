"""Planning for operations that remove rows (delete, overwrite by filter).

For a filter, every data file that may hold matching rows is classified against the snapshot
the operation starts from:

* all rows match (strict partition projection or strict column bounds): the file is removed
  without being read (a metadata-only delete);
* some rows match: the file is read, the rows that do not match are kept in a new file, and the
  old file is removed. The kept rows are written out whenever those held reach
  :data:`KEPT_ROWS_FLUSH_BYTES` (when the caller passes a writer), so a rewrite of many large
  files holds about one file and that much of kept rows at a time, not every kept row;
* no row matches after reading: the file stays; it counts as read for conflict checks.

Rows for which the filter is unknown (NULL) are kept, as SQL's ``DELETE ... WHERE`` does.

Merge-on-read (:mod:`lakecat.catalog.write.merge_on_read`) classifies the same way, but a
partly matching file is read only for the filter's columns and stays: the positions of its
matching rows go to a position delete file.

Format v3: the rows a rewrite keeps are read with their row lineage (:func:`rewrite_columns`)
and written back with it, so they keep their ``_row_id`` and ``_last_updated_sequence_number``.

Delete files (merge-on-read deletes another engine wrote): a file is read with its deletes
applied, so the rewrite keeps only live rows, and the commit removes the delete files that
applied only to the removed files (:func:`~lakecat.metadata.manifests.delete_index
.dangling_deletes`). A concurrent commit that adds deletes to a removed file is a conflict.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from lakecat.catalog.read.scan import Scan, ScanPlan
from lakecat.catalog.write.merge_on_read import FileDeletes
from lakecat.metadata.expressions.evaluators import (
    PartitionEvaluator,
    StrictMetricsEvaluator,
    to_arrow_filter,
)
from lakecat.metadata.expressions.expressions import AlwaysTrue, BoundExpression, Expression, bind
from lakecat.metadata.io.fileio import FileIO, deleted_on_error
from lakecat.metadata.manifests.cache import ManifestCache
from lakecat.metadata.manifests.datafile import DataFile
from lakecat.metadata.schema.lineage import with_lineage
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.table.snapshots import Snapshot
from lakecat.metadata.table.table_metadata import TableMetadata

# The Arrow bytes of rows a row-level change holds before it writes them out (plan_delete's
# ``write_kept``, plan_update's and plan_merge's ``write_rewritten``): a bound on the memory of
# a delete, overwrite, update or merge of many files.
KEPT_ROWS_FLUSH_BYTES = 256 * 1024 * 1024

KeptRowsWriter = Callable[[list[pa.Table]], list[DataFile]]


class HeldRows:
    """The rows a row-level change writes (copy-on-write: the rows it keeps of the files it
    rewrites; merge-on-read: the new versions of the rows it changes), held until they reach
    :data:`KEPT_ROWS_FLUSH_BYTES` and then written out by ``write`` (when given): ``rows`` are
    those not yet written, ``files`` the data files of those written, whose locations also go
    to ``written`` (a :func:`~lakecat.metadata.io.fileio.deleted_on_error` list).

    ``combine`` (merge-on-read): the rows added, which come from many files, are written and
    returned as one table, so that they go to as few files as the partitioning and the target
    file size allow, not a file for each file read."""

    def __init__(
        self, write: KeptRowsWriter | None, written: list[str], *, combine: bool = False
    ) -> None:
        self._write = write
        self._written = written
        self._combine = combine
        self._held = 0
        self._rows: list[pa.Table] = []
        self.files: list[DataFile] = []

    @property
    def rows(self) -> list[pa.Table]:
        if self._combine and len(self._rows) > 1:
            self._rows = [pa.concat_tables(self._rows)]
        return self._rows

    def add(self, rows: pa.Table) -> None:
        self._rows.append(rows)
        self._held += rows.nbytes
        if self._write is not None and self._held >= KEPT_ROWS_FLUSH_BYTES:
            files = self._write(self.rows)
            self._written.extend(f.file_path for f in files)
            self.files.extend(files)
            self._rows, self._held = [], 0


@dataclass
class RewritePlan:
    removed: list[DataFile] = field(default_factory=list)
    # the rows kept from partly matching files, not yet written (below the flush bound)
    kept_rows: list[pa.Table] = field(default_factory=list)
    # data files of kept rows already written (by ``write_kept``); the caller commits them or,
    # on a failure, deletes them
    kept_files: list[DataFile] = field(default_factory=list)
    read_files: list[str] = field(default_factory=list)
    # merge-on-read: the rows to delete from files that stay
    position_deletes: list[FileDeletes] = field(default_factory=list)
    deleted_rows: int = 0

    @property
    def changes_anything(self) -> bool:
        return bool(self.removed) or bool(self.position_deletes)


def plan_delete(
    io: FileIO,
    metadata: TableMetadata,
    snapshot: Snapshot | None,
    expression: Expression,
    *,
    case_sensitive: bool = True,
    cache: ManifestCache | None = None,
    merge_on_read: bool = False,
    write_kept: KeptRowsWriter | None = None,
) -> RewritePlan:
    """Which files a delete of ``expression`` removes, and which rows it must rewrite (the
    live rows of a partly matching file: its delete files applied); with ``merge_on_read``,
    which rows of a partly matching file it deletes by position instead (the file stays and
    counts as read).

    ``write_kept`` writes kept rows as data files: called whenever the kept rows held reach
    :data:`KEPT_ROWS_FLUSH_BYTES` (their files go to ``kept_files``; the rest stays in
    ``kept_rows`` for the caller to write with its own rows). If planning fails, the files it
    wrote are deleted."""
    plan = RewritePlan()
    if snapshot is None:
        return plan
    whole, partial, bound, scan, scanned = _split(
        io, metadata, snapshot, expression, case_sensitive, cache
    )
    plan.removed.extend(whole)
    plan.deleted_rows = sum(f.record_count for f in whole)
    if not partial:
        return plan
    if merge_on_read:
        for f in partial:
            positions = scan.matching_positions(f, scanned, bound)
            plan.read_files.append(f.file_path)
            if len(positions):
                applied = scanned.deletes.get(f.file_path, ())
                plan.position_deletes.append(FileDeletes(f, positions, applied))
                plan.deleted_rows += len(positions)
        return plan
    arrow_filter = to_arrow_filter(bound)
    with deleted_on_error(io) as written:
        kept = HeldRows(write_kept, written)
        for f in partial:
            rows = scan.live_rows(f, scanned)
            keep = rows.filter(not_true(arrow_filter))
            deleted = rows.num_rows - keep.num_rows
            del rows  # one file's rows at a time
            if deleted == 0:
                plan.read_files.append(f.file_path)
                continue
            plan.removed.append(f)
            plan.deleted_rows += deleted
            if keep.num_rows:
                kept.add(keep)
    plan.kept_rows, plan.kept_files = kept.rows, kept.files
    return plan


def partly_matching_files(
    io: FileIO,
    metadata: TableMetadata,
    snapshot: Snapshot | None,
    expression: Expression,
    *,
    case_sensitive: bool = True,
    cache: ManifestCache | None = None,
) -> list[DataFile]:
    """The data files a delete of ``expression`` would have to read, planned from manifests
    alone: those that may hold matching rows and not only such rows (:func:`plan_delete`
    drops the others whole without reading them)."""
    if snapshot is None:
        return []
    _, partial, *_ = _split(io, metadata, snapshot, expression, case_sensitive, cache)
    return partial


def _split(
    io: FileIO,
    metadata: TableMetadata,
    snapshot: Snapshot,
    expression: Expression,
    case_sensitive: bool,
    cache: ManifestCache | None,
) -> tuple[list[DataFile], list[DataFile], BoundExpression, Scan, ScanPlan]:
    """(files whose every row matches, files that may hold some matching rows, the bound
    filter, the scan and its plan), by partition values and column bounds, without reading a
    data file."""
    schema = metadata.schema()
    bound = bind(schema, expression, case_sensitive=case_sensitive)
    scan = Scan(
        io,
        metadata,
        snapshot,
        schema,
        row_filter=expression,
        columns=rewrite_columns(metadata),
        case_sensitive=case_sensitive,
        manifest_cache=cache,
    )
    plan = scan.plan()
    candidates = list(plan.files)
    if isinstance(expression, AlwaysTrue):
        return candidates, [], bound, scan, plan
    strict_metrics = StrictMetricsEvaluator(schema, bound)
    strict_partitions = {
        s.spec_id: PartitionEvaluator(s, schema, bound, strict=True)
        for s in metadata.partition_specs
    }
    whole: list[DataFile] = []
    partial: list[DataFile] = []
    for f in candidates:
        if strict_partitions[f.spec_id].eval(f.partition) or strict_metrics.eval(f):
            whole.append(f)
        else:
            partial.append(f)
    return whole, partial, bound, scan, plan


def rewrite_columns(metadata: TableMetadata) -> list[str] | None:
    """The columns a rewrite reads rows with: on a v3 table every column and the row lineage
    columns, which the rows keep when written back; ``None`` (every column) before v3."""
    if metadata.format_version < 3:
        return None
    return [f.name for f in with_lineage(metadata.schema()).fields]


def matching_rows(rows: pa.Table, bound: BoundExpression) -> pa.Table:
    return rows.filter(to_arrow_filter(bound))


def not_true(expr: pc.Expression) -> pc.Expression:
    """Rows where ``expr`` is false or null."""
    return pc.invert(pc.coalesce(expr, pc.scalar(False)))


def bound_filter(
    schema: Schema, expression: Expression, *, case_sensitive: bool = True
) -> BoundExpression:
    return bind(schema, expression, case_sensitive=case_sensitive)

"""``rewrite_position_delete_files``: merge the position delete files of each data file.

Every merge-on-read change writes one position delete file per data file it deletes rows from,
so a data file changed ten times has ten small delete files, each opened by every read. This
job finds, in the current snapshot, the data files that at least ``min_input_files`` Parquet
position delete files naming only that file apply to, writes for each one file holding the
union of their positions, and commits one ``replace`` snapshot that adds the new files and
removes the old ones (Iceberg's ``rewrite_position_delete_files`` for file-scoped deletes).
No row changes: a read applies the same positions before and after.

Left alone: deletion vectors (one per data file already), equality deletes, and position delete
files naming several data files (other engines' partition-scoped deletes). On a format v3 table
(one upgraded from v2 keeps its position delete files) the merged positions go to a deletion
vector instead, which also holds the data file's existing DV and replaces it. Concurrency: the
merged data files count as read, so a concurrent commit that removes one (a copy-on-write
change, a compaction) fails this job with a typed conflict; so does one that removes an old
delete file (another rewrite, or a compaction that dropped it with its data file). Nothing is
lost either way: run it again. Delete files that apply to no data file any more are not this
job's: expiry removes them with the snapshots that used them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from lakecat.catalog.commit.intent import Intent, OpKind
from lakecat.catalog.maintenance.replan import plan_with_replans
from lakecat.catalog.write.merge_on_read import (
    FileDeletes,
    replaced_deletes,
    write_position_deletes,
)
from lakecat.metadata.deletes import PositionIndex
from lakecat.metadata.errors import ValidationError
from lakecat.metadata.io.position_deletes import deleted_positions
from lakecat.metadata.manifests.datafile import Content, DataFile
from lakecat.metadata.manifests.delete_index import named_data_file
from lakecat.metadata.table.table_metadata import TableMetadata

if TYPE_CHECKING:
    from lakecat.catalog.table import Table


@dataclass(frozen=True)
class DeleteRewriteResult:
    """What a ``rewrite_position_delete_files`` run did (``snapshot_id`` None: nothing)."""

    data_files: int  # data files whose delete files were merged
    delete_files_removed: int
    delete_files_added: int
    snapshot_id: int | None


@dataclass(frozen=True)
class _Plan:
    start: TableMetadata
    snapshot_id: int | None
    # per data file: its own position delete files, and every delete that applies to it
    groups: tuple[tuple[DataFile, tuple[DataFile, ...], tuple[DataFile, ...]], ...]


def rewrite_position_delete_files(table: Table, *, min_input_files: int = 2) -> DeleteRewriteResult:
    """Merge, per data file, the position delete files that name only it, when there are at
    least ``min_input_files`` of them (see the module docstring). The table object is
    refreshed first and holds the latest committed metadata afterwards."""
    if min_input_files < 2:
        raise ValidationError(f"min_input_files must be at least 2, got {min_input_files}")
    table.refresh()

    def plan() -> _Plan:
        start = table.metadata
        head = start.current_snapshot
        if head is None:
            return _Plan(start, None, ())
        planned = table.scan().plan()  # the current snapshot of ``start``
        groups = []
        for f in planned.files:
            own = tuple(
                d
                for d in planned.deletes.get(f.file_path, ())
                if d.content is Content.POSITION_DELETES
                and d.file_format.upper() == "PARQUET"
                and named_data_file(d) == f.file_path
            )
            if len(own) >= min_input_files:
                groups.append((f, own, planned.deletes.get(f.file_path, ())))
        return _Plan(start, head.snapshot_id, tuple(groups))

    planned = plan_with_replans(table, plan, job="rewrite_position_delete_files")
    if not planned.groups:
        return DeleteRewriteResult(0, 0, 0, None)
    targets = [
        FileDeletes(f, _union([deleted_positions(table.io, d, f.file_path) for d in old]), applied)
        for f, old, applied in planned.groups
    ]
    new = write_position_deletes(table.io, planned.start, targets)
    removed: tuple[DataFile, ...] = (
        # v3: one deletion vector per data file, holding its DV's positions too
        tuple(replaced_deletes(planned.start, targets))
        if planned.start.format_version >= 3
        else tuple(d for _, old, _ in planned.groups for d in old)
    )
    intent = Intent(
        kind=OpKind.REPLACE,
        starting_snapshot_id=planned.snapshot_id,
        added_files=tuple(new),
        removed_files=removed,
        read_files=tuple(f.file_path for f, _, _ in planned.groups),
    )
    result = table.commit_intent(intent)  # on a conflict it deletes the new files
    return DeleteRewriteResult(len(planned.groups), len(removed), len(new), result.snapshot_id)


def _union(indexes: list[PositionIndex]) -> pa.Int64Array:
    first, *rest = indexes
    merged = first.union(*rest) if rest else first
    positions: pa.Int64Array = merged.positions
    return positions

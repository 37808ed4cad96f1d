"""Removing dangling delete files: live delete files that apply to no live data file.

lakecat's own commits remove the delete files they leave dangling (a rewrite removes those
that applied only to the files it rewrote). Other engines do not always: Iceberg Java's
compaction of a partition keeps its partition-scoped position delete files (while older data
files remain elsewhere in the table), and pyiceberg's delete of whole files keeps the delete
files that name them. Such files cost every scan planning a read; Iceberg's
``remove-dangling-deletes`` (an option of ``rewrite_data_files``) removes them, and so does
:func:`remove_dangling_deletes`.

Which delete files dangle: those that apply to no live data file of the current snapshot, by
the spec's rules (:func:`~lakecat.metadata.manifests.delete_index.unused_deletes`): a deletion
vector or a position delete file that names a data file no longer there (or, on v3, one a
deletion vector of its data file supersedes); a partition-scoped position delete file whose
partition holds no data file at or below its sequence number; an equality delete file whose
scope holds no older data file. Removing them changes no row.

The removal is one ``replace`` commit that adds nothing (Iceberg's ``RewriteFiles``). It stays
valid on a newer base: a delete that applies to nothing cannot start applying, since a data
file it could apply to is older than it, and a commit cannot bring one back without removing
files this one keeps. A concurrent commit that removed one of the same delete files fails it
with :class:`~lakecat.metadata.errors.ConcurrentDeleteDelete`; the table is unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from lakecat.catalog.commit.intent import Intent, OpKind
from lakecat.catalog.maintenance.replan import plan_with_replans
from lakecat.metadata.manifests.datafile import DataFile
from lakecat.metadata.manifests.delete_index import unused_deletes
from lakecat.metadata.table.table_metadata import TableMetadata

if TYPE_CHECKING:
    from lakecat.catalog.table import Table


@dataclass(frozen=True)
class DanglingDeletesResult:
    """The delete files removed (or, with ``dry_run``, that would be) and the ``replace``
    snapshot that removed them (``None``: nothing to remove, or a dry run)."""

    removed: tuple[DataFile, ...]
    snapshot_id: int | None


class _Plan(NamedTuple):
    start: TableMetadata
    dangling: tuple[DataFile, ...]


def remove_dangling_deletes(table: Table, *, dry_run: bool = False) -> DanglingDeletesResult:
    """Remove the current snapshot's delete files that apply to no live data file, in one
    ``replace`` commit (see the module docstring); with ``dry_run`` only find them. The table
    object is refreshed first and holds the latest committed metadata afterwards."""
    table.refresh()

    def plan() -> _Plan:
        start = table.metadata
        return _Plan(start, unused_deletes(table.io, start, start.current_snapshot))

    start, dangling = plan_with_replans(table, plan, job="remove_dangling_deletes")
    if not dangling or dry_run:
        return DanglingDeletesResult(dangling, None)
    head = start.current_snapshot
    assert head is not None  # delete files were found in it
    result = table.commit_intent(
        Intent(kind=OpKind.REPLACE, starting_snapshot_id=head.snapshot_id, removed_files=dangling)
    )
    return DanglingDeletesResult(dangling, result.snapshot_id)

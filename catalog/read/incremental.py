"""Incremental reads (``changes``) and the data version.

Two version notions (``docs/concurrency.md`` section 4): every commit gets a snapshot id
and a sequence number, compaction and manifest rewrites included; only commits that change
logical data, i.e. whose operation is not ``replace``, advance the *data version*.

``changes(table, from_snapshot_id=A, to_snapshot_id=B)`` returns the net row-level change from
snapshot A (exclusive) to B (inclusive) along B's ancestry:

* ``added``: rows in B that were not in A; ``removed``: rows in A that are not in B. Rows are
  compared as whole rows (every column of the current schema) and counted as a multiset, so a
  row deleted and inserted again, a file added and removed inside the range, and the unchanged
  rows that a copy-on-write delete or update rewrote into a new file all cancel out.
* ``replace`` snapshots (compaction, manifest rewrites) are skipped: they move rows between
  files without changing them, so rows that compaction merely rewrote never show up.
* Each returned row carries ``_change_snapshot_id``: the snapshot that added (or removed) it.
  When a row occurs several times, the newest occurrences are the ones kept.

It reads the data files that the data-changing snapshots of the range added and removed (the
files of a range whose snapshots still exist are never deleted by expiry). Without
``from_snapshot_id`` / ``since`` the range starts at the table's first snapshot, which must not
have been expired.

Delete files: ``changes`` does not apply delete files yet (merge-on-read deletes another engine
wrote). It refuses with :class:`~lakecat.metadata.errors.UnsupportedFeature`, before reading a
data file, when the range's starting snapshot or any snapshot of the range has delete files: the
rows a range added could have been deleted in it, and the rows of a file it removed could have
been deleted before it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from lakecat.catalog.read.deletes import refuse_deletes
from lakecat.metadata.errors import NoSuchSnapshot, ValidationError
from lakecat.metadata.io.fileio import FileIO
from lakecat.metadata.io.parquet import read_data_file
from lakecat.metadata.manifests.datafile import DataFile, ManifestContent, Status
from lakecat.metadata.manifests.manifest import read_manifest, read_manifest_list
from lakecat.metadata.schema.arrow import schema_to_arrow
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.table.snapshots import REPLACE, Snapshot
from lakecat.metadata.table.table_metadata import TableMetadata
from lakecat.metadata.table.timetravel import Timestamp, to_timestamp_ms

if TYPE_CHECKING:
    from lakecat.catalog.table import Table

CHANGE_SNAPSHOT_ID = "_change_snapshot_id"
_ORDER = "_change_order"  # position of the snapshot in the range; dropped before returning


@dataclass(frozen=True)
class ChangeSet:
    """Net row changes of a range of snapshots (module docstring).

    ``added`` and ``removed`` have the requested columns of the current schema plus
    ``_change_snapshot_id``; ``snapshot_ids`` are the data-changing snapshots of the range,
    oldest first.
    """

    added: pa.Table
    removed: pa.Table
    snapshot_ids: tuple[int, ...]


def changes_data(snapshot: Snapshot) -> bool:
    """Whether a snapshot changes logical data (everything but ``replace``)."""
    return bool(snapshot.operation != REPLACE)


def data_version(table: Table, snapshot_id: int | None = None) -> int:
    """The data version of a snapshot (default: the current one); 0 for an empty table.

    It is the number of data-changing snapshots (append, overwrite, delete; not replace) among
    the snapshot and its ancestors that are still in the metadata, so compaction and manifest
    rewrites do not advance it, and a rollback returns to the version it rolls back to. Expiring
    old ancestors lowers it: compare data versions read from the same metadata, and use snapshot
    ids to remember a position in the history.
    """
    metadata = table.metadata
    target = metadata.current_snapshot_id if snapshot_id is None else snapshot_id
    if target is None:
        return 0
    metadata.snapshot_by_id(target)  # NoSuchSnapshot for an unknown id
    return sum(1 for s in metadata.ancestors(target) if changes_data(s))


def changes(
    table: Table,
    *,
    from_snapshot_id: int | None = None,
    to_snapshot_id: int | None = None,
    since: Timestamp | None = None,
    columns: Sequence[str] | None = None,
) -> ChangeSet:
    """Rows added and removed after ``from_snapshot_id`` (or after the snapshot that was
    current at ``since``) up to ``to_snapshot_id`` (default: the current snapshot).

    Reads the table's metadata as it is (call ``table.refresh()`` first for the newest).
    """
    if from_snapshot_id is not None and since is not None:
        raise ValidationError("give either from_snapshot_id or since, not both")
    metadata = table.metadata
    schema = metadata.schema()
    projected = schema.select(list(columns)) if columns is not None else schema
    to_id = metadata.current_snapshot_id if to_snapshot_id is None else to_snapshot_id
    if to_id is None:
        if from_snapshot_id is not None:
            metadata.snapshot_by_id(from_snapshot_id)
        empty = _empty(projected)
        return ChangeSet(empty, empty, ())
    in_range = _range(metadata, to_id, from_snapshot_id, since)
    _refuse_deletes(table, in_range)
    data_changing = [s for s in in_range if changes_data(s)]
    added, removed = _net_files(table.io, metadata, data_changing)
    added_rows = _read(table.io, metadata, schema, added)
    removed_rows = _read(table.io, metadata, schema, removed)
    if added_rows.num_rows and removed_rows.num_rows:
        added_rows, removed_rows = _cancel(added_rows, removed_rows, schema)
    names = [f.name for f in projected.fields] + [CHANGE_SNAPSHOT_ID]
    return ChangeSet(
        added_rows.select(names),
        removed_rows.select(names),
        tuple(s.snapshot_id for s in data_changing),
    )


def snapshot_file_changes(
    io: FileIO, metadata: TableMetadata, snapshot: Snapshot
) -> tuple[list[DataFile], list[DataFile]]:
    """The data files ``snapshot`` itself added and removed (its ADDED / DELETED entries of
    data manifests; delete files are not data files)."""
    added: list[DataFile] = []
    removed: list[DataFile] = []
    specs = metadata.specs_by_id()
    for manifest in read_manifest_list(io, snapshot.manifest_list):
        if manifest.content is not ManifestContent.DATA:
            continue
        if manifest.added_snapshot_id != snapshot.snapshot_id:
            continue
        if not (manifest.has_added_files or manifest.has_deleted_files):
            continue
        for e in read_manifest(io, manifest, specs=specs, schema=metadata.schema()):
            if e.snapshot_id != snapshot.snapshot_id:
                continue
            if e.status is Status.ADDED:
                added.append(e.data_file)
            elif e.status is Status.DELETED:
                removed.append(e.data_file)
    return added, removed


# ---- the range ----------------------------------------------------------------------------
def _refuse_deletes(table: Table, in_range: list[Snapshot]) -> None:
    """:class:`UnsupportedFeature` if the range's start or one of its snapshots has delete
    files (reads their manifest lists only)."""
    if not in_range:
        return
    metadata = table.metadata
    parent_id = in_range[0].parent_snapshot_id
    start = metadata.snapshot_by_id(parent_id) if parent_id is not None else None
    for snapshot in (start, *in_range):
        refuse_deletes(table.io, snapshot, action="an incremental read (changes)", table=table.name)


def _range(
    metadata: TableMetadata, to_id: int, from_id: int | None, since: Timestamp | None
) -> list[Snapshot]:
    """The snapshots after the start up to ``to_id``, oldest first."""
    chain = metadata.ancestors(metadata.snapshot_by_id(to_id).snapshot_id)  # newest first
    if since is not None:
        ms = to_timestamp_ms(since)
        start = next((s for s in chain if s.timestamp_ms <= ms), None)
        from_id = start.snapshot_id if start is not None else None
    if from_id is not None:
        metadata.snapshot_by_id(from_id)  # NoSuchSnapshot for an unknown (or expired) id
        ids = [s.snapshot_id for s in chain]
        if from_id not in ids:
            raise ValidationError(
                f"snapshot {from_id} is not an ancestor of snapshot {to_id}: changes are read "
                "along one line of history"
            )
        chain = chain[: ids.index(from_id)]
    elif chain[-1].parent_snapshot_id is not None:
        raise NoSuchSnapshot(
            f"the history before snapshot {chain[-1].snapshot_id} has been expired: changes "
            "from the table's beginning are no longer known; give a later start"
        )
    return list(reversed(chain))


def _net_files(
    io: FileIO, metadata: TableMetadata, snapshots: list[Snapshot]
) -> tuple[list[tuple[DataFile, int, int]], list[tuple[DataFile, int, int]]]:
    """Files added / removed over the range as (file, snapshot id, order); a file added and
    removed inside the range (or removed and re-added) cancels out without being read."""
    added: dict[str, tuple[DataFile, int, int]] = {}
    removed: dict[str, tuple[DataFile, int, int]] = {}
    for order, snap in enumerate(snapshots):
        plus, minus = snapshot_file_changes(io, metadata, snap)
        for f in minus:
            if added.pop(f.file_path, None) is None:
                removed[f.file_path] = (f, snap.snapshot_id, order)
        for f in plus:
            if removed.pop(f.file_path, None) is None:
                added[f.file_path] = (f, snap.snapshot_id, order)
    return list(added.values()), list(removed.values())


# ---- rows ---------------------------------------------------------------------------------
def _empty(projected: Schema) -> pa.Table:
    return _with_columns(schema_to_arrow(projected).empty_table(), [], []).drop_columns([_ORDER])


def _with_columns(rows: pa.Table, snapshot_ids: list[int], orders: list[int]) -> pa.Table:
    return rows.append_column(
        pa.field(CHANGE_SNAPSHOT_ID, pa.int64(), nullable=False), pa.array(snapshot_ids, pa.int64())
    ).append_column(pa.field(_ORDER, pa.int64(), nullable=False), pa.array(orders, pa.int64()))


def _read(
    io: FileIO, metadata: TableMetadata, schema: Schema, files: list[tuple[DataFile, int, int]]
) -> pa.Table:
    specs = metadata.specs_by_id()
    parts = []
    for f, snapshot_id, order in files:
        rows = read_data_file(io, f, projected=schema, spec=specs.get(f.spec_id))
        parts.append(_with_columns(rows, [snapshot_id] * rows.num_rows, [order] * rows.num_rows))
    if not parts:
        return _with_columns(schema_to_arrow(schema).empty_table(), [], [])
    return pa.concat_tables(parts)


def _cancel(added: pa.Table, removed: pa.Table, schema: Schema) -> tuple[pa.Table, pa.Table]:
    """Multiset difference of whole rows: keep, per distinct row, only the net surplus of one
    side (its newest occurrences)."""
    names = [f.name for f in schema.fields]
    values = pa.concat_tables([added.select(names), removed.select(names)])
    n, n_added = values.num_rows, added.num_rows
    ids = _row_ids(values)
    sign = pa.array([1] * n_added + [-1] * removed.num_rows, pa.int64())
    order = pa.concat_arrays(
        [added.column(_ORDER).combine_chunks(), removed.column(_ORDER).combine_chunks()]
    )
    # ids are dense (0 .. distinct rows - 1): the sums sorted by id are indexable by id.
    sums = pa.table({"id": ids, "sign": sign}).group_by("id", use_threads=False)
    net_by_id = sums.aggregate([("sign", "sum")]).sort_by("id").column("sign_sum")
    row_net = pc.take(net_by_id.combine_chunks(), ids)
    # Rank each row among the rows equal to it on its side, newest first.
    by = pc.sort_indices(
        pa.table({"id": ids, "sign": sign, "order": order}),
        sort_keys=[("id", "ascending"), ("sign", "ascending"), ("order", "descending")],
    )
    s_id, s_sign, s_net = pc.take(ids, by), pc.take(sign, by), pc.take(row_net, by)
    position = pa.array(range(n), pa.int64())
    new_group = pc.or_(pc.not_equal(s_id[1:], s_id[:-1]), pc.not_equal(s_sign[1:], s_sign[:-1]))
    starts = pa.concat_arrays([pa.array([True]), new_group])
    rank = pc.subtract(position, pc.cumulative_max(pc.if_else(starts, position, 0)))
    keep_sorted = pc.and_(
        pc.equal(s_sign, pc.cast(pc.sign(s_net), pa.int64())), pc.less(rank, pc.abs(s_net))
    )
    keep = pc.take(keep_sorted, pc.sort_indices(by))  # back to the rows' own order
    return added.filter(keep.slice(0, n_added)), removed.filter(keep.slice(n_added))


def _row_ids(values: pa.Table) -> pa.Int64Array:
    """A dense number per row; equal rows (nulls equal to nulls) get the same number."""
    keys = [_groupable(values.column(i)) for i in range(values.num_columns)]
    if all(k is not None for k in keys):
        names = [f"k{i}" for i in range(len(keys))]
        rows = pa.array(range(values.num_rows), pa.int64())
        table = pa.table([*keys, rows], names=[*names, "row"])
        try:
            grouped = table.group_by(names, use_threads=False).aggregate([("row", "list")])
        except pa.ArrowNotImplementedError:
            pass  # a type without a hash kernel: compare in Python below
        else:
            lists = grouped.column("row_list").combine_chunks()
            group_of = pc.list_parent_indices(lists)  # group number per flattened row
            ids: pa.Int64Array = pc.take(group_of, pc.sort_indices(lists.flatten()))
            return ids.cast(pa.int64())
    seen: dict[Any, int] = {}
    numbers = [seen.setdefault(_freeze(row), len(seen)) for row in values.to_pylist()]
    return pa.array(numbers, pa.int64())


def _groupable(column: pa.ChunkedArray) -> pa.Array | None:
    array = column.combine_chunks()
    if isinstance(array.type, pa.BaseExtensionType):
        array = array.storage
    return None if pa.types.is_nested(array.type) else array


def _freeze(value: Any) -> Any:
    """A hashable stand-in for a row value (structs, lists and maps included)."""
    if isinstance(value, dict):
        return tuple((k, _freeze(v)) for k, v in value.items())
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, tuple):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, float) and value != value:
        return ("NaN",)  # NaN != NaN, but two NaN rows are the same row
    return value

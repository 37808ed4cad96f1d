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

Delete files (merge-on-read changes, from lakecat or another engine) count as what they are:
a snapshot that adds a position delete file, a deletion vector or an equality delete file
*removes* the rows it deletes, and those rows are returned in ``removed`` with that snapshot's
id. Each data-changing snapshot is compared with its parent, file by file: the live rows of the
data files it added (its own deletes applied), the rows live in its parent of the data files it
removed, and, for a data file both have whose delete files differ, the rows live in one and not
in the other (found by position). A snapshot and its parent are planned only when one of them
has delete files; without any, data files are read whole, as before. The range's net change is
the sum of these, so a row added and deleted inside the range, or deleted by a deletion vector
that a later one replaced with a union, is counted once or not at all, and a compaction (a
``replace`` snapshot, which applies deletes and keeps every live row) is skipped as always.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from lakecat.catalog.read.deletes import has_deletes
from lakecat.catalog.read.scan import Scan, ScanPlan
from lakecat.metadata.deletes import row_positions
from lakecat.metadata.errors import NoSuchSnapshot, ValidationError
from lakecat.metadata.io.fileio import FileIO
from lakecat.metadata.io.parquet import read_data_file
from lakecat.metadata.manifests.datafile import DataFile, ManifestContent, Status
from lakecat.metadata.manifests.manifest import read_manifest, read_manifest_list
from lakecat.metadata.schema.arrow import schema_to_arrow
from lakecat.metadata.schema.name_mapping import name_mapping_of
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.table.snapshots import REPLACE, Snapshot
from lakecat.metadata.table.table_metadata import TableMetadata
from lakecat.metadata.table.timetravel import Timestamp, to_timestamp_ms

if TYPE_CHECKING:
    from lakecat.catalog.table import Table

CHANGE_SNAPSHOT_ID = "_change_snapshot_id"
_ORDER = "_change_order"  # position of the snapshot in the range; dropped before returning
_POSITION = "_change_position"  # a row's position in its data file, while reading


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
    data_changing = [s for s in in_range if changes_data(s)]
    parts = _Contributions(table, metadata, schema).of(data_changing)
    added_rows = _read(table.io, metadata, schema, [p for p in parts if p.sign > 0])
    removed_rows = _read(table.io, metadata, schema, [p for p in parts if p.sign < 0])
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


@dataclass(frozen=True)
class _Part:
    """Rows of one data file that one snapshot of the range added (``sign`` 1) or removed
    (-1): the file's live rows under ``plan`` (``None``: every row, no deletes apply), or,
    with ``positions``, the rows at those positions."""

    file: DataFile
    sign: int
    snapshot_id: int
    order: int
    plan: ScanPlan | None = None
    positions: pa.Int64Array | None = None


class _Contributions:
    """What each data-changing snapshot changed, compared with its parent (module docstring)."""

    def __init__(self, table: Table, metadata: TableMetadata, schema: Schema) -> None:
        self.io = table.io
        self.metadata = metadata
        self.schema = schema
        self.cache = table.scan().manifests  # the table's manifest cache
        self._plans: dict[int, ScanPlan] = {}

    def of(self, snapshots: list[Snapshot]) -> list[_Part]:
        parts: list[_Part] = []
        for order, snap in enumerate(snapshots):
            parts.extend(self._snapshot(snap, order))
        return _drop_transient(parts)

    def _snapshot(self, snap: Snapshot, order: int) -> Iterator[_Part]:
        plus, minus = snapshot_file_changes(self.io, self.metadata, snap)
        parent = self._parent(snap)
        before = self._plan(parent) if has_deletes(self.io, parent, self.cache) else None
        after = self._plan(snap) if has_deletes(self.io, snap, self.cache) else None
        sid = snap.snapshot_id
        for f in plus:
            yield _Part(f, 1, sid, order, plan=after)
        for f in minus:
            yield _Part(f, -1, sid, order, plan=before)
        if before is None and after is None:
            return
        touched = {f.file_path for f in (*plus, *minus)}
        kept = {f.file_path: f for f in (after or before or _NO_PLAN).files}
        for path in sorted(_changed_deletes(before, after, touched)):
            data_file = kept[path]
            was = self._live_positions(data_file, before)
            now = self._live_positions(data_file, after)
            gone = pc.filter(was, pc.invert(pc.is_in(was, value_set=now)))
            back = pc.filter(now, pc.invert(pc.is_in(now, value_set=was)))
            if len(gone):
                yield _Part(data_file, -1, sid, order, positions=gone)
            if len(back):
                yield _Part(data_file, 1, sid, order, positions=back)

    def _parent(self, snap: Snapshot) -> Snapshot | None:
        if snap.parent_snapshot_id is None:
            return None
        return self.metadata.snapshot_by_id(snap.parent_snapshot_id)

    def _scan(self, snapshot: Snapshot | None) -> Scan:
        return Scan(self.io, self.metadata, snapshot, self.schema, manifest_cache=self.cache)

    def _plan(self, snapshot: Snapshot | None) -> ScanPlan:
        if snapshot is None:
            return _NO_PLAN
        plan = self._plans.get(snapshot.snapshot_id)
        if plan is None:
            plan = self._plans[snapshot.snapshot_id] = self._scan(snapshot).plan()
        return plan

    def _live_positions(self, f: DataFile, plan: ScanPlan | None) -> pa.Int64Array:
        """The positions of ``f``'s rows that ``plan``'s deletes leave (every row without)."""
        if plan is None or not plan.deletes.get(f.file_path):
            return row_positions(0, f.record_count)
        first = self.schema.fields[0].name  # the fewest columns the reader takes: one
        scan = Scan(self.io, self.metadata, None, self.schema, columns=[first])
        live = scan.live_rows(f, plan, position_column=_POSITION)
        return live.column(_POSITION).combine_chunks()


_NO_PLAN = ScanPlan((), 0, 0, 0)


def _changed_deletes(before: ScanPlan | None, after: ScanPlan | None, skip: set[str]) -> set[str]:
    """Data files (paths) in both plans whose delete files differ, but those in ``skip``."""

    def keys(plan: ScanPlan | None) -> dict[str, frozenset[tuple[str, int | None]]]:
        if plan is None:
            return {}
        return {p: frozenset(d.key for d in ds) for p, ds in plan.deletes.items() if ds}

    was, now = keys(before), keys(after)
    present = {f.file_path for f in (after or before or _NO_PLAN).files}
    if before is not None and after is not None:
        present &= {f.file_path for f in before.files}
    changed = {p for p in was.keys() | now.keys() if was.get(p) != now.get(p)}
    return (changed & present) - skip


def _drop_transient(parts: list[_Part]) -> list[_Part]:
    """Leave out, unread, every part of a data file that the range added and then removed:
    what it added, what deletes removed of it meanwhile and its removal sum to nothing."""
    events: dict[str, list[int]] = {}
    for p in parts:
        if p.positions is None:
            events.setdefault(p.file.file_path, []).append(p.sign)
    transient = {path for path, signs in events.items() if signs[0] > 0 and signs[-1] < 0}
    return [p for p in parts if p.file.file_path not in transient]


# ---- rows ---------------------------------------------------------------------------------
def _empty(projected: Schema) -> pa.Table:
    return _with_columns(schema_to_arrow(projected).empty_table(), [], []).drop_columns([_ORDER])


def _with_columns(rows: pa.Table, snapshot_ids: list[int], orders: list[int]) -> pa.Table:
    return rows.append_column(
        pa.field(CHANGE_SNAPSHOT_ID, pa.int64(), nullable=False), pa.array(snapshot_ids, pa.int64())
    ).append_column(pa.field(_ORDER, pa.int64(), nullable=False), pa.array(orders, pa.int64()))


def _read(io: FileIO, metadata: TableMetadata, schema: Schema, parts: list[_Part]) -> pa.Table:
    specs = metadata.specs_by_id()
    tables = []
    for part in parts:
        f = part.file
        if part.plan is not None and part.plan.deletes.get(f.file_path):
            scan = Scan(io, metadata, None, schema)
            rows = scan.live_rows(f, part.plan)
        else:
            rows = read_data_file(
                io,
                f,
                projected=schema,
                spec=specs.get(f.spec_id),
                name_mapping=name_mapping_of(metadata.properties),
            )
            if part.positions is not None:
                rows = rows.take(part.positions)
        n = rows.num_rows
        tables.append(_with_columns(rows, [part.snapshot_id] * n, [part.order] * n))
    if not tables:
        return _with_columns(schema_to_arrow(schema).empty_table(), [], [])
    return pa.concat_tables(tables)


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
    position = row_positions(0, n)
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
        rows = row_positions(0, values.num_rows)
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

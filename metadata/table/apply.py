"""The heart of a commit: ``apply(base, updates) -> new metadata``, a pure function.

Each update kind has one small handler that takes the metadata so far and returns the next
version, or the *same object* when the update changes nothing (setting the current schema to
the current one, a ref to where it already points, a property to its value). When no update
changed anything, :func:`apply` returns ``base`` itself so that callers can skip the commit.

Semantics follow Iceberg Java's ``TableMetadata.Builder``:

* an added schema, spec or sort order that matches an existing one is reused (with its id),
  and ``-1`` in the matching ``Set...`` update then means that reused id;
* snapshots are validated on add (new id; a v2 sequence number above the table's, unless the
  snapshot has no parent); moving ``main`` moves the current snapshot and appends a
  snapshot-log entry;
* when the change is complete, the snapshot log loses entries of snapshots that were only
  intermediate in this change, and, when snapshots were removed, the history up to the last
  removed entry (so the log never has gaps that would make time travel wrong);
* ``last-updated-ms`` becomes ``now_ms`` (or the newest added snapshot's timestamp, or the
  base's last-updated-ms, if later),
  and the previous metadata file is appended to the metadata log, trimmed to
  ``write.metadata.previous-versions-max`` entries.

Invariants are checked on the result and violations raise :class:`InvalidUpdate`.
"""

from __future__ import annotations

import time
import uuid as uuid_module
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from lakecat.metadata import properties as props
from lakecat.metadata.errors import InvalidUpdate, UnsupportedFeature
from lakecat.metadata.partitioning.spec import PartitionSpec
from lakecat.metadata.table.schema_evolution import check_schema
from lakecat.metadata.table.snapshots import (
    MAIN_BRANCH,
    OPERATIONS,
    MetadataLogEntry,
    Snapshot,
    SnapshotLogEntry,
)
from lakecat.metadata.table.sorting import UNSORTED, SortOrder
from lakecat.metadata.table.spec_evolution import check_sort_order_compatible, check_spec_compatible
from lakecat.metadata.table.table_metadata import WRITE_FORMAT_VERSIONS, TableMetadata
from lakecat.metadata.table.updates import (
    LAST_ADDED,
    AddPartitionSpec,
    AddSchema,
    AddSnapshot,
    AddSortOrder,
    AssignUUID,
    RemoveProperties,
    RemoveSnapshotRef,
    RemoveSnapshots,
    RemoveStatistics,
    SetCurrentSchema,
    SetDefaultSortOrder,
    SetDefaultSpec,
    SetLocation,
    SetPartitionStatistics,
    SetProperties,
    SetSnapshotRef,
    SetStatistics,
    TableUpdate,
    UpgradeFormatVersion,
)


@dataclass
class _ChangeSet:
    """What this one ``apply`` call has done so far (Java tracks the same in its builder)."""

    now_ms: int
    added_snapshot_ids: set[int] = field(default_factory=set)
    newest_added_timestamp_ms: int | None = None
    main_set_to_added: list[int] = field(default_factory=list)
    removed_snapshots: bool = False
    last_added_schema_id: int | None = None
    last_added_spec_id: int | None = None
    last_added_order_id: int | None = None


def require_writable(base: TableMetadata) -> None:
    """:class:`UnsupportedFeature` for a table of a format version lakecat reads but does not
    write, so it is never changed."""
    if base.format_version not in WRITE_FORMAT_VERSIONS:
        raise UnsupportedFeature(
            f"this table is format version {base.format_version}; lakecat writes format "
            f"versions {', '.join(map(str, WRITE_FORMAT_VERSIONS))} only, so it refuses to "
            "change it",
            feature=f"writing format-version {base.format_version}",
        )


def apply(
    base: TableMetadata,
    updates: Sequence[TableUpdate],
    *,
    now_ms: int | None = None,
    base_location: str | None = None,
    max_previous_versions: int | None = None,
) -> TableMetadata:
    """Apply ``updates`` to ``base`` and return the new metadata (``base`` itself if no-op).

    Pure: no I/O, and no clock when ``now_ms`` is given. The change happens at ``now_ms``,
    or at ``base.last_updated_ms`` if that is later. ``base_location`` is where ``base`` was
    read from; it is appended to the metadata log. ``max_previous_versions`` overrides the
    table property ``write.metadata.previous-versions-max``.

    Raises :class:`InvalidUpdate` for a change the spec does not allow, and
    :class:`UnsupportedFeature` for any change to a table of a format version lakecat does not
    write.
    """
    if updates:
        require_writable(base)
    clock = int(time.time() * 1000) if now_ms is None else now_ms
    # Time never runs backwards in the metadata: Java refuses to read a file whose
    # last-updated-ms or snapshot log goes back by more than a minute (e.g. clock skew
    # between two committers), so a late clock is treated as the base's time.
    changes = _ChangeSet(now_ms=max(clock, base.last_updated_ms))
    current = base
    for update in updates:
        handler = _HANDLERS.get(type(update))
        if handler is None:
            raise InvalidUpdate(f"unknown table update {update!r}")
        current = handler(current, update, changes)

    if current is base or current == base:
        return base

    current = _finish(base, current, changes, base_location, max_previous_versions)
    check_invariants(current)
    return current


# ---- handlers ------------------------------------------------------------------------------
def _assign_uuid(m: TableMetadata, u: AssignUUID, _: _ChangeSet) -> TableMetadata:
    try:
        new = str(uuid_module.UUID(u.uuid))
    except (ValueError, TypeError, AttributeError) as exc:
        raise InvalidUpdate(f"not a UUID: {u.uuid!r}") from exc
    if new == m.table_uuid.lower():
        return m
    return replace(m, table_uuid=new)


def _upgrade_format_version(
    m: TableMetadata, u: UpgradeFormatVersion, _: _ChangeSet
) -> TableMetadata:
    if u.format_version < m.format_version:
        raise InvalidUpdate(f"cannot downgrade a v{m.format_version} table to v{u.format_version}")
    if u.format_version not in WRITE_FORMAT_VERSIONS:
        raise InvalidUpdate(
            f"cannot upgrade to format version {u.format_version}: lakecat writes format "
            f"versions {', '.join(map(str, WRITE_FORMAT_VERSIONS))}"
        )
    if u.format_version == m.format_version:
        return m
    # Spec, "Row Lineage for Upgraded Tables": next-row-id starts at 0 and existing snapshots
    # keep no first-row-id; the next snapshot assigns row ids to every data file it lists.
    return replace(m, format_version=u.format_version, next_row_id=0)


def _add_schema(m: TableMetadata, u: AddSchema, changes: _ChangeSet) -> TableMetadata:
    schema = u.schema
    check_schema(schema)
    new_last = max(m.last_column_id, u.last_column_id, schema.highest_field_id)
    for existing in m.schemas:
        if existing.same_structure(schema):
            # Reused: "-1" in a following SetCurrentSchema means this schema.
            changes.last_added_schema_id = existing.schema_id
            return m if new_last == m.last_column_id else replace(m, last_column_id=new_last)
    new_id = max((s.schema_id for s in m.schemas), default=-1) + 1
    changes.last_added_schema_id = new_id
    return replace(
        m,
        schemas=(*m.schemas, replace(schema, schema_id=new_id)),
        last_column_id=new_last,
    )


def _set_current_schema(
    m: TableMetadata, u: SetCurrentSchema, changes: _ChangeSet
) -> TableMetadata:
    schema_id = _resolve_last_added(u.schema_id, changes.last_added_schema_id, "schema")
    if schema_id == m.current_schema_id:
        return m
    if all(s.schema_id != schema_id for s in m.schemas):
        raise InvalidUpdate(f"cannot set the current schema to unknown schema id {schema_id}")
    return replace(m, current_schema_id=schema_id)


def _add_spec(m: TableMetadata, u: AddPartitionSpec, changes: _ChangeSet) -> TableMetadata:
    spec = u.spec
    check_spec_compatible(spec, m.schema())
    for existing in m.partition_specs:
        if existing.compatible_with(spec):
            changes.last_added_spec_id = existing.spec_id
            return m
    new_id = max((s.spec_id for s in m.partition_specs), default=-1) + 1
    changes.last_added_spec_id = new_id
    return replace(
        m,
        partition_specs=(*m.partition_specs, PartitionSpec(new_id, spec.fields)),
        last_partition_id=max(m.last_partition_id, spec.last_assigned_field_id),
    )


def _set_default_spec(m: TableMetadata, u: SetDefaultSpec, changes: _ChangeSet) -> TableMetadata:
    spec_id = _resolve_last_added(u.spec_id, changes.last_added_spec_id, "partition spec")
    if spec_id == m.default_spec_id:
        return m
    if all(s.spec_id != spec_id for s in m.partition_specs):
        raise InvalidUpdate(f"cannot set the default partition spec to unknown spec id {spec_id}")
    return replace(m, default_spec_id=spec_id)


def _add_sort_order(m: TableMetadata, u: AddSortOrder, changes: _ChangeSet) -> TableMetadata:
    order = u.sort_order
    check_sort_order_compatible(order, m.schema())
    if order.is_unsorted:
        # The unsorted order always has id 0 (spec: "Sort Orders").
        changes.last_added_order_id = UNSORTED.order_id
        if any(o.order_id == UNSORTED.order_id for o in m.sort_orders):
            return m
        return replace(m, sort_orders=(*m.sort_orders, UNSORTED))
    for existing in m.sort_orders:
        if existing.fields == order.fields:
            changes.last_added_order_id = existing.order_id
            return m
    new_id = max((o.order_id for o in m.sort_orders), default=0) + 1
    changes.last_added_order_id = new_id
    return replace(m, sort_orders=(*m.sort_orders, SortOrder(new_id, order.fields)))


def _set_default_sort_order(
    m: TableMetadata, u: SetDefaultSortOrder, changes: _ChangeSet
) -> TableMetadata:
    order_id = _resolve_last_added(u.sort_order_id, changes.last_added_order_id, "sort order")
    if order_id == m.default_sort_order_id:
        return m
    if all(o.order_id != order_id for o in m.sort_orders):
        raise InvalidUpdate(f"cannot set the default sort order to unknown order id {order_id}")
    return replace(m, default_sort_order_id=order_id)


def _add_snapshot(m: TableMetadata, u: AddSnapshot, changes: _ChangeSet) -> TableMetadata:
    snap = u.snapshot
    if m.has_snapshot(snap.snapshot_id):
        raise InvalidUpdate(f"snapshot {snap.snapshot_id} already exists")
    # Java: "Cannot add snapshot with sequence number older than last sequence number",
    # except for a snapshot without parent (e.g. the first snapshot of a replaced table).
    if snap.sequence_number <= m.last_sequence_number and snap.parent_snapshot_id is not None:
        raise InvalidUpdate(
            f"cannot add snapshot {snap.snapshot_id} with sequence number "
            f"{snap.sequence_number}: the table's last sequence number is "
            f"{m.last_sequence_number}"
        )
    if snap.operation not in OPERATIONS:
        raise InvalidUpdate(
            f"snapshot {snap.snapshot_id} has unknown operation {snap.operation!r}; "
            f"expected one of {', '.join(OPERATIONS)}"
        )
    if snap.schema_id is not None and all(s.schema_id != snap.schema_id for s in m.schemas):
        raise InvalidUpdate(
            f"snapshot {snap.snapshot_id} refers to unknown schema id {snap.schema_id}"
        )
    next_row_id = _next_row_id(m, snap)
    changes.added_snapshot_ids.add(snap.snapshot_id)
    newest = changes.newest_added_timestamp_ms
    changes.newest_added_timestamp_ms = (
        snap.timestamp_ms if newest is None else max(newest, snap.timestamp_ms)
    )
    return replace(
        m,
        snapshots=(*m.snapshots, snap),
        last_sequence_number=max(m.last_sequence_number, snap.sequence_number),
        next_row_id=next_row_id,
    )


def _next_row_id(m: TableMetadata, snap: Snapshot) -> int | None:
    """The table's ``next-row-id`` once ``snap`` is added (spec, "Snapshot Row IDs"): a v3
    snapshot starts its row ids at or above the table's and moves it past its ``added-rows``,
    even when the snapshot is not on the main branch."""
    if m.format_version < 3:
        return m.next_row_id
    if snap.first_row_id is None or snap.added_rows is None:
        raise InvalidUpdate(
            f"snapshot {snap.snapshot_id} of a format version {m.format_version} table needs "
            "first-row-id and added-rows (row lineage)"
        )
    current = m.next_row_id or 0
    if snap.first_row_id < current:
        raise InvalidUpdate(
            f"snapshot {snap.snapshot_id} starts its row ids at {snap.first_row_id}, below the "
            f"table's next-row-id {current}: another commit assigned them"
        )
    if snap.added_rows < 0:
        raise InvalidUpdate(f"snapshot {snap.snapshot_id} has negative added-rows")
    return snap.first_row_id + snap.added_rows


def _set_snapshot_ref(m: TableMetadata, u: SetSnapshotRef, changes: _ChangeSet) -> TableMetadata:
    if not u.ref_name:
        raise InvalidUpdate("a branch or tag needs a non-empty name")
    if u.ref_type not in ("branch", "tag"):
        raise InvalidUpdate(f"ref type must be 'branch' or 'tag', not {u.ref_type!r}")
    if u.ref_name == MAIN_BRANCH and u.ref_type != "branch":
        raise InvalidUpdate(f"{MAIN_BRANCH!r} is the table's current state and must be a branch")
    _check_retention(u)
    new_ref = u.ref
    if m.refs.get(u.ref_name) == new_ref:
        return m
    if not m.has_snapshot(u.snapshot_id):
        raise InvalidUpdate(f"cannot set {u.ref_name!r} to unknown snapshot {u.snapshot_id}")

    refs = {**m.refs, u.ref_name: new_ref}
    if u.ref_name != MAIN_BRANCH or m.current_snapshot_id == u.snapshot_id:
        # Only a change of the current snapshot is history (spec: "snapshot-log").
        return replace(m, refs=refs)
    if u.snapshot_id in changes.added_snapshot_ids:
        changes.main_set_to_added.append(u.snapshot_id)
        logged_at = m.snapshot_by_id(u.snapshot_id).timestamp_ms
    else:
        logged_at = changes.now_ms  # e.g. a rollback: the snapshot became current now
    return replace(
        m,
        refs=refs,
        current_snapshot_id=u.snapshot_id,
        snapshot_log=(*m.snapshot_log, SnapshotLogEntry(logged_at, u.snapshot_id)),
    )


def _remove_snapshots(m: TableMetadata, u: RemoveSnapshots, changes: _ChangeSet) -> TableMetadata:
    # Unknown ids are ignored, as in Java: removing twice (e.g. on retry) is not an error.
    doomed = {i for i in u.snapshot_ids if m.has_snapshot(i)}
    if not doomed:
        return m
    changes.removed_snapshots = True
    refs = {name: ref for name, ref in m.refs.items() if ref.snapshot_id not in doomed}
    return replace(
        m,
        snapshots=tuple(s for s in m.snapshots if s.snapshot_id not in doomed),
        refs=refs,
        current_snapshot_id=m.current_snapshot_id if MAIN_BRANCH in refs else None,
        statistics=_without_stats_of(m.statistics, doomed),
        partition_statistics=_without_stats_of(m.partition_statistics, doomed),
    )


def _remove_snapshot_ref(m: TableMetadata, u: RemoveSnapshotRef, _: _ChangeSet) -> TableMetadata:
    if u.ref_name not in m.refs:
        return m
    refs = {name: ref for name, ref in m.refs.items() if name != u.ref_name}
    current = None if u.ref_name == MAIN_BRANCH else m.current_snapshot_id
    return replace(m, refs=refs, current_snapshot_id=current)


def _set_location(m: TableMetadata, u: SetLocation, _: _ChangeSet) -> TableMetadata:
    # Java strips a trailing slash so that "<location>/metadata" never has "//".
    location = u.location.rstrip("/")
    if not location:
        raise InvalidUpdate(f"invalid table location {u.location!r}")
    return m if location == m.location else replace(m, location=location)


def _set_properties(m: TableMetadata, u: SetProperties, _: _ChangeSet) -> TableMetadata:
    for key, value in u.updates.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise InvalidUpdate(
                f"table properties are strings; got {key!r}: {value!r} ({type(value).__name__})"
            )
    _refuse_reserved(u.updates.keys())
    changed = {k: v for k, v in u.updates.items() if m.properties.get(k) != v}
    if not changed:
        return m
    props.check_values(changed)  # values already there (another engine set them) still load
    return replace(m, properties={**m.properties, **changed})


def _set_partition_statistics(
    m: TableMetadata, u: SetPartitionStatistics, _: _ChangeSet
) -> TableMetadata:
    if not m.has_snapshot(u.snapshot_id):
        raise InvalidUpdate(f"partition statistics of unknown snapshot {u.snapshot_id}")
    kept = tuple(s for s in m.partition_statistics if s.get("snapshot-id") != u.snapshot_id)
    return replace(m, partition_statistics=(*kept, u.entry()))


def _set_statistics(m: TableMetadata, u: SetStatistics, _: _ChangeSet) -> TableMetadata:
    if not m.has_snapshot(u.snapshot_id):
        raise InvalidUpdate(f"statistics of unknown snapshot {u.snapshot_id}")
    kept = tuple(s for s in m.statistics if s.get("snapshot-id") != u.snapshot_id)
    return replace(m, statistics=(*kept, u.entry()))


def _remove_statistics(m: TableMetadata, u: RemoveStatistics, _: _ChangeSet) -> TableMetadata:
    kept = tuple(s for s in m.statistics if s.get("snapshot-id") != u.snapshot_id)
    return m if len(kept) == len(m.statistics) else replace(m, statistics=kept)


def _remove_properties(m: TableMetadata, u: RemoveProperties, _: _ChangeSet) -> TableMetadata:
    _refuse_reserved(u.removals)
    doomed = set(u.removals) & m.properties.keys()
    if not doomed:
        return m
    return replace(m, properties={k: v for k, v in m.properties.items() if k not in doomed})


_HANDLERS: dict[type, Callable[[TableMetadata, Any, _ChangeSet], TableMetadata]] = {
    AssignUUID: _assign_uuid,
    UpgradeFormatVersion: _upgrade_format_version,
    AddSchema: _add_schema,
    SetCurrentSchema: _set_current_schema,
    AddPartitionSpec: _add_spec,
    SetDefaultSpec: _set_default_spec,
    AddSortOrder: _add_sort_order,
    SetDefaultSortOrder: _set_default_sort_order,
    AddSnapshot: _add_snapshot,
    SetSnapshotRef: _set_snapshot_ref,
    RemoveSnapshots: _remove_snapshots,
    RemoveSnapshotRef: _remove_snapshot_ref,
    SetLocation: _set_location,
    SetProperties: _set_properties,
    RemoveProperties: _remove_properties,
    SetPartitionStatistics: _set_partition_statistics,
    SetStatistics: _set_statistics,
    RemoveStatistics: _remove_statistics,
}


# ---- helpers -------------------------------------------------------------------------------
def _resolve_last_added(requested: int, last_added: int | None, what: str) -> int:
    if requested != LAST_ADDED:
        return requested
    if last_added is None:
        raise InvalidUpdate(f"cannot use the last added {what} (-1): no {what} was added")
    return last_added


def _check_retention(u: SetSnapshotRef) -> None:
    if u.ref_type == "tag" and (
        u.min_snapshots_to_keep is not None or u.max_snapshot_age_ms is not None
    ):
        raise InvalidUpdate(
            f"tag {u.ref_name!r} cannot keep snapshots: min-snapshots-to-keep and "
            "max-snapshot-age-ms are for branches"
        )
    for name, value in (
        ("min-snapshots-to-keep", u.min_snapshots_to_keep),
        ("max-snapshot-age-ms", u.max_snapshot_age_ms),
        ("max-ref-age-ms", u.max_ref_age_ms),
    ):
        if value is not None and value <= 0:
            raise InvalidUpdate(f"{name} of {u.ref_name!r} must be positive, not {value}")


def _refuse_reserved(keys: Any) -> None:
    reserved = sorted(k for k in keys if k in props.RESERVED)
    if reserved:
        raise InvalidUpdate(
            f"reserved table properties cannot be set or removed: {', '.join(reserved)} "
            "(they are part of the format, e.g. the format version)"
        )


def _without_stats_of(files: tuple[Any, ...], snapshot_ids: set[int]) -> tuple[Any, ...]:
    return tuple(f for f in files if f.get("snapshot-id") not in snapshot_ids)


def _finish(
    base: TableMetadata,
    result: TableMetadata,
    changes: _ChangeSet,
    base_location: str | None,
    max_previous_versions: int | None,
) -> TableMetadata:
    last_updated = changes.now_ms
    if changes.newest_added_timestamp_ms is not None:
        # Java sets last-updated-ms to an added snapshot's timestamp; readers (Java) refuse a
        # last-updated-ms more than a minute before the newest snapshot-log entry.
        last_updated = max(last_updated, changes.newest_added_timestamp_ms)

    metadata_log = result.metadata_log
    if base_location is not None:
        keep = max_previous_versions
        if keep is None:
            keep = props.get_int(
                result.properties,
                props.METADATA_PREVIOUS_VERSIONS_MAX,
                props.METADATA_PREVIOUS_VERSIONS_MAX_DEFAULT,
            )
        entries = (*base.metadata_log, MetadataLogEntry(base.last_updated_ms, base_location))
        metadata_log = entries[-max(1, keep) :]  # Java keeps at least one entry

    return replace(
        result,
        last_updated_ms=last_updated,
        metadata_log=metadata_log,
        snapshot_log=_updated_snapshot_log(result, changes),
    )


def _updated_snapshot_log(result: TableMetadata, changes: _ChangeSet) -> tuple[Any, ...]:
    """Java's ``updateSnapshotLog``: drop intermediate entries and history with gaps."""
    intermediate = {i for i in changes.main_set_to_added if i != result.current_snapshot_id}
    if not intermediate and not changes.removed_snapshots:
        unchanged: tuple[SnapshotLogEntry, ...] = result.snapshot_log
        return unchanged
    log: list[SnapshotLogEntry] = []
    for entry in result.snapshot_log:
        if result.has_snapshot(entry.snapshot_id):
            if entry.snapshot_id not in intermediate:
                log.append(entry)
        elif changes.removed_snapshots:
            # With [(t1, s1), (t2, s2), (t3, s3)] and s2 removed, keeping (t1, s1) would claim
            # that s1 was current until t3; history before a gap is dropped instead.
            log.clear()
    return tuple(log)


# ---- invariants ----------------------------------------------------------------------------
def check_invariants(metadata: TableMetadata) -> None:
    """Raise :class:`InvalidUpdate` unless ``metadata`` is internally consistent."""
    m = metadata
    _check_unique("schema", [s.schema_id for s in m.schemas])
    _check_unique("partition spec", [s.spec_id for s in m.partition_specs])
    _check_unique("sort order", [o.order_id for o in m.sort_orders])
    _check_unique("snapshot", [s.snapshot_id for s in m.snapshots])
    if all(s.schema_id != m.current_schema_id for s in m.schemas):
        raise InvalidUpdate(f"current schema id {m.current_schema_id} is not a known schema")
    if all(s.spec_id != m.default_spec_id for s in m.partition_specs):
        raise InvalidUpdate(f"default spec id {m.default_spec_id} is not a known partition spec")
    if all(o.order_id != m.default_sort_order_id for o in m.sort_orders):
        raise InvalidUpdate(
            f"default sort order id {m.default_sort_order_id} is not a known sort order"
        )
    highest_column = max(s.highest_field_id for s in m.schemas)
    if m.last_column_id < highest_column:
        raise InvalidUpdate(
            f"last-column-id {m.last_column_id} is below the highest field id {highest_column}"
        )
    highest_partition = max(s.last_assigned_field_id for s in m.partition_specs)
    if m.last_partition_id < highest_partition:
        raise InvalidUpdate(
            f"last-partition-id {m.last_partition_id} is below the highest partition field "
            f"id {highest_partition}"
        )
    schema = m.schema()
    check_spec_compatible(m.spec(), schema)
    check_sort_order_compatible(m.sort_order(), schema)
    _check_snapshots_and_refs(m)


def _check_snapshots_and_refs(m: TableMetadata) -> None:
    highest_seq = max((s.sequence_number for s in m.snapshots), default=0)
    if highest_seq > m.last_sequence_number:
        raise InvalidUpdate(
            f"a snapshot has sequence number {highest_seq}, above the table's last sequence "
            f"number {m.last_sequence_number}"
        )
    for name, ref in m.refs.items():
        if not m.has_snapshot(ref.snapshot_id):
            raise InvalidUpdate(
                f"{ref.ref_type} {name!r} points at unknown snapshot {ref.snapshot_id}"
            )
    main = m.refs.get(MAIN_BRANCH)
    main_id = main.snapshot_id if main is not None else None
    if main_id != m.current_snapshot_id:
        raise InvalidUpdate(
            f"current snapshot {m.current_snapshot_id} differs from branch main ({main_id})"
        )


def _check_unique(what: str, ids: list[int]) -> None:
    if len(set(ids)) != len(ids):
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        raise InvalidUpdate(f"duplicate {what} ids: {dupes}")

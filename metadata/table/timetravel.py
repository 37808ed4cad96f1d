"""Time travel as pure resolution over metadata (Iceberg Java's ``SnapshotUtil``).

A snapshot id, a branch or tag name, or a point in time resolves to a snapshot; the schema to
read it with follows Iceberg's rule: a branch is read with the table's current schema, a tag
or a snapshot chosen by id or time with the schema that snapshot was written with.
"""

from __future__ import annotations

import datetime as dt
from datetime import UTC, datetime

from lakecat.metadata.errors import NoSuchRef, NoSuchSnapshot, ValidationError
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.table.snapshots import MAIN_BRANCH, Snapshot
from lakecat.metadata.table.table_metadata import TableMetadata


def snapshot_at(
    metadata: TableMetadata,
    *,
    snapshot_id: int | None = None,
    as_of_timestamp_ms: int | None = None,
    ref: str | None = None,
) -> Snapshot | None:
    """The snapshot chosen by at most one selector; none given: the current snapshot.

    ``None`` is returned only for a table (or ``main``) without snapshots. Raises
    :class:`NoSuchSnapshot` for an unknown id or a time before the first snapshot, and
    :class:`NoSuchRef` for an unknown branch or tag.
    """
    given = [s for s in (snapshot_id, as_of_timestamp_ms, ref) if s is not None]
    if len(given) > 1:
        raise ValidationError("choose a snapshot by one of snapshot_id, as_of_timestamp_ms or ref")
    if snapshot_id is not None:
        return metadata.snapshot_by_id(snapshot_id)
    if as_of_timestamp_ms is not None:
        return snapshot_as_of(metadata, as_of_timestamp_ms)
    if ref is not None:
        return metadata.ref_snapshot(ref)
    return metadata.current_snapshot


def snapshot_as_of(metadata: TableMetadata, timestamp_ms: int) -> Snapshot:
    """The snapshot that was current at ``timestamp_ms``.

    Java's ``SnapshotUtil.snapshotIdAsOfTime``: the last snapshot-log entry at or before the
    time. A table whose log is empty (written by an engine that keeps none) falls back to the
    newest ancestor of the current snapshot committed at or before the time.
    """
    found: int | None = None
    for entry in metadata.snapshot_log:
        if entry.timestamp_ms <= timestamp_ms:
            found = entry.snapshot_id
    if not metadata.snapshot_log:
        found = next(
            (
                s.snapshot_id
                for s in metadata.ancestors(metadata.current_snapshot_id)
                if s.timestamp_ms <= timestamp_ms
            ),
            None,
        )
    if found is None:
        raise NoSuchSnapshot(_before_first_message(metadata, timestamp_ms))
    if not metadata.has_snapshot(found):
        raise NoSuchSnapshot(
            f"snapshot {found}, current at {format_timestamp_ms(timestamp_ms)} in table "
            f"{metadata.location}, has been expired"
        )
    return metadata.snapshot_by_id(found)


def schema_for(
    metadata: TableMetadata, snapshot: Snapshot | None, *, ref: str | None = None
) -> Schema:
    """The schema to read ``snapshot`` with.

    Reading a branch (``ref`` names a branch, or no snapshot) uses the current table schema;
    a tag or a snapshot chosen by id or time uses the schema it was written with (the
    current schema when the snapshot does not record one).
    """
    if ref is not None:
        found = metadata.refs.get(ref)
        if found is None and ref != MAIN_BRANCH:
            raise NoSuchRef(f"no branch or tag named {ref!r}")
        if found is None or found.ref_type == "branch":
            return metadata.schema()
    if snapshot is None or snapshot.schema_id is None:
        return metadata.schema()
    for schema in metadata.schemas:
        if schema.schema_id == snapshot.schema_id:
            return schema
    return metadata.schema()


def ancestors_between(
    metadata: TableMetadata, *, start_exclusive: int | None, end_inclusive: int
) -> list[Snapshot]:
    """Snapshots from ``end_inclusive`` back to, not including, ``start_exclusive``; newest
    first. ``start_exclusive=None`` (or one that is not an ancestor) gives every ancestor
    still in the metadata, as Java's ``SnapshotUtil.ancestorsBetween`` does."""
    out: list[Snapshot] = []
    for snapshot in metadata.ancestors(end_inclusive):
        if snapshot.snapshot_id == start_exclusive:
            break
        out.append(snapshot)
    return out


def is_ancestor_of(metadata: TableMetadata, *, snapshot_id: int, ancestor_id: int) -> bool:
    """Whether ``ancestor_id`` is ``snapshot_id`` or one of its (still known) ancestors."""
    return any(s.snapshot_id == ancestor_id for s in metadata.ancestors(snapshot_id))


def format_timestamp_ms(timestamp_ms: int) -> str:
    """A timestamp in ms since the epoch as messages show it: ISO 8601 in UTC, to the ms."""
    try:
        moment = datetime.fromtimestamp(timestamp_ms / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):  # outside what datetime can show
        return f"{timestamp_ms} ms since the epoch"
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _before_first_message(metadata: TableMetadata, timestamp_ms: int) -> str:
    moment = format_timestamp_ms(timestamp_ms)
    base = f"table {metadata.location} has no snapshot at or before {moment}"
    times = [e.timestamp_ms for e in metadata.snapshot_log] or [
        s.timestamp_ms for s in metadata.snapshots
    ]
    if not times:
        return base + "; it has no snapshots"
    return f"{base}; the first is at {format_timestamp_ms(min(times))}"


# ---- points in time ------------------------------------------------------------------------
Timestamp = int | dt.datetime | dt.date | str


def to_timestamp_ms(value: Timestamp) -> int:
    """Milliseconds since the epoch from ms, a datetime (naive = UTC), a date or ISO text."""
    if isinstance(value, bool):
        raise ValidationError(f"not a timestamp: {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValidationError(f"not an ISO-8601 timestamp: {value!r}") from None
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return int(value.timestamp() * 1000)
    if isinstance(value, dt.date):
        return int(
            dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC).timestamp() * 1000
        )
    raise ValidationError(f"not a timestamp: {value!r}")

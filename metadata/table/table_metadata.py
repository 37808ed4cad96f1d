"""The frozen model of an Iceberg v2 ``metadata.json`` and its JSON form.

Nothing here mutates a :class:`TableMetadata`; changes are made by
:func:`lakecat.metadata.table.apply.apply`, which returns a new instance.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from operator import attrgetter, itemgetter
from typing import Any, TypeVar

import orjson

from lakecat.metadata.errors import CorruptMetadata, NoSuchRef, NoSuchSnapshot, UnsupportedFeature
from lakecat.metadata.partitioning.spec import PartitionSpec
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.table.snapshots import (
    APPEND,
    MAIN_BRANCH,
    MetadataLogEntry,
    Snapshot,
    SnapshotLogEntry,
    SnapshotRef,
)
from lakecat.metadata.table.sorting import SortOrder

FORMAT_VERSION = 2  # what lakecat creates unless asked for another version
WRITE_FORMAT_VERSIONS = (2, 3)  # what it writes (v3: row lineage and deletion vectors)
READ_FORMAT_VERSIONS = (2, 3)  # what it reads


@dataclass(frozen=True)
class TableMetadata:
    location: str
    table_uuid: str
    last_updated_ms: int
    last_column_id: int
    schemas: tuple[Schema, ...]
    current_schema_id: int
    partition_specs: tuple[PartitionSpec, ...]
    default_spec_id: int
    last_partition_id: int
    sort_orders: tuple[SortOrder, ...]
    default_sort_order_id: int
    format_version: int = FORMAT_VERSION
    last_sequence_number: int = 0
    properties: Mapping[str, str] = field(default_factory=dict)
    current_snapshot_id: int | None = None
    snapshots: tuple[Snapshot, ...] = ()
    snapshot_log: tuple[SnapshotLogEntry, ...] = ()
    metadata_log: tuple[MetadataLogEntry, ...] = ()
    refs: Mapping[str, SnapshotRef] = field(default_factory=dict)
    statistics: tuple[Mapping[str, Any], ...] = ()
    partition_statistics: tuple[Mapping[str, Any], ...] = ()
    next_row_id: int | None = None  # format v3 row lineage

    # ---- lookups ------------------------------------------------------------------------
    @cached_property
    def _snapshots_by_id(self) -> dict[int, Snapshot]:
        return {s.snapshot_id: s for s in self.snapshots}

    def schema(self, schema_id: int | None = None) -> Schema:
        """The schema with this id (default: the current schema)."""
        wanted = self.current_schema_id if schema_id is None else schema_id
        for s in self.schemas:
            if s.schema_id == wanted:
                return s
        raise CorruptMetadata(f"metadata has no schema with id {wanted}")

    def spec(self, spec_id: int | None = None) -> PartitionSpec:
        wanted = self.default_spec_id if spec_id is None else spec_id
        for s in self.partition_specs:
            if s.spec_id == wanted:
                return s
        raise CorruptMetadata(f"metadata has no partition spec with id {wanted}")

    def specs_by_id(self) -> dict[int, PartitionSpec]:
        return {s.spec_id: s for s in self.partition_specs}

    def sort_order(self, order_id: int | None = None) -> SortOrder:
        wanted = self.default_sort_order_id if order_id is None else order_id
        for s in self.sort_orders:
            if s.order_id == wanted:
                return s
        raise CorruptMetadata(f"metadata has no sort order with id {wanted}")

    def snapshot_by_id(self, snapshot_id: int) -> Snapshot:
        try:
            return self._snapshots_by_id[snapshot_id]
        except KeyError:
            raise NoSuchSnapshot(f"no snapshot with id {snapshot_id}") from None

    def has_snapshot(self, snapshot_id: int) -> bool:
        return snapshot_id in self._snapshots_by_id

    @property
    def current_snapshot(self) -> Snapshot | None:
        if self.current_snapshot_id is None:
            return None
        return self.snapshot_by_id(self.current_snapshot_id)

    def ref_snapshot(self, ref: str) -> Snapshot | None:
        """The snapshot a branch or tag points at; ``None`` for a main branch with no snapshot."""
        found = self.refs.get(ref)
        if found is None:
            if ref == MAIN_BRANCH:
                return None
            raise NoSuchRef(f"no branch or tag named {ref!r}")
        return self.snapshot_by_id(found.snapshot_id)

    def ancestors(self, snapshot_id: int | None) -> list[Snapshot]:
        """The snapshot and its ancestors that still exist, newest first."""
        out: list[Snapshot] = []
        current = snapshot_id
        while current is not None and current in self._snapshots_by_id:
            snap = self._snapshots_by_id[current]
            out.append(snap)
            current = snap.parent_snapshot_id
        return out

    @property
    def next_first_row_id(self) -> int | None:
        """The ``first-row-id`` of a snapshot added on top of this metadata (spec, "Snapshot
        Row IDs": the table's ``next-row-id``); ``None`` before format v3."""
        return (self.next_row_id or 0) if self.format_version >= 3 else None

    def property(self, key: str, default: str | None = None) -> str | None:
        return self.properties.get(key, default)

    # ---- JSON ---------------------------------------------------------------------------
    def to_json(self, *, with_snapshots: bool = True) -> dict[str, Any]:
        """The metadata.json object; without its ``snapshots`` key when not
        ``with_snapshots`` (the writer in ``metadata_json`` lays the snapshots out itself)."""
        out: dict[str, Any] = {
            "format-version": self.format_version,
            "table-uuid": self.table_uuid,
            "location": self.location,
            "last-sequence-number": self.last_sequence_number,
            "last-updated-ms": self.last_updated_ms,
            "last-column-id": self.last_column_id,
            "current-schema-id": self.current_schema_id,
            "schemas": [s.to_json() for s in self.schemas],
            "default-spec-id": self.default_spec_id,
            "partition-specs": [s.to_json() for s in self.partition_specs],
            "last-partition-id": self.last_partition_id,
            "default-sort-order-id": self.default_sort_order_id,
            "sort-orders": [s.to_json() for s in self.sort_orders],
            "properties": dict(self.properties),
        }
        # Java writes -1 for "no current snapshot" and Java before 1.4 cannot read a file
        # without the key; pyiceberg and Java read -1 as "none". So -1 it is, never omitted.
        out["current-snapshot-id"] = (
            -1 if self.current_snapshot_id is None else self.current_snapshot_id
        )
        out["refs"] = {name: ref.to_json() for name, ref in self.refs.items()}
        if with_snapshots:
            out["snapshots"] = [s.to_json() for s in self.snapshots]
        out["statistics"] = [dict(s) for s in self.statistics]
        out["partition-statistics"] = [dict(s) for s in self.partition_statistics]
        if self.next_row_id is not None:
            out["next-row-id"] = self.next_row_id
        out["snapshot-log"] = [e.to_json() for e in self.snapshot_log]
        out["metadata-log"] = [e.to_json() for e in self.metadata_log]
        return out

    @staticmethod
    def from_json(
        obj: dict[str, Any],
        *,
        previous: TableMetadata | None = None,
        leading: tuple[Snapshot, ...] = (),
    ) -> TableMetadata:
        """Parse a metadata.json object. ``previous``, an earlier version of the same table,
        lends its snapshot objects to the snapshots whose JSON is byte for byte the same (a
        table's versions repeat every snapshot, and a reused snapshot keeps its serialized
        bytes, so parsing and writing the next version skip that work), and its log entries
        to equal ones. ``leading``: snapshots known to come before those in ``obj``'s
        ``snapshots`` list (see ``metadata_json.known_snapshots``)."""
        try:
            return _from_json(obj, previous, leading)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CorruptMetadata(f"malformed table metadata: {exc!r}") from exc


def _from_json(
    obj: dict[str, Any], previous: TableMetadata | None, leading: tuple[Snapshot, ...]
) -> TableMetadata:
    version = obj["format-version"]
    if version not in READ_FORMAT_VERSIONS:
        if isinstance(version, int) and version > max(READ_FORMAT_VERSIONS):
            raise UnsupportedFeature(
                f"this table is Iceberg format version {version}; lakecat reads format versions "
                f"{', '.join(map(str, READ_FORMAT_VERSIONS))}",
                feature=f"format-version {version}",
            )
        if version == 1:
            raise UnsupportedFeature(
                "this table is Iceberg format version 1; lakecat reads format versions "
                f"{', '.join(map(str, READ_FORMAT_VERSIONS))}: upgrade it with the engine that "
                "wrote it (ALTER TABLE ... SET TBLPROPERTIES ('format-version' = '2'))",
                feature="format-version 1",
            )
        raise CorruptMetadata(
            f"lakecat reads format version {FORMAT_VERSION} and 3 tables; this one is v{version}"
        )
    if obj.get("encryption-keys"):
        raise UnsupportedFeature(
            "this table is encrypted; lakecat does not read encrypted tables",
            feature="encryption",
        )
    current = obj.get("current-snapshot-id")
    if current == -1:  # Java writes -1 for "no snapshot"
        current = None
    refs = {name: SnapshotRef.from_json(r) for name, r in (obj.get("refs") or {}).items()}
    main = refs.get(MAIN_BRANCH)
    if main is None and current is not None:
        # Spec: "There is always a main branch reference pointing to the current-snapshot-id
        # even if the refs map is null."
        refs[MAIN_BRANCH] = SnapshotRef(current, "branch")
    elif main is not None and main.snapshot_id != current:
        raise CorruptMetadata(
            f"current-snapshot-id {current} differs from branch main ({main.snapshot_id})"
        )
    return TableMetadata(
        format_version=version,
        table_uuid=obj["table-uuid"],
        location=obj["location"],
        last_sequence_number=obj["last-sequence-number"],
        last_updated_ms=obj["last-updated-ms"],
        last_column_id=obj["last-column-id"],
        schemas=tuple(Schema.from_json(s) for s in obj["schemas"]),
        current_schema_id=obj["current-schema-id"],
        partition_specs=tuple(PartitionSpec.from_json(s) for s in obj["partition-specs"]),
        default_spec_id=obj["default-spec-id"],
        last_partition_id=obj["last-partition-id"],
        sort_orders=tuple(SortOrder.from_json(s) for s in obj["sort-orders"]),
        default_sort_order_id=obj["default-sort-order-id"],
        properties=_string_map(obj.get("properties") or {}),
        current_snapshot_id=current,
        snapshots=leading + _snapshots(obj.get("snapshots") or (), previous),
        snapshot_log=_log(
            obj.get("snapshot-log") or (),
            previous.snapshot_log if previous else (),
            itemgetter("timestamp-ms", "snapshot-id"),
            attrgetter("timestamp_ms", "snapshot_id"),
            lambda e: SnapshotLogEntry(e["timestamp-ms"], e["snapshot-id"]),
        ),
        metadata_log=_log(
            obj.get("metadata-log") or (),
            previous.metadata_log if previous else (),
            itemgetter("timestamp-ms", "metadata-file"),
            attrgetter("timestamp_ms", "metadata_file"),
            lambda e: MetadataLogEntry(e["timestamp-ms"], e["metadata-file"]),
        ),
        refs=refs,
        statistics=tuple(obj.get("statistics") or ()),
        partition_statistics=tuple(obj.get("partition-statistics") or ()),
        next_row_id=obj.get("next-row-id"),
    )


def _snapshots(
    items: Sequence[dict[str, Any]], previous: TableMetadata | None
) -> tuple[Snapshot, ...]:
    if previous is None or not previous.snapshots:
        return tuple(map(_snapshot_from_json, items))
    known = previous._snapshots_by_id  # built once per metadata object
    out = []
    for item in items:
        same = known.get(item.get("snapshot-id", -1))
        if same is not None and orjson.dumps(item) == same.json_bytes():
            out.append(same)
        else:
            out.append(_snapshot_from_json(item))
    return tuple(out)


_Entry = TypeVar("_Entry")
_LOG_ALIGN_LIMIT = 64  # how far into the previous log its first surviving entry is looked for


def _log(
    items: Sequence[dict[str, Any]],
    previous: tuple[_Entry, ...],
    item_key: Callable[[dict[str, Any]], Any],
    entry_key: Callable[[_Entry], Any],
    make: Callable[[dict[str, Any]], _Entry],
) -> tuple[_Entry, ...]:
    """A log's entries, reusing ``previous``'s where their keys are equal. A table's next
    version keeps its log, less the oldest entries (expiry,
    ``write.metadata.previous-versions-max``), plus new ones at the end: so the walk aligns on
    the first item and then goes in step (compared as whole lists where it can)."""
    keys = list(map(item_key, items))
    if not previous or not keys:
        return tuple(map(make, items))
    previous_keys = list(map(entry_key, previous))
    try:
        j = previous_keys.index(keys[0], 0, _LOG_ALIGN_LIMIT)
    except ValueError:
        return tuple(map(make, items))
    kept = min(len(keys), len(previous) - j)
    if keys[:kept] == previous_keys[j : j + kept]:  # the usual case: one comparison
        return previous[j : j + kept] + tuple(map(make, items[kept:]))
    return tuple(
        previous[j + i] if i < kept and keys[i] == previous_keys[j + i] else make(item)
        for i, item in enumerate(items)
    )


def _snapshot_from_json(obj: dict[str, Any]) -> Snapshot:
    """:meth:`Snapshot.from_json` with positional arguments: a table has thousands of
    snapshots and keyword construction doubles the parse time of a metadata file."""
    summary = obj.get("summary") or {}  # required in v2, but v1 writers could leave it out
    if not isinstance(summary, dict):
        raise CorruptMetadata(f"snapshot summary must be an object: {summary!r}")
    summary = dict(summary)
    operation = summary.pop("operation", APPEND)
    return Snapshot(
        obj["snapshot-id"],
        obj.get("sequence-number", 0),
        obj["timestamp-ms"],
        obj["manifest-list"],
        operation,
        summary,
        obj.get("parent-snapshot-id"),
        obj.get("schema-id"),
        obj.get("first-row-id"),
        obj.get("added-rows"),
    )


def _string_map(obj: dict[str, Any]) -> dict[str, str]:
    if not all(isinstance(v, str) for v in obj.values()):
        raise CorruptMetadata(f"table properties must be strings: {obj!r}")
    return dict(obj)

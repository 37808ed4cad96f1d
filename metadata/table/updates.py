"""Changes as data: the closed set of table update records and requirement records.

A commit is a list of :data:`TableUpdate` records applied to a base by
:func:`lakecat.metadata.table.apply.apply`, guarded by :data:`TableRequirement` records that
validate themselves against the base the change is applied to. The same records are logged
(``to_json`` gives the Iceberg REST catalog's shape: ``{"action": "add-snapshot", ...}`` and
``{"type": "assert-ref-snapshot-id", ...}``), replayed on retry and asserted in tests.

``-1`` in :class:`SetCurrentSchema`, :class:`SetDefaultSpec` and :class:`SetDefaultSortOrder`
means "the one added last in this change set", as in Iceberg's ``MetadataUpdate``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from lakecat.metadata.errors import CorruptMetadata, RequirementFailed
from lakecat.metadata.partitioning.spec import PartitionSpec
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.table.snapshots import MAIN_BRANCH, RefType, Snapshot, SnapshotRef
from lakecat.metadata.table.sorting import SortOrder
from lakecat.metadata.table.table_metadata import TableMetadata

LAST_ADDED = -1
"""Id placeholder for "the schema / spec / sort order added last in this change set"."""


# ---- update records ------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class AssignUUID:
    uuid: str
    action: ClassVar[str] = "assign-uuid"

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "uuid": self.uuid}


@dataclass(frozen=True, slots=True)
class UpgradeFormatVersion:
    format_version: int
    action: ClassVar[str] = "upgrade-format-version"

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "format-version": self.format_version}


@dataclass(frozen=True, slots=True)
class AddSchema:
    """Add a schema (or reuse an existing one with the same structure)."""

    schema: Schema
    last_column_id: int
    action: ClassVar[str] = "add-schema"

    def to_json(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "schema": self.schema.to_json(),
            "last-column-id": self.last_column_id,
        }


@dataclass(frozen=True, slots=True)
class SetCurrentSchema:
    schema_id: int
    action: ClassVar[str] = "set-current-schema"

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "schema-id": self.schema_id}


@dataclass(frozen=True, slots=True)
class AddPartitionSpec:
    """Add a partition spec whose field ids are already assigned (see ``SpecUpdate``)."""

    spec: PartitionSpec
    action: ClassVar[str] = "add-spec"

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "spec": self.spec.to_json()}


@dataclass(frozen=True, slots=True)
class SetDefaultSpec:
    spec_id: int
    action: ClassVar[str] = "set-default-spec"

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "spec-id": self.spec_id}


@dataclass(frozen=True, slots=True)
class AddSortOrder:
    sort_order: SortOrder
    action: ClassVar[str] = "add-sort-order"

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "sort-order": self.sort_order.to_json()}


@dataclass(frozen=True, slots=True)
class SetDefaultSortOrder:
    sort_order_id: int
    action: ClassVar[str] = "set-default-sort-order"

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "sort-order-id": self.sort_order_id}


@dataclass(frozen=True, slots=True)
class AddSnapshot:
    snapshot: Snapshot
    action: ClassVar[str] = "add-snapshot"

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "snapshot": self.snapshot.to_json()}


@dataclass(frozen=True, slots=True)
class SetSnapshotRef:
    """Point a branch or tag at a snapshot; setting ``main`` moves the current snapshot."""

    ref_name: str
    snapshot_id: int
    ref_type: RefType
    max_ref_age_ms: int | None = None
    max_snapshot_age_ms: int | None = None
    min_snapshots_to_keep: int | None = None
    action: ClassVar[str] = "set-snapshot-ref"

    @property
    def ref(self) -> SnapshotRef:
        return SnapshotRef(
            snapshot_id=self.snapshot_id,
            ref_type=self.ref_type,
            min_snapshots_to_keep=self.min_snapshots_to_keep,
            max_snapshot_age_ms=self.max_snapshot_age_ms,
            max_ref_age_ms=self.max_ref_age_ms,
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "action": self.action,
            "ref-name": self.ref_name,
            "snapshot-id": self.snapshot_id,
            "type": self.ref_type,
        }
        if self.max_ref_age_ms is not None:
            out["max-ref-age-ms"] = self.max_ref_age_ms
        if self.max_snapshot_age_ms is not None:
            out["max-snapshot-age-ms"] = self.max_snapshot_age_ms
        if self.min_snapshots_to_keep is not None:
            out["min-snapshots-to-keep"] = self.min_snapshots_to_keep
        return out


@dataclass(frozen=True, slots=True)
class RemoveSnapshots:
    snapshot_ids: tuple[int, ...]
    action: ClassVar[str] = "remove-snapshots"

    def __post_init__(self) -> None:
        # Accept any iterable from callers, but store an immutable tuple.
        object.__setattr__(self, "snapshot_ids", tuple(self.snapshot_ids))

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "snapshot-ids": list(self.snapshot_ids)}


@dataclass(frozen=True, slots=True)
class RemoveSnapshotRef:
    ref_name: str
    action: ClassVar[str] = "remove-snapshot-ref"

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "ref-name": self.ref_name}


@dataclass(frozen=True, slots=True)
class SetLocation:
    location: str
    action: ClassVar[str] = "set-location"

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "location": self.location}


@dataclass(frozen=True, slots=True)
class SetProperties:
    updates: Mapping[str, str] = field(default_factory=dict)
    action: ClassVar[str] = "set-properties"

    def __post_init__(self) -> None:
        # A private copy: the caller's dict must not change a recorded update afterwards.
        object.__setattr__(self, "updates", dict(self.updates))

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "updates": dict(self.updates)}


@dataclass(frozen=True, slots=True)
class RemoveProperties:
    removals: tuple[str, ...]
    action: ClassVar[str] = "remove-properties"

    def __post_init__(self) -> None:
        object.__setattr__(self, "removals", tuple(self.removals))

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "removals": list(self.removals)}


@dataclass(frozen=True, slots=True)
class SetPartitionStatistics:
    """Register a partition statistics file of a snapshot (replacing the snapshot's earlier
    one): the spec's ``partition-statistics`` entry."""

    snapshot_id: int
    statistics_path: str
    file_size_in_bytes: int
    action: ClassVar[str] = "set-partition-statistics"

    def entry(self) -> dict[str, Any]:
        return {
            "snapshot-id": self.snapshot_id,
            "statistics-path": self.statistics_path,
            "file-size-in-bytes": self.file_size_in_bytes,
        }

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "partition-statistics": self.entry()}


@dataclass(frozen=True, slots=True)
class StatisticsBlob:
    """A blob of a table statistics file, as the metadata lists it (``blob-metadata``)."""

    type: str
    snapshot_id: int
    sequence_number: int
    fields: tuple[int, ...]
    properties: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))
        object.__setattr__(self, "properties", dict(self.properties))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.type,
            "snapshot-id": self.snapshot_id,
            "sequence-number": self.sequence_number,
            "fields": list(self.fields),
        }
        if self.properties:
            out["properties"] = dict(self.properties)
        return out

    @staticmethod
    def from_json(obj: Mapping[str, Any]) -> StatisticsBlob:
        return StatisticsBlob(
            type=str(obj["type"]),
            snapshot_id=int(obj["snapshot-id"]),
            sequence_number=int(obj["sequence-number"]),
            fields=tuple(int(f) for f in obj["fields"]),
            properties={str(k): str(v) for k, v in (obj.get("properties") or {}).items()},
        )


@dataclass(frozen=True, slots=True)
class SetStatistics:
    """Register a table statistics file (Puffin) of a snapshot, replacing the snapshot's
    earlier one: the spec's ``statistics`` entry."""

    snapshot_id: int
    statistics_path: str
    file_size_in_bytes: int
    file_footer_size_in_bytes: int
    blob_metadata: tuple[StatisticsBlob, ...] = ()
    action: ClassVar[str] = "set-statistics"

    def __post_init__(self) -> None:
        object.__setattr__(self, "blob_metadata", tuple(self.blob_metadata))

    def entry(self) -> dict[str, Any]:
        return {
            "snapshot-id": self.snapshot_id,
            "statistics-path": self.statistics_path,
            "file-size-in-bytes": self.file_size_in_bytes,
            "file-footer-size-in-bytes": self.file_footer_size_in_bytes,
            "blob-metadata": [b.to_json() for b in self.blob_metadata],
        }

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "statistics": self.entry()}

    @staticmethod
    def from_json(obj: Mapping[str, Any]) -> SetStatistics:
        entry = obj["statistics"]
        return SetStatistics(
            snapshot_id=int(entry["snapshot-id"]),
            statistics_path=str(entry["statistics-path"]),
            file_size_in_bytes=int(entry["file-size-in-bytes"]),
            file_footer_size_in_bytes=int(entry["file-footer-size-in-bytes"]),
            blob_metadata=tuple(StatisticsBlob.from_json(b) for b in entry["blob-metadata"]),
        )


@dataclass(frozen=True, slots=True)
class RemoveStatistics:
    """Unregister a snapshot's table statistics file (a no-op when it has none); the file
    itself is left for orphan removal, as Iceberg leaves it."""

    snapshot_id: int
    action: ClassVar[str] = "remove-statistics"

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "snapshot-id": self.snapshot_id}


TableUpdate = (
    AssignUUID
    | UpgradeFormatVersion
    | AddSchema
    | SetCurrentSchema
    | AddPartitionSpec
    | SetDefaultSpec
    | AddSortOrder
    | SetDefaultSortOrder
    | AddSnapshot
    | SetSnapshotRef
    | RemoveSnapshots
    | RemoveSnapshotRef
    | SetLocation
    | SetProperties
    | RemoveProperties
    | SetPartitionStatistics
    | SetStatistics
    | RemoveStatistics
)


# ---- requirement records -------------------------------------------------------------------
def _require_base(base: TableMetadata | None, what: str) -> TableMetadata:
    if base is None:
        raise RequirementFailed(f"requirement failed: {what}, but the table does not exist")
    return base


@dataclass(frozen=True, slots=True)
class AssertCreate:
    """The table must not exist yet (create transactions)."""

    type: ClassVar[str] = "assert-create"

    def validate(self, base: TableMetadata | None) -> None:
        if base is not None:
            raise RequirementFailed("requirement failed: the table was expected not to exist")

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type}


@dataclass(frozen=True, slots=True)
class AssertTableUUID:
    uuid: str
    type: ClassVar[str] = "assert-table-uuid"

    def validate(self, base: TableMetadata | None) -> None:
        found = _require_base(base, f"table uuid {self.uuid} expected").table_uuid
        if found.lower() != self.uuid.lower():
            raise RequirementFailed(
                f"requirement failed: table uuid changed: expected {self.uuid}, found {found} "
                "(the table was dropped and re-created)"
            )

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "uuid": self.uuid}


@dataclass(frozen=True, slots=True)
class AssertRefSnapshotId:
    """The branch or tag ``ref`` points at ``snapshot_id``; ``None``: the ref must not exist."""

    ref: str
    snapshot_id: int | None
    type: ClassVar[str] = "assert-ref-snapshot-id"

    def validate(self, base: TableMetadata | None) -> None:
        expected = "no ref" if self.snapshot_id is None else f"snapshot {self.snapshot_id}"
        meta = _require_base(base, f"{self.ref!r} at {expected} expected")
        found = meta.refs.get(self.ref)
        if found is None:
            if self.snapshot_id is not None:
                raise RequirementFailed(
                    f"requirement failed: branch or tag {self.ref!r} is missing, "
                    f"expected it at snapshot {self.snapshot_id}"
                )
            return
        if self.snapshot_id is None:
            raise RequirementFailed(
                f"requirement failed: {found.ref_type} {self.ref!r} was created concurrently "
                f"(now at snapshot {found.snapshot_id})"
            )
        if found.snapshot_id != self.snapshot_id:
            raise RequirementFailed(
                f"requirement failed: {found.ref_type} {self.ref!r} has changed: "
                f"expected snapshot {self.snapshot_id}, found {found.snapshot_id}"
            )

    def to_json(self) -> dict[str, Any]:
        # The REST spec writes "snapshot-id": null for "must not exist".
        return {"type": self.type, "ref": self.ref, "snapshot-id": self.snapshot_id}


def _int_requirement(name: str, *, found: int, expected: int) -> None:
    if found != expected:
        raise RequirementFailed(
            f"requirement failed: {name} has changed: expected {expected}, found {found}"
        )


@dataclass(frozen=True, slots=True)
class AssertLastAssignedFieldId:
    last_assigned_field_id: int
    type: ClassVar[str] = "assert-last-assigned-field-id"

    def validate(self, base: TableMetadata | None) -> None:
        meta = _require_base(base, "a last assigned field id expected")
        _int_requirement(
            "last assigned field id",
            found=meta.last_column_id,
            expected=self.last_assigned_field_id,
        )

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "last-assigned-field-id": self.last_assigned_field_id}


@dataclass(frozen=True, slots=True)
class AssertCurrentSchemaId:
    current_schema_id: int
    type: ClassVar[str] = "assert-current-schema-id"

    def validate(self, base: TableMetadata | None) -> None:
        meta = _require_base(base, "a current schema id expected")
        _int_requirement(
            "current schema id", found=meta.current_schema_id, expected=self.current_schema_id
        )

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "current-schema-id": self.current_schema_id}


@dataclass(frozen=True, slots=True)
class AssertLastAssignedPartitionId:
    last_assigned_partition_id: int
    type: ClassVar[str] = "assert-last-assigned-partition-id"

    def validate(self, base: TableMetadata | None) -> None:
        meta = _require_base(base, "a last assigned partition id expected")
        _int_requirement(
            "last assigned partition id",
            found=meta.last_partition_id,
            expected=self.last_assigned_partition_id,
        )

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "last-assigned-partition-id": self.last_assigned_partition_id}


@dataclass(frozen=True, slots=True)
class AssertDefaultSpecId:
    default_spec_id: int
    type: ClassVar[str] = "assert-default-spec-id"

    def validate(self, base: TableMetadata | None) -> None:
        meta = _require_base(base, "a default spec id expected")
        _int_requirement(
            "default partition spec id", found=meta.default_spec_id, expected=self.default_spec_id
        )

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "default-spec-id": self.default_spec_id}


@dataclass(frozen=True, slots=True)
class AssertDefaultSortOrderId:
    default_sort_order_id: int
    type: ClassVar[str] = "assert-default-sort-order-id"

    def validate(self, base: TableMetadata | None) -> None:
        meta = _require_base(base, "a default sort order id expected")
        _int_requirement(
            "default sort order id",
            found=meta.default_sort_order_id,
            expected=self.default_sort_order_id,
        )

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "default-sort-order-id": self.default_sort_order_id}


TableRequirement = (
    AssertCreate
    | AssertTableUUID
    | AssertRefSnapshotId
    | AssertLastAssignedFieldId
    | AssertCurrentSchemaId
    | AssertLastAssignedPartitionId
    | AssertDefaultSpecId
    | AssertDefaultSortOrderId
)


def validate_requirements(
    requirements: Sequence[TableRequirement], base: TableMetadata | None
) -> None:
    """Validate every requirement against ``base``; the first that fails raises."""
    for requirement in requirements:
        requirement.validate(base)


def requirements_for(base: TableMetadata, updates: Sequence[TableUpdate]) -> list[TableRequirement]:
    """The requirements that guard ``updates`` when they are re-applied to a newer base.

    Mirrors Iceberg's ``UpdateRequirements.forUpdateTable``: the table must be the same table
    (uuid), every ref the change moves must still be where it was, and a change to the schema,
    partitioning or sort order requires that nobody else changed the same thing meanwhile.
    """
    # Keyed so that each requirement appears once, in the order of the first update needing it.
    found: dict[str, TableRequirement] = {"uuid": AssertTableUUID(base.table_uuid)}
    for update in updates:
        if isinstance(update, SetSnapshotRef):
            current = base.refs.get(update.ref_name)
            found.setdefault(
                "ref:" + update.ref_name,
                AssertRefSnapshotId(
                    update.ref_name, current.snapshot_id if current is not None else None
                ),
            )
        elif isinstance(update, AddSchema):
            found.setdefault("field-id", AssertLastAssignedFieldId(base.last_column_id))
        elif isinstance(update, SetCurrentSchema):
            found.setdefault("schema", AssertCurrentSchemaId(base.current_schema_id))
        elif isinstance(update, AddPartitionSpec):
            found.setdefault("partition-id", AssertLastAssignedPartitionId(base.last_partition_id))
        elif isinstance(update, SetDefaultSpec):
            found.setdefault("spec", AssertDefaultSpecId(base.default_spec_id))
        elif isinstance(update, SetDefaultSortOrder):
            found.setdefault("sort", AssertDefaultSortOrderId(base.default_sort_order_id))
    return list(found.values())


# ---- JSON ----------------------------------------------------------------------------------
def _opt_int(obj: Mapping[str, Any], key: str) -> int | None:
    value = obj.get(key)
    return None if value is None else int(value)


def _spec_from_json(obj: dict[str, Any]) -> PartitionSpec:
    # The REST spec lets a client leave out "spec-id" of a spec it adds.
    return PartitionSpec.from_json({"spec-id": 0, **obj})


def _add_schema_from_json(obj: dict[str, Any]) -> AddSchema:
    schema = Schema.from_json(obj["schema"])
    # "last-column-id" is deprecated in the REST spec; the schema's highest id stands in.
    return AddSchema(schema, int(obj.get("last-column-id", schema.highest_field_id)))


_UPDATE_PARSERS: dict[str, Callable[[dict[str, Any]], TableUpdate]] = {
    AssignUUID.action: lambda o: AssignUUID(o["uuid"]),
    UpgradeFormatVersion.action: lambda o: UpgradeFormatVersion(int(o["format-version"])),
    AddSchema.action: _add_schema_from_json,
    SetCurrentSchema.action: lambda o: SetCurrentSchema(int(o["schema-id"])),
    AddPartitionSpec.action: lambda o: AddPartitionSpec(_spec_from_json(o["spec"])),
    SetDefaultSpec.action: lambda o: SetDefaultSpec(int(o["spec-id"])),
    AddSortOrder.action: lambda o: AddSortOrder(SortOrder.from_json(o["sort-order"])),
    SetDefaultSortOrder.action: lambda o: SetDefaultSortOrder(int(o["sort-order-id"])),
    AddSnapshot.action: lambda o: AddSnapshot(Snapshot.from_json(o["snapshot"])),
    SetSnapshotRef.action: lambda o: SetSnapshotRef(
        ref_name=o["ref-name"],
        snapshot_id=int(o["snapshot-id"]),
        ref_type=o["type"],
        max_ref_age_ms=_opt_int(o, "max-ref-age-ms"),
        max_snapshot_age_ms=_opt_int(o, "max-snapshot-age-ms"),
        min_snapshots_to_keep=_opt_int(o, "min-snapshots-to-keep"),
    ),
    RemoveSnapshots.action: lambda o: RemoveSnapshots(tuple(int(i) for i in o["snapshot-ids"])),
    RemoveSnapshotRef.action: lambda o: RemoveSnapshotRef(o["ref-name"]),
    SetLocation.action: lambda o: SetLocation(o["location"]),
    SetProperties.action: lambda o: SetProperties(dict(o["updates"])),
    RemoveProperties.action: lambda o: RemoveProperties(tuple(o["removals"])),
    SetPartitionStatistics.action: lambda o: SetPartitionStatistics(
        int(o["partition-statistics"]["snapshot-id"]),
        o["partition-statistics"]["statistics-path"],
        int(o["partition-statistics"]["file-size-in-bytes"]),
    ),
    SetStatistics.action: SetStatistics.from_json,
    RemoveStatistics.action: lambda o: RemoveStatistics(int(o["snapshot-id"])),
}

_REQUIREMENT_PARSERS: dict[str, Callable[[dict[str, Any]], TableRequirement]] = {
    AssertCreate.type: lambda o: AssertCreate(),
    AssertTableUUID.type: lambda o: AssertTableUUID(str(o["uuid"])),
    AssertRefSnapshotId.type: lambda o: AssertRefSnapshotId(o["ref"], _opt_int(o, "snapshot-id")),
    AssertLastAssignedFieldId.type: lambda o: AssertLastAssignedFieldId(
        int(o["last-assigned-field-id"])
    ),
    AssertCurrentSchemaId.type: lambda o: AssertCurrentSchemaId(int(o["current-schema-id"])),
    AssertLastAssignedPartitionId.type: lambda o: AssertLastAssignedPartitionId(
        int(o["last-assigned-partition-id"])
    ),
    AssertDefaultSpecId.type: lambda o: AssertDefaultSpecId(int(o["default-spec-id"])),
    AssertDefaultSortOrderId.type: lambda o: AssertDefaultSortOrderId(
        int(o["default-sort-order-id"])
    ),
}


def _parse_all(
    items: Sequence[dict[str, Any]],
    key: str,
    parsers: Mapping[str, Callable[[dict[str, Any]], Any]],
    what: str,
) -> list[Any]:
    out = []
    for item in items:
        try:
            parser = parsers[item[key]]
        except (KeyError, TypeError) as exc:
            raise CorruptMetadata(f"unknown {what} {item!r}") from exc
        try:
            out.append(parser(item))
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptMetadata(f"malformed {what} {item!r}: {exc!r}") from exc
    return out


def updates_from_json(items: Sequence[dict[str, Any]]) -> list[TableUpdate]:
    """Parse update records in the REST catalog's JSON shape."""
    return _parse_all(items, "action", _UPDATE_PARSERS, "table update")


def requirements_from_json(items: Sequence[dict[str, Any]]) -> list[TableRequirement]:
    """Parse requirement records in the REST catalog's JSON shape."""
    return _parse_all(items, "type", _REQUIREMENT_PARSERS, "table requirement")


__all__ = [
    "LAST_ADDED",
    "MAIN_BRANCH",
    "AddPartitionSpec",
    "AddSchema",
    "AddSnapshot",
    "AddSortOrder",
    "AssertCreate",
    "AssertCurrentSchemaId",
    "AssertDefaultSortOrderId",
    "AssertDefaultSpecId",
    "AssertLastAssignedFieldId",
    "AssertLastAssignedPartitionId",
    "AssertRefSnapshotId",
    "AssertTableUUID",
    "AssignUUID",
    "RemoveProperties",
    "RemoveSnapshotRef",
    "RemoveSnapshots",
    "RemoveStatistics",
    "SetCurrentSchema",
    "SetDefaultSortOrder",
    "SetDefaultSpec",
    "SetLocation",
    "SetPartitionStatistics",
    "SetProperties",
    "SetSnapshotRef",
    "SetStatistics",
    "StatisticsBlob",
    "TableRequirement",
    "TableUpdate",
    "UpgradeFormatVersion",
    "requirements_for",
    "requirements_from_json",
    "updates_from_json",
    "validate_requirements",
]

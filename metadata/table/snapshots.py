"""Snapshots, refs and the two logs of a table's history."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from lakecat.metadata.errors import ValidationError

RefType = Literal["branch", "tag"]
MAIN_BRANCH = "main"

# Snapshot operations (spec: "Snapshots").
APPEND = "append"
REPLACE = "replace"
OVERWRITE = "overwrite"
DELETE = "delete"
OPERATIONS = (APPEND, REPLACE, OVERWRITE, DELETE)

# Summary keys a writer computes: the operation and Iceberg's counts (SnapshotSummary). A
# snapshot property a user gives may not set one (a wrong count misleads every reader; an
# operation other engines do not know makes the table unreadable to them), nor a partition
# summary (``partitions.*``) or a key of lakecat's own (``lakecat.*``: idempotency, commit
# statistics, row moves).
COMPUTED_SUMMARY_KEYS = frozenset(
    {
        "operation",
        "added-data-files",
        "deleted-data-files",
        "total-data-files",
        "added-delete-files",
        "removed-delete-files",
        "total-delete-files",
        "added-position-delete-files",
        "removed-position-delete-files",
        "added-equality-delete-files",
        "removed-equality-delete-files",
        "added-dvs",
        "removed-dvs",
        "added-records",
        "deleted-records",
        "total-records",
        "added-files-size",
        "removed-files-size",
        "total-files-size",
        "added-position-deletes",
        "removed-position-deletes",
        "total-position-deletes",
        "added-equality-deletes",
        "removed-equality-deletes",
        "total-equality-deletes",
        "deleted-duplicate-files",
        "changed-partition-count",
        "partition-summaries-included",
    }
)
RESERVED_SUMMARY_PREFIXES = ("partitions.", "lakecat.")


def user_summary(properties: object) -> tuple[tuple[str, str], ...]:
    """Summary entries a user gives a write (``snapshot_properties``), as sorted pairs;
    :class:`ValidationError` for anything but a mapping of strings to strings, or for a key a
    writer computes (:data:`COMPUTED_SUMMARY_KEYS`, :data:`RESERVED_SUMMARY_PREFIXES`)."""
    if properties is None:
        return ()
    if not isinstance(properties, Mapping):
        raise ValidationError(
            f"snapshot properties are a mapping of strings to strings, not "
            f"{type(properties).__name__}"
        )
    for key, value in properties.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise ValidationError(
                f"snapshot property {key!r}: {value!r}: keys and values are strings"
            )
        if key in COMPUTED_SUMMARY_KEYS or key.startswith(RESERVED_SUMMARY_PREFIXES):
            raise ValidationError(
                f"snapshot property {key!r} is a summary entry the writer computes; "
                "choose another name"
            )
    return tuple(sorted(properties.items()))


@dataclass(frozen=True, slots=True)
class Snapshot:
    snapshot_id: int
    sequence_number: int
    timestamp_ms: int
    manifest_list: str
    operation: str
    summary: Mapping[str, str] = field(default_factory=dict)
    parent_snapshot_id: int | None = None
    schema_id: int | None = None
    first_row_id: int | None = None  # format v3 row lineage
    added_rows: int | None = None  # format v3 row lineage
    # The JSON bytes of this snapshot, made once: a table's metadata.json repeats every live
    # snapshot on every commit, and a snapshot never changes.
    _json: bytes | None = field(default=None, init=False, compare=False, repr=False)

    def summary_count(self, key: str) -> int | None:
        """A count from the summary (``"total-records"``, ...), None when absent or not a
        count."""
        value = self.summary.get(key)
        return int(value) if isinstance(value, str) and value.isdecimal() else None

    def __repr__(self) -> str:
        # One short line: the ids, the operation and the summary's counts; not the manifest
        # list's path or the whole summary.
        parts = [
            f"snapshot_id={self.snapshot_id}",
            f"parent_snapshot_id={self.parent_snapshot_id}",
            f"sequence_number={self.sequence_number}",
            f"timestamp_ms={self.timestamp_ms}",
            f"operation={self.operation!r}",
        ]
        for key, name in (
            ("added-data-files", "added_files"),
            ("added-records", "added_records"),
            ("deleted-data-files", "deleted_files"),
            ("deleted-records", "deleted_records"),
            ("total-records", "total_records"),
        ):
            value = self.summary_count(key)
            if value is not None:
                parts.append(f"{name}={value}")
        return f"Snapshot({', '.join(parts)})"

    def json_bytes(self) -> bytes:
        cached = self._json
        if cached is None:
            cached = orjson.dumps(self.to_json())
            object.__setattr__(self, "_json", cached)
        return cached

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "snapshot-id": self.snapshot_id,
        }
        if self.parent_snapshot_id is not None:
            out["parent-snapshot-id"] = self.parent_snapshot_id
        out["sequence-number"] = self.sequence_number
        out["timestamp-ms"] = self.timestamp_ms
        out["manifest-list"] = self.manifest_list
        out["summary"] = {"operation": self.operation, **self.summary}
        if self.schema_id is not None:
            out["schema-id"] = self.schema_id
        if self.first_row_id is not None:
            out["first-row-id"] = self.first_row_id
        if self.added_rows is not None:
            out["added-rows"] = self.added_rows
        return out

    @staticmethod
    def from_json(obj: dict[str, Any]) -> Snapshot:
        summary = dict(obj.get("summary") or {})
        operation = summary.pop("operation", APPEND)
        return Snapshot(
            snapshot_id=obj["snapshot-id"],
            parent_snapshot_id=obj.get("parent-snapshot-id"),
            sequence_number=obj.get("sequence-number", 0),
            timestamp_ms=obj["timestamp-ms"],
            manifest_list=obj["manifest-list"],
            operation=operation,
            summary=summary,
            schema_id=obj.get("schema-id"),
            first_row_id=obj.get("first-row-id"),
            added_rows=obj.get("added-rows"),
        )


@dataclass(frozen=True, slots=True)
class SnapshotRef:
    snapshot_id: int
    ref_type: RefType = "branch"
    min_snapshots_to_keep: int | None = None
    max_snapshot_age_ms: int | None = None
    max_ref_age_ms: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"snapshot-id": self.snapshot_id, "type": self.ref_type}
        if self.min_snapshots_to_keep is not None:
            out["min-snapshots-to-keep"] = self.min_snapshots_to_keep
        if self.max_snapshot_age_ms is not None:
            out["max-snapshot-age-ms"] = self.max_snapshot_age_ms
        if self.max_ref_age_ms is not None:
            out["max-ref-age-ms"] = self.max_ref_age_ms
        return out

    @staticmethod
    def from_json(obj: dict[str, Any]) -> SnapshotRef:
        return SnapshotRef(
            snapshot_id=obj["snapshot-id"],
            ref_type=obj["type"],
            min_snapshots_to_keep=obj.get("min-snapshots-to-keep"),
            max_snapshot_age_ms=obj.get("max-snapshot-age-ms"),
            max_ref_age_ms=obj.get("max-ref-age-ms"),
        )


@dataclass(frozen=True, slots=True)
class SnapshotLogEntry:
    timestamp_ms: int
    snapshot_id: int

    def to_json(self) -> dict[str, Any]:
        return {"timestamp-ms": self.timestamp_ms, "snapshot-id": self.snapshot_id}


@dataclass(frozen=True, slots=True)
class MetadataLogEntry:
    timestamp_ms: int
    metadata_file: str

    def to_json(self) -> dict[str, Any]:
        return {"timestamp-ms": self.timestamp_ms, "metadata-file": self.metadata_file}

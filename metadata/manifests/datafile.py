"""Frozen models of what manifests and manifest lists hold.

Partition tuples are Python tuples in the partition spec's field order, each value in
lakecat's in-memory form for the partition field's result type (see
:mod:`lakecat.metadata.schema.types`). Bounds are kept in the spec's single-value binary
serialization, exactly as stored in the manifest, and decoded on demand by
:mod:`lakecat.metadata.schema.conversions`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import IntEnum
from typing import Any


class Content(IntEnum):
    DATA = 0
    POSITION_DELETES = 1
    EQUALITY_DELETES = 2


class ManifestContent(IntEnum):
    DATA = 0
    DELETES = 1


class Status(IntEnum):
    EXISTING = 0
    ADDED = 1
    DELETED = 2


@dataclass(frozen=True, slots=True)
class DataFile:
    file_path: str
    file_format: str
    partition: tuple[Any, ...]
    record_count: int
    file_size_in_bytes: int
    spec_id: int = 0
    content: Content = Content.DATA
    column_sizes: Mapping[int, int] | None = None
    value_counts: Mapping[int, int] | None = None
    null_value_counts: Mapping[int, int] | None = None
    nan_value_counts: Mapping[int, int] | None = None
    lower_bounds: Mapping[int, bytes] | None = None
    upper_bounds: Mapping[int, bytes] | None = None
    key_metadata: bytes | None = None
    split_offsets: tuple[int, ...] | None = None
    equality_ids: tuple[int, ...] | None = None
    sort_order_id: int | None = None
    # format v3
    first_row_id: int | None = None
    referenced_data_file: str | None = None  # the data file a deletion vector is for
    content_offset: int | None = None  # where a deletion vector's blob starts in its file
    content_size_in_bytes: int | None = None  # and how long it is

    def __hash__(self) -> int:  # identity of a data file is its path
        return hash(self.file_path)

    @property
    def is_deletion_vector(self) -> bool:
        """A v3 deletion vector: position deletes in a Puffin file (one blob per data file)."""
        return self.content is Content.POSITION_DELETES and self.file_format.upper() == "PUFFIN"

    @property
    def key(self) -> tuple[str, int | None]:
        """What identifies the file's manifest entry: its path, and for a deletion vector
        also where its blob starts (one Puffin file holds the DVs of many data files)."""
        return self.file_path, self.content_offset


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """One row of a manifest.

    ``snapshot_id``, ``sequence_number`` and ``file_sequence_number`` are ``None`` when they are
    inherited from the manifest (spec: "Sequence Number Inheritance"); readers return entries
    with inheritance already applied.
    """

    status: Status
    data_file: DataFile
    snapshot_id: int | None = None
    sequence_number: int | None = None
    file_sequence_number: int | None = None

    def with_status(self, status: Status, snapshot_id: int | None) -> ManifestEntry:
        return replace(self, status=status, snapshot_id=snapshot_id)


@dataclass(frozen=True, slots=True)
class PartitionFieldSummary:
    contains_null: bool
    contains_nan: bool | None = None
    lower_bound: bytes | None = None
    upper_bound: bytes | None = None


@dataclass(frozen=True, slots=True)
class ManifestFile:
    """One row of a manifest list."""

    manifest_path: str
    manifest_length: int
    partition_spec_id: int
    content: ManifestContent
    sequence_number: int
    min_sequence_number: int
    added_snapshot_id: int
    added_files_count: int
    existing_files_count: int
    deleted_files_count: int
    added_rows_count: int
    existing_rows_count: int
    deleted_rows_count: int
    partitions: tuple[PartitionFieldSummary, ...] | None = None
    key_metadata: bytes | None = None
    # v3: the row id of the manifest's first data file without one (row lineage); None in v2
    first_row_id: int | None = None

    @property
    def has_added_files(self) -> bool:
        return self.added_files_count > 0

    @property
    def has_existing_files(self) -> bool:
        return self.existing_files_count > 0

    @property
    def has_deleted_files(self) -> bool:
        return self.deleted_files_count > 0

    @property
    def live_files_count(self) -> int:
        return self.added_files_count + self.existing_files_count

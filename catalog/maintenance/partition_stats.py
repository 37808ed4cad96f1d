"""Partition statistics files (Iceberg's ``compute_partition_stats``).

For one snapshot, a row per partition (and spec) of the table: the counts and sizes of its live
data files, position delete files, deletion vectors and equality delete files, and the snapshot
that last added or removed a file of it, as Iceberg's ``PartitionStatsHandler`` computes them
(a full compute; Iceberg's incremental one gives the same rows). The rows are written as a
Parquet file of the spec's schema ("Partition Statistics", field ids 1-12, 13 ``dv_count`` on
format v3; the ``partition`` struct is the table's partition type over all its specs, sorted
with nulls first) into the metadata folder, and registered in the table metadata
(``partition-statistics``) by one commit that replaces the snapshot's earlier file. Readers may
ignore the file; :func:`lakecat.catalog.maintenance.expire_snapshots` deletes it with its
snapshot.

``total_record_count`` (rows left after deletes) is null, as Iceberg 1.10 leaves it: it would
need every data file read.
"""

from __future__ import annotations

import io as io_module
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from lakecat.catalog.commit.producer import metadata_dir
from lakecat.catalog.maintenance.stats_files import write_and_register
from lakecat.metadata.errors import ValidationError
from lakecat.metadata.io.fileio import join
from lakecat.metadata.manifests.datafile import Content, DataFile, Status
from lakecat.metadata.manifests.manifest import read_manifest, read_manifest_list
from lakecat.metadata.partitioning.union import union_type
from lakecat.metadata.schema.arrow import schema_to_arrow
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import (
    IntegerType,
    LongType,
    NestedField,
    StructType,
    UUIDType,
)
from lakecat.metadata.table.snapshots import Snapshot
from lakecat.metadata.table.table_metadata import TableMetadata
from lakecat.metadata.table.updates import SetPartitionStatistics

if TYPE_CHECKING:
    from lakecat.catalog.table import Table


@dataclass(frozen=True)
class PartitionStatisticsFile:
    """A registered partition statistics file (the metadata's ``partition-statistics`` entry)."""

    snapshot_id: int
    path: str
    file_size_in_bytes: int


def compute_partition_stats(
    table: Table, snapshot_id: int | None = None
) -> PartitionStatisticsFile | None:
    """Compute the partition statistics of ``snapshot_id`` (the current snapshot by default),
    write them and register the file; None for a table without snapshots. A table that was
    never partitioned is refused (:class:`ValidationError`), as Iceberg refuses it."""
    metadata = table.metadata
    if snapshot_id is None:
        snapshot = metadata.current_snapshot
        if snapshot is None:
            return None
    else:
        snapshot = metadata.snapshot_by_id(snapshot_id)  # NoSuchSnapshot for an unknown id
    unified = union_type(metadata.partition_specs, metadata.schemas)
    if not unified.fields:
        raise ValidationError(
            f"cannot compute partition statistics of {table.name}: it is not partitioned"
        )
    rows = partition_stats(table.io, metadata, snapshot, unified)
    data = _parquet(rows, unified, metadata.format_version)
    location = join(
        metadata_dir(metadata), f"partition-stats-{snapshot.snapshot_id}-{uuid.uuid4()}.parquet"
    )
    write_and_register(
        table, location, data, SetPartitionStatistics(snapshot.snapshot_id, location, len(data))
    )
    return PartitionStatisticsFile(snapshot.snapshot_id, location, len(data))


@dataclass
class _Stats:
    partition: tuple[Any, ...]
    spec_id: int
    data_record_count: int = 0
    data_file_count: int = 0
    total_data_file_size_in_bytes: int = 0
    position_delete_record_count: int = 0
    position_delete_file_count: int = 0
    equality_delete_record_count: int = 0
    equality_delete_file_count: int = 0
    last_updated_at: int | None = None
    last_updated_snapshot_id: int | None = None
    dv_count: int = 0

    def live(self, f: DataFile) -> None:
        if f.content is Content.DATA:
            self.data_record_count += f.record_count
            self.data_file_count += 1
            self.total_data_file_size_in_bytes += f.file_size_in_bytes
        elif f.content is Content.POSITION_DELETES:
            self.position_delete_record_count += f.record_count
            if f.is_deletion_vector:
                self.dv_count += 1
            else:
                self.position_delete_file_count += 1
        else:
            self.equality_delete_record_count += f.record_count
            self.equality_delete_file_count += 1

    def touched(self, snapshot: Snapshot | None) -> None:
        if snapshot is not None and (
            self.last_updated_at is None or self.last_updated_at < snapshot.timestamp_ms
        ):
            self.last_updated_at = snapshot.timestamp_ms
            self.last_updated_snapshot_id = snapshot.snapshot_id


def partition_stats(
    io: Any, metadata: TableMetadata, snapshot: Snapshot, unified: StructType
) -> list[_Stats]:
    """The statistics rows of ``snapshot``, sorted by partition (nulls first), then spec:
    every entry of its manifests counts, a live one in the counts and its snapshot's time, a
    deleted one (a file the snapshot removed) only in the time; a partition whose files
    were all removed keeps a row of zeros, as Iceberg's."""
    specs = metadata.specs_by_id()
    schema = metadata.schema()
    positions = {f.field_id: i for i, f in enumerate(unified.fields)}
    stats: dict[tuple[int, tuple[Any, ...]], _Stats] = {}
    for manifest in read_manifest_list(io, snapshot.manifest_list):
        spec = specs[manifest.partition_spec_id]
        for entry in read_manifest(io, manifest, specs=specs, schema=schema):
            f = entry.data_file
            key = [None] * len(positions)
            for pf, value in zip(spec.fields, f.partition, strict=True):
                if pf.field_id in positions:
                    key[positions[pf.field_id]] = value
            partition = tuple(key)
            row = stats.setdefault((spec.spec_id, partition), _Stats(partition, spec.spec_id))
            if entry.status is not Status.DELETED:
                row.live(f)
            sid = entry.snapshot_id
            row.touched(
                metadata.snapshot_by_id(sid)
                if sid is not None and metadata.has_snapshot(sid)
                else None
            )
    return sorted(stats.values(), key=lambda s: (_order(s.partition), s.spec_id))


def _order(partition: tuple[Any, ...]) -> tuple[tuple[int, Any], ...]:
    return tuple((0, 0) if v is None else (1, v) for v in partition)


def stats_schema(unified: StructType, format_version: int) -> Schema:
    """The spec's partition statistics schema (Iceberg's ``PartitionStatistics.schema``)."""
    v3 = format_version >= 3  # the delete counts are required and dv_count is added
    fields = [
        NestedField(1, "partition", unified, required=True),
        NestedField(2, "spec_id", IntegerType(), required=True),
        NestedField(3, "data_record_count", LongType(), required=True),
        NestedField(4, "data_file_count", IntegerType(), required=True),
        NestedField(5, "total_data_file_size_in_bytes", LongType(), required=True),
        NestedField(6, "position_delete_record_count", LongType(), required=v3),
        NestedField(7, "position_delete_file_count", IntegerType(), required=v3),
        NestedField(8, "equality_delete_record_count", LongType(), required=v3),
        NestedField(9, "equality_delete_file_count", IntegerType(), required=v3),
        NestedField(10, "total_record_count", LongType(), required=False),
        NestedField(11, "last_updated_at", LongType(), required=False),
        NestedField(12, "last_updated_snapshot_id", LongType(), required=False),
    ]
    if v3:
        fields.append(NestedField(13, "dv_count", IntegerType(), required=True))
    return Schema(tuple(fields))


def _parquet(rows: list[_Stats], unified: StructType, format_version: int) -> bytes:
    schema = schema_to_arrow(stats_schema(unified, format_version))
    uuids = [i for i, f in enumerate(unified.fields) if isinstance(f.field_type, UUIDType)]
    columns: dict[str, list[Any]] = {name: [] for name in schema.names}
    for r in rows:
        values = [v.bytes if i in uuids and v is not None else v for i, v in enumerate(r.partition)]
        columns["partition"].append(
            {f.name: v for f, v in zip(unified.fields, values, strict=True)}
        )
        for name in schema.names[1:]:
            columns[name].append(None if name == "total_record_count" else getattr(r, name))
    table = pa.Table.from_pydict(columns, schema=schema)
    sink = io_module.BytesIO()
    pq.write_table(table, sink, compression="zstd")
    return sink.getvalue()

"""Table statistics files (Iceberg's ``compute_table_stats``): column NDV sketches in Puffin.

For one snapshot, a theta sketch of each chosen column's distinct values (an
``apache-datasketches-theta-v1`` blob with its ``ndv`` estimate, zstd-compressed, as Iceberg's
Spark runtime writes it), in one Puffin file in the metadata folder
(``<snapshot-id>-<uuid>.stats``), registered in the table metadata (``statistics``) by one
commit that replaces the snapshot's earlier file. Engines' planners read the ``ndv`` of a
column from the metadata (Trino, Spark with Iceberg) or merge the sketches; readers of rows
ignore the file. :func:`lakecat.catalog.maintenance.expire_snapshots` deletes it with its
snapshot.

The sketches themselves are computed where the rows are read: lakecat's Spark catalog
aggregates them in the JVM with Apache DataSketches (``<catalog>.system.ndv_sketch``, run by the
``compute_table_stats`` procedure), and hands the bytes to :func:`write_table_statistics`.
:func:`sketch_columns` says which columns a call covers.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lakecat.catalog.commit.producer import metadata_dir
from lakecat.catalog.maintenance.stats_files import write_and_register
from lakecat.metadata.deletes.puffin import footer_size, write_puffin
from lakecat.metadata.errors import CorruptMetadata, ValidationError
from lakecat.metadata.io.fileio import join
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import NestedField, PrimitiveType
from lakecat.metadata.statistics.theta import ndv_blob, ndvs
from lakecat.metadata.table.snapshots import Snapshot
from lakecat.metadata.table.table_metadata import TableMetadata
from lakecat.metadata.table.updates import SetStatistics, StatisticsBlob

if TYPE_CHECKING:
    from lakecat.catalog.table import Table

__all__ = [
    "StatisticsFile",
    "sketch_columns",
    "table_statistics",
    "write_table_statistics",
]

CREATED_BY = "created-by"


@dataclass(frozen=True)
class StatisticsFile:
    """A registered table statistics file (the metadata's ``statistics`` entry), with the
    ``ndv`` its blobs record for each column, by field id."""

    snapshot_id: int
    path: str
    file_size_in_bytes: int
    file_footer_size_in_bytes: int
    ndvs: Mapping[int, int] = field(default_factory=dict)


def sketch_columns(
    metadata: TableMetadata, snapshot: Snapshot, columns: Sequence[str] | None = None
) -> tuple[NestedField, ...]:
    """The columns a statistics run over ``snapshot`` sketches, in the snapshot's schema:
    the named ones (each once, a nested one by its dotted name), else every top-level column
    of a primitive type, as Iceberg chooses. A name that is not a column, or names a struct,
    list or map or a field inside a list or map, is a :class:`ValidationError`
    (:class:`UnknownColumn` for a name that is no column)."""
    schema = metadata.schema(snapshot.schema_id)
    if columns is None:
        chosen = tuple(f for f in schema.fields if isinstance(f.field_type, PrimitiveType))
    else:
        chosen = tuple(_column(schema, name) for name in dict.fromkeys(columns))
    if not chosen:
        raise ValidationError(f"no columns to compute statistics for in schema {schema}")
    return chosen


def write_table_statistics(
    table: Table,
    snapshot_id: int,
    sketches: Mapping[int, bytes],
    *,
    created_by: str,
) -> StatisticsFile:
    """Write the theta ``sketches`` of ``snapshot_id``'s columns (serialized compact sketches
    by field id) as a statistics file and register it, replacing the snapshot's earlier one.

    Sketches that are not compact theta sketches (:class:`CorruptMetadata`) or field ids that
    are not primitive columns of the snapshot's schema (:class:`ValidationError`) are refused
    before anything is written. A snapshot expired meanwhile fails the commit, and the file is
    deleted.
    """
    metadata = table.metadata
    snapshot = metadata.snapshot_by_id(snapshot_id)  # NoSuchSnapshot for an unknown id
    if not sketches:
        raise ValidationError("a statistics file needs at least one column sketch")
    schema = metadata.schema(snapshot.schema_id)
    for field_id in sketches:
        if not schema.has_field(field_id) or not isinstance(
            schema.find_type(field_id), PrimitiveType
        ):
            raise ValidationError(
                f"field id {field_id} is not a primitive column of snapshot {snapshot_id}'s "
                f"schema {schema}"
            )
    blobs = [
        ndv_blob(field_id, sketch, snapshot.snapshot_id, snapshot.sequence_number)
        for field_id, sketch in sketches.items()
    ]
    data, written = write_puffin(blobs, properties={CREATED_BY: created_by})
    location = join(metadata_dir(metadata), f"{snapshot.snapshot_id}-{uuid.uuid4()}.stats")
    update = SetStatistics(
        snapshot_id=snapshot.snapshot_id,
        statistics_path=location,
        file_size_in_bytes=len(data),
        file_footer_size_in_bytes=footer_size(data),
        blob_metadata=tuple(
            StatisticsBlob(b.type, b.snapshot_id, b.sequence_number, b.fields, b.properties)
            for b in written
        ),
    )
    write_and_register(table, location, data, update)
    return _statistics_file(update.entry())


def table_statistics(table: Table, snapshot_id: int | None = None) -> StatisticsFile | None:
    """The statistics file registered for ``snapshot_id`` (default: the current snapshot),
    None when there is none."""
    metadata = table.metadata
    wanted = metadata.current_snapshot_id if snapshot_id is None else snapshot_id
    return None if wanted is None else snapshot_statistics(metadata, wanted)


def snapshot_statistics(metadata: TableMetadata, snapshot_id: int) -> StatisticsFile | None:
    """The statistics file ``metadata`` registers for ``snapshot_id``, None when there is
    none (a malformed entry: ``CorruptMetadata``)."""
    for entry in metadata.statistics:
        if entry.get("snapshot-id") == snapshot_id:
            return _statistics_file(entry)
    return None


def _statistics_file(entry: Mapping[str, object]) -> StatisticsFile:
    try:
        parsed = SetStatistics.from_json({"statistics": entry})
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptMetadata(f"malformed statistics entry {dict(entry)!r}: {exc!r}") from exc
    return StatisticsFile(
        parsed.snapshot_id,
        parsed.statistics_path,
        parsed.file_size_in_bytes,
        parsed.file_footer_size_in_bytes,
        ndvs(parsed.blob_metadata),
    )


def _column(schema: Schema, name: str) -> NestedField:
    found = schema.find_field(name)  # UnknownColumn (a ValidationError) names the columns
    if not isinstance(found.field_type, PrimitiveType):
        raise ValidationError(
            f"can't compute statistics of a non-primitive column: {name} ({found.field_type})"
        )
    if schema.in_list_or_map(found.field_id):
        raise ValidationError(f"can't compute statistics of {name}: it is inside a list or map")
    return found

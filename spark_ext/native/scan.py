"""The SQL catalog's reads through Spark's own Parquet reader.

A read of a catalog table (``SELECT ... FROM lake.db.t``) is planned here, on the driver, for
the plugin's scan in the JVM (``lakecat.spark.LakecatScan``): the data files the pushed filters
choose and whether Spark's vectorized Parquet reader may read them itself (``reader=parquet``
on the scan's ``EXPLAIN`` line; the JVM hands Spark the files as ``FilePartition``s) or the
Python data source must (``reader=lakecat``, the reason logged). The conditions are those of
:func:`lakecat.spark_ext.read` (:mod:`.read`: names agree with field ids over the schema
history, no promoted types, no initial defaults, local Parquet files, ...), checked for the
columns the query reads, and:

* deletes are turned into positions here, on the driver: each data file's sorted deleted
  positions travel with the plan (``deletes``: little-endian int64s, base64) to the JVM,
  whose reader drops the rows whose row index (Spark's reader numbers every row of a file)
  is one of them. Position deletes and deletion vectors are read as they are; where an
  equality delete applies, the driver reads the data file's equality columns, applies every
  delete of the file to them and takes the positions of the rows that go. That read is
  bounded (:data:`MAX_EQUALITY_DELETE_ROWS` rows of such files per scan), and past it, or
  past :data:`MAX_NATIVE_DELETED_POSITIONS` positions, the data source reads the files;
* the read has no ``filter`` option (which the data source applies to the rows). The row id
  columns ``_file`` and ``_pos`` keep a read native: the JVM gives each file's rows its path
  (the ``file_path`` lakecat records, as a constant column) and Spark's reader numbers every
  row of a file (its row index), so the read of a row-level operation (``UPDATE``, ``MERGE``,
  ``DELETE``) is Spark's own too. So do the row lineage columns of a format v3 table
  (``_row_id``, ``_last_updated_sequence_number``): Spark reads the values a file stores (by
  those names), and the JVM assigns the nulls as the spec says (``fill_lineage``): the file's
  ``first_row_id`` plus the row's index, and the data sequence number of the file's manifest
  entry, both sent with the plan (``first_row_ids``, ``sequence_numbers``);
* each file's path reaches Spark as a ``file:`` URI that decodes to exactly its OS path, so
  spaces, ``=``, ``%`` and other characters in partition folders are read as they are.
"""

from __future__ import annotations

import base64
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lakecat.catalog.engine import DeleteReader, snapshot_statistics
from lakecat.metadata.expressions import Expression
from lakecat.metadata.io import FileIO
from lakecat.metadata.manifests import Content, DataFile
from lakecat.metadata.partitioning import PartitionSpec
from lakecat.metadata.schema import LINEAGE_COLUMNS, Schema, name_mapping_of
from lakecat.spark_ext.native.file_keys import native_os_path
from lakecat.spark_ext.native.read import (
    MAX_NATIVE_DELETED_POSITIONS,
    check_native_files,
    check_native_options,
    check_native_schema,
)
from lakecat.spark_ext.native.support import NotNative
from lakecat.spark_ext.source.planning import FilePlan, ReadView, plan_files
from lakecat.spark_ext.types import FILE_CONSTANTS

log = logging.getLogger("lakecat.spark")

# The metadata columns the JVM adds to Spark's reads: a file's path and row index, and the
# row lineage columns (what files store, nulls assigned).
METADATA_COLUMNS = frozenset({"_file", "_pos", *LINEAGE_COLUMNS})
# Equality deletes become positions on the driver by reading the equality columns of the data
# files they apply to: at most this many rows of such files per scan (a few seconds' read).
MAX_EQUALITY_DELETE_ROWS = 20_000_000
PARQUET_READER = "parquet"
LAKECAT_READER = "lakecat"


@dataclass(frozen=True)
class NativeFile:
    """A data file as Spark's Parquet reader takes it: a URI and the file's size, with the
    path lakecat records for it (the ``_file`` column's value)."""

    path: str
    uri: str
    size: int
    deleted: bytes | None = None  # the deleted row positions, little-endian int64, sorted
    first_row_id: int | None = None  # row lineage: the file's first row id
    sequence_number: int | None = None  # ... and its data sequence number


@dataclass(frozen=True)
class CatalogScan:
    """The plan of one catalog read: its data files, and either ``native`` (the files for
    Spark's Parquet reader) or the ``reason`` the Python data source reads them."""

    files: tuple[DataFile, ...]
    native: tuple[NativeFile, ...] | None
    reason: str | None = None
    ndvs: Mapping[str, int] = field(default_factory=dict)  # by top-level column name

    @property
    def reader(self) -> str:
        return PARQUET_READER if self.native is not None else LAKECAT_READER

    def to_json(self) -> dict[str, Any]:
        """The plan as the JVM scan reads it."""
        native = None
        if self.native is not None:
            native = {
                "paths": [f.path for f in self.native],
                "uris": [f.uri for f in self.native],
                "sizes": [f.size for f in self.native],
                "deletes": [
                    None if f.deleted is None else base64.b64encode(f.deleted).decode("ascii")
                    for f in self.native
                ],
                "first_row_ids": [f.first_row_id for f in self.native],
                "sequence_numbers": [f.sequence_number for f in self.native],
            }
        return {
            "files": [f.file_path for f in self.files],
            "rows": sum(f.record_count for f in self.files),
            "bytes": sum(f.file_size_in_bytes for f in self.files),
            "reader": self.reader,
            "reason": self.reason,
            "native": native,
            "ndvs": dict(self.ndvs),
        }


def plan_catalog_scan(
    view: ReadView, io: FileIO, *, prune_filter: Expression, columns: Sequence[str]
) -> CatalogScan:
    """The files of a catalog read of ``columns`` (top-level names) that ``prune_filter``
    chooses, and whether Spark's Parquet reader reads them."""
    lineage = any(c in LINEAGE_COLUMNS for c in columns)
    plan = (
        plan_files(io, view, [prune_filter], row_lineage=lineage)
        if view.snapshot is not None
        else None
    )
    files = plan.files if plan is not None else ()
    ndvs = column_ndvs(view)
    try:
        native = _native_files(view, io, plan, columns)
    except NotNative as exc:
        log.info(
            "lakecat: the catalog reads %s through the Python data source: %s",
            view.metadata_location,
            exc.reason,
        )
        return CatalogScan(files, None, exc.reason, ndvs)
    return CatalogScan(files, native, ndvs=ndvs)


def column_ndvs(view: ReadView) -> dict[str, int]:
    """The number of distinct values of each top-level column of the read that the statistics
    file of its snapshot records (``compute_table_stats``'s theta sketches), for Spark's
    cost-based optimizer, as Iceberg's runtime reports them; none for an incremental read,
    whose rows are not the snapshot's."""
    if view.snapshot is None or view.options.incremental:
        return {}
    stats = snapshot_statistics(view.metadata, view.snapshot.snapshot_id)
    if stats is None:
        return {}
    return {f.name: stats.ndvs[f.field_id] for f in view.schema.fields if f.field_id in stats.ndvs}


def _native_files(
    view: ReadView, io: FileIO, plan: FilePlan | None, columns: Sequence[str]
) -> tuple[NativeFile, ...]:
    check_native_options(view.options)
    asked = [c for c in columns if c in FILE_CONSTANTS]
    if asked:
        raise NotNative(f"the {' and '.join(asked)} metadata columns are the data source's")
    if view.options.row_filter:
        raise NotNative("the filter read option is applied to the rows by the data source")
    read_columns = [c for c in columns if c not in METADATA_COLUMNS]
    check_native_schema(view.metadata, view.schema.select(read_columns))
    if plan is None:
        return ()
    check_native_files(view.metadata, plan.files)
    deleted = _deleted_positions(view, io, plan)
    lineage = any(c in LINEAGE_COLUMNS for c in columns)
    return tuple(
        NativeFile(
            f.file_path,
            spark_uri(f.file_path),
            f.file_size_in_bytes,
            deleted.get(f.file_path),
            f.first_row_id if lineage else None,
            plan.sequence_numbers.get(f.file_path) if lineage else None,
        )
        for f in plan.files
    )


def _deleted_positions(view: ReadView, io: FileIO, plan: FilePlan) -> dict[str, bytes]:
    """The positions the plan's deletes delete, by data file path, as little-endian int64s
    (see the module docstring); :class:`NotNative` past the bounds."""
    if not plan.deletes:
        return {}
    by_path = {f.file_path: f for f in plan.files}
    equality = {
        path
        for path, deletes in plan.deletes.items()
        if any(d.content is Content.EQUALITY_DELETES for d in deletes)
    }
    rows = sum(by_path[p].record_count for p in equality)
    if rows > MAX_EQUALITY_DELETE_ROWS:
        raise NotNative(
            f"equality deletes apply to {rows:,} rows, more than the driver resolves "
            f"({MAX_EQUALITY_DELETE_ROWS:,}; the data source applies them in its tasks)"
        )
    reader = DeleteReader(
        io, view.schema, view.metadata.schemas, name_mapping_of(view.metadata.properties)
    )
    specs = view.metadata.specs_by_id()
    empty = Schema((), view.schema.schema_id)  # a read of no column: the positions it keeps
    out: dict[str, bytes] = {}
    total = 0
    for path, deletes in plan.deletes.items():
        data_file = by_path[path]
        if path in equality:
            spec = specs.get(data_file.spec_id)
            positions = _equality_deleted(reader, data_file, deletes, spec, empty)
        else:
            index = reader.position_index(data_file, deletes)
            if index is None:
                continue
            positions = index.positions.to_numpy(zero_copy_only=False)
        if not len(positions):
            continue
        total += len(positions)
        if total > MAX_NATIVE_DELETED_POSITIONS:
            raise NotNative(
                f"more than {MAX_NATIVE_DELETED_POSITIONS:,} deleted positions to ship to "
                "the executors (the data source reads the delete files in its tasks)"
            )
        out[path] = positions.astype("<i8", copy=False).tobytes()
    return out


_KEPT = "__lakecat_kept_position"


def _equality_deleted(
    reader: DeleteReader,
    data_file: DataFile,
    deletes: Sequence[DataFile],
    spec: PartitionSpec | None,
    empty: Schema,
) -> np.ndarray:
    """The sorted positions of ``data_file`` that ``deletes`` (equality deletes among them)
    delete: every position but those of the rows a read with the deletes applied keeps (the
    read takes the equality columns only)."""
    kept = reader.read(
        data_file,
        deletes,
        projected=empty,
        spec=spec,
        position_column=_KEPT,
    )
    deleted = np.ones(max(data_file.record_count, 0), dtype=bool)
    for batch in kept:
        positions = batch.column(_KEPT).to_numpy()
        if len(positions) and positions[-1] >= len(deleted):
            raise NotNative(f"{data_file.file_path} holds more rows than its manifest counts")
        deleted[positions] = False
    return np.flatnonzero(deleted).astype(np.int64)


def spark_uri(location: str) -> str:
    """The ``file:`` URI (percent-encoded) of a local data file, whose path decodes to the OS
    path lakecat reads; :class:`NotNative` for a file an older lakecat wrote under the
    unescaped form of its name (its FileIO finds those, Spark would not)."""
    return Path(os.path.abspath(native_os_path(location))).as_uri()

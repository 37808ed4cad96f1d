"""Position delete files (v2) and deletion vectors (v3): writing the former, reading which rows
of one data file either deletes (:func:`deleted_positions`, for the commit's row-level conflict
checks; scans apply deletes through :mod:`lakecat.catalog.read.deletes`).

A position delete file is a Parquet file of ``(file_path, pos)`` rows (spec: "Position Delete
Files"), sorted by file path then position, with the reserved field ids 2147483546 and
2147483545. lakecat writes one file per data file it deletes rows from (Iceberg's
``write.delete.granularity=file``, its default since 1.8), so every file it writes names a
single data file: its ``file_path`` lower and upper bounds are that path, kept whole (full
metrics, never truncated), which is how Iceberg Java, pyiceberg and lakecat's planner tell
which data file a v2 position delete file applies to without opening it.

A deletion vector (v3) is a ``deletion-vector-v1`` blob in a Puffin file;
:func:`write_deletion_vector_file` writes one Puffin file holding the DVs of several data files
and returns one manifest entry per DV (the spec's "Deletion Vectors").
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakecat.metadata import properties as P
from lakecat.metadata.deletes import (
    PositionIndex,
    positions_for_file,
    read_deletion_vector,
    write_deletion_vectors,
)
from lakecat.metadata.errors import CorruptMetadata, LakecatError, ValidationError
from lakecat.metadata.io.fileio import FileIO, deleted_on_error, join, local_path
from lakecat.metadata.io.parquet import partition_path, read_parquet_columns, write_data_file
from lakecat.metadata.manifests.datafile import Content, DataFile
from lakecat.metadata.manifests.delete_index import POS_FILE_PATH_ID, POS_POS_ID
from lakecat.metadata.partitioning.spec import PartitionSpec
from lakecat.metadata.schema.arrow import schema_to_arrow
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import LongType, NestedField, StringType

POSITION_DELETE_SCHEMA = Schema.of(
    NestedField(POS_FILE_PATH_ID, "file_path", StringType(), required=True),
    NestedField(POS_POS_ID, "pos", LongType(), required=True),
)
_ARROW_SCHEMA = schema_to_arrow(POSITION_DELETE_SCHEMA)
_DICTIONARY_SCHEMA = pa.schema(
    [_ARROW_SCHEMA.field(0).with_type(pa.dictionary(pa.int32(), pa.string())), _ARROW_SCHEMA[1]]
)


@dataclass(frozen=True)
class FileDeletes:
    """The rows of one data file to delete, by position (row numbers from 0), and the
    position delete files or deletion vector that applied to it when they were chosen (a v3
    deletion vector must hold those positions too, and replaces them)."""

    data_file: DataFile
    positions: pa.Int64Array
    applied: tuple[DataFile, ...] = ()


def write_position_delete_files(
    io: FileIO,
    folder: str,
    targets: Sequence[FileDeletes],
    *,
    specs: Mapping[int, PartitionSpec],
    schema: Schema,
    properties: Mapping[str, str],
    kind: str = "deletes",
    threads: int | None = None,
) -> list[DataFile]:
    """One position delete file per target, named ``<uuid>-<n>-<kind>.parquet`` in its data
    file's partition folder under ``folder`` (the table's data folder), in the targets' order.
    Up to ``threads`` files are written at once (default: :func:`delete_file_threads`, which
    gives several only on an object store, where their latencies overlap). On any failure the
    files already written are deleted, after the writes under way have ended, and the error
    of the first failed target (in the targets' order) propagates."""
    prefix = uuid.uuid4()

    def write(numbered: tuple[int, FileDeletes]) -> DataFile:
        n, target = numbered
        f = target.data_file
        spec = specs[f.spec_id]
        partition = partition_path(spec, schema, f.partition)
        name = f"{prefix}-{n:05d}-{kind}.parquet"
        location = join(folder, partition, name) if partition else join(folder, name)
        written = write_position_delete_file(
            io, location, f, target.positions, spec=spec, properties=properties
        )
        locations.append(location)  # list.append is atomic
        return written

    with deleted_on_error(io) as locations:
        numbered = list(enumerate(targets, start=1))
        at_once = min(threads or delete_file_threads(folder), len(numbered))
        if at_once <= 1:
            return [write(t) for t in numbered]
        with ThreadPoolExecutor(at_once, thread_name_prefix="lakecat-deletes") as pool:
            futures = [pool.submit(write, t) for t in numbered]
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            if any(f.exception() is not None for f in done):
                for future in futures:  # a failure stops the writes not yet started
                    future.cancel()
        # (the pool has ended: every write under way is done)
        errors = (f.exception() for f in futures if not f.cancelled())
        first = next((e for e in errors if e is not None), None)
        if first is not None:
            raise first
        return [future.result() for future in futures]


# how many delete files a commit writes (or reads, for the deletion vectors its new ones replace)
# at once on an object store
DELETE_FILE_THREADS = 8


def delete_file_threads(location: str) -> int:
    """How many delete files to write or read at once under ``location``: on an object store
    :data:`DELETE_FILE_THREADS`, whose requests' latencies then overlap (about 2x faster on a
    loopback S3 server, docs/benchmarks.md); on a local disk one, since writing a small file
    there is mostly Python work that threads only slow down."""
    return 1 if local_path(location) is not None else DELETE_FILE_THREADS


def write_position_delete_file(
    io: FileIO,
    location: str,
    data_file: DataFile,
    positions: pa.Array | pa.ChunkedArray,
    *,
    spec: PartitionSpec,
    properties: Mapping[str, str],
) -> DataFile:
    """Write the ``positions`` of ``data_file`` (row numbers from 0, any order, no duplicates
    needed) as one position delete file at ``location``, in ``data_file``'s partition.

    Compression and row-group settings come from the table ``properties``; the metrics are
    always full (the ``file_path`` bounds must name the data file exactly). Raises
    :class:`ValidationError` for no positions, a negative one, or one past the file's rows.
    """
    if data_file.spec_id != spec.spec_id:
        raise ValidationError(f"{data_file.file_path} is in spec {data_file.spec_id}, not {spec}")
    sorted_positions = _sorted_unique(positions)
    n = len(sorted_positions)
    if n == 0:
        raise ValidationError(f"no positions to delete from {data_file.file_path}")
    first, last = sorted_positions[0].as_py(), sorted_positions[n - 1].as_py()
    if first < 0 or last >= data_file.record_count:
        raise ValidationError(
            f"position {first if first < 0 else last} is outside {data_file.file_path}, which "
            f"has {data_file.record_count} rows"
        )
    # the path once, as a one-value dictionary: a string per row costs the driver a gigabyte
    # and seconds for ten million positions (docs/benchmarks.md)
    path = pa.DictionaryArray.from_arrays(
        pa.repeat(pa.scalar(0, pa.int32()), n), pa.array([data_file.file_path], pa.string())
    )
    rows = pa.Table.from_arrays([path, sorted_positions], schema=_DICTIONARY_SCHEMA)
    written = write_data_file(
        io,
        location,
        rows,
        schema=POSITION_DELETE_SCHEMA,
        spec=spec,
        partition=data_file.partition,
        properties=_full_metrics(properties),
    )
    return replace(written, content=Content.POSITION_DELETES)


@dataclass(frozen=True)
class VectorTarget:
    """The deleted positions of one data file for a deletion vector, and the data file's
    partition (the DV's manifest entry is in the data file's spec and partition)."""

    data_file_path: str
    spec_id: int
    partition: tuple[Any, ...]
    positions: pa.Int64Array


DV_CREATED_BY = "lakecat"


def write_deletion_vector_file(
    io: FileIO, folder: str, targets: Sequence[VectorTarget]
) -> list[DataFile]:
    """One Puffin file ``<uuid>-deletes.puffin`` in ``folder`` with one deletion vector per
    target, and the DVs' manifest entries (``referenced_data_file``, ``content_offset`` and
    ``content_size_in_bytes`` as the Puffin footer says; the record count is the DV's
    cardinality). On any failure no file is left behind."""
    if not targets:
        return []
    by_path = {t.data_file_path: t for t in targets}
    if len(by_path) != len(targets):
        raise ValidationError("two deletion vectors for one data file")
    data, locations = write_deletion_vectors(
        {t.data_file_path: t.positions for t in targets}, properties={"created-by": DV_CREATED_BY}
    )
    location = join(folder, f"{uuid.uuid4()}-deletes.puffin")
    with deleted_on_error(io) as written:
        written.append(location)  # a partly written file goes too
        io.write(location, data, exclusive=True)
    return [
        DataFile(
            file_path=location,
            file_format="puffin",
            partition=by_path[dv.referenced_data_file].partition,
            record_count=dv.cardinality,
            file_size_in_bytes=len(data),
            spec_id=by_path[dv.referenced_data_file].spec_id,
            content=Content.POSITION_DELETES,
            referenced_data_file=dv.referenced_data_file,
            content_offset=dv.content_offset,
            content_size_in_bytes=dv.content_size_in_bytes,
        )
        for dv in locations
    ]


def deleted_positions(io: FileIO, delete_file: DataFile, data_file_path: str) -> PositionIndex:
    """The positions of ``data_file_path`` that a position delete file or deletion vector
    deletes. Raises :class:`CorruptMetadata` when the file cannot be read."""
    if delete_file.content is not Content.POSITION_DELETES:
        raise ValidationError(f"{delete_file.file_path} is not a position delete file")
    try:
        source = io.open_input(delete_file.file_path)
        try:
            if delete_file.is_deletion_vector:
                if delete_file.referenced_data_file != data_file_path:
                    return PositionIndex()
                if delete_file.content_offset is None or delete_file.content_size_in_bytes is None:
                    raise CorruptMetadata(f"deletion vector {delete_file.file_path} has no offset")
                bitmap = read_deletion_vector(
                    source,
                    delete_file.content_offset,
                    delete_file.content_size_in_bytes,
                    expected_cardinality=delete_file.record_count,
                )
                return PositionIndex(bitmap)
            rows = read_parquet_columns(source, ["file_path", "pos"])
        finally:
            source.close()
    except CorruptMetadata:
        raise
    except (OSError, LakecatError, pa.ArrowException, KeyError, ValueError) as exc:
        raise CorruptMetadata(
            f"delete file {delete_file.file_path} cannot be read ({type(exc).__name__}: {exc})"
        ) from exc
    return positions_for_file(rows, data_file_path)


def _sorted_unique(positions: pa.Array | pa.ChunkedArray) -> pa.Int64Array:
    values = pc.cast(positions, pa.int64())
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if values.null_count:
        raise ValidationError("a position to delete is null")
    if len(values) < 2 or pc.all(pc.greater(values[1:], values[:-1])).as_py():
        return values  # already strictly increasing (a bitmap's positions): kept as they are
    unique = pc.unique(values)
    return pc.take(unique, pc.sort_indices(unique))


def _full_metrics(properties: Mapping[str, str]) -> dict[str, Any]:
    out = {
        k: v
        for k, v in properties.items()
        if not k.startswith(P.METRICS_MODE_COLUMN_PREFIX) and k != P.METRICS_MODE_DEFAULT
    }
    out[P.METRICS_MODE_DEFAULT] = "full"
    return out

"""Turn user data into Parquet data files of a table: conform, partition, split, write.

Data files are written once, before any commit attempt, under the table's data folder in
Hive-style partition folders; their names carry a fresh UUID so no two writers collide.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import TypeAlias

import pyarrow as pa

from lakecat.catalog.commit.producer import data_dir
from lakecat.metadata import properties as P
from lakecat.metadata.errors import SchemaMismatch
from lakecat.metadata.io.fileio import FileIO, deleted_on_error, join
from lakecat.metadata.io.parquet import partition_and_split, partition_path, write_data_file
from lakecat.metadata.io.sorting import sort_rows
from lakecat.metadata.manifests.datafile import DataFile
from lakecat.metadata.schema.arrow import conform_to_schema
from lakecat.metadata.schema.lineage import has_lineage, with_lineage
from lakecat.metadata.table.table_metadata import TableMetadata

Data: TypeAlias = pa.Table | pa.RecordBatchReader | pa.RecordBatch

# A RecordBatchReader is consumed in slices of about this many bytes (in memory) at a time.
_READER_SLICE_BYTES = 256 * 1024 * 1024


def as_tables(data: Data) -> Iterator[pa.Table]:
    if isinstance(data, pa.Table):
        yield data
    elif isinstance(data, pa.RecordBatch):
        yield pa.Table.from_batches([data])
    elif isinstance(data, pa.RecordBatchReader):
        pending: list[pa.RecordBatch] = []
        size = 0
        for batch in data:
            pending.append(batch)
            size += batch.nbytes
            if size >= _READER_SLICE_BYTES:
                yield pa.Table.from_batches(pending, schema=data.schema)
                pending, size = [], 0
        if pending:
            yield pa.Table.from_batches(pending, schema=data.schema)
    else:
        raise SchemaMismatch(
            f"expected a pyarrow Table, RecordBatch or RecordBatchReader, got {type(data).__name__}"
        )


def conform(metadata: TableMetadata, data: Data) -> list[pa.Table]:
    """Check and cast all of ``data`` to the table schema before anything is written."""
    schema = metadata.schema()
    return [conform_to_schema(t, schema) for t in as_tables(data)]


def write_files(
    io: FileIO, metadata: TableMetadata, tables: list[pa.Table], *, keep_order: bool = False
) -> list[DataFile]:
    """Write conformed tables as data files of the default partition spec.

    When the table has a sort order, each table's rows are sorted by it before they are
    partitioned and cut into files (so every file is sorted, as Iceberg's Spark writes with a
    table sort order are), and the files record the order's id; ``keep_order`` writes the
    rows in the order given instead (a compaction that records where each row went) and
    records no order.

    Tables of rows copied from a v3 table carry the row lineage columns
    (:func:`~lakecat.metadata.schema.lineage.with_lineage`); they are written with them.
    On any failure the files already written are deleted before the error propagates.
    """
    table_schema = metadata.schema()
    spec = metadata.spec()
    order = None if keep_order else metadata.sort_order()
    if order is not None and order.is_unsorted:
        order = None
    target = P.get_int(
        metadata.properties, P.WRITE_TARGET_FILE_SIZE_BYTES, P.WRITE_TARGET_FILE_SIZE_BYTES_DEFAULT
    )
    root = data_dir(metadata)
    prefix = uuid.uuid4()
    written: list[DataFile] = []
    with deleted_on_error(io) as locations:
        n = 0
        for table in tables:
            schema = with_lineage(table_schema) if has_lineage(table) else table_schema
            if order is not None:
                table = sort_rows(table, schema, order.fields)
            for partition, chunk in partition_and_split(
                table, schema=schema, spec=spec, target_file_size_bytes=target
            ):
                if chunk.num_rows == 0:
                    continue
                n += 1
                folder = partition_path(spec, schema, partition)
                name = f"{prefix}-{n:05d}.parquet"
                location = join(root, folder, name) if folder else join(root, name)
                written.append(
                    write_data_file(
                        io,
                        location,
                        chunk,
                        schema=schema,
                        spec=spec,
                        partition=partition,
                        properties=metadata.properties,
                        sort_order_id=None if order is None else order.order_id,
                    )
                )
                locations.append(location)
    return written

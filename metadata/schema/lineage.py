"""Row lineage (format v3): the reserved columns ``_row_id`` and ``_last_updated_sequence_number``.

The spec ("Row Lineage"): a data file may store either column (a writer that copies rows keeps
them); where a file lacks one, or holds null, a reader assigns

* ``_row_id`` = the data file's ``first_row_id`` (inherited from its manifest when null, see
  :func:`~lakecat.metadata.manifests.manifest.entry_decoder`) + the row's position in the file;
* ``_last_updated_sequence_number`` = the data sequence number of the file's manifest entry.

Both stay null in a table without row lineage (format v2: no ``first_row_id``).

Writers that move rows to new files (copy-on-write changes, compaction) read both columns and
write them back (:func:`with_lineage` is the schema they write with): a row keeps its
``_row_id``, and a row the write changed gets a null ``_last_updated_sequence_number``
(:func:`mark_modified`), so it inherits the sequence number of the commit that changed it.
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa
import pyarrow.compute as pc

from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import LongType, NestedField

__all__ = [
    "LAST_UPDATED_SEQUENCE_NUMBER",
    "LINEAGE_COLUMNS",
    "ROW_ID",
    "fill_lineage",
    "has_lineage",
    "mark_modified",
    "with_lineage",
]

ROW_ID = NestedField(2147483540, "_row_id", LongType(), required=False)
LAST_UPDATED_SEQUENCE_NUMBER = NestedField(
    2147483539, "_last_updated_sequence_number", LongType(), required=False
)
LINEAGE_COLUMNS: Mapping[str, NestedField] = {
    f.name: f for f in (ROW_ID, LAST_UPDATED_SEQUENCE_NUMBER)
}


def fill_lineage(
    batch: pa.RecordBatch,
    positions: pa.Array,
    *,
    first_row_id: int | None,
    sequence_number: int | None,
) -> pa.RecordBatch:
    """``batch`` (rows of one data file, read with whichever lineage columns were asked for)
    with the nulls of those columns assigned as the spec says; ``positions`` are the rows'
    positions in the file. A file without a ``first_row_id`` (written before its table was
    upgraded to v3, listed by a snapshot from before) assigns neither column."""
    columns = list(batch.columns)
    for i, name in enumerate(batch.schema.names):
        if name == ROW_ID.name and first_row_id is not None:
            assigned = pc.add(positions.cast(pa.int64()), pa.scalar(first_row_id, pa.int64()))
            columns[i] = pc.coalesce(columns[i], assigned)
        elif (
            name == LAST_UPDATED_SEQUENCE_NUMBER.name
            and sequence_number is not None
            and first_row_id is not None  # spec: a file without row ids has neither column
        ):
            columns[i] = pc.coalesce(columns[i], pa.scalar(sequence_number, pa.int64()))
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema)


def with_lineage(schema: Schema) -> Schema:
    """``schema`` with both row lineage columns after its own: what a writer that copies rows
    of a v3 table reads them with and writes them back with."""
    own = [f for f in schema.fields if f.name not in LINEAGE_COLUMNS]
    return Schema(
        (*own, ROW_ID, LAST_UPDATED_SEQUENCE_NUMBER),
        schema.schema_id,
        schema.identifier_field_ids,
    )


def has_lineage(table: pa.Table | pa.RecordBatch) -> bool:
    """Whether rows carry their row lineage columns (rows copied from a v3 table)."""
    return ROW_ID.name in table.schema.names


def mark_modified(table: pa.Table, mask: pa.Array | pa.ChunkedArray) -> pa.Table:
    """``table`` with a null ``_last_updated_sequence_number`` where ``mask`` is true: those
    rows were changed and take the sequence number of the commit that writes them. Rows
    without lineage columns are returned as they are."""
    name = LAST_UPDATED_SEQUENCE_NUMBER.name
    if name not in table.schema.names:
        return table
    index = table.schema.get_field_index(name)
    column = table.column(index)
    cleared = pc.if_else(pc.fill_null(mask, False), pa.scalar(None, column.type), column)
    return table.set_column(index, table.schema.field(index), cleared)

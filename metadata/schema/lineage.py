"""Row lineage (format v3): the reserved columns ``_row_id`` and ``_last_updated_sequence_number``.

The spec ("Row Lineage"): a data file may store either column (a writer that copies rows keeps
them); where a file lacks one, or holds null, a reader assigns

* ``_row_id`` = the data file's ``first_row_id`` (inherited from its manifest when null, see
  :func:`~lakecat.metadata.manifests.manifest.entry_decoder`) + the row's position in the file;
* ``_last_updated_sequence_number`` = the data sequence number of the file's manifest entry.

Both stay null in a table without row lineage (format v2: no ``first_row_id``).
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa
import pyarrow.compute as pc

from lakecat.metadata.schema.types import LongType, NestedField

__all__ = [
    "LAST_UPDATED_SEQUENCE_NUMBER",
    "LINEAGE_COLUMNS",
    "ROW_ID",
    "fill_lineage",
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
    positions in the file."""
    columns = list(batch.columns)
    for i, name in enumerate(batch.schema.names):
        if name == ROW_ID.name and first_row_id is not None:
            assigned = pc.add(positions.cast(pa.int64()), pa.scalar(first_row_id, pa.int64()))
            columns[i] = pc.coalesce(columns[i], assigned)
        elif name == LAST_UPDATED_SEQUENCE_NUMBER.name and sequence_number is not None:
            columns[i] = pc.coalesce(columns[i], pa.scalar(sequence_number, pa.int64()))
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema)

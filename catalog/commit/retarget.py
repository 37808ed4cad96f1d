"""Re-target a merge-on-read change onto the files of a compaction that committed first (v3).

A merge-on-read DELETE / UPDATE / MERGE of a format v3 table deletes rows by position, in
deletion vectors of the data files it read. When a compaction (a ``replace`` snapshot: the same
rows in new files) commits first, those data files are gone, but every row kept its
``_row_id`` (spec, "Row Lineage": a rewrite copies it). So the change is not lost: the rows it
deleted are found again by row id in the compaction's output files, and the commit writes
deletion vectors for those instead. Nothing is re-read but two long columns (row ids), and no
data file is rewritten. This is the "DML never loses to a compaction" of seeds 000 and 004;
`docs/concurrency.md`, "Row-level cells", has the rules.

:func:`retarget` is the pure part: given each compacted file's row ids, the positions the
change deleted in it, and the output files' row ids, where those rows are now.
:func:`row_ids` reads a data file's row ids.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from lakecat.metadata.io.fileio import FileIO
from lakecat.metadata.io.parquet import read_data_file
from lakecat.metadata.manifests.datafile import DataFile
from lakecat.metadata.schema.lineage import ROW_ID, fill_lineage
from lakecat.metadata.schema.schema import Schema


def row_ids(io: FileIO, f: DataFile) -> pa.Int64Array | None:
    """Every row's ``_row_id`` in ``f``, in file order (stored values, else the file's
    ``first_row_id`` plus the row's position); ``None`` when some row has none (a file
    without ``first_row_id``, e.g. listed only by snapshots from before a v3 upgrade)."""
    rows = read_data_file(io, f, projected=Schema((ROW_ID,)))
    positions = pa.array(range(rows.num_rows), pa.int64())
    batch = pa.RecordBatch.from_arrays([rows.column(0).combine_chunks()], names=[ROW_ID.name])
    filled = fill_lineage(batch, positions, first_row_id=f.first_row_id, sequence_number=None)
    ids = filled.column(0)
    if ids.null_count:
        return None
    return ids.cast(pa.int64())


@dataclass(frozen=True)
class Retargeted:
    """Where the deleted rows are now: positions per output file path, and the row ids found
    in no output (rows the compaction did not carry: deleted meanwhile)."""

    positions: Mapping[str, pa.Int64Array]
    missing: pa.Int64Array


def retarget(
    deleted: Sequence[tuple[pa.Int64Array, pa.Int64Array]],
    outputs: Sequence[tuple[str, pa.Int64Array]],
) -> Retargeted:
    """``deleted``: per compacted file, (its row ids in file order, the positions the change
    deleted in it); ``outputs``: per output file, (its path, its row ids in file order)."""
    chunks = [pc.take(ids, positions) for ids, positions in deleted if len(positions)]
    wanted = pa.concat_arrays(chunks) if chunks else pa.array([], pa.int64())
    found: dict[str, pa.Int64Array] = {}
    hits = []
    for path, ids in outputs:
        mask = pc.is_in(ids, value_set=wanted)
        where = pc.indices_nonzero(mask).cast(pa.int64())
        if len(where):
            found[path] = where
            hits.append(pc.take(ids, where))
    seen = pa.concat_arrays(hits) if hits else pa.array([], pa.int64())
    missing = pc.filter(wanted, pc.invert(pc.is_in(wanted, value_set=seen)))
    return Retargeted(found, missing)

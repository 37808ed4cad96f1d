"""Re-target a merge-on-read change onto the files of a compaction that committed first (v3).

A merge-on-read DELETE / UPDATE / MERGE of a format v3 table deletes rows by position, in
deletion vectors of the data files it read. When a compaction (a ``replace`` snapshot: the same
rows in new files) commits first, those data files are gone, but every row kept its
``_row_id`` (spec, "Row Lineage": a rewrite copies it). So the change is not lost: the rows it
deleted are found again by row id in the compaction's output files, and the commit writes
deletion vectors for those instead. Nothing is re-read but the row lineage columns, and no
data file is rewritten. This is the "DML never loses to a compaction" of seeds 000 and 004;
`docs/concurrency.md`, "Row-level cells", has the rules.

:func:`retarget` is the pure part: given each compacted file's row versions, the positions the
change deleted in it, and the output files' row versions, where those rows are now. A row is
matched by its id **and** its ``_last_updated_sequence_number``: a concurrent UPDATE keeps the
row id in the new version, which the change never saw and must not delete or change.
:func:`row_versions` reads a data file's row versions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from lakecat.metadata.deletes import row_positions
from lakecat.metadata.io.fileio import FileIO
from lakecat.metadata.io.parquet import read_data_file
from lakecat.metadata.manifests.datafile import DataFile
from lakecat.metadata.schema.lineage import LAST_UPDATED_SEQUENCE_NUMBER, ROW_ID, fill_lineage
from lakecat.metadata.schema.schema import Schema


@dataclass(frozen=True)
class RowVersions:
    """A data file's rows in file order: each row's ``_row_id`` and
    ``_last_updated_sequence_number``. The two name one version of a row: an UPDATE keeps the
    row id and gives the new version the commit's sequence number."""

    ids: pa.Int64Array
    sequence_numbers: pa.Int64Array


def row_versions(io: FileIO, f: DataFile, sequence_number: int | None) -> RowVersions | None:
    """Every row's version in ``f``: stored values, else the file's ``first_row_id`` plus the
    row's position, and ``sequence_number`` (the file's data sequence number; ``None``: stored
    values only, as for a compaction's output, which copies them). ``None`` when some row has
    no row id or no sequence number (a file without ``first_row_id``, e.g. listed only by
    snapshots from before a v3 upgrade, or an output that did not copy the lineage)."""
    rows = read_data_file(io, f, projected=Schema((ROW_ID, LAST_UPDATED_SEQUENCE_NUMBER)))
    positions = row_positions(0, rows.num_rows)
    batch = pa.RecordBatch.from_arrays(
        [rows.column(0).combine_chunks(), rows.column(1).combine_chunks()],
        names=[ROW_ID.name, LAST_UPDATED_SEQUENCE_NUMBER.name],
    )
    filled = fill_lineage(
        batch, positions, first_row_id=f.first_row_id, sequence_number=sequence_number
    )
    ids, sequence_numbers = filled.column(0), filled.column(1)
    if ids.null_count or sequence_numbers.null_count:
        return None
    return RowVersions(ids.cast(pa.int64()), sequence_numbers.cast(pa.int64()))


@dataclass(frozen=True)
class Retargeted:
    """Where the deleted rows are now: positions per output file path, and the row versions
    found in no output (ids; rows the compaction did not carry, or carried in a newer version:
    deleted or changed meanwhile)."""

    positions: Mapping[str, pa.Int64Array]
    missing: pa.Int64Array


def retarget(
    deleted: Sequence[tuple[RowVersions, pa.Int64Array]],
    outputs: Sequence[tuple[str, RowVersions]],
) -> Retargeted:
    """``deleted``: per compacted file, (its row versions in file order, the positions the
    change deleted in it); ``outputs``: per output file, (its path, its row versions in file
    order). A row is found again where an output holds the same version of it: a newer version
    (a concurrent UPDATE's) is another row for the change, which never saw it."""
    chunks = [
        _versions(pc.take(rows.ids, positions), pc.take(rows.sequence_numbers, positions))
        for rows, positions in deleted
        if len(positions)
    ]
    wanted = pa.concat_tables(chunks) if chunks else _versions()
    found: dict[str, pa.Int64Array] = {}
    hits = []
    for path, rows in outputs:
        held = _versions(rows.ids, rows.sequence_numbers).append_column(
            "pos", row_positions(0, len(rows.ids))
        )
        hit = held.join(wanted, keys=["id", "seq"], join_type="left semi")
        if hit.num_rows:
            where = hit.column("pos").combine_chunks()
            found[path] = pc.take(where, pc.sort_indices(where))
            hits.append(hit.select(["id", "seq"]))
    seen = pa.concat_tables(hits) if hits else _versions()
    missing = wanted.join(seen, keys=["id", "seq"], join_type="left anti")
    return Retargeted(found, missing.column("id").combine_chunks())


def _versions(ids: pa.Array | None = None, sequence_numbers: pa.Array | None = None) -> pa.Table:
    """Row versions as a table to join on (none: an empty one)."""
    empty = pa.array([], pa.int64())
    return pa.table(
        {
            "id": empty if ids is None else ids,
            "seq": empty if sequence_numbers is None else sequence_numbers,
        }
    )

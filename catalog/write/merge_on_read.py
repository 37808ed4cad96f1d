"""Merge-on-read: row-level changes written as delete files instead of rewritten data files.

Which mode an operation uses is the table's choice, by Iceberg's properties
``write.delete.mode`` (delete, and overwrite by filter), ``write.update.mode`` and
``write.merge.mode`` (merge and upsert): ``copy-on-write`` (the default, as Iceberg's for v2
tables) rewrites every data file that holds a changed row; ``merge-on-read`` leaves data files
alone and writes, for each one with changed rows, a position delete file naming the rows'
positions (:mod:`lakecat.metadata.io.position_deletes`); updated and inserted rows go to new
data files. Files whose every row is deleted are still dropped whole, without a delete file
(Iceberg's metadata-only delete).

A merge-on-read intent keeps what the conflict checks need: the data files it deletes rows
from are *read* files (a concurrent commit that removes one, e.g. a copy-on-write rewrite or a
compaction, conflicts), and its delete files name the rows (two operations that delete
different rows of one file both commit; see :mod:`lakecat.catalog.commit.conflicts`).
Format v3 tables take deletion vectors instead of position delete files (the spec forbids new
position delete files there): one Puffin file per operation holds one ``deletion-vector-v1``
blob per data file with changed rows. A data file has at most one DV, so the new DV also holds
the positions its previous DV and position delete files deleted, and the commit removes those
(:func:`replaced_deletes`; a position delete file that names other data files too stays, and
readers ignore it for a file that has a DV).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.compute as pc

from lakecat.catalog.commit.intent import OpKind
from lakecat.catalog.commit.producer import data_dir
from lakecat.catalog.read.deletes import DeleteReader
from lakecat.metadata import properties as P
from lakecat.metadata.deletes import PositionIndex
from lakecat.metadata.errors import ValidationError
from lakecat.metadata.io.fileio import FileIO
from lakecat.metadata.io.position_deletes import (
    FileDeletes,
    VectorTarget,
    delete_file_threads,
    write_deletion_vector_file,
    write_position_delete_files,
)
from lakecat.metadata.manifests.datafile import Content, DataFile
from lakecat.metadata.manifests.delete_index import named_data_file
from lakecat.metadata.schema.name_mapping import name_mapping_of
from lakecat.metadata.table.table_metadata import TableMetadata

__all__ = [
    "FileDeletes",
    "merge_on_read",
    "replaced_deletes",
    "write_deletion_vectors",
    "write_position_deletes",
]

_MODE_PROPERTY = {
    OpKind.DELETE: P.DELETE_MODE,
    OpKind.OVERWRITE: P.DELETE_MODE,
    OpKind.UPDATE: P.UPDATE_MODE,
    OpKind.MERGE: P.MERGE_MODE,
}


def merge_on_read(metadata: TableMetadata, kind: OpKind) -> bool:
    """Whether ``kind`` writes delete files on this table (its ``write.*.mode`` property).

    Raises :class:`ValidationError` for a value that is not a mode, before anything is
    written."""
    key = _MODE_PROPERTY.get(kind)
    if key is None:
        return False
    return P.get_choice(metadata.properties, key) == P.MERGE_ON_READ


def write_position_deletes(
    io: FileIO, metadata: TableMetadata, targets: Sequence[FileDeletes]
) -> list[DataFile]:
    """One position delete file per target, in its data file's partition folder under the
    table's data folder; on a v3 table, one deletion vector per target instead, all in one
    Puffin file (:func:`write_deletion_vectors`). On any failure the files already written
    are deleted first."""
    if metadata.format_version >= 3:
        return write_deletion_vectors(io, metadata, targets)
    return write_position_delete_files(
        io,
        data_dir(metadata),
        targets,
        specs=metadata.specs_by_id(),
        schema=metadata.schema(),
        properties=metadata.properties,
    )


def write_deletion_vectors(
    io: FileIO, metadata: TableMetadata, targets: Sequence[FileDeletes]
) -> list[DataFile]:
    """One Puffin file under the table's data folder with one deletion vector per target: its
    new positions and the ones its ``applied`` deletes deleted. Returns the DVs' entries.
    Raises :class:`ValidationError` for a position outside its data file, before anything is
    written."""
    reader = DeleteReader(
        io, metadata.schema(), metadata.schemas, name_mapping_of(metadata.properties)
    )
    with_previous = [t for t in targets if t.applied]

    def earlier(t: FileDeletes) -> PositionIndex | None:
        return reader.position_index(t.data_file, t.applied)

    threads = min(delete_file_threads(metadata.location), len(with_previous))
    if threads > 1:
        with ThreadPoolExecutor(threads, thread_name_prefix="lakecat-dvs") as pool:
            found = list(pool.map(earlier, with_previous))
    else:
        found = [earlier(t) for t in with_previous]
    previous = dict(zip((t.data_file.file_path for t in with_previous), found, strict=True))
    vectors = []
    for t in targets:
        f = t.data_file
        positions = t.positions.cast(pa.int64())
        before = previous.get(f.file_path)
        if before is not None:
            positions = pa.concat_arrays([before.positions, positions])
        if len(positions) and (
            pc.min(positions).as_py() < 0 or pc.max(positions).as_py() >= f.record_count
        ):
            raise ValidationError(
                f"a position to delete is outside {f.file_path}, which has {f.record_count} rows"
            )
        vectors.append(VectorTarget(f.file_path, f.spec_id, f.partition, positions))
    return write_deletion_vector_file(io, data_dir(metadata), vectors)


def replaced_deletes(metadata: TableMetadata, targets: Sequence[FileDeletes]) -> list[DataFile]:
    """The delete files the deletion vectors of ``targets`` replace (v3; none before): each
    data file's previous DV and the position delete files that name only that data file.
    The commit removes them with the new DVs added."""
    if metadata.format_version < 3:
        return []
    out: dict[tuple[str, int | None], DataFile] = {}
    for t in targets:
        for d in t.applied:
            if d.content is not Content.POSITION_DELETES:
                continue
            if named_data_file(d) == t.data_file.file_path:
                out[d.key] = d
    return list(out.values())

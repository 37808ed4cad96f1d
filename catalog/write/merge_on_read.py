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
Format v3 tables take deletion vectors instead of position delete files; lakecat does not
write v3 tables yet, so a merge-on-read change of one is refused before any file is written.
"""

from __future__ import annotations

from collections.abc import Sequence

from lakecat.catalog.commit.intent import OpKind
from lakecat.catalog.commit.producer import data_dir
from lakecat.metadata import properties as P
from lakecat.metadata.errors import UnsupportedFeature, ValidationError
from lakecat.metadata.io.fileio import FileIO
from lakecat.metadata.io.position_deletes import FileDeletes, write_position_delete_files
from lakecat.metadata.manifests.datafile import DataFile
from lakecat.metadata.table.table_metadata import TableMetadata

__all__ = ["FileDeletes", "merge_on_read", "write_position_deletes"]

_MODE_PROPERTY = {
    OpKind.DELETE: P.DELETE_MODE,
    OpKind.OVERWRITE: P.DELETE_MODE,
    OpKind.UPDATE: P.UPDATE_MODE,
    OpKind.MERGE: P.MERGE_MODE,
}


def merge_on_read(metadata: TableMetadata, kind: OpKind) -> bool:
    """Whether ``kind`` writes delete files on this table (its ``write.*.mode`` property).

    Raises :class:`ValidationError` for a value that is not a mode, and
    :class:`UnsupportedFeature` for merge-on-read on a table lakecat cannot write delete
    files for (format v3: deletion vectors), both before anything is written."""
    key = _MODE_PROPERTY.get(kind)
    if key is None:
        return False
    mode = metadata.properties.get(key, P.WRITE_MODE_DEFAULT).strip().lower()
    if mode not in P.WRITE_MODES:
        raise ValidationError(
            f"table property {key}={metadata.properties[key]!r}: use one of {P.WRITE_MODES}"
        )
    if mode != P.MERGE_ON_READ:
        return False
    if metadata.format_version >= 3:
        raise UnsupportedFeature(
            f"{key}=merge-on-read on a format version {metadata.format_version} table needs "
            "deletion vectors, which lakecat does not write yet; set it to copy-on-write",
            feature="writing deletion vectors",
        )
    return True


def write_position_deletes(
    io: FileIO, metadata: TableMetadata, targets: Sequence[FileDeletes]
) -> list[DataFile]:
    """One position delete file per target, in its data file's partition folder under the
    table's data folder. On any failure the files already written are deleted first."""
    return write_position_delete_files(
        io,
        data_dir(metadata),
        targets,
        specs=metadata.specs_by_id(),
        schema=metadata.schema(),
        properties=metadata.properties,
    )

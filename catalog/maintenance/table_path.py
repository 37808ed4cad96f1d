"""Rewriting a table's paths for a copy elsewhere (Iceberg's ``rewrite_table_path``).

A table's metadata names its files by absolute location: moving a table to another bucket or
folder (disaster recovery, a migration) needs every metadata file rewritten with the new
prefix. :func:`rewrite_table_path` writes those rewritten files to a staging folder and a copy
plan; the table itself is not changed. Copying each planned file (``source,target`` per line of
the file list, with the user's copy tool) then registering the last metadata file at the target
(``register_table``) gives the same table there.

What it rewrites, from the end version (default: the current metadata file) back through the
metadata log to the start version (exclusive; default: all of it):

* each metadata file: ``location``, each snapshot's manifest list, the metadata log, the table
  and partition statistics files, the path properties (``write.data.path``,
  ``write.metadata.path``, ``write.object-storage.path``, ``write.folder-storage.path``), and
  lakecat's row-moves record named in a snapshot summary;
* the manifest list of each snapshot the end version has and the start version has not;
* the manifests those lists name (with the right lengths): data and delete file locations,
  a file-scoped position delete file's ``file_path`` bounds, a deletion vector's referenced
  data file; in incremental runs only the manifests that delta snapshots added are copied;
* the delete files that hold paths: position delete files (``file_path`` column) and deletion
  vector Puffin files (each blob's ``referenced-data-file``, blobs keeping their order; the
  manifests record each DV's new offset and the file's new size);
* lakecat's row-moves records (their ``path`` column).

Data files, equality delete files and statistics files hold no paths: the plan copies them as
they are. Only live files that a delta snapshot added are planned; a path outside the source
prefix is refused (:class:`ValidationError`), before anything is written.

The staging folder defaults to ``<metadata folder>/copy-table-staging-<uuid>/``; each staged
file keeps its path relative to the source prefix. The file list is ``<staging>/file-list``.
Staged files are new files: a run whose staged file exists already (a staging folder an
earlier run used) fails, and a failed run deletes what it staged.
"""

from __future__ import annotations

import io as io_module
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakecat.catalog.commit.moves import ROW_MOVES_KEY
from lakecat.catalog.commit.pipeline import delete_quietly
from lakecat.catalog.commit.producer import metadata_dir
from lakecat.metadata import properties as P
from lakecat.metadata.deletes.puffin import (
    REFERENCED_DATA_FILE,
    PuffinBlob,
    blob_data,
    read_footer,
    write_puffin,
)
from lakecat.metadata.errors import UnsupportedFeature, ValidationError
from lakecat.metadata.io.fileio import FileIO, join
from lakecat.metadata.manifests.datafile import (
    Content,
    DataFile,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
    Status,
)
from lakecat.metadata.manifests.delete_index import POS_FILE_PATH_ID
from lakecat.metadata.manifests.manifest import (
    read_manifest,
    read_manifest_list,
    write_manifest,
    write_manifest_list,
)
from lakecat.metadata.table.metadata_files import read_metadata, write_metadata
from lakecat.metadata.table.snapshots import MetadataLogEntry, Snapshot
from lakecat.metadata.table.table_metadata import TableMetadata

if TYPE_CHECKING:
    from lakecat.catalog.table import Table

__all__ = [
    "NOT_APPLICABLE",
    "RewritePathResult",
    "new_path",
    "rewrite_table_path",
    "staging_path",
]

NOT_APPLICABLE = "N/A"
"""The ``file_list_location`` of a run asked not to write the file list (Iceberg's value)."""
FILE_LIST = "file-list"
SEPARATOR = "/"


@dataclass(frozen=True)
class RewritePathResult:
    """What a rewrite staged: Iceberg's result columns, and the plan itself."""

    latest_version: str  # the file name of the end version
    file_list_location: str  # NOT_APPLICABLE when no file list was asked for
    rewritten_manifest_file_paths_count: int  # manifests staged and planned
    rewritten_delete_file_paths_count: int  # position delete files and DVs (each DV once)
    staging_location: str
    copy_plan: tuple[tuple[str, str], ...]  # (copy from, copy to), sorted


def new_path(path: str, source_prefix: str, target_prefix: str) -> str:
    """``path`` with ``source_prefix`` replaced by ``target_prefix`` (a trailing ``/`` on
    either is optional; the prefix itself maps to the target prefix); a path outside the
    source prefix is a :class:`ValidationError`."""
    relative = _relative(path, source_prefix)
    return target_prefix if not relative else _folder(target_prefix) + relative


def staging_path(path: str, source_prefix: str, staging: str) -> str:
    """Where a rewritten copy of ``path`` is staged: its path below the source prefix,
    below the staging folder."""
    return new_path(path, source_prefix, staging)


def rewrite_table_path(
    table: Table,
    source_prefix: str,
    target_prefix: str,
    *,
    start_version: str | None = None,
    end_version: str | None = None,
    staging_location: str | None = None,
    create_file_list: bool = True,
) -> RewritePathResult:
    """Stage the table's metadata with ``source_prefix`` replaced by ``target_prefix`` and
    plan the copy (see the module docstring). ``start_version`` / ``end_version`` are metadata
    file names (``00003-<uuid>.metadata.json``) of the current file or its metadata log. The
    table is not changed; bad input is a :class:`ValidationError` before anything is written."""
    if not source_prefix or not target_prefix:
        raise ValidationError("rewrite_table_path needs a source and a target prefix")
    if _folder(source_prefix) == _folder(target_prefix):
        raise ValidationError(
            f"source prefix cannot be the same as target prefix ({source_prefix})"
        )
    io = table.io
    current = table.metadata
    if current.format_version < 2:
        raise UnsupportedFeature("rewrite_table_path rewrites format v2 and v3 tables")
    location = table.metadata_location
    end_location = location if end_version is None else _version(table, end_version)
    start_location = None if start_version is None else _version(table, start_version)
    staging = _folder(
        staging_location or join(metadata_dir(current), f"copy-table-staging-{uuid.uuid4()}")
    )
    plan = _Plan(io, source_prefix, target_prefix, staging)
    end = read_metadata(io, end_location)
    start = None if start_location is None else read_metadata(io, start_location)
    versions = plan.versions(end, end_location, start_location)
    old_snapshots = set() if start is None else {s.snapshot_id for s in start.snapshots}
    delta = {s.snapshot_id for v, _ in versions for s in v.snapshots} - old_snapshots
    lists = [s for s in end.snapshots if s.snapshot_id not in old_snapshots]
    listed = plan.read_lists(lists)
    file_list = NOT_APPLICABLE
    try:
        plan.stage(end, listed, delta)
        for version, path in versions:
            plan.stage_version(version, path)
        if create_file_list:
            file_list = staging + FILE_LIST
            plan.write(file_list, "".join(f"{s},{t}\n" for s, t in plan.copy_plan()).encode())
    except BaseException:
        delete_quietly(io, plan.written)  # the table is untouched; leave no staged files
        raise
    return RewritePathResult(
        latest_version=_file_name(end_location),
        file_list_location=file_list,
        rewritten_manifest_file_paths_count=plan.manifests_copied,
        rewritten_delete_file_paths_count=len(plan.delete_entries),
        staging_location=staging,
        copy_plan=plan.copy_plan(),
    )


class _Plan:
    """One run: what it staged and the copy plan, built up in order."""

    def __init__(self, io: FileIO, source: str, target: str, staging: str) -> None:
        self.io = io
        self.source = source
        self.target = target
        self.staging = staging
        self.copies: set[tuple[str, str]] = set()
        self.manifests_copied = 0
        # a rewritten delete file's location -> its new size, and a DV's offset map
        self.rewritten_deletes: dict[str, int] = {}
        self.delete_entries: set[tuple[str, int | None]] = set()  # (location, DV offset)
        self.dv_offsets: dict[tuple[str, int], int] = {}
        self.written: list[str] = []

    def write(self, location: str, data: bytes) -> None:
        """Stage a file: a new one (never over a file that is there), remembered for the
        clean-up of a failed run."""
        self.io.write(location, data, exclusive=True)
        self.written.append(location)

    def copy_plan(self) -> tuple[tuple[str, str], ...]:
        return tuple(sorted(self.copies))

    def moved(self, path: str) -> str:
        return new_path(path, self.source, self.target)

    def staged(self, path: str) -> str:
        return staging_path(path, self.source, self.staging)

    # -- metadata files ------------------------------------------------------------------

    def versions(
        self, end: TableMetadata, end_location: str, start_location: str | None
    ) -> list[tuple[TableMetadata, str]]:
        """The metadata files to rewrite: the end version, then back through its log until
        the start version (exclusive), each read and its paths checked."""
        found: list[tuple[TableMetadata, str]] = [(end, end_location)]
        for entry in reversed(end.metadata_log):
            if entry.metadata_file == start_location:
                break
            if not self.io.exists(entry.metadata_file):
                raise ValidationError(f"version file {entry.metadata_file} does not exist")
            found.append((read_metadata(self.io, entry.metadata_file), entry.metadata_file))
        for version, path in found:
            self.moved(path)  # every path must lie under the source prefix
            self.moved(version.location)
            for snapshot in version.snapshots:
                self.moved(snapshot.manifest_list)
        return found

    def stage_version(self, metadata: TableMetadata, path: str) -> None:
        staged = self.staged(path)
        write_metadata(self.io, staged, self.replace_paths(metadata))
        self.written.append(staged)
        self.copies.add((staged, self.moved(path)))
        for stats in (*metadata.statistics, *metadata.partition_statistics):
            stats_path = stats.get("statistics-path")
            if isinstance(stats_path, str):
                self.copies.add((stats_path, self.moved(stats_path)))

    def replace_paths(self, metadata: TableMetadata) -> TableMetadata:
        properties = dict(metadata.properties)
        for key in P.PATH_PROPERTIES:
            if key in properties:
                properties[key] = self.moved(properties[key])
        return replace(
            metadata,
            location=self.moved(metadata.location),
            properties=properties,
            snapshots=tuple(self.replace_snapshot_paths(s) for s in metadata.snapshots),
            metadata_log=tuple(
                MetadataLogEntry(e.timestamp_ms, self.moved(e.metadata_file))
                for e in metadata.metadata_log
            ),
            statistics=tuple(self._moved_stats(s) for s in metadata.statistics),
            partition_statistics=tuple(self._moved_stats(s) for s in metadata.partition_statistics),
        )

    def replace_snapshot_paths(self, snapshot: Snapshot) -> Snapshot:
        summary = dict(snapshot.summary)
        if ROW_MOVES_KEY in summary:
            summary[ROW_MOVES_KEY] = self.moved(summary[ROW_MOVES_KEY])
        return replace(snapshot, manifest_list=self.moved(snapshot.manifest_list), summary=summary)

    def _moved_stats(self, stats: Mapping[str, Any]) -> Mapping[str, Any]:
        path = stats.get("statistics-path")
        return {**stats, "statistics-path": self.moved(path)} if isinstance(path, str) else stats

    # -- manifest lists, manifests, delete files ---------------------------------------------

    def read_lists(
        self, snapshots: Iterable[Snapshot]
    ) -> list[tuple[Snapshot, list[ManifestFile]]]:
        """Each snapshot to rewrite with the rows of its manifest list, checked: the manifests
        and row-moves records they name lie under the source prefix (before anything is
        written)."""
        out = []
        for snapshot in snapshots:
            manifests = read_manifest_list(self.io, snapshot.manifest_list)
            for m in manifests:
                self.moved(m.manifest_path)
            if ROW_MOVES_KEY in snapshot.summary:
                self.moved(snapshot.summary[ROW_MOVES_KEY])
            out.append((snapshot, manifests))
        return out

    def stage(
        self,
        end: TableMetadata,
        lists: list[tuple[Snapshot, list[ManifestFile]]],
        delta: set[int],
    ) -> None:
        specs = end.specs_by_id()
        schema = end.schema()
        manifests: dict[str, ManifestFile] = {}
        for _, listed in lists:
            for m in listed:
                manifests.setdefault(m.manifest_path, m)
        entries = {
            path: read_manifest(self.io, m, specs=specs, schema=schema)
            for path, m in manifests.items()
        }
        for path, es in entries.items():
            for e in es:
                self._check_entry(e, path)
        copied = {p for p, m in manifests.items() if m.added_snapshot_id in delta}
        # delete files holding paths: rewritten once each, before the manifests record them
        for path in sorted(copied):
            if manifests[path].content is not ManifestContent.DELETES:
                continue
            for e in entries[path]:
                f = e.data_file
                if e.status is not Status.DELETED and f.content is Content.POSITION_DELETES:
                    self._rewrite_position_deletes(f)
                    self.delete_entries.add((f.file_path, f.content_offset))
        lengths: dict[str, int] = {}
        for path, m in manifests.items():
            new_entries = [
                self._moved_entry(e, e.snapshot_id in delta and path in copied)
                for e in entries[path]
            ]
            staged = self.staged(path)
            written = write_manifest(
                self.io,
                staged,
                spec=specs[m.partition_spec_id],
                schema=schema,
                entries=new_entries,
                added_snapshot_id=m.added_snapshot_id,
                content=m.content,
                format_version=end.format_version,
                keep_order=True,
            )
            self.written.append(staged)
            lengths[path] = written.manifest_length
            if path in copied:
                self.copies.add((staged, self.moved(path)))
                self.manifests_copied += 1
        for snapshot, listed in lists:
            rows = [
                replace(
                    m,
                    manifest_path=self.moved(m.manifest_path),
                    manifest_length=lengths[m.manifest_path],
                )
                for m in listed
            ]
            staged = self.staged(snapshot.manifest_list)
            # a snapshot from before a v3 upgrade has no first row id: its list stays v2
            v3 = end.format_version >= 3 and snapshot.first_row_id is not None
            write_manifest_list(
                self.io,
                staged,
                rows,
                snapshot_id=snapshot.snapshot_id,
                parent_snapshot_id=snapshot.parent_snapshot_id,
                sequence_number=snapshot.sequence_number,
                format_version=3 if v3 else 2,
                first_row_id=snapshot.first_row_id,
            )
            self.written.append(staged)
            self.copies.add((staged, self.moved(snapshot.manifest_list)))
            record = snapshot.summary.get(ROW_MOVES_KEY)
            if record and snapshot.snapshot_id in delta:
                self._rewrite_row_moves(record)

    def _check_entry(self, entry: ManifestEntry, manifest: str) -> None:
        f = entry.data_file
        if not _under(f.file_path, self.source):
            raise ValidationError(
                f"{f.file_path} (in manifest {manifest}) is not under the source prefix "
                f"{self.source}"
            )

    def _moved_entry(self, entry: ManifestEntry, planned: bool) -> ManifestEntry:
        f = entry.data_file
        moved = self.moved(f.file_path)
        live = entry.status is not Status.DELETED
        if f.content is Content.DATA or f.content is Content.EQUALITY_DELETES:
            new_file = replace(f, file_path=moved)
            if live and planned:
                self.copies.add((f.file_path, moved))
        else:
            new_file = self._moved_position_deletes(f, moved)
            if live and planned:
                self.copies.add((self.staged(f.file_path), moved))
        return replace(entry, data_file=new_file)

    def _moved_position_deletes(self, f: DataFile, moved: str) -> DataFile:
        size = self.rewritten_deletes.get(f.file_path, f.file_size_in_bytes)
        if f.is_deletion_vector:
            offset = f.content_offset
            if offset is not None:
                offset = self.dv_offsets.get((f.file_path, offset), offset)
            return replace(
                f,
                file_path=moved,
                file_size_in_bytes=size,
                referenced_data_file=self._reference(f.referenced_data_file),
                content_offset=offset,
            )
        lower = dict(f.lower_bounds or {})
        upper = dict(f.upper_bounds or {})
        low, high = lower.pop(POS_FILE_PATH_ID, None), upper.pop(POS_FILE_PATH_ID, None)
        if low is not None and low == high:  # file-scoped: the bounds name its data file
            bound = self.moved(low.decode("utf-8")).encode("utf-8")
            lower[POS_FILE_PATH_ID] = upper[POS_FILE_PATH_ID] = bound
        return replace(
            f,
            file_path=moved,
            file_size_in_bytes=size,
            lower_bounds=lower if f.lower_bounds is not None else None,
            upper_bounds=upper if f.upper_bounds is not None else None,
            referenced_data_file=self._reference(f.referenced_data_file),
        )

    def _reference(self, path: str | None) -> str | None:
        """A referenced data file's new location (one outside the prefix stays)."""
        return self.moved(path) if path and _under(path, self.source) else path

    def _rewrite_position_deletes(self, f: DataFile) -> None:
        if f.file_path in self.rewritten_deletes:
            return
        staged = self.staged(f.file_path)
        source = self.io.read(f.file_path)
        if f.is_deletion_vector:
            footer = read_footer(source)
            blobs = []
            for b in footer.blobs:
                properties = dict(b.properties)
                ref = self._reference(properties.get(REFERENCED_DATA_FILE))
                if ref is not None:
                    properties[REFERENCED_DATA_FILE] = ref
                blobs.append(
                    PuffinBlob(
                        type=b.type,
                        data=blob_data(source, b),
                        fields=b.fields,
                        snapshot_id=b.snapshot_id,
                        sequence_number=b.sequence_number,
                        properties=properties,
                        compression_codec=b.compression_codec,
                    )
                )
            data, written = write_puffin(blobs, properties=footer.properties)
            for old, new in zip(footer.blobs, written, strict=True):
                self.dv_offsets[(f.file_path, old.offset)] = new.offset
        else:
            data = self._rewritten_parquet(source, "file_path", f.file_path)
        self.write(staged, data)
        self.rewritten_deletes[f.file_path] = len(data)

    def _rewrite_row_moves(self, record: str) -> None:
        staged = self.staged(record)
        self.write(staged, self._rewritten_parquet(self.io.read(record), "path", record))
        self.copies.add((staged, self.moved(record)))

    def _rewritten_parquet(self, data: bytes, column: str, where: str) -> bytes:
        """A Parquet file's bytes with the source prefix of each value of its path
        ``column`` replaced (schema, field ids and row order kept)."""
        table = pq.read_table(pa.BufferReader(data))
        index = table.schema.get_field_index(column)
        values = table.column(index)
        source = _folder(self.source)
        if not pc.all(pc.starts_with(values, source)).as_py() and len(values):
            outside = values.filter(pc.invert(pc.starts_with(values, source)))[0]
            raise ValidationError(
                f"{outside} (in {where}) is not under the source prefix {self.source}"
            )
        replaced = pc.utf8_replace_slice(values, 0, len(source), _folder(self.target))
        table = table.set_column(index, table.schema.field(index), replaced)
        sink = io_module.BytesIO()
        pq.write_table(table, sink, compression="zstd")
        return sink.getvalue()


def _version(table: Table, name: str) -> str:
    """The metadata file of the table's current file or metadata log whose file name is
    ``name``."""
    candidates = [e.metadata_file for e in table.metadata.metadata_log]
    candidates.append(table.metadata_location)
    found = [c for c in candidates if _file_name(c) == name or c == name]
    if not found:
        raise ValidationError(f"cannot find version file {name} in the metadata log")
    if not table.io.exists(found[-1]):
        raise ValidationError(f"version file {found[-1]} does not exist")
    return found[-1]


def _file_name(path: str) -> str:
    return path.rsplit(SEPARATOR, 1)[-1]


def _folder(path: str) -> str:
    return path if path.endswith(SEPARATOR) else path + SEPARATOR


def _under(path: str, prefix: str) -> bool:
    return _folder(path).startswith(_folder(prefix))


def _relative(path: str, prefix: str) -> str:
    if not _under(path, prefix):
        raise ValidationError(f"{path} is not under the source prefix {prefix}")
    folder = _folder(prefix)
    return "" if _folder(path) == folder else path[len(folder) :]

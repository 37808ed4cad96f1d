"""Which delete files of a snapshot apply to which data file: the spec's "Scan Planning" rules.

* :func:`delete_manifests` / :func:`delete_index`: a snapshot's live delete files, indexed;
  :meth:`DeleteIndex.for_data_file` the ones that apply to one data file (data sequence
  numbers, partition scope, global equality deletes, the file a deletion vector or a
  single-file position delete names).
* :func:`dangling_deletes`: the delete files that nothing reads once some data files are
  removed (a commit that removes those files removes them too).

Metadata only: no delete file is opened here (applying them is
:mod:`lakecat.metadata.deletes`' and the reader's work).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from lakecat.metadata.errors import CorruptMetadata, UnsupportedFeature
from lakecat.metadata.io.fileio import FileIO
from lakecat.metadata.manifests.cache import ManifestCache, NoCache
from lakecat.metadata.manifests.datafile import (
    Content,
    DataFile,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
    Status,
)
from lakecat.metadata.partitioning.spec import PartitionSpec
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.table.snapshots import Snapshot
from lakecat.metadata.table.table_metadata import TableMetadata

__all__ = [
    "POS_FILE_PATH_ID",
    "POS_POS_ID",
    "DeleteIndex",
    "DeleteRef",
    "dangling_deletes",
    "delete_index",
    "delete_manifests",
    "named_data_file",
]


def delete_manifests(manifests: Iterable[ManifestFile]) -> list[ManifestFile]:
    """The delete manifests that list live delete files."""
    return [m for m in manifests if m.content is ManifestContent.DELETES and m.live_files_count > 0]


# ---- planning: which delete files apply to which data file --------------------------------

# Reserved field ids of a position delete file's columns (spec: "Position Delete Files").
POS_FILE_PATH_ID = 2147483546
POS_POS_ID = 2147483545


@dataclass(frozen=True)
class DeleteRef:
    """A live delete file with its data sequence number."""

    file: DataFile
    sequence_number: int


class DeleteIndex:
    """The live delete files of one snapshot, indexed to find those that apply to a data file
    exactly as the spec's "Scan Planning" says:

    * a position delete file applies to a data file of the same partition (spec id and
      values) whose data sequence number is <= its own; one whose ``file_path`` bounds are
      equal names that one data file only (Iceberg Java writes no ``referenced_data_file``
      in v2, only those bounds);
    * an equality delete file applies to data files whose data sequence number is < its own,
      of the same partition, or of any partition when its spec is unpartitioned (a global
      delete).
    """

    def __init__(self, entries: Iterable[ManifestEntry], specs: Mapping[int, PartitionSpec]):
        self._by_path: dict[str, list[DeleteRef]] = {}
        self._dvs: dict[str, list[DeleteRef]] = {}
        self._positional: dict[tuple[int, tuple[Any, ...]], list[DeleteRef]] = {}
        self._equality: dict[tuple[int, tuple[Any, ...]], list[DeleteRef]] = {}
        self._global: list[DeleteRef] = []
        # each live delete file's data sequence number, by entry key
        self.sequence_numbers: dict[tuple[str, int | None], int] = {}
        self.count = 0
        for entry in entries:
            if entry.status is Status.DELETED:
                continue
            f = entry.data_file
            if entry.sequence_number is None:
                raise CorruptMetadata(f"delete file {f.file_path} has no data sequence number")
            ref = DeleteRef(f, entry.sequence_number)
            self.sequence_numbers[f.key] = entry.sequence_number
            self.count += 1
            if f.is_deletion_vector:
                if not f.referenced_data_file or f.content_offset is None:
                    raise CorruptMetadata(
                        f"deletion vector in {f.file_path} has no referenced_data_file or "
                        "content_offset"
                    )
                self._dvs.setdefault(f.referenced_data_file, []).append(ref)
            elif f.content is Content.POSITION_DELETES:
                _require_parquet(f, "position")
                target = named_data_file(f)
                if target is not None:
                    self._by_path.setdefault(target, []).append(ref)
                else:
                    self._positional.setdefault((f.spec_id, f.partition), []).append(ref)
            elif f.content is Content.EQUALITY_DELETES:
                _require_parquet(f, "equality")
                if not f.equality_ids:
                    raise CorruptMetadata(f"equality delete file {f.file_path} has no equality ids")
                spec = specs.get(f.spec_id)
                if spec is None:
                    raise CorruptMetadata(
                        f"delete file {f.file_path} names partition spec {f.spec_id}, which the "
                        "table does not have"
                    )
                if not spec.fields:
                    self._global.append(ref)
                else:
                    self._equality.setdefault((f.spec_id, f.partition), []).append(ref)
            else:
                raise CorruptMetadata(
                    f"delete manifest entry {f.file_path} has content {int(f.content)}, not a "
                    "delete file"
                )

    def files(self) -> list[DataFile]:
        """Every live delete file of the index."""
        refs = (
            *(r for group in self._by_path.values() for r in group),
            *(r for group in self._dvs.values() for r in group),
            *(r for group in self._positional.values() for r in group),
            *(r for group in self._equality.values() for r in group),
            *self._global,
        )
        return [r.file for r in refs]

    def for_data_file(self, data_file: DataFile, sequence_number: int) -> tuple[DataFile, ...]:
        """The delete files that apply to ``data_file`` (of data sequence number
        ``sequence_number``)."""
        key = (data_file.spec_id, data_file.partition)
        dvs = [
            r
            for r in self._dvs.get(data_file.file_path, ())
            if (r.file.spec_id, r.file.partition) == key and r.sequence_number >= sequence_number
        ]
        if len(dvs) > 1:
            raise CorruptMetadata(
                f"data file {data_file.file_path} has {len(dvs)} live deletion vectors; the spec "
                "allows one"
            )
        named = [
            r
            for r in self._by_path.get(data_file.file_path, ())
            if (r.file.spec_id, r.file.partition) == key  # the spec: partition must match too
        ]
        # A deletion vector holds every position deleted before it: position delete files
        # no longer apply where one does (the spec).
        found = (
            [dvs[0].file]
            if dvs
            else [
                r.file
                for r in (*named, *self._positional.get(key, ()))
                if r.sequence_number >= sequence_number
            ]
        )
        found += [
            r.file
            for r in (*self._equality.get(key, ()), *self._global)
            if r.sequence_number > sequence_number
        ]
        return tuple(found)


def _require_parquet(f: DataFile, kind: str) -> None:
    if f.file_format.upper() != "PARQUET":
        raise UnsupportedFeature(
            f"{kind} delete file {f.file_path} is {f.file_format}; lakecat reads Parquet delete "
            "files and deletion vectors",
            feature=f"{f.file_format} {kind} deletes",
        )


def named_data_file(f: DataFile) -> str | None:
    """The one data file a position delete file or deletion vector applies to, when it names
    one: its ``referenced_data_file``, else ``file_path`` bounds that are equal (lower ==
    upper, untruncated: how v2 writers name it). ``None`` for other files."""
    if f.content is not Content.POSITION_DELETES:
        return None
    if f.referenced_data_file is not None:
        return f.referenced_data_file
    lower = (f.lower_bounds or {}).get(POS_FILE_PATH_ID)
    upper = (f.upper_bounds or {}).get(POS_FILE_PATH_ID)
    if lower is None or lower != upper:
        return None
    try:
        return lower.decode()
    except UnicodeDecodeError:
        return None


def delete_index(
    io: FileIO,
    manifests: Iterable[ManifestFile],
    *,
    specs: Mapping[int, PartitionSpec],
    schema: Schema,
    cache: ManifestCache,
) -> DeleteIndex:
    """The :class:`DeleteIndex` of a snapshot's delete manifests."""
    entries = [e for m in manifests for e in cache.read(io, m, specs=specs, schema=schema)]
    return DeleteIndex(entries, specs)


def dangling_deletes(
    io: FileIO,
    metadata: TableMetadata,
    snapshot: Snapshot | None,
    removed: Iterable[DataFile],
    cache: ManifestCache | None = None,
    *,
    added_data_sequence_number: int | None = None,
) -> tuple[DataFile, ...]:
    """The live delete files of ``snapshot`` that apply to some of the ``removed`` data files
    and to no data file that stays: once those are gone, nothing reads them.

    A deletion vector or a single-file position delete goes with its data file; a position
    delete file naming several files goes when every data file of its partition it may apply
    to goes; an equality delete file when every older data file of its scope (its partition,
    or the whole table for an unpartitioned spec) goes. Deletes that apply to no file now and
    to none of ``removed`` are left for ``rewrite_position_delete_files`` / expiry: this
    operation did not make them dangling.

    Valid on any later base too: a data file a delete applies to is older than the delete,
    and a concurrent commit cannot add one without removing files this operation removes
    (a conflict). ``added_data_sequence_number``: the data sequence number of the files this
    operation adds when it is not the commit's (a compaction's starting one); an equality
    delete newer than that applies to them, so it never dangles here."""
    removed_paths = {f.file_path for f in removed}
    if snapshot is None or not removed_paths:
        return ()
    found = _deletes_of_live_data(io, metadata, snapshot, cache)
    if found is None:
        return ()
    index, pairs = found
    # by entry key: the DVs of several data files may share one Puffin file
    candidates: dict[tuple[str, int | None], DataFile] = {}
    staying: set[tuple[str, int | None]] = set()
    for data_file, applying in pairs:
        if data_file.file_path in removed_paths:
            candidates.update((d.key, d) for d in applying)
        else:
            staying.update(d.key for d in applying)
    if added_data_sequence_number is not None:  # these apply to the added files too
        staying.update(
            key
            for key, d in candidates.items()
            if d.content is Content.EQUALITY_DELETES
            and index.sequence_numbers[key] > added_data_sequence_number
        )
    return tuple(d for key, d in candidates.items() if key not in staying)


def unused_deletes(
    io: FileIO,
    metadata: TableMetadata,
    snapshot: Snapshot | None,
    cache: ManifestCache | None = None,
) -> tuple[DataFile, ...]:
    """The live delete files of ``snapshot`` that apply to no live data file of it (by the
    rules of :class:`DeleteIndex`): nothing reads them any more. Other engines leave them
    behind (Iceberg Java's compaction keeps partition-scoped position delete files, pyiceberg
    the delete files of the data files it drops); Iceberg's ``remove-dangling-deletes``
    removes them.

    Valid on any later base too, for the reason :func:`dangling_deletes` gives."""
    if snapshot is None:
        return ()
    found = _deletes_of_live_data(io, metadata, snapshot, cache)
    if found is None:
        return ()
    index, pairs = found
    used = {d.key for _, applying in pairs for d in applying}
    unused = {f.key: f for f in index.files() if f.key not in used}
    return tuple(unused.values())


def _deletes_of_live_data(
    io: FileIO, metadata: TableMetadata, snapshot: Snapshot, cache: ManifestCache | None
) -> tuple[DeleteIndex, Iterator[tuple[DataFile, tuple[DataFile, ...]]]] | None:
    """The index of ``snapshot``'s live delete files and, lazily, each live data file with
    the delete files that apply to it; ``None`` when the snapshot has no delete manifest."""
    cache = cache or NoCache()
    listing = cache.manifest_list(io, snapshot.manifest_list)
    deleting = delete_manifests(listing.manifests)
    if not deleting:
        return None
    specs = metadata.specs_by_id()
    schema = metadata.schema()
    index = delete_index(io, deleting, specs=specs, schema=schema, cache=cache)

    def pairs() -> Iterator[tuple[DataFile, tuple[DataFile, ...]]]:
        for manifest in listing.manifests:
            if manifest.content is not ManifestContent.DATA or manifest.live_files_count == 0:
                continue
            for e in cache.read(io, manifest, specs=specs, schema=schema):
                if e.status is not Status.DELETED:
                    yield e.data_file, index.for_data_file(e.data_file, e.sequence_number or 0)

    return index, pairs()


def live_deletes_naming(
    io: FileIO,
    metadata: TableMetadata,
    snapshot: Snapshot | None,
    data_file_paths: Iterable[str],
    cache: ManifestCache | None = None,
) -> dict[str, list[DataFile]]:
    """The live position delete files and deletion vectors of ``snapshot`` that name one of
    ``data_file_paths`` (:func:`named_data_file`), by that path: what a new deletion vector
    for the data file must hold and replace."""
    wanted = set(data_file_paths)
    if snapshot is None or not wanted:
        return {}
    cache = cache or NoCache()
    listing = cache.manifest_list(io, snapshot.manifest_list)
    specs = metadata.specs_by_id()
    schema = metadata.schema()
    found: dict[str, list[DataFile]] = {}
    for manifest in delete_manifests(listing.manifests):
        for e in cache.read(io, manifest, specs=specs, schema=schema):
            if e.status is Status.DELETED:
                continue
            target = named_data_file(e.data_file)
            if target in wanted:
                found.setdefault(target, []).append(e.data_file)
    return found

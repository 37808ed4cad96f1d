"""Delete files in a snapshot: planning them, applying them, refusing where they cannot apply.

A snapshot's manifest list names data manifests and delete manifests (``content`` 1). Every
read of the snapshot must apply the live delete files those name (position deletes, deletion
vectors, equality deletes), and every rewrite of a data file must carry its deletes over.

* :class:`DeleteIndex` finds the delete files that apply to each data file (the spec's "Scan
  Planning" rules); :class:`DeleteReader` reads each delete file once per scan and drops the
  deleted rows from a data file's batches (with :mod:`lakecat.metadata.deletes`). A delete
  file that is missing or unreadable is a :class:`~lakecat.metadata.errors.CorruptMetadata`
  naming it: no rows are returned from a file whose deletes could not be applied.
* Paths that cannot apply deletes yet call :func:`refuse_deletes` before reading or writing
  anything, so they fail with :class:`~lakecat.metadata.errors.UnsupportedFeature` instead of
  returning deleted rows or bringing them back.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.parquet as pq

from lakecat.metadata.deletes import (
    EqualityDeletes,
    PositionIndex,
    drop_equality_deleted,
    positions_by_file,
    read_deletion_vector,
)
from lakecat.metadata.errors import CorruptMetadata, LakecatError, UnsupportedFeature
from lakecat.metadata.expressions.evaluators import to_arrow_filter
from lakecat.metadata.expressions.expressions import (
    AlwaysTrue,
    BoundExpression,
    referenced_field_ids,
)
from lakecat.metadata.io.fileio import FileIO
from lakecat.metadata.io.parquet import iter_data_file_batches, read_data_file
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
from lakecat.metadata.schema.types import NestedField
from lakecat.metadata.table.snapshots import Snapshot

T = TypeVar("T")

__all__ = [
    "DeleteIndex",
    "DeleteReader",
    "DeleteRef",
    "delete_index",
    "delete_manifests",
    "has_deletes",
    "refuse_deletes",
]


def delete_manifests(manifests: Iterable[ManifestFile]) -> list[ManifestFile]:
    """The delete manifests that list live delete files."""
    return [m for m in manifests if m.content is ManifestContent.DELETES and m.live_files_count > 0]


def has_deletes(io: FileIO, snapshot: Snapshot | None, cache: ManifestCache | None = None) -> bool:
    """Whether ``snapshot`` has live delete files (reads its manifest list only)."""
    if snapshot is None:
        return False
    listing = (cache or NoCache()).manifest_list(io, snapshot.manifest_list)
    return bool(delete_manifests(listing.manifests))


def refuse_deletes(
    io: FileIO,
    snapshot: Snapshot | None,
    *,
    action: str,
    table: str = "the table",
    cache: ManifestCache | None = None,
) -> None:
    """Raise :class:`UnsupportedFeature` if ``snapshot`` has live delete files and ``action``
    (e.g. ``"a copy-on-write delete"``) cannot apply them yet."""
    if has_deletes(io, snapshot, cache):
        assert snapshot is not None
        raise UnsupportedFeature(
            f"{table} has delete files (merge-on-read deletes written by another engine) in "
            f"snapshot {snapshot.snapshot_id}; lakecat cannot apply them in {action} yet, and "
            "refuses rather than read or write deleted rows. Compact the table with the engine "
            "that wrote them (rewrite_data_files), or read it with lakecat's Python API",
            feature="delete files",
        )


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
        self.count = 0
        for entry in entries:
            if entry.status is Status.DELETED:
                continue
            f = entry.data_file
            if entry.sequence_number is None:
                raise CorruptMetadata(f"delete file {f.file_path} has no data sequence number")
            ref = DeleteRef(f, entry.sequence_number)
            self.count += 1
            if f.content is Content.POSITION_DELETES and f.file_format.upper() == "PUFFIN":
                if not f.referenced_data_file or f.content_offset is None:
                    raise CorruptMetadata(
                        f"deletion vector in {f.file_path} has no referenced_data_file or "
                        "content_offset"
                    )
                self._dvs.setdefault(f.referenced_data_file, []).append(ref)
            elif f.content is Content.POSITION_DELETES:
                _require_parquet(f, "position")
                target = _single_target(f)
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


def _single_target(f: DataFile) -> str | None:
    """The one data file a position delete file names, when its ``file_path`` bounds say so
    (lower == upper, untruncated)."""
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


# ---- reading: applying them -----------------------------------------------------------------


class DeleteReader:
    """Reads delete files (each once per scan) and drops the rows they delete from a data
    file's batches. Thread-safe: a scan reads data files from a thread pool."""

    def __init__(self, io: FileIO, schema: Schema, all_schemas: Sequence[Schema] = ()) -> None:
        self._io = io
        self._schema = schema
        self._schemas = (schema, *all_schemas)
        self._lock = threading.Lock()
        self._positions: dict[str, dict[str, PositionIndex]] = {}
        self._equality: dict[str, pa.Table] = {}

    def equality_field_ids(self, deletes: Iterable[DataFile]) -> set[int]:
        """The fields the equality deletes among ``deletes`` compare on."""
        return {
            i
            for d in deletes
            if d.content is Content.EQUALITY_DELETES
            for i in d.equality_ids or ()
        }

    def read(
        self,
        data_file: DataFile,
        deletes: Sequence[DataFile],
        *,
        projected: Schema,
        row_filter: BoundExpression | None = None,
        spec: PartitionSpec | None = None,
        batch_size: int | None = None,
        position_column: str | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """The rows of ``data_file`` that ``deletes`` leave and ``row_filter`` (bound to the
        reader's schema) matches, as batches of ``projected``'s top-level columns; with
        ``position_column``, one more int64 column of that name holds each row's position in
        the file (counted over every row, deleted ones included).

        Every row of the file is read in order (positions count from its first row), with
        the columns the equality deletes and the filter need, then the deleted rows are
        dropped, then the filter applied, then the extra columns dropped."""
        extra = self.equality_field_ids(deletes)
        arrow_filter = None
        if row_filter is not None and not isinstance(row_filter, AlwaysTrue):
            extra |= {self._top_level(i) for i in referenced_field_ids(row_filter)}
            arrow_filter = to_arrow_filter(row_filter)
        have = {f.field_id for f in projected.fields}
        fields = [
            *projected.fields,
            *(f for f in self._schema.fields if f.field_id in extra and f.field_id not in have),
        ]
        batches = iter_data_file_batches(
            self._io,
            data_file,
            projected=Schema(tuple(fields), self._schema.schema_id),
            batch_size=batch_size,
            spec=spec,
        )
        if position_column is not None:
            batches = _with_positions(batches, position_column)
        keep = [f.name for f in projected.fields]
        if position_column is not None:
            keep.append(position_column)
        for batch in self.apply(data_file, deletes, batches):
            if arrow_filter is not None and batch.num_rows:
                batch = batch.filter(arrow_filter)
            yield batch.select(keep)

    def _top_level(self, field_id: int) -> int:
        parent = self._schema.parent_id(field_id)
        while parent is not None:
            field_id = parent
            parent = self._schema.parent_id(field_id)
        return field_id

    def apply(
        self, data_file: DataFile, deletes: Sequence[DataFile], batches: Iterable[pa.RecordBatch]
    ) -> Iterator[pa.RecordBatch]:
        """``batches`` (all rows of ``data_file`` in file order, unfiltered) without the rows
        ``deletes`` delete."""
        equality = [d for d in deletes if d.content is Content.EQUALITY_DELETES]
        index = self.position_index(data_file, deletes)
        eq = [self._equality_deletes(d) for d in equality]
        start = 0
        for batch in batches:
            rows = batch.num_rows
            if index is not None:
                batch = index.apply(batch, start)
            if eq and batch.num_rows:
                batch = drop_equality_deleted(batch, eq)
            start += rows
            yield batch

    def position_index(
        self, data_file: DataFile, deletes: Sequence[DataFile]
    ) -> PositionIndex | None:
        """The row positions of ``data_file`` that the position delete files and deletion
        vector among ``deletes`` delete (``None``: none)."""
        positional = [d for d in deletes if d.content is Content.POSITION_DELETES]
        dvs = [d for d in positional if d.file_format.upper() == "PUFFIN"]
        if dvs:
            return PositionIndex(self._deletion_vector(dvs[0]))
        found = [self._positions_by_file(d).get(data_file.file_path) for d in positional]
        indexes = [i for i in found if i is not None]
        if not indexes:
            return None
        return indexes[0].union(*indexes[1:]) if len(indexes) > 1 else indexes[0]

    def _deletion_vector(self, dv: DataFile) -> Any:
        assert dv.content_offset is not None and dv.content_size_in_bytes is not None
        offset, length = dv.content_offset, dv.content_size_in_bytes
        return _read_delete_file(
            self._io,
            dv,
            lambda source: read_deletion_vector(
                source, offset, length, expected_cardinality=dv.record_count
            ),
        )

    def _positions_by_file(self, delete_file: DataFile) -> dict[str, PositionIndex]:
        """The positions a position delete file deletes, grouped by data file once (a delete
        file may name many data files, each read in its own task)."""
        with self._lock:
            found = self._positions.get(delete_file.file_path)
        if found is None:
            rows = _read_delete_file(
                self._io, delete_file, lambda f: pq.read_table(f, columns=["file_path", "pos"])
            )
            found = positions_by_file(rows)
            with self._lock:
                self._positions[delete_file.file_path] = found
        return found

    def _equality_deletes(self, delete_file: DataFile) -> EqualityDeletes:
        ids = tuple(delete_file.equality_ids or ())
        fields = [self._field(i, delete_file) for i in ids]
        with self._lock:
            rows = self._equality.get(delete_file.file_path)
        if rows is None:
            schema = Schema(tuple(fields), self._schema.schema_id)
            rows = _read_delete_file(
                self._io,
                delete_file,
                lambda _f: read_data_file(self._io, delete_file, projected=schema),
            )
            with self._lock:
                self._equality[delete_file.file_path] = rows
        refs = tuple((f.name,) for f in fields)
        return EqualityDeletes(rows, refs)

    def _field(self, field_id: int, delete_file: DataFile) -> NestedField:
        for schema in self._schemas:  # the scan's schema first, then the table's older ones
            if schema.has_field(field_id) and schema.parent_id(field_id) is None:
                return schema.find_field(field_id)
        raise UnsupportedFeature(
            f"equality delete file {delete_file.file_path} compares on field {field_id}, which is "
            "not a top-level column of the table's schema; lakecat applies equality deletes on "
            "top-level columns",
            feature="equality deletes on nested fields",
        )


def _with_positions(batches: Iterable[pa.RecordBatch], name: str) -> Iterator[pa.RecordBatch]:
    start = 0
    for batch in batches:
        n = batch.num_rows
        positions = pa.array(range(start, start + n), pa.int64())
        yield pa.RecordBatch.from_arrays(
            [*batch.columns, positions], names=[*batch.schema.names, name]
        )
        start += n


def _read_delete_file(io: FileIO, f: DataFile, read: Callable[[Any], T]) -> T:
    """Read a delete file, any failure a typed error naming it: a read that cannot apply its
    deletes must not return rows."""
    try:
        source = io.open_input(f.file_path)
        try:
            return read(source)
        finally:
            source.close()
    except FileNotFoundError as exc:
        raise CorruptMetadata(f"delete file {f.file_path} is missing: {exc}") from exc
    except LakecatError as exc:
        raise CorruptMetadata(f"delete file {f.file_path} cannot be read: {exc}") from exc
    except (OSError, pa.ArrowException, KeyError, ValueError) as exc:
        raise CorruptMetadata(
            f"delete file {f.file_path} cannot be read ({type(exc).__name__}: {exc})"
        ) from exc

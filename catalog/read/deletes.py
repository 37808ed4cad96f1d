"""Delete files in a snapshot: applying them.

A snapshot's manifest list names data manifests and delete manifests (``content`` 1). Every
read of the snapshot must apply the live delete files those name (position deletes, deletion
vectors, equality deletes), and every rewrite of a data file must carry its deletes over.

* Which delete files apply to which data file is planned from metadata alone
  (:mod:`lakecat.metadata.manifests.delete_index`, the spec's "Scan Planning" rules).
* :class:`DeleteReader` reads each delete file once per scan and drops the deleted rows from a
  data file's batches (with :mod:`lakecat.metadata.deletes`). A delete file that is missing or
  unreadable is a :class:`~lakecat.metadata.errors.CorruptMetadata` naming it: no rows are
  returned from a file whose deletes could not be applied.
* :func:`has_deletes` says whether a snapshot has any (its manifest list alone).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lakecat.metadata.deletes import (
    EqualityDeletes,
    PositionIndex,
    drop_equality_deleted,
    positions_by_file,
    read_deletion_vector,
    row_positions,
)
from lakecat.metadata.errors import CorruptMetadata, LakecatError, UnsupportedFeature
from lakecat.metadata.expressions.evaluators import InclusiveMetricsEvaluator, to_arrow_filter
from lakecat.metadata.expressions.expressions import (
    AlwaysTrue,
    BoundExpression,
    referenced_field_ids,
)
from lakecat.metadata.io.fileio import FileIO
from lakecat.metadata.io.matching import matching_positions
from lakecat.metadata.io.parquet import (
    DataFileReads,
    iter_data_file_batches,
    read_data_file,
)
from lakecat.metadata.manifests.cache import ManifestCache, NoCache
from lakecat.metadata.manifests.datafile import Content, DataFile
from lakecat.metadata.manifests.delete_index import delete_manifests
from lakecat.metadata.partitioning.spec import PartitionSpec
from lakecat.metadata.schema.arrow import schema_to_arrow
from lakecat.metadata.schema.lineage import LINEAGE_COLUMNS
from lakecat.metadata.schema.name_mapping import NameMapping
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.schema.types import NestedField
from lakecat.metadata.table.snapshots import Snapshot

T = TypeVar("T")

__all__ = [
    "DeleteReader",
    "has_deletes",
]


def has_deletes(io: FileIO, snapshot: Snapshot | None, cache: ManifestCache | None = None) -> bool:
    """Whether ``snapshot`` has live delete files (reads its manifest list only)."""
    if snapshot is None:
        return False
    listing = (cache or NoCache()).manifest_list(io, snapshot.manifest_list)
    return bool(delete_manifests(listing.manifests))


# ---- reading: applying them -----------------------------------------------------------------


class DeleteReader:
    """Reads delete files (each once per scan) and drops the rows they delete from a data
    file's batches. Thread-safe: a scan reads data files from a thread pool."""

    def __init__(
        self,
        io: FileIO,
        schema: Schema,
        all_schemas: Sequence[Schema] = (),
        name_mapping: NameMapping | None = None,
    ) -> None:
        self._io = io
        self._schema = schema
        self._name_mapping = name_mapping  # the ids of data files written without them
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
        prune: bool = True,
    ) -> Iterator[pa.RecordBatch]:
        """The rows of ``data_file`` that ``deletes`` leave and ``row_filter`` (bound to the
        reader's schema) matches, as batches of ``projected``'s top-level columns; with
        ``position_column``, one more int64 column of that name holds each row's position in
        the file (counted over every row, deleted ones included).

        The file is read in order with the columns the equality deletes and the filter need,
        each row numbered with its position; then the deleted rows are dropped, then the
        filter applied, then the extra columns dropped. With a filter (and ``prune``), the
        row groups whose statistics rule it out are skipped and, in a file with a page
        index, only the pages that may match of a row group are decoded
        (:meth:`_read_pruned`); a filter on the row lineage columns does not prune (their
        stored values are not all of what a read returns)."""
        extra = self.equality_field_ids(deletes)
        arrow_filter = None
        referenced: set[int] = set()
        if row_filter is not None and not isinstance(row_filter, AlwaysTrue):
            referenced = set(referenced_field_ids(row_filter))
            extra |= {self._schema.top_level_id(i) for i in referenced}
            arrow_filter = to_arrow_filter(row_filter)
        have = {f.field_id for f in projected.fields}
        fields = [
            *projected.fields,
            *(f for f in self._schema.fields if f.field_id in extra and f.field_id not in have),
        ]
        read_schema = Schema(tuple(fields), self._schema.schema_id)
        lineage_filter = bool(referenced & _LINEAGE_IDS)
        if prune and row_filter is not None and arrow_filter is not None and not lineage_filter:
            yield from self._read_pruned(
                data_file,
                deletes,
                read_schema,
                row_filter,
                arrow_filter,
                spec=spec,
                batch_size=batch_size or _BATCH_ROWS,
                keep=[f.name for f in projected.fields],
                position_column=position_column,
            )
            return
        batches = iter_data_file_batches(
            self._io,
            data_file,
            projected=read_schema,
            batch_size=batch_size,
            spec=spec,
            name_mapping=self._name_mapping,
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

    def matching_positions(
        self,
        data_file: DataFile,
        deletes: Sequence[DataFile],
        *,
        row_filter: BoundExpression,
        spec: PartitionSpec | None = None,
        threads: int = 1,
    ) -> pa.Int64Array | None:
        """The positions, ascending, of the rows of ``data_file`` that ``deletes`` leave and
        ``row_filter`` (bound to the reader's schema) matches, found reading only the filter's
        columns of the row groups whose statistics may match, on up to ``threads`` threads
        (:mod:`lakecat.metadata.io.matching`); ``None`` when equality deletes apply (which
        need more columns: read the file with :meth:`read` and a position column instead)."""
        if any(d.content is Content.EQUALITY_DELETES for d in deletes):
            return None
        found = matching_positions(
            self._io,
            data_file,
            filter_schema=self._schema,
            row_filter=to_arrow_filter(row_filter),
            row_group_filter=InclusiveMetricsEvaluator(self._schema, row_filter),
            spec=spec,
            threads=threads,
            name_mapping=self._name_mapping,
        )
        index = self.position_index(data_file, deletes)
        if index is None or not len(found):
            return found
        live: pa.Int64Array = found.filter(pc.invert(pc.is_in(found, value_set=index.positions)))
        return live

    def _read_pruned(
        self,
        data_file: DataFile,
        deletes: Sequence[DataFile],
        read_schema: Schema,
        row_filter: BoundExpression,
        arrow_filter: pc.Expression,
        *,
        spec: PartitionSpec | None,
        batch_size: int,
        keep: list[str],
        position_column: str | None,
    ) -> Iterator[pa.RecordBatch]:
        """:meth:`read` of the rows a filter may match: the row groups its metrics evaluator
        cannot rule out, and of those, only the pages the page index cannot rule out when
        that narrows a row group to at most a batch. Rows keep their positions in the file,
        so deletes apply as on a whole read."""
        reads = DataFileReads(
            projected=read_schema,
            row_group_filter=InclusiveMetricsEvaluator(self._schema, row_filter),
            name_mapping=self._name_mapping,
        )
        position = position_column or _PRUNED_POSITION
        index = self.position_index(data_file, deletes)
        eq = [self._equality_deletes(d) for d in deletes if d.content is Content.EQUALITY_DELETES]
        out = [*keep, position] if position_column is not None else keep
        with reads.open(self._io, data_file, spec) as opened:
            pages = opened.page_filter()
            for raw, start, rows in opened.pruned_batches(opened.row_groups, pages, batch_size):
                if rows is None:  # consecutive rows from ``start``
                    positions = row_positions(start, raw.num_rows)
                else:
                    positions = pa.array(rows + start, pa.int64())
                batch = opened.resolve(raw).append_column(position, positions)
                if index is None:
                    parts: Sequence[pa.RecordBatch] = (batch,)
                elif rows is None:
                    parts = drop_positions(index, batch, start, slices=not eq)
                else:
                    dropped = pc.is_in(positions, value_set=index.positions)
                    parts = (batch.filter(pc.invert(dropped)),)
                for part in parts:
                    if eq and part.num_rows:
                        part = drop_equality_deleted(part, eq)
                    if part.num_rows:
                        part = part.filter(arrow_filter)
                    if part.num_rows:
                        yield part.select(out)

    def read_table(
        self,
        data_file: DataFile,
        deletes: Sequence[DataFile],
        *,
        projected: Schema,
        spec: PartitionSpec | None = None,
    ) -> pa.Table:
        """Every row of ``data_file`` that ``deletes`` leave (all of them without deletes), in
        ``projected``'s form, unfiltered: what a rewrite of the file starts from."""
        if not deletes:
            return read_data_file(
                self._io, data_file, projected=projected, spec=spec, name_mapping=self._name_mapping
            )
        kept = self.read(data_file, deletes, projected=projected, spec=spec)
        return pa.Table.from_batches(list(kept), schema=schema_to_arrow(projected))

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
            # one batch per batch when equality deletes follow: each call builds their sets
            kept = (batch,) if index is None else drop_positions(index, batch, start, slices=not eq)
            for part in kept:
                if eq and part.num_rows:
                    part = drop_equality_deleted(part, eq)
                yield part
            start += rows

    def position_index(
        self, data_file: DataFile, deletes: Sequence[DataFile]
    ) -> PositionIndex | None:
        """The row positions of ``data_file`` that the position delete files and deletion
        vector among ``deletes`` delete (``None``: none)."""
        positional = [d for d in deletes if d.content is Content.POSITION_DELETES]
        dvs = [d for d in positional if d.is_deletion_vector]
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
            found = _read_delete_file(self._io, delete_file, _read_position_deletes)
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


# A batch losing at most this many rows is returned as the zero-copy slices between them
_SLICED_DELETES = 4
# A batch losing at most one row in this many is filtered column by column through a bit mask
# built from its deleted positions; one losing more is taken through the kept rows' indices
_MASKED_DELETE_SHARE = 16
_CLEAR_BIT = tuple(0xFF ^ (1 << i) for i in range(8))  # a byte of a bit mask without bit i


def drop_positions(
    index: PositionIndex, batch: pa.RecordBatch, start: int, *, slices: bool = True
) -> Sequence[pa.RecordBatch]:
    """``batch`` (rows ``start``, ``start + 1``, ... of its file) without the rows ``index``
    deletes, as one or more batches in row order: ``batch`` itself when it loses none, the
    runs between its deleted rows as zero-copy slices when it loses a few (and ``slices``),
    else one copy.

    The copy filters each column by a bit mask rather than taking the kept rows' indices
    (``RecordBatch.filter`` and ``take`` both gather row by row, the more so for strings; a
    column's filter copies the runs of kept rows whole): about a third less time when a
    scattered 1% of the rows go, most of it on string columns."""
    n = batch.num_rows
    deleted = index.in_range(start, start + n)
    count = len(deleted)
    if not count:
        return (batch,)
    if count == n:
        return (batch.slice(0, 0),)
    if slices and count <= _SLICED_DELETES:
        parts: list[pa.RecordBatch] = []
        at = 0
        for p in deleted.to_pylist():
            if p - start > at:
                parts.append(batch.slice(at, p - start - at))
            at = p - start + 1
        if at < n:
            parts.append(batch.slice(at))
        return parts
    if count * _MASKED_DELETE_SHARE > n or not batch.num_columns:
        return (index.apply(batch, start),)
    mask = _kept_mask(deleted, start, n)
    columns = [column.filter(mask) for column in batch.columns]
    return (pa.RecordBatch.from_arrays(columns, schema=batch.schema),)


def _kept_mask(deleted: pa.Int64Array, start: int, n: int) -> pa.BooleanArray:
    """A boolean array of ``n`` rows from position ``start``: false at ``deleted`` (sorted,
    distinct, within the rows), true elsewhere."""
    bits = bytearray(b"\xff") * ((n + 7) >> 3)
    relative = pc.subtract(deleted, pa.scalar(start, pa.int64()))
    values = relative.buffers()[1]
    assert values is not None and not relative.null_count
    view = memoryview(values)[relative.offset * 8 : (relative.offset + len(relative)) * 8]
    for p in view.cast("q"):
        bits[p >> 3] &= _CLEAR_BIT[p & 7]
    mask: pa.BooleanArray = pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(bits)])
    return mask


def _read_position_deletes(source: Any) -> dict[str, PositionIndex]:
    """The positions a position delete file (open as ``source``) deletes, by data file.

    ``file_path`` is read dictionary-encoded: a file whose rows all name one data file (as
    Iceberg Java 1.10 writes them by default, and lakecat always) has one dictionary value per
    chunk, and its positions need no grouping by path."""
    rows = pq.ParquetFile(
        source, pre_buffer=False, read_dictionary=["file_path"], arrow_extensions_enabled=False
    ).read(columns=["file_path", "pos"])
    paths = rows.column("file_path")
    if pa.types.is_dictionary(paths.type) and pa.types.is_string(paths.type.value_type):
        names = {p for chunk in paths.chunks for p in chunk.dictionary.to_pylist()}
        if len(names) == 1 and not paths.null_count and rows.num_rows:
            (name,) = names  # no null: every row names the one value
            return {name: PositionIndex(rows.column("pos"))}
    return positions_by_file(rows)


def _with_positions(batches: Iterable[pa.RecordBatch], name: str) -> Iterator[pa.RecordBatch]:
    start = 0
    for batch in batches:
        n = batch.num_rows
        positions = row_positions(start, n)
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


_BATCH_ROWS = 131_072  # rows per batch of a pruned read without a batch size
_PRUNED_POSITION = "__lakecat_pruned_position"
_LINEAGE_IDS = frozenset(f.field_id for f in LINEAGE_COLUMNS.values())

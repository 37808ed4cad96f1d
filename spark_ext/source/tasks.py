"""Executor-side work: read the data files of one input partition, write one task's rows.

Executors never open the catalog: they get the FileIO and the table metadata the driver
planned with. Only the files listed in the commit messages of successful attempts, which
Spark hands to the driver's ``commit``, ever reach a snapshot. Files of other attempts are
removed two ways:

* a write task that fails deletes every file it wrote before the error propagates;
* every write task records the files it wrote in the job's :class:`Journal` as it goes, so
  that the driver finds the files of attempts whose message never reached it (a task killed
  after it finished writing because the job failed, the loser of a speculative pair) and
  deletes them, on commit and on abort. Only an attempt killed between writing a file and
  recording it can leave a file behind, for orphan-file removal.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import TaskContext

from lakecat.catalog.engine import DeleteReader, conform, delete_quietly, write_files
from lakecat.metadata import properties as P
from lakecat.metadata.deletes import row_positions
from lakecat.metadata.errors import CommitFailed, StorageError, ValidationError
from lakecat.metadata.expressions import (
    AlwaysTrue,
    Expression,
    InclusiveMetricsEvaluator,
    bind,
    to_arrow_filter,
)
from lakecat.metadata.io import ARROW_TO_PARQUET_RATIO, FileIO, iter_data_file_batches, join
from lakecat.metadata.manifests import DataFile
from lakecat.metadata.partitioning import PartitionSpec
from lakecat.metadata.schema import (
    LINEAGE_COLUMNS,
    NameMapping,
    Schema,
    fill_lineage,
    schema_to_arrow,
    with_lineage,
)
from lakecat.metadata.table import TableMetadata
from lakecat.spark_ext.types import (
    FILE_COLUMN,
    METADATA_COLUMNS,
    POS_COLUMN,
    from_spark_table,
    to_spark_batch,
)

log = logging.getLogger("lakecat.spark")

# A write task holds at most about this much Arrow data before writing it out.
WRITE_BUFFER_BYTES = 128 * 1024 * 1024
# Left in a write job's journal folder by an abort.
ABORTED_MARKER = "_aborted"
# Rows per Arrow batch handed to Spark.
READ_BATCH_ROWS = 262_144


# ---- reading ----------------------------------------------------------------------------
@dataclass(frozen=True)
class FileReader:
    """What an executor needs to read data files in Spark's Arrow form."""

    io: FileIO
    table_schema: Schema  # the schema the read resolves against (filters bind to it)
    projected: Schema  # the columns Spark asked for, in its order
    specs: Mapping[int, PartitionSpec]
    row_filter: Expression  # applied exactly; AlwaysTrue for none
    metadata_columns: bool = False
    schemas: tuple[Schema, ...] = ()  # the table's schemas (equality deletes may name old fields)
    # assign the row lineage columns of ``projected`` (format v3); else they read as stored
    row_lineage: bool = False
    # the field ids of data files written without them (the table's name mapping)
    name_mapping: NameMapping | None = None

    def read(
        self,
        files: Iterable[DataFile],
        target: pa.Schema,
        deletes: Mapping[str, Sequence[DataFile]] | None = None,
        sequence_numbers: Mapping[str, int] | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """The rows of ``files`` matching the filter, without the rows their ``deletes``
        (delete files by data file path) delete; with ``row_lineage``, the lineage columns
        assigned from each file's ``first_row_id`` and data sequence number (by path in
        ``sequence_numbers``) as the spec says."""
        bound = None
        arrow_filter = None
        row_groups = None  # skips the row groups of multi-row-group files that cannot match
        if not isinstance(self.row_filter, AlwaysTrue):
            bound = bind(self.table_schema, self.row_filter)
            arrow_filter = to_arrow_filter(bound)
            row_groups = InclusiveMetricsEvaluator(self.table_schema, bound)
        deletes = deletes or {}
        in_order = deletes or self.row_lineage  # rows read in order, with their positions
        reader = (
            DeleteReader(self.io, self.table_schema, self.schemas, self.name_mapping)
            if in_order
            else None
        )
        for f in files:
            spec = self.specs.get(f.spec_id)
            applying = deletes.get(f.file_path, ())
            if (applying or self.row_lineage) and reader is not None:
                wants_position = self.metadata_columns or self.row_lineage
                batches = reader.read(
                    f,
                    applying,
                    projected=self.projected,
                    row_filter=bound,
                    spec=spec,
                    batch_size=READ_BATCH_ROWS,
                    position_column=POS_COLUMN if wants_position else None,
                )
                sequence_number = (sequence_numbers or {}).get(f.file_path)
                for batch in batches:
                    if batch.num_rows:
                        if self.row_lineage:
                            batch = _with_lineage(batch, f, sequence_number)
                            if not self.metadata_columns:
                                batch = batch.drop_columns([POS_COLUMN])
                        if self.metadata_columns:
                            batch = _with_file(batch, f.file_path)
                        yield to_spark_batch(batch, target)
                continue
            position = 0
            for batch in iter_data_file_batches(
                self.io,
                f,
                projected=self.projected,
                row_filter=arrow_filter,
                filter_schema=self.table_schema,
                batch_size=READ_BATCH_ROWS,
                spec=spec,
                row_group_filter=row_groups,
                name_mapping=self.name_mapping,
            ):
                if batch.num_rows == 0:
                    continue
                if self.metadata_columns:
                    batch = _with_metadata(batch, f.file_path, position)
                    position += batch.num_rows
                yield to_spark_batch(batch, target)


def with_both_metadata_columns(schema: pa.Schema) -> pa.Schema:
    """A read schema that asks for ``_file`` or ``_pos``, with both last, as the file reader
    yields them (a read that asked for one drops the other)."""
    data = [f for f in schema if f.name not in METADATA_COLUMNS]
    return pa.schema(
        [*data, pa.field(FILE_COLUMN, pa.string(), False), pa.field(POS_COLUMN, pa.int64(), False)]
    )


def _with_lineage(
    batch: pa.RecordBatch, f: DataFile, sequence_number: int | None
) -> pa.RecordBatch:
    """A batch of ``f`` that ends with its position column, with the nulls of its row lineage
    columns assigned (spec, "Row Lineage")."""
    positions = batch.column(POS_COLUMN)
    filled = fill_lineage(
        batch.drop_columns([POS_COLUMN]),
        positions,
        first_row_id=f.first_row_id,
        sequence_number=sequence_number,
    )
    return filled.append_column(batch.schema.field(POS_COLUMN), positions)


def _with_file(batch: pa.RecordBatch, path: str) -> pa.RecordBatch:
    """A batch that ends with its position column, with the file column before it."""
    n = batch.num_rows
    file_column = pa.repeat(pa.scalar(path, pa.string()), n)
    columns = batch.columns
    return pa.RecordBatch.from_arrays(
        [*columns[:-1], file_column, columns[-1]],
        names=[*batch.schema.names[:-1], FILE_COLUMN, POS_COLUMN],
    )


def _with_metadata(batch: pa.RecordBatch, path: str, start: int) -> pa.RecordBatch:
    n = batch.num_rows
    file_column = pa.repeat(pa.scalar(path, pa.string()), n)
    positions = row_positions(start, n)
    return pa.RecordBatch.from_arrays(
        [*batch.columns, file_column, positions],
        names=[*batch.schema.names, FILE_COLUMN, POS_COLUMN],
    )


# ---- writing ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Journal:
    """The folder where the tasks of one write job record the data files they write.

    An abort first leaves a marker in the folder, then deletes what was recorded. A task
    checks for the marker after each record, so a task still running when the job was
    aborted (Spark does not wait for killed tasks) deletes its own files: whatever it
    recorded after the driver listed the journal, it finds the marker afterwards.
    """

    io: FileIO
    folder: str

    @property
    def aborted_marker(self) -> str:
        return join(self.folder, ABORTED_MARKER)

    def record(self, files: Sequence[DataFile]) -> str | None:
        """Executor: note files just written (one small JSON file per call); returns the
        entry. Raises :class:`CommitFailed` when the job was aborted meanwhile."""
        if not files:
            return None
        context = TaskContext.get()
        attempt = f"{context.partitionId()}-{context.taskAttemptId()}-" if context else ""
        entry = join(self.folder, f"{attempt}{uuid.uuid4().hex}.json")
        self.io.write(entry, json.dumps([f.file_path for f in files]).encode(), exclusive=True)
        if self.io.exists(self.aborted_marker):
            # the caller deletes the files; the entry is ours, and the driver may have
            # listed the journal before it was written
            delete_quietly(self.io, [entry])
            raise CommitFailed(f"the write job of {self.folder} was aborted")
        return entry

    def recorded(self) -> tuple[set[str], list[str]]:
        """Driver: (every data file path the job's tasks recorded, the journal entries)."""
        paths: set[str] = set()
        entries: list[str] = []
        for info in self.io.list_prefix(self.folder):
            if info.location.endswith(ABORTED_MARKER):
                continue
            entries.append(info.location)
            try:
                paths.update(json.loads(self.io.read(info.location)))
            except (StorageError, ValueError) as exc:  # a torn record: orphan removal's job
                log.warning("unreadable journal entry %s: %s", info.location, exc)
        return paths, entries

    def clean(self, keep: Iterable[str] = ()) -> None:
        """Driver, after a commit: delete the recorded files not in ``keep`` (attempts whose
        messages never arrived), then the journal. Best effort: whatever cannot be deleted
        is left to orphan-file removal."""
        try:
            recorded, entries = self.recorded()
        except StorageError as exc:
            log.warning("cannot list the write journal %s: %s", self.folder, exc)
            return
        delete_quietly(self.io, sorted(recorded - set(keep)))
        delete_quietly(self.io, entries)

    def abort(self) -> None:
        """Driver, after a failed job: mark the job aborted, then delete what was recorded.
        The marker stays (tasks still running must see it); orphan removal takes it later."""
        try:
            self.io.write(self.aborted_marker, b"", exclusive=False)
        except StorageError as exc:
            log.warning("cannot mark %s aborted: %s", self.folder, exc)
        self.clean()


def write_batches(
    io: FileIO,
    metadata: TableMetadata,
    batches: Iterable[pa.RecordBatch],
    *,
    journal: Journal | None = None,
    required_filter: Expression | None = None,
    row_lineage: bool = False,
    keep_order: bool = False,
) -> list[DataFile]:
    """Write Spark's Arrow batches as data files of the table (partitioned by its default
    spec, split at its target file size, with column metrics and field ids).

    ``row_lineage``: the batches may carry the row lineage columns (``_row_id``,
    ``_last_updated_sequence_number``) of rows a driver-side operation copies from a format
    v3 table; they are written with the rows (nulls: assigned at commit).

    The batches are cut into slices of about :data:`WRITE_BUFFER_BYTES`; a background thread
    writes one slice while the next one arrives from Spark (pyarrow encodes and compresses
    without holding the GIL), so receiving and writing overlap.

    ``keep_order``: write the rows in the order they come, even on a table with a sort order
    (a compaction recording where each row went); the files are returned in that order.

    ``required_filter``: every row must match it (an overwrite by filter writes only rows
    inside its filter), else :class:`ValidationError`. On any failure every file this call
    wrote, and its journal entries, are deleted before the error propagates.
    """
    writer = _SliceWriter(io, metadata, journal, required_filter, row_lineage, keep_order)
    pending: Future[None] | None = None
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="lakecat-write") as pool:
        try:
            for table in _slices(batches, _buffer_bytes(metadata)):
                if pending is not None:
                    pending.result()
                pending = pool.submit(writer.write, table)
            if pending is not None:
                pending.result()
        except BaseException:
            if pending is not None:
                wait([pending])  # its files must be known before they are deleted
            delete_quietly(io, [f.file_path for f in writer.written])
            delete_quietly(io, writer.entries)
            raise
    return writer.written


class _SliceWriter:
    """Conforms and writes slices, one at a time, remembering what it wrote."""

    def __init__(
        self,
        io: FileIO,
        metadata: TableMetadata,
        journal: Journal | None,
        required_filter: Expression | None,
        row_lineage: bool = False,
        keep_order: bool = False,
    ) -> None:
        self.io = io
        self.keep_order = keep_order
        self.metadata = metadata
        self.schema = metadata.schema()
        self.journal = journal
        self.lineage = [f.name for f in LINEAGE_COLUMNS.values()] if row_lineage else []
        self.check: tuple[pc.Expression, Expression] | None = None
        if required_filter is not None and not isinstance(required_filter, AlwaysTrue):
            self.check = (to_arrow_filter(bind(self.schema, required_filter)), required_filter)
        self.written: list[DataFile] = []
        self.entries: list[str] = []

    def write(self, table: pa.Table) -> None:
        carried = [c for c in self.lineage if c in table.column_names]
        rows = table.drop_columns(carried)
        conformed = conform(self.metadata, from_spark_table(rows, self.schema))
        if carried:  # conform keeps the rows' order: the lineage columns go back alongside
            (part,) = conformed
            lineage = [  # both, a missing one null
                table.column(name).cast(pa.int64())
                if name in carried
                else pa.chunked_array([pa.nulls(table.num_rows, pa.int64())])
                for name in self.lineage
            ]
            arrow = schema_to_arrow(with_lineage(self.schema))
            conformed = [pa.Table.from_arrays([*part.columns, *lineage], schema=arrow)]
        if self.check is not None:
            _require_match(conformed, *self.check)
        new = write_files(self.io, self.metadata, conformed, keep_order=self.keep_order)
        self.written.extend(new)
        if self.journal is not None:
            entry = self.journal.record(new)
            self.entries.extend([entry] if entry else [])


def _buffer_bytes(metadata: TableMetadata) -> int:
    target = P.get_int(
        metadata.properties, P.WRITE_TARGET_FILE_SIZE_BYTES, P.WRITE_TARGET_FILE_SIZE_BYTES_DEFAULT
    )
    return max(1, min(WRITE_BUFFER_BYTES, int(target * ARROW_TO_PARQUET_RATIO)))


def _slices(batches: Iterable[pa.RecordBatch], limit: int) -> Iterator[pa.Table]:
    pending: list[pa.RecordBatch] = []
    size = 0
    for batch in batches:
        if batch.num_rows == 0:
            continue
        pending.append(batch)
        size += batch.nbytes
        if size >= limit:
            yield pa.Table.from_batches(pending)
            pending, size = [], 0
    if pending:
        yield pa.Table.from_batches(pending)


def _require_match(tables: list[pa.Table], check: pc.Expression, expression: Expression) -> None:
    for table in tables:
        outside = table.num_rows - table.filter(check).num_rows
        if outside:
            raise ValidationError(
                f"{outside} row(s) written by an overwrite with filter {expression} do not "
                "match the filter; an overwrite by filter may only write rows inside it"
            )

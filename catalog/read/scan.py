"""Scans: plan the data files of one snapshot that may hold matching rows, then read them.

Planning prunes in three steps, each cheaper than the next: manifests by their partition
summaries, entries by their partition tuple (the filter projected through the partition
transforms), and files by their column bounds and counts. Through the catalog's
:class:`~lakecat.metadata.manifests.cache.ManifestCache`, a plan decodes each manifest list and
manifest at most once per process; the partition filter is evaluated once per distinct
partition of a manifest, not per file; and a filter on the first partition field decodes only
the Avro blocks of a lakecat-written manifest that can match
(:mod:`~lakecat.metadata.manifests.blocks`). Plans hold complete data files (every stat) either
way. Reading resolves columns by field id (so renamed, added, dropped and promoted columns
read correctly; a file without the source column of an identity partition field reads it from
its partition value) and filters rows exactly.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace

import pyarrow as pa
import pyarrow.compute as pc

from lakecat.catalog.read.deletes import DeleteReader
from lakecat.metadata.errors import ValidationError
from lakecat.metadata.expressions.evaluators import (
    InclusiveMetricsEvaluator,
    ManifestEvaluator,
    PartitionEvaluator,
    to_arrow_filter,
)
from lakecat.metadata.expressions.expressions import (
    AlwaysTrue,
    BoundExpression,
    Expression,
    bind,
    referenced_field_ids,
)
from lakecat.metadata.expressions.parser import parse
from lakecat.metadata.io.fileio import FileIO
from lakecat.metadata.io.parquet import read_data_file
from lakecat.metadata.manifests.blocks import BlockTest
from lakecat.metadata.manifests.cache import ManifestCache, NoCache
from lakecat.metadata.manifests.datafile import DataFile, ManifestContent, Status
from lakecat.metadata.manifests.delete_index import delete_index, delete_manifests
from lakecat.metadata.partitioning.spec import PartitionSpec
from lakecat.metadata.schema.arrow import schema_to_arrow
from lakecat.metadata.schema.lineage import LINEAGE_COLUMNS, fill_lineage
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.table.snapshots import Snapshot
from lakecat.metadata.table.table_metadata import TableMetadata

RowFilter = Expression | str | None
_READ_THREADS = 4
_POSITION = "__lakecat_pos"  # a row's position in its file, while row lineage is filled in
# a merge-on-read delete reads only the filter's columns: big batches, few filter calls
_POSITIONS_BATCH_ROWS = 1 << 20


def to_expression(row_filter: RowFilter) -> Expression:
    """A filter given as an expression, a SQL-like string, or ``None`` (all rows)."""
    if row_filter is None:
        return AlwaysTrue()
    if isinstance(row_filter, str):
        return parse(row_filter)
    return row_filter


@dataclass(frozen=True)
class ScanPlan:
    """The data files a scan reads and, for each that has any, the delete files to apply to
    it (keyed by data file path; see :mod:`lakecat.catalog.read.deletes`)."""

    files: tuple[DataFile, ...]
    manifests_total: int
    manifests_scanned: int
    files_total: int
    deletes: Mapping[str, tuple[DataFile, ...]] = field(default_factory=dict)
    # data sequence numbers by file path: planned when deletes apply or row lineage is read
    sequence_numbers: Mapping[str, int] = field(default_factory=dict)

    @property
    def record_count(self) -> int:
        """The rows in the planned files; with deletes to apply, an upper bound."""
        return sum(f.record_count for f in self.files)


class Scan:
    """A read of one snapshot, with a row filter and a column projection."""

    def __init__(
        self,
        io: FileIO,
        metadata: TableMetadata,
        snapshot: Snapshot | None,
        schema: Schema,
        *,
        row_filter: RowFilter = None,
        columns: Sequence[str] | None = None,
        case_sensitive: bool = True,
        manifest_cache: ManifestCache | None = None,
    ) -> None:
        self.io = io
        self.manifests = manifest_cache or NoCache()
        self.metadata = metadata
        self.snapshot = snapshot
        self.schema = schema
        self.expression = to_expression(row_filter)
        self.bound: BoundExpression = bind(schema, self.expression, case_sensitive=case_sensitive)
        # the row lineage columns (v3) are read when asked for by name, after the others
        self.lineage = tuple(LINEAGE_COLUMNS[c] for c in columns or () if c in LINEAGE_COLUMNS)
        table_columns = [c for c in columns or () if c not in LINEAGE_COLUMNS]
        self.projected = (
            schema.select(table_columns, case_sensitive=case_sensitive)
            if columns is not None
            else schema
        )
        if self.lineage:
            self.projected = Schema(
                (*self.projected.fields, *self.lineage), self.projected.schema_id
            )
        self._reader: DeleteReader | None = None
        # a file lacking an identity partition source column reads it from its partition value
        self._specs = metadata.specs_by_id()

    # ---- planning -----------------------------------------------------------------------------
    def plan(self) -> ScanPlan:
        if self.snapshot is None:
            return ScanPlan((), 0, 0, 0)
        listing = self.manifests.manifest_list(self.io, self.snapshot.manifest_list)
        specs = self.metadata.specs_by_id()
        evaluators = _SpecEvaluators(self.schema, self.bound)
        metrics = InclusiveMetricsEvaluator(self.schema, self.bound)
        deleting = delete_manifests(listing.manifests)
        index = (
            delete_index(self.io, deleting, specs=specs, schema=self.schema, cache=self.manifests)
            if deleting
            else None
        )
        files: list[DataFile] = []
        deletes: dict[str, tuple[DataFile, ...]] = {}
        sequence_numbers: dict[str, int] = {}
        scanned = 0
        total = 0
        for manifest, summaries in zip(listing.manifests, listing.summaries, strict=True):
            if manifest.content is not ManifestContent.DATA:
                continue  # delete files are applied to data files, never read as data
            if not manifest.has_added_files and not manifest.has_existing_files:
                continue
            ev = evaluators.of(specs[manifest.partition_spec_id])
            if summaries is not None and not ev.manifest.eval_summaries(summaries):
                total += manifest.live_files_count
                continue
            scanned += 1
            # counted from the list row: a filtered scan may decode only some of the entries
            total += manifest.live_files_count
            if index is not None or self.lineage:  # data sequence numbers: whole entries
                for e in self.manifests.read(self.io, manifest, specs=specs, schema=self.schema):
                    f = e.data_file
                    if e.status is Status.DELETED:
                        continue
                    if not (ev.partition.eval(f.partition) and metrics.eval(f)):
                        continue
                    files.append(f)
                    if e.sequence_number is not None:
                        sequence_numbers[f.file_path] = e.sequence_number
                    applicable = index.for_data_file(f, e.sequence_number or 0) if index else ()
                    if applicable:
                        deletes[f.file_path] = applicable
                continue
            for live in self.manifests.live_files(
                self.io, manifest, specs=specs, schema=self.schema, may_hold=ev.blocks
            ):
                files.extend(f for f in live.select(ev.partition.eval) if metrics.eval(f))
        return ScanPlan(
            tuple(files), len(listing.manifests), scanned, total, deletes, sequence_numbers
        )

    def plan_files(self) -> list[DataFile]:
        return list(self.plan().files)

    # ---- reading ------------------------------------------------------------------------------
    def _read_schema(self) -> Schema:
        """The projection plus the columns the filter needs."""
        needed = {f.field_id for f in self.projected.fields} | {
            self.schema.top_level_id(fid) for fid in referenced_field_ids(self.bound)
        }
        return Schema(
            tuple(f for f in self.schema.fields if f.field_id in needed), self.schema.schema_id
        )

    def _read_one(
        self,
        f: DataFile,
        read_schema: Schema,
        arrow_filter: pc.Expression | None,
        deletes: tuple[DataFile, ...] = (),
        reader: DeleteReader | None = None,
        sequence_number: int | None = None,
        row_groups: InclusiveMetricsEvaluator | None = None,
    ) -> pa.Table:
        if (deletes or self.lineage) and reader is not None:
            # every row read in order, deleted ones dropped, then the filter applied
            kept = reader.read(
                f,
                deletes,
                projected=self.projected,
                row_filter=self.bound,
                spec=self._specs.get(f.spec_id),
                position_column=_POSITION if self.lineage else None,
            )
            if self.lineage:
                kept = (
                    b.drop_columns([_POSITION])
                    for b in self._with_lineage(kept, f, sequence_number, _POSITION)
                )
            return pa.Table.from_batches(list(kept), schema=schema_to_arrow(self.projected))
        table = read_data_file(
            self.io,
            f,
            projected=read_schema,
            row_filter=arrow_filter,
            spec=self._specs.get(f.spec_id),
            row_group_filter=row_groups,
        )
        if read_schema is not self.projected:
            table = table.select([fld.name for fld in self.projected.fields])
        return table

    def live_rows(
        self, f: DataFile, plan: ScanPlan, *, position_column: str | None = None
    ) -> pa.Table:
        """Every row of ``f`` (a file of ``plan``) that its delete files leave, in the scan's
        projection, unfiltered: what a copy-on-write rewrite of ``f`` starts from. With
        ``position_column``, one more int64 column of that name holds each row's position in
        the file (what a merge-on-read change of the row deletes)."""
        reader = self._delete_reader()
        deletes = plan.deletes.get(f.file_path, ())
        spec = self._specs.get(f.spec_id)
        if position_column is None and not self.lineage:
            return reader.read_table(f, deletes, projected=self.projected, spec=spec)
        position = position_column or _POSITION
        batches: Iterable[pa.RecordBatch] = reader.read(
            f, deletes, projected=self.projected, spec=spec, position_column=position
        )
        if self.lineage:
            sequence_number = plan.sequence_numbers.get(f.file_path)
            batches = self._with_lineage(batches, f, sequence_number, position)
        schema = schema_to_arrow(self.projected)
        if position_column is None:
            batches = (b.drop_columns([position]) for b in batches)
        else:
            schema = schema.append(pa.field(position_column, pa.int64()))
        # batches of one file may differ in nullability flags only: give them the scan's
        return pa.Table.from_batches(
            [pa.RecordBatch.from_arrays(b.columns, schema=schema) for b in batches],
            schema=schema,
        )

    def _with_lineage(
        self,
        batches: Iterable[pa.RecordBatch],
        f: DataFile,
        sequence_number: int | None,
        position: str,
    ) -> Iterator[pa.RecordBatch]:
        """``batches`` of ``f`` (with their positions in ``position``), whose data sequence
        number is ``sequence_number``, with the row lineage columns assigned (no row lineage
        before v3: both columns stay null)."""
        v3 = self.metadata.format_version >= 3
        for b in batches:
            lineage = fill_lineage(
                b.drop_columns([position]),
                b.column(position),
                first_row_id=f.first_row_id if v3 else None,
                sequence_number=sequence_number if v3 else None,
            )
            yield lineage.append_column(b.schema.field(position), b.column(position))

    def matching_positions(
        self, f: DataFile, plan: ScanPlan, row_filter: BoundExpression
    ) -> pa.Int64Array:
        """The positions in ``f`` (a file of ``plan``) of its live rows that ``row_filter``
        (bound to the scan's schema) matches, ascending: what a merge-on-read delete deletes.
        Reads only the columns the filter and the file's equality deletes need."""
        batches = self._delete_reader().read(
            f,
            plan.deletes.get(f.file_path, ()),
            projected=Schema((), self.schema.schema_id),
            row_filter=row_filter,
            spec=self._specs.get(f.spec_id),
            batch_size=_POSITIONS_BATCH_ROWS,
            position_column=_POSITION,
        )
        chunks = [b.column(_POSITION) for b in batches if b.num_rows]
        if not chunks:
            return pa.array([], pa.int64())
        return pa.concat_arrays(chunks)

    def _delete_reader(self) -> DeleteReader:
        if self._reader is None:  # kept: a position delete file may name many data files
            self._reader = DeleteReader(self.io, self.schema, self.metadata.schemas)
        return self._reader

    def to_batches(self) -> Iterator[pa.Table]:
        """Matching rows, one Arrow table per data file, in planning order.

        Files are read a few at a time ahead of the consumer, so a consumer that stops early
        (``to_arrow(limit=...)``) does not wait for the rest of the table to be read.
        """
        read_schema = self._read_schema()
        arrow_filter = (
            None if isinstance(self.expression, AlwaysTrue) else to_arrow_filter(self.bound)
        )
        # skips the row groups of multi-row-group files that cannot match
        row_groups = (
            None if arrow_filter is None else InclusiveMetricsEvaluator(self.schema, self.bound)
        )
        plan = self.plan()
        reader = (
            DeleteReader(self.io, self.schema, self.metadata.schemas)
            if plan.deletes or self.lineage
            else None
        )
        with ThreadPoolExecutor(max_workers=_READ_THREADS) as pool:
            pending: deque[Future[pa.Table]] = deque()
            try:
                for f in plan.files:
                    deletes = plan.deletes.get(f.file_path, ())
                    pending.append(
                        pool.submit(
                            self._read_one,
                            f,
                            read_schema,
                            arrow_filter,
                            deletes,
                            reader,
                            plan.sequence_numbers.get(f.file_path),
                            row_groups,
                        )
                    )
                    if len(pending) >= _READ_THREADS:
                        yield pending.popleft().result()
                while pending:
                    yield pending.popleft().result()
            finally:
                for future in pending:
                    future.cancel()

    def to_arrow(self, *, limit: int | None = None) -> pa.Table:
        """All matching rows (at most ``limit``, a count >= 0) as one Arrow table."""
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 0
        ):
            raise ValidationError(f"limit must be a row count >= 0, not {limit!r}")
        target = schema_to_arrow(self.projected)
        tables: list[pa.Table] = []
        rows = 0
        for t in self.to_batches():
            if t.num_rows:
                tables.append(t)
                rows += t.num_rows
            if limit is not None and rows >= limit:
                break
        if not tables:
            return target.empty_table()
        out = pa.concat_tables(tables).cast(target) if len(tables) > 1 else tables[0]
        return out.slice(0, limit) if limit is not None else out

    def count(self) -> int:
        """Matching row count: from metadata when no filter and no delete file applies, else
        by reading."""
        if isinstance(self.expression, AlwaysTrue):
            plan = self.plan()
            if not plan.deletes:
                return plan.record_count
        return sum(t.num_rows for t in self.to_batches())


class _Evaluators:
    """A scan filter's evaluators for one partition spec."""

    def __init__(self, spec: PartitionSpec, schema: Schema, bound: BoundExpression) -> None:
        self.manifest = ManifestEvaluator(spec, schema, bound)
        self.partition = PartitionEvaluator(spec, schema, bound)
        # Blocks of a partition-ordered manifest are known by their first field's range.
        by_first = (
            ManifestEvaluator(replace(spec, fields=spec.fields[:1]), schema, bound)
            if spec.fields
            else None
        )
        self.blocks: BlockTest | None = (
            None
            if by_first is None or isinstance(by_first.projected, AlwaysTrue)
            else by_first.eval_summaries
        )


class _SpecEvaluators:
    def __init__(self, schema: Schema, bound: BoundExpression) -> None:
        self._schema = schema
        self._bound = bound
        self._by_spec: dict[int, _Evaluators] = {}

    def of(self, spec: PartitionSpec) -> _Evaluators:
        found = self._by_spec.get(spec.spec_id)
        if found is None:
            found = self._by_spec[spec.spec_id] = _Evaluators(spec, self._schema, self._bound)
        return found

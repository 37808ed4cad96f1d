"""Scans: plan the data files of one snapshot that may hold matching rows
(:mod:`~lakecat.catalog.read.planning`), then read them. Reading resolves columns by field id
(so renamed, added, dropped and promoted columns read correctly; a file without the source
column of an identity partition field reads it from its partition value) and filters rows
exactly, through the engine of :mod:`~lakecat.catalog.read.reader` (small files in runs, large
ones streamed, bounded read-ahead: :mod:`~lakecat.catalog.read.read_ahead`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakecat.catalog.read.deletes import DeleteReader
from lakecat.catalog.read.memory import ResultTooLarge, materialise_budget
from lakecat.catalog.read.outputs import (
    ArrowStreamSource,
    duckdb_view,
    polars_lazy_frame,
    require,
)
from lakecat.catalog.read.planning import ScanPlan as ScanPlan
from lakecat.catalog.read.planning import plan_scan
from lakecat.catalog.read.read_ahead import read_ahead_sized, read_threads, unsized
from lakecat.catalog.read.reader import ScanReader
from lakecat.metadata.errors import ValidationError
from lakecat.metadata.expressions.evaluators import (
    InclusiveMetricsEvaluator,
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
from lakecat.metadata.io.parquet import DataFileReads, read_data_file
from lakecat.metadata.manifests.cache import ManifestCache, NoCache
from lakecat.metadata.manifests.datafile import DataFile
from lakecat.metadata.schema.arrow import schema_to_arrow
from lakecat.metadata.schema.lineage import LINEAGE_COLUMNS, fill_lineage
from lakecat.metadata.schema.name_mapping import name_mapping_of
from lakecat.metadata.schema.schema import Schema
from lakecat.metadata.table.snapshots import Snapshot
from lakecat.metadata.table.table_metadata import TableMetadata

RowFilter = Expression | str | None
_BATCH_ROWS = 131_072  # rows per batch when the caller names no batch size
# rows per batch read for to_arrow without a limit (its batches are its chunks): a row group
# of lakecat's files (write.parquet.row-group-limit) decoded at once, its columns in parallel,
# instead of one sync with pyarrow's threads per 131,072 rows (~10% of a large read)
_MATERIALISE_BATCH_ROWS = 1 << 20
_READ_AHEAD_BYTES = 256 << 20  # batches read ahead of the consumer when the caller names no cap
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
        # the field ids of data files written without them (imported files)
        self._name_mapping = name_mapping_of(metadata.properties)

    # ---- planning -----------------------------------------------------------------------------
    def plan(self) -> ScanPlan:
        return plan_scan(
            self.io,
            self.metadata,
            self.snapshot,
            self.schema,
            self.bound,
            cache=self.manifests,
            sequence_numbers=bool(self.lineage),
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
        """One file read alone, resolved and filtered by itself: the per-file path that the
        engine (:meth:`to_batches`) replaced, kept as the reference its property test
        compares with (``tests/catalog/read/test_scan_engine_property.py``)."""
        if (deletes or self.lineage) and reader is not None:
            # every row read in order, deleted ones dropped, then the filter applied
            kept = reader.read(
                f,
                deletes,
                projected=self.projected,
                row_filter=self.bound,
                spec=self._specs.get(f.spec_id),
                position_column=_POSITION if self.lineage else None,
                prune=False,  # the reference reads every row
            )
            if self.lineage:
                kept = (
                    b.drop_columns([_POSITION])
                    for b in self._with_lineage(kept, f, sequence_number, _POSITION)
                )
            target = schema_to_arrow(self.projected)
            # batches of one file may differ in nullability flags only: give them the scan's
            return pa.Table.from_batches(
                [pa.RecordBatch.from_arrays(b.columns, schema=target) for b in kept],
                schema=target,
            )
        table = read_data_file(
            self.io,
            f,
            projected=read_schema,
            row_filter=arrow_filter,
            spec=self._specs.get(f.spec_id),
            row_group_filter=row_groups,
            name_mapping=self._name_mapping,
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
        Reads only the columns the filter and the file's equality deletes need, and with no
        equality deletes only the row groups whose statistics may match, on the scan's
        reading threads."""
        reader = self._delete_reader()
        deletes = plan.deletes.get(f.file_path, ())
        spec = self._specs.get(f.spec_id)
        found = reader.matching_positions(
            f, deletes, row_filter=row_filter, spec=spec, threads=read_threads()
        )
        if found is not None:
            return found
        batches = reader.read(
            f,
            deletes,
            projected=Schema((), self.schema.schema_id),
            row_filter=row_filter,
            spec=spec,
            batch_size=_POSITIONS_BATCH_ROWS,
            position_column=_POSITION,
        )
        chunks = [b.column(_POSITION) for b in batches if b.num_rows]
        if not chunks:
            return pa.array([], pa.int64())
        return pa.concat_arrays(chunks)

    def _delete_reader(self) -> DeleteReader:
        if self._reader is None:  # kept: a position delete file may name many data files
            self._reader = DeleteReader(
                self.io, self.schema, self.metadata.schemas, self._name_mapping
            )
        return self._reader

    # ---- the engine ---------------------------------------------------------------------------
    def to_batches(
        self,
        *,
        batch_size: int | None = None,
        max_read_ahead_bytes: int | None = None,
        plan: ScanPlan | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """Matching rows as record batches of at most ``batch_size`` rows (default 131,072),
        in planning order, yielded as they are read (never a whole file first).

        Files are read ahead of the consumer on a thread pool sized to the machine, at most
        ``max_read_ahead_bytes`` (default 256 MiB) of batches ahead, so memory stays bounded
        whatever the table's size, and a consumer that stops early does not wait for the rest
        of the table (:mod:`lakecat.catalog.read.reader`, :mod:`~.read_ahead`). ``plan``: read
        these files (a share of this scan's :meth:`plan`, e.g. one task's) instead of planning.
        """
        batch_rows = _positive("batch_size", batch_size, _BATCH_ROWS)
        cap = _positive("max_read_ahead_bytes", max_read_ahead_bytes, _READ_AHEAD_BYTES)
        return self._batches(batch_rows, cap, self.projected, plan)

    def __getstate__(self) -> dict[str, Any]:
        """A scan travels (to a Ray or Spark worker) without its catalog's manifest cache and
        its delete reader, which hold locks; the worker reads with fresh ones."""
        return {k: v for k, v in vars(self).items() if k not in ("manifests", "_reader")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        vars(self).update(state, manifests=NoCache(), _reader=None)

    def _batches(
        self, batch_rows: int, cap: int, projected: Schema, plan: ScanPlan | None = None
    ) -> Iterator[pa.RecordBatch]:
        return unsized(self._sized_batches(batch_rows, cap, projected, plan))

    def _sized_batches(
        self, batch_rows: int, cap: int, projected: Schema, plan: ScanPlan | None = None
    ) -> Iterator[tuple[pa.RecordBatch, int]]:
        """The batches of :meth:`to_batches`, each with its size in bytes (``nbytes``)."""
        plan = plan if plan is not None else self.plan()
        filtered = not isinstance(self.expression, AlwaysTrue)
        reads = DataFileReads(
            projected=projected,
            row_filter=to_arrow_filter(self.bound) if filtered else None,
            filter_schema=self.schema,
            # skips the row groups of multi-row-group files that cannot match
            row_group_filter=InclusiveMetricsEvaluator(self.schema, self.bound)
            if filtered
            else None,
            name_mapping=self._name_mapping,
        )
        threads = read_threads()
        reader = ScanReader(
            self.io,
            reads,
            self._specs,
            batch_size=batch_rows,
            threads=threads,
            separately=lambda f: bool(self.lineage or plan.deletes.get(f.file_path)),
            read_separately=lambda f, n: self._read_separately(f, plan, projected, n),
        )
        yield from read_ahead_sized(reader.units(plan.files), threads=threads, max_bytes=cap)

    def _read_separately(
        self, f: DataFile, plan: ScanPlan, projected: Schema, batch_rows: int
    ) -> Iterator[pa.RecordBatch]:
        """The batches of a file read alone: in file order, its deletes applied, its row
        lineage filled in, then filtered."""
        kept: Iterable[pa.RecordBatch] = self._delete_reader().read(
            f,
            plan.deletes.get(f.file_path, ()),
            projected=projected,
            row_filter=self.bound,
            spec=self._specs.get(f.spec_id),
            batch_size=batch_rows,
            position_column=_POSITION if self.lineage else None,
        )
        if self.lineage:
            sequence_number = plan.sequence_numbers.get(f.file_path)
            kept = (
                b.drop_columns([_POSITION])
                for b in self._with_lineage(kept, f, sequence_number, _POSITION)
            )
        target = schema_to_arrow(projected)
        for b in kept:
            if b.num_rows:  # batches of one file may differ in nullability flags only
                yield pa.RecordBatch.from_arrays(b.columns, schema=target)

    def to_arrow_batch_reader(
        self, *, batch_size: int | None = None, max_read_ahead_bytes: int | None = None
    ) -> pa.RecordBatchReader:
        """:meth:`to_batches` as a ``pyarrow.RecordBatchReader`` (read once, as consumed)."""
        return pa.RecordBatchReader.from_batches(
            schema_to_arrow(self.projected),
            self.to_batches(batch_size=batch_size, max_read_ahead_bytes=max_read_ahead_bytes),
        )

    def to_arrow(self, *, limit: int | None = None, max_bytes: int | None = None) -> pa.Table:
        """All matching rows (at most ``limit``, a count >= 0) as one Arrow table.

        The batches read become the table's chunks, never copied. Reading stops with
        :class:`~lakecat.metadata.errors.ResultTooLarge` as soon as the rows read pass
        ``max_bytes`` (default: three quarters of the memory available when it starts); a
        table of any size streams through :meth:`to_batches`."""
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 0
        ):
            raise ValidationError(f"limit must be a row count >= 0, not {limit!r}")
        budget = materialise_budget() if max_bytes is None else max_bytes
        batches: list[pa.RecordBatch] = []
        rows = held = 0
        if limit != 0:
            rows_per_batch = _BATCH_ROWS if limit is not None else _MATERIALISE_BATCH_ROWS
            sized = self._sized_batches(rows_per_batch, _READ_AHEAD_BYTES, self.projected)
            for b, size in sized:
                batches.append(b)
                rows += b.num_rows
                held += size
                if limit is not None and rows >= limit:
                    break
                if budget is not None and held > budget:
                    raise ResultTooLarge(
                        f"the scan's rows need more than {held:,} bytes, over the "
                        f"{budget:,} it may hold in memory; stream it (to_batches, "
                        "to_arrow_batch_reader) or narrow it (columns, a filter, limit)",
                        read_bytes=held,
                        budget_bytes=budget,
                    )
        out = pa.Table.from_batches(batches, schema=schema_to_arrow(self.projected))
        return out.slice(0, limit) if limit is not None else out

    def count(self) -> int:
        """Matching row count: from metadata when no filter and no delete file applies, else
        by reading only the columns the filter needs (one column when none)."""
        if isinstance(self.expression, AlwaysTrue):
            plan = self.plan()
            if not plan.deletes:
                return plan.record_count
        needed = {self.schema.top_level_id(i) for i in referenced_field_ids(self.bound)}
        fields = tuple(f for f in self.schema.fields if f.field_id in needed)
        counted = Schema(fields or self.schema.fields[:1], self.schema.schema_id)
        return sum(b.num_rows for b in self._batches(_BATCH_ROWS, _READ_AHEAD_BYTES, counted))

    # ---- into other tools (optional dependencies: catalog/read/outputs.py) --------------------
    def to_pandas(self, **kwargs: Any) -> Any:
        """The rows as a pandas ``DataFrame`` (``kwargs`` go to ``pyarrow.Table.to_pandas``).
        Needs pandas (``pip install 'lakecat[pandas]'``)."""
        require("pandas", "pandas", "to_pandas")
        return self.to_arrow().to_pandas(**kwargs)

    def to_polars(self) -> Any:
        """A polars ``LazyFrame`` over the scan: collecting it reads the table (only the
        columns the query uses), in batches. Needs polars (``pip install 'lakecat[polars]'``)."""
        return polars_lazy_frame(schema_to_arrow(self.projected), self._column_batches)

    def _column_batches(
        self, columns: list[str] | None, batch_size: int | None
    ) -> Iterator[pa.RecordBatch]:
        batch_rows = _positive("batch_size", batch_size, _BATCH_ROWS)
        if columns is None:
            return self._batches(batch_rows, _READ_AHEAD_BYTES, self.projected)
        if self.lineage:  # lineage is filled in over the whole projection
            batches = self._batches(batch_rows, _READ_AHEAD_BYTES, self.projected)
            return (b.select(columns) for b in batches)
        wanted = set(columns)
        fields = tuple(f for f in self.projected.fields if f.name in wanted)
        return self._batches(batch_rows, _READ_AHEAD_BYTES, Schema(fields, self.schema.schema_id))

    def to_duckdb(self, connection: Any, name: str) -> Any:
        """Register the scan as view ``name`` on the DuckDB ``connection`` (returned): each
        query on the view reads the scan's batches afresh, in bounded memory. Needs duckdb
        (``pip install 'lakecat[duckdb]'``)."""
        source = ArrowStreamSource(schema_to_arrow(self.projected), self.to_arrow_batch_reader)
        return duckdb_view(connection, name, source)

    def to_ray(
        self,
        *,
        override_num_blocks: int | None = None,
        batch_size: int | None = None,
        max_read_ahead_bytes: int | None = None,
        **read_options: Any,
    ) -> Any:
        """A ``ray.data.Dataset`` of the scan's rows (exactly :meth:`to_arrow`'s), read by Ray
        tasks when the Dataset runs: the scan is planned now, its files cut into at most
        ``override_num_blocks`` read tasks (default: Ray's choice from the size estimate and
        the cluster), each streaming its files in batches of at most ``batch_size`` rows
        with at most ``max_read_ahead_bytes`` (default 64 MiB) read ahead. ``read_options``
        go to ``ray.data.read_datasource`` (``concurrency``, ``num_cpus``, ``memory``, ...).
        Needs Ray (``pip install 'lakecat[ray]'``; :mod:`lakecat.catalog.read.ray_source`)."""
        require("ray.data", "ray", "to_ray")
        # imported on use: the module needs Ray, an optional dependency
        from lakecat.catalog.read import ray_source

        return ray_source.scan_dataset(
            self,
            override_num_blocks=override_num_blocks,
            batch_size=_positive("batch_size", batch_size, _BATCH_ROWS),
            max_read_ahead_bytes=_positive(
                "max_read_ahead_bytes", max_read_ahead_bytes, ray_source.READ_AHEAD_BYTES
            ),
            **read_options,
        )


def _positive(name: str, value: int | None, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValidationError(f"{name} must be a positive integer, not {value!r}")
    return value
